//! `call --timeout` caps each server's start as well as the call: a server that stalls its
//! start (an HTTP server that sends the beginning of a response and then nothing, on the
//! era probe or on the handshake after it; a stdio server that reads and never answers)
//! fails within `--timeout`, not after the probe's 10 s and the 30 s startup timeout, on one
//! line naming the flag that bounded it and what the server left unanswered, with exit 3 and
//! no server process left behind. A shorter startup timeout is named instead.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::{assert_failed, switchboard, Temp};
use crate::process_is_gone;

/// The `--timeout` of these tests, and how long a command may take with it: the timeout
/// plus a second of slack for a loaded machine.
const TIMEOUT: &str = "3s";
const WITHIN: Duration = Duration::from_secs(4);
/// No sooner than the timeout minus half a second: it was the timeout that ended it.
const NOT_BEFORE: Duration = Duration::from_millis(2500);

/// What the upstream does with a POST.
#[derive(Clone, Copy)]
enum Script {
    /// Every POST: a 200 with a JSON body of 1000 bytes of which it sends 16, then nothing.
    StallAll,
    /// `server/discover` is answered at once as a handshake-era server answers it (-32601,
    /// method not found); anything else: a 200 opening an SSE stream with half an event,
    /// then nothing.
    AnswerTheProbeThenStall,
}

/// An HTTP upstream on a real TCP socket that answers as its [`Script`] says, keeps every
/// connection open (silent, not closed), and records the method of every JSON-RPC request
/// it read. Stops on drop.
struct Upstream {
    url: String,
    methods: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Upstream {
    fn start(script: Script) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let url = format!("http://{}/mcp", listener.local_addr().expect("its address"));
        let methods = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let methods = methods.clone();
            let stop = stop.clone();
            move || {
                // Open until the test ends: a stall is silence, not a closed connection.
                let mut open: Vec<TcpStream> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if let Some(stream) = serve(stream, script, &methods) {
                                open.push(stream);
                            }
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            }
        });
        Upstream {
            url,
            methods,
            stop,
            thread: Some(thread),
        }
    }

    fn methods(&self) -> Vec<String> {
        self.methods.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request from `stream` and answers it as `script` says; the stream, if it must
/// stay open. (One request per connection is all a stalled start makes on each.)
fn serve(mut stream: TcpStream, script: Script, methods: &Mutex<Vec<String>>) -> Option<TcpStream> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let (head, body) = read_request(&mut stream)?;
    if !head.starts_with("POST ") {
        let _ = stream.write_all(
            b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        return None;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = request["method"].as_str().unwrap_or("").to_owned();
    if let Ok(mut seen) = methods.lock() {
        seen.push(method.clone());
    }
    let answer: Vec<u8> = match (script, method.as_str()) {
        (Script::StallAll, _) => b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
              content-length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\""
            .to_vec(),
        (Script::AnswerTheProbeThenStall, "server/discover") => {
            let error = json!({"jsonrpc": "2.0", "id": request["id"],
                "error": {"code": -32601, "message": "Method not found"}})
            .to_string();
            // Closed after it, so that the next request comes on a connection of its own.
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{error}",
                error.len()
            )
            .into_bytes()
        }
        (Script::AnswerTheProbeThenStall, _) => {
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
              cache-control: no-cache\r\n\r\nevent: message\ndata: {\"jsonrpc\":"
                .to_vec()
        }
    };
    stream.write_all(&answer).ok()?;
    stream.flush().ok()?;
    Some(stream)
}

/// A request's head and its body (by `content-length`).
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0; 4096];
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer.split_off(end);
    while body.len() < length {
        let n = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

/// Runs `switchboard ARGS`, which must fail with exit 3 within [`WITHIN`] but not before
/// [`NOT_BEFORE`]: its one stderr line.
fn fails_within_the_timeout(args: &[&str]) -> String {
    let started = Instant::now();
    let output = switchboard(args);
    let took = started.elapsed();
    let err = assert_failed(&output, 3);
    assert!(took < WITHIN, "took {took:?}: {err}");
    assert!(
        took >= NOT_BEFORE,
        "took {took:?}, before the timeout: {err}"
    );
    err
}

#[test]
fn a_stalled_http_probe_ends_within_the_timeout_naming_what_stalled() {
    let upstream = Upstream::start(Script::StallAll);
    let err =
        fails_within_the_timeout(&["call", "echo", "--timeout", TIMEOUT, "--", &upstream.url]);
    let host = upstream
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    assert_eq!(
        err.trim_end(),
        format!(
            "switchboard: server `{host}` at {} did not complete its handshake within 3s \
             (--timeout), waiting for the answer to initialize",
            upstream.url
        )
    );
    // The probe stalled first (it had half the time), then the handshake: both were asked.
    assert_eq!(upstream.methods(), ["server/discover", "initialize"]);
}

#[test]
fn a_handshake_stalled_after_a_good_probe_ends_within_the_timeout_naming_what_stalled() {
    let upstream = Upstream::start(Script::AnswerTheProbeThenStall);
    let err =
        fails_within_the_timeout(&["call", "echo", "--timeout", TIMEOUT, "--", &upstream.url]);
    assert!(
        err.contains(&format!(
            "at {} did not complete its handshake within 3s (--timeout), waiting for the \
             answer to initialize",
            upstream.url
        )),
        "{err}"
    );
    assert_eq!(upstream.methods(), ["server/discover", "initialize"]);
}

#[test]
fn a_stdio_server_that_never_answers_ends_within_the_timeout_and_is_gone() {
    // It reads its input and says nothing (its output stays open); `$0` is where it writes
    // its pid.
    let pidfile = Temp::path("silent-server.pid");
    let err = fails_within_the_timeout(&[
        "call",
        "echo",
        "--timeout",
        TIMEOUT,
        "--",
        "/bin/sh",
        "-c",
        r#"echo $$ > "$0"; while read -r line; do :; done"#,
        pidfile.str(),
    ]);
    assert_eq!(
        err.trim_end(),
        "switchboard: server `sh` did not complete its handshake within 3s (--timeout), \
         waiting for the answer to initialize"
    );
    let pid: u32 = std::fs::read_to_string(&pidfile.0)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .expect("the server wrote its pid");
    // Closing its stdin ended it, or the guardian did once we exited.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !process_is_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "server {pid} outlived switchboard"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_shorter_startup_timeout_is_the_one_named() {
    let upstream = Upstream::start(Script::StallAll);
    let started = Instant::now();
    let output = switchboard(&[
        "call",
        "echo",
        "--timeout",
        "30s",
        "--startup-timeout",
        "1s",
        "--",
        &upstream.url,
    ]);
    let took = started.elapsed();
    let err = assert_failed(&output, 3);
    assert!(
        err.contains(
            "did not complete its handshake within its startup timeout of 1s \
             (--startup-timeout or startupTimeout), waiting for the answer to initialize"
        ),
        "{err}"
    );
    assert!(
        (Duration::from_millis(500)..Duration::from_secs(2)).contains(&took),
        "took {took:?}"
    );
}
