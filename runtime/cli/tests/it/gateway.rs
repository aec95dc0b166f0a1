//! `switchboard serve` as a real process fronting `switchboard demo-server --faults`, with
//! Switchboard's own runtime as the front client, over stdio and over Streamable HTTP:
//! lists, calls, progress, cancellation reaching the upstream, resources, prompts,
//! completion, list changes, and an upstream crash that fails only the call in flight (its
//! tools stay listed while it restarts).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::model::CompletionReference;
use switchboard::transport::HttpKind;
use switchboard::{Runtime, ServerConfig};

use crate::cli::BIN;

/// How long anything awaited may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// A config file fronting the demo server with its fault tools, in a folder of its own.
pub(crate) fn config_file() -> PathBuf {
    config_file_of(
        json!({"mcpServers": {"demo": {"command": BIN, "args": ["demo-server", "--faults"]}}}),
    )
}

/// A config file holding `config`, in a folder of its own.
pub(crate) fn config_file_of(config: Value) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "switchboard-gateway-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gateway.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// The front runtime, with one server, `gateway`: `switchboard serve` as its stdio child.
async fn over_stdio() -> (Runtime, Option<Served>) {
    let config = config_file();
    let server = ServerConfig::stdio(BIN).args(["serve", "-c", config.to_str().unwrap()]);
    (front(server).await, None)
}

/// `switchboard serve --listen` as a child process of the test.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) url: String,
    /// What it logged before saying its address (with `-v`, where `--metrics` serves).
    pub(crate) log: String,
    /// What it logged since, as it comes.
    pub(crate) later: Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Served {
    /// `switchboard serve --listen 0` fronting the demo server with its fault tools.
    pub(crate) fn start() -> Served {
        Served::start_with(&config_file(), &["--listen", "0"])
    }

    /// `switchboard serve -c config` with `args` (a `--listen` among them).
    pub(crate) fn start_with(config: &std::path::Path, args: &[&str]) -> Served {
        Served::start_with_env(config, args, &[])
    }

    /// [`start_with`](Self::start_with), with `env` set for the process.
    pub(crate) fn start_with_env(
        config: &std::path::Path,
        args: &[&str],
        env: &[(&str, &std::path::Path)],
    ) -> Served {
        let mut child = Command::new(BIN)
            .args(["serve", "-c", config.to_str().unwrap()])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        // The line with the address, after what it logged of its servers.
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("serve ended before saying its address: {seen}");
            }
            if let Some(url) = listening_at(&line) {
                break url.to_owned();
            }
            seen.push_str(&line);
        };
        // Keep draining, so that logging never blocks the gateway.
        let later = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = later.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = std::io::Read::read(&mut stderr, &mut chunk) {
                kept.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        Served {
            child,
            url,
            log: seen,
            later,
        }
    }

    /// `SIGTERM`, then the exit status: 0, with the upstream shut down.
    pub(crate) fn stop(mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "serve after SIGTERM: {status}");
    }
}

/// The URL in `line` if it is the one that says where serve listens.
pub(crate) fn listening_at(line: &str) -> Option<&str> {
    if !line.contains("serving ") {
        return None;
    }
    let start = line.find(" at http://")? + " at ".len();
    line[start..].split_whitespace().next()
}

impl Drop for Served {
    /// A failed test leaves no gateway behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

async fn over_http() -> (Runtime, Option<Served>) {
    let served = Served::start();
    let server = ServerConfig::http(served.url.clone(), HttpKind::StreamableHttp);
    (front(server).await, Some(served))
}

/// A front runtime whose one server, `gateway`, is `server`: ready, or the test fails.
pub(crate) async fn front(server: impl Into<ServerConfig>) -> Runtime {
    let runtime = Runtime::builder()
        .server("gateway", server)
        .build()
        .await
        .unwrap();
    let status = runtime.server("gateway").unwrap().status();
    assert!(status.is_ready(), "the gateway is not ready: {status:?}");
    runtime
}

async fn stop(front: Runtime, served: Option<Served>) {
    front.shutdown().await;
    if let Some(served) = served {
        served.stop();
    }
}

/// Waits on the front runtime's watch until `done` holds.
async fn until(front: &Runtime, what: &str, mut done: impl FnMut(&Runtime) -> bool) {
    let mut watch = front.watch();
    tokio::time::timeout(WAIT, async {
        while !done(front) {
            assert!(watch.changed().await, "the front runtime is gone");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting until {what}"));
}

async fn everything_is_forwarded(front: Runtime, served: Option<Served>) {
    let names: Vec<String> = front.catalogue().iter().map(|e| e.name.clone()).collect();
    for tool in ["echo", "add", "sleep", "hang", "crash"] {
        assert!(names.contains(&tool.to_owned()), "{tool} in {names:?}");
    }
    let sum = front
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));

    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let slept = front
        .call_tool("sleep", json!({"ms": 30, "steps": 3}))
        .on_progress(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert!(!slept.is_error(), "{}", slept.text());
    assert_eq!(seen.load(Ordering::SeqCst), 3, "every progress arrived");

    let gateway = front.server("gateway").unwrap();
    // The upstream's resources and prompts are listed after its handshake: the front hears
    // of them by list_changed if they were not there at its own handshake.
    until(&front, "the resources and prompts are listed", |_| {
        let status = gateway.status();
        !status.resources.is_empty() && !status.prompts.is_empty()
    })
    .await;
    let read = front.read_resource("demo://text/hello").await.unwrap();
    assert_eq!(read.contents.len(), 1);
    let prompt = front
        .get_prompt("greeting", [("name", "Ada")])
        .await
        .unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let completed = gateway
        .complete(
            CompletionReference::Resource {
                uri: "demo://note/{id}".into(),
            },
            "id",
            "4",
            std::iter::empty::<(String, String)>(),
        )
        .await
        .unwrap();
    assert_eq!(completed.completion.values, ["42"]);
    stop(front, served).await;
}

async fn a_cancelled_call_is_cancelled_upstream(front: Runtime, served: Option<Served>) {
    let hung = front
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(hung.is_timeout(), "{hung}");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = front.call_tool("cancellations", json!({})).await.unwrap();
        let cancelled = seen.structured_content.unwrap_or(Value::Null)["cancelled"].clone();
        if cancelled.as_array().is_some_and(|c| !c.is_empty()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream heard no cancel"
        );
        tokio::task::yield_now().await;
    }
    stop(front, served).await;
}

async fn an_upstream_crash_fails_the_call_in_flight_and_serving_goes_on(
    front: Runtime,
    served: Option<Served>,
) {
    let in_flight = tokio::spawn(front.call_tool("hang", json!({})).timeout(WAIT));
    // Once the hang is in flight upstream (its own call is listed there), crash the server.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let calls = front.call_tool("calls", json!({})).await.unwrap();
        let calls = calls.structured_content.unwrap_or(Value::Null)["calls"].clone();
        if calls
            .as_array()
            .is_some_and(|c| c.iter().any(|call| call["name"] == "hang"))
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no hang upstream");
        tokio::task::yield_now().await;
    }
    let crashed = front
        .call_tool("crash", json!({"message": "on purpose"}))
        .await;
    assert!(crashed.is_err(), "a crash answers nothing: {crashed:?}");
    let failed = in_flight.await.unwrap().unwrap_err();
    match failed.kind() {
        switchboard::ErrorKind::Rpc { message, .. } => {
            assert!(message.contains("demo"), "names the upstream: {message}");
            assert!(message.contains("hang"), "names the tool: {message}");
        }
        _ => panic!("not the gateway's error: {failed}"),
    }
    // The tools stay listed while the upstream restarts (the front client hears no list
    // change for a crash), and a call made now waits for the restart and is served.
    assert!(front.catalogue().get("echo").is_some());
    let echo = front
        .call_tool("echo", json!({"text": "still here"}))
        .timeout(WAIT)
        .await
        .unwrap();
    assert_eq!(echo.text(), "still here");
    stop(front, served).await;
}

#[tokio::test]
async fn over_stdio_everything_is_forwarded() {
    let (front, served) = over_stdio().await;
    everything_is_forwarded(front, served).await;
}

#[tokio::test]
async fn over_http_everything_is_forwarded() {
    let (front, served) = over_http().await;
    everything_is_forwarded(front, served).await;
}

#[tokio::test]
async fn over_stdio_a_cancelled_call_is_cancelled_upstream() {
    let (front, served) = over_stdio().await;
    a_cancelled_call_is_cancelled_upstream(front, served).await;
}

#[tokio::test]
async fn over_http_a_cancelled_call_is_cancelled_upstream() {
    let (front, served) = over_http().await;
    a_cancelled_call_is_cancelled_upstream(front, served).await;
}

#[tokio::test]
async fn over_stdio_an_upstream_crash_fails_only_the_call_in_flight() {
    let (front, served) = over_stdio().await;
    an_upstream_crash_fails_the_call_in_flight_and_serving_goes_on(front, served).await;
}

#[tokio::test]
async fn over_http_an_upstream_crash_fails_only_the_call_in_flight() {
    let (front, served) = over_http().await;
    an_upstream_crash_fails_the_call_in_flight_and_serving_goes_on(front, served).await;
}

#[test]
fn readyz_and_healthz_answer_while_serving() {
    let served = Served::start();
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    for (path, expected) in [("/healthz", "200"), ("/readyz", "200"), ("/nope", "404")] {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read, Write};
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer.split_whitespace().nth(1).unwrap_or_default();
        assert_eq!(status, expected, "{path}: {answer}");
    }
    served.stop();
}
