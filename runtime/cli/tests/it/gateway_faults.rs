//! `switchboard serve --listen 0` as a real process under the faults a gateway meets in
//! production: an upstream crash-looping beside nine healthy ones, a front client that stops
//! reading, and 1,000 front connections opened and dropped. In each, no other client's call
//! fails, the gateway stays up and ready, and what the faulty peer held is given back.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::{Runtime, ServerConfig};

use crate::cli::BIN;
use crate::gateway::{config_file_of, front, Served};
use crate::gateway_support::{
    addr_of, answer_of, base_of, fds, modern_call, rss, unread, ACCEPT, PARTIAL,
};

/// How long anything awaited may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// Switchboard's own runtime as the front client, over Streamable HTTP.
async fn front_of(served: &Served) -> Runtime {
    front(ServerConfig::http(
        served.url.clone(),
        HttpKind::StreamableHttp,
    ))
    .await
}

/// One 2026-07-28 `tools/call` on a connection of its own: the answer's status and its
/// JSON-RPC message, within [`WAIT`].
fn call_once(addr: SocketAddr, tool: &str, arguments: Value) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let request =
        modern_call(1, tool, arguments, None).replacen("\r\n", "\r\nconnection: close\r\n", 1);
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|e| panic!("no answer to {tool} within {WAIT:?}: {e}"));
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok());
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status.unwrap_or(0), answer_of(body))
}

/// A handshake-era `initialize`, as the bytes of an HTTP/1.1 request.
fn initialize(id: u64) -> String {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "faults-test", "version": "1"}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: {ACCEPT}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Runs `calls` calls through `front`, `workers` at a time: `call(front, n)` makes call `n`.
async fn run_calls<F, Fut>(front: &Runtime, calls: usize, workers: usize, call: F)
where
    F: Fn(Runtime, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let mut running = Vec::new();
    for worker in 0..workers {
        let (front, call) = (front.clone(), call.clone());
        running.push(tokio::spawn(async move {
            for n in (worker..calls).step_by(workers) {
                call(front.clone(), n).await;
            }
        }));
    }
    tokio::time::timeout(WAIT, async {
        for worker in running {
            worker.await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{calls} calls were not done within {WAIT:?}"));
}

/// Calls `echo` with call `n`'s text, and checks that it comes back.
async fn echo(front: Runtime, n: usize) {
    let text = format!("call {n}");
    let echoed = front
        .call_tool("echo", json!({"text": text}))
        .timeout(WAIT)
        .await
        .unwrap_or_else(|e| panic!("call {n}: {e}"));
    assert_eq!(echoed.text(), text);
}

/// A file the crash-looping upstream appends a line to at every start.
struct Starts(PathBuf);

impl Starts {
    fn new() -> Starts {
        let path =
            std::env::temp_dir().join(format!("switchboard-faults-starts-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Starts(path)
    }

    fn count(&self) -> usize {
        std::fs::read_to_string(&self.0)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

impl Drop for Starts {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_crash_looping_beside_nine_healthy_ones_fails_no_other_call() {
    let starts = Starts::new();
    let mut servers = serde_json::Map::new();
    for n in 1..=9 {
        servers.insert(
            format!("s{n}"),
            json!({"command": BIN, "args": ["demo-server"]}),
        );
    }
    // Exits at once, every time, and is restarted every 20 to 50 ms for as long as the test
    // runs (the crash-loop guard would otherwise mark it failed after five).
    let script = format!("echo start >> '{}'; exit 1", starts.0.display());
    servers.insert(
        "looping".to_owned(),
        json!({"command": "sh", "args": ["-c", script], "restart": {
            "initialDelay": "20ms", "maxDelay": "50ms", "maxFailures": 1_000_000, "window": "60s"}}),
    );
    let config = config_file_of(json!({"mcpServers": servers}));
    let mut served = Served::start_with(&config, &["--listen", "0"]);
    let http = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let readyz = format!("{}/readyz", base_of(&served));
    let ready_status = |http: reqwest::Client, readyz: String| async move {
        http.get(&readyz)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    };

    // Fail open: ready once the nine are up, whatever the tenth does.
    let deadline = Instant::now() + WAIT;
    while ready_status(http.clone(), readyz.clone()).await != 200 {
        assert!(Instant::now() < deadline, "/readyz never answered 200");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let front = front_of(&served).await;
    let names: Vec<String> = front.catalogue().iter().map(|e| e.name.clone()).collect();
    for n in 1..=9 {
        for tool in ["add", "echo", "greet"] {
            let name = format!("s{n}__{tool}");
            assert!(names.contains(&name), "{name} in {names:?}");
        }
    }
    assert!(
        names
            .iter()
            .all(|name| (1..=9).any(|n| name.starts_with(&format!("s{n}__")))),
        "only the nine's tools are listed: {names:?}"
    );

    // /readyz is asked all along the calls: the crash loop must never make it say 503.
    let calling = Arc::new(AtomicBool::new(true));
    let poller = {
        let (http, readyz, calling) = (http.clone(), readyz.clone(), calling.clone());
        tokio::spawn(async move {
            let (mut polls, mut not_ready) = (0, Vec::new());
            // At least 100 polls, however fast the calls are: the tenth restarts meanwhile.
            while calling.load(Ordering::SeqCst) || polls < 100 {
                let status = ready_status(http.clone(), readyz.clone()).await;
                polls += 1;
                if status != 200 {
                    not_ready.push(status);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            (polls, not_ready)
        })
    };
    let looped_before = starts.count();
    let started = Instant::now();
    // 200 calls, round-robin over the nine: call n goes to server n % 9 + 1.
    run_calls(&front, 200, 10, |front, n| async move {
        let server = n % 9 + 1;
        let sum = front
            .call_tool(&format!("s{server}__add"), json!({"a": n, "b": server}))
            .timeout(WAIT)
            .await
            .unwrap_or_else(|e| panic!("call {n} to s{server}: {e}"));
        assert_eq!(sum.structured_content, Some(json!({"sum": n + server})));
    })
    .await;
    let took = started.elapsed();
    calling.store(false, Ordering::SeqCst);
    let (polls, not_ready) = poller.await.unwrap();
    let looped = starts.count() - looped_before;
    eprintln!(
        "200 calls over nine upstreams in {took:?}; /readyz asked {polls} times in {:?}, \
         while the tenth started {looped} times",
        started.elapsed()
    );
    assert!(looped > 1, "the tenth kept crash-looping: {looped} starts");
    assert!(
        not_ready.is_empty(),
        "/readyz answered {not_ready:?} ({} of {polls}) while one upstream crash-looped",
        not_ready.len()
    );
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "the gateway is alive"
    );

    // A call to the looping server's tool, named as it would be, fails at once, with an
    // error naming it: there is no such tool, and no call waits for it.
    let (status, answer) = call_once(addr_of(&served), "looping__echo", json!({"text": "x"}));
    let error = &answer["error"];
    assert_eq!(error["code"], -32602, "{status} {answer}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("looping__echo")),
        "{status} {answer}"
    );

    // The nine still answer after all that.
    let echoed = front
        .call_tool("s9__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "still here");
    front.shutdown().await;
    served.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_client_that_stops_reading_holds_up_no_other_client() {
    /// More than the kernel's socket buffers take (4 MiB to send on loopback here, 128 KiB
    /// to receive while nothing reads), under the upstream's 16 MiB line limit.
    const LARGE: usize = 12 * 1024 * 1024;
    let served = Served::start();
    let front = front_of(&served).await;
    let addr = addr_of(&served);
    // One asks for an answer larger than the socket holds, the other for a progress flood on
    // an event stream (a step a millisecond for a minute); neither reads a byte.
    let mut large = TcpStream::connect(addr).unwrap();
    let call = modern_call(1, "large", json!({"bytes": LARGE}), None);
    large.write_all(call.as_bytes()).unwrap();
    let mut flood = TcpStream::connect(addr).unwrap();
    let steps = json!({"ms": 60_000, "steps": 60_000});
    let call = modern_call(2, "sleep", steps, Some("flood"));
    flood.write_all(call.as_bytes()).unwrap();

    // The large answer starts arriving: the gateway is writing it into a socket nobody
    // reads. And the flood's progress reaches its stream.
    let deadline = Instant::now() + WAIT;
    while unread(&large) == 0 || unread(&flood) == 0 {
        assert!(
            Instant::now() < deadline,
            "no answer started: {} and {} bytes",
            unread(&large),
            unread(&flood)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let started = Instant::now();
    run_calls(&front, 100, 10, echo).await;
    let took = started.elapsed();
    // Still stuck when the calls were done: the test had a client that does not read.
    let (large_unread, flood_unread) = (unread(&large), unread(&flood));
    eprintln!(
        "100 calls in {took:?} beside a stuck {LARGE}-byte answer ({large_unread} bytes \
         arrived unread) and a progress stream ({flood_unread} bytes unread)"
    );
    assert!(
        large_unread < LARGE,
        "the whole answer fit in the socket ({large_unread} bytes): nothing was stuck"
    );

    // Gone without a word: the upstream's call behind the flood is cancelled, and the
    // gateway answers as before.
    drop(large);
    drop(flood);
    let deadline = Instant::now() + WAIT;
    loop {
        let seen = front.call_tool("cancellations", json!({})).await.unwrap();
        let cancelled = seen.structured_content.unwrap_or(Value::Null)["cancelled"].clone();
        if cancelled.as_array().is_some_and(|c| !c.is_empty()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the flood's upstream call was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run_calls(&front, 10, 2, echo).await;
    let (status, answer) = call_once(addr, "add", json!({"a": 2, "b": 3}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["structuredContent"], json!({"sum": 5}));
    front.shutdown().await;
    served.stop();
}

/// Opens the connections `ids`, all at once: even ones send half a request, odd ones an
/// `initialize` (and one in two of those waits for its answer's status line, so that a
/// session is made, to be left without its `DELETE`).
fn open(addr: SocketAddr, ids: std::ops::Range<u64>) -> Vec<TcpStream> {
    let mut open = Vec::new();
    for id in ids {
        let mut stream = TcpStream::connect(addr).unwrap();
        if id % 2 == 0 {
            stream.write_all(PARTIAL).unwrap();
        } else {
            stream.write_all(initialize(id).as_bytes()).unwrap();
        }
        open.push((id, stream));
    }
    for (id, stream) in &mut open {
        if *id % 4 == 1 {
            stream.set_read_timeout(Some(WAIT)).unwrap();
            let mut status = [0; 12];
            stream.read_exact(&mut status).unwrap();
            assert_eq!(&status, b"HTTP/1.1 200", "initialize {id}");
        }
    }
    open.into_iter().map(|(_, stream)| stream).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_front_connections_opened_and_dropped_leave_nothing_behind() {
    /// Connections open at once: far under a default limit of 1,024 descriptors, for the
    /// test and for the gateway.
    const BATCH: u64 = 200;
    // A thousand front clients on one host: one client to the gateway, whose share of
    // sessions must hold the 250 this leaves open.
    let config = crate::gateway::config_file();
    let served = Served::start_with(&config, &["--listen", "0", "--client-sessions", "1024"]);
    let pid = served.child.id();
    let front = front_of(&served).await;
    let addr = addr_of(&served);
    // Warmed up first, so that what is allocated once is in the baseline.
    run_calls(&front, 20, 2, echo).await;
    drop(open(addr, 0..20));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss_before, fds_before) = (rss(pid), fds(pid));

    let started = Instant::now();
    let mut peak = 0;
    for batch in 0..1_000 / BATCH {
        let streams = open(addr, batch * BATCH..(batch + 1) * BATCH);
        // The gateway holds the batch: what the count afterwards must see go.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut held = fds(pid);
        while held < fds_before + BATCH as usize && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
            held = fds(pid);
        }
        peak = peak.max(held);
        drop(streams);
    }
    let took = started.elapsed();
    assert!(
        peak >= fds_before + BATCH as usize / 2,
        "the gateway never held the connections: {peak} descriptors at most"
    );

    // A normal client's calls succeed, on its connections and on a new client's.
    run_calls(&front, 20, 2, echo).await;
    let newcomer = front_of(&served).await;
    run_calls(&newcomer, 20, 2, echo).await;
    newcomer.shutdown().await;

    // Every dropped connection's descriptor is closed after a short settle.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut fds_after = fds(pid);
    while fds_after > fds_before + 32 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        fds_after = fds(pid);
    }
    let rss_after = rss(pid);
    eprintln!(
        "1,000 connections opened and dropped in {took:?}; the gateway's fds {fds_before} -> \
         {peak} (a batch open) -> {fds_after}, VmRSS {} KiB -> {} KiB",
        rss_before / 1024,
        rss_after / 1024
    );
    assert!(
        fds_after <= fds_before + 32,
        "open descriptors: {fds_before} before, {fds_after} after"
    );
    assert!(
        rss_after < rss_before + 64 * 1024 * 1024,
        "resident memory: {rss_before} bytes before, {rss_after} after"
    );
    front.shutdown().await;
    served.stop();
}
