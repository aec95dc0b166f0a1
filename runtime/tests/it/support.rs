//! Shared fixtures: the demo server as a child process or in memory.
//!
//! The child process is this test binary itself, started again with the demo server's
//! options in [`ENV_VAR`] (see `switchboard_demo::child`): the one test
//! [`the_test_binary_serves_the_demo_as_a_child`] serves. So these tests need no other
//! binary, and never run a stale one.

use std::time::Duration;

use switchboard::transport::{Memory, Stdio};
use switchboard::{Runtime, ServerConfig, ServerHandle};
use switchboard_demo::{Options, ENV_VAR};

/// The test a demo child runs (libtest's filter for it).
const CHILD_TEST: &str = "support::the_test_binary_serves_the_demo_as_a_child";

// Life before main.
#[ctor::ctor(unsafe)]
fn keep_stdout_for_a_demo_child() {
    // SAFETY: before main, while no other thread runs, as it asks.
    unsafe { switchboard_demo::child::keep_stdout_aside() }
}

/// This test binary's path and the arguments that make it a demo child (with [`ENV_VAR`]).
pub(crate) fn demo_child() -> (std::path::PathBuf, [&'static str; 4]) {
    let exe = std::env::current_exe().expect("the test binary's path");
    // `--nocapture`: the demo server's `eprintln!` must reach the real stderr, which the
    // runtime shows in its errors, not libtest's capture buffer.
    (exe, ["--exact", CHILD_TEST, "--quiet", "--nocapture"])
}

/// A shell command line that `exec`s a demo child (the server config must also set
/// [`ENV_VAR`] to the demo's options).
pub(crate) fn demo_child_command_line() -> String {
    let (exe, args) = demo_child();
    format!("'{}' {}", exe.display(), args.join(" "))
}

/// The bundled demo server as a real child process, with these options.
pub(crate) fn demo_stdio(args: &[&str]) -> ServerConfig<Stdio> {
    let (exe, child_args) = demo_child();
    ServerConfig::stdio(exe)
        .args(child_args)
        .env(ENV_VAR, args.join(" "))
        .close_timeouts(Duration::from_secs(2), Duration::from_secs(2))
}

/// The bundled demo server as a child process serving Streamable HTTP at
/// `http://127.0.0.1:{port}/mcp`; killed (and reaped) on drop.
#[derive(Debug)]
pub(crate) struct HttpDemo {
    child: std::process::Child,
}

impl HttpDemo {
    /// Starts one on `port`, and returns once the port accepts connections.
    pub(crate) async fn start(port: u16) -> HttpDemo {
        let (exe, args) = demo_child();
        let child = std::process::Command::new(exe)
            .args(args)
            .env(ENV_VAR, format!("--http 127.0.0.1:{port}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("a demo child");
        let mut demo = HttpDemo { child };
        let end = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if let Ok(Some(status)) = demo.child.try_wait() {
                panic!("the demo child exited before listening on {port}: {status}");
            }
            assert!(
                tokio::time::Instant::now() < end,
                "the demo child did not listen on {port} within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        demo
    }

    /// Kills it (`SIGKILL`) and reaps it: its port refuses connections from then on.
    pub(crate) fn kill(self) {
        drop(self);
    }
}

impl Drop for HttpDemo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port of 127.0.0.1 nothing listens on: one the kernel just handed out and took back.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// In a demo child: serves the demo server on stdin and the stdout moved aside, and exits.
/// In a normal run: the child serves an `echo` round trip.
#[test]
fn the_test_binary_serves_the_demo_as_a_child() {
    switchboard_demo::child::serve_if_child();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (rt, server) = runtime_with(demo_stdio(&[])).await;
        assert!(server.status().pid.is_some());
        assert_echoes(&server, "from a child").await;
        rt.shutdown().await;
    });
}

/// The demo server in this process, over the in-memory transport.
pub(crate) fn demo_memory(args: &[&str]) -> ServerConfig<Memory> {
    let options = Options::from_args(args.iter().map(|s| s.to_string())).expect("demo options");
    ServerConfig::memory(move |io| {
        let options = options.clone();
        async move {
            let (reader, writer) = tokio::io::split(io);
            let _ = switchboard_demo::serve(reader, writer, options).await;
        }
    })
}

/// A runtime with one server named `demo`.
pub(crate) async fn runtime_with(config: impl Into<ServerConfig>) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .server("demo", config)
        .build()
        .await
        .expect("runtime");
    let server = rt.server("demo").expect("server");
    assert!(
        server.status().is_ready(),
        "demo server not ready: {:?}",
        server.status().state
    );
    (rt, server)
}

/// A runtime with one scripted server named `s`: no restarts, no liveness probes (the
/// script sees only what the test does), and `timeout` per request.
pub(crate) async fn scripted(
    config: impl Into<ServerConfig>,
    timeout: Duration,
) -> (Runtime, ServerHandle) {
    let config = config
        .into()
        .restart(switchboard::RestartPolicy::off())
        .liveness(switchboard::Liveness::off())
        .timeout(timeout);
    let rt = Runtime::builder()
        .server("s", config)
        .build()
        .await
        .unwrap();
    let server = rt.server("s").unwrap();
    (rt, server)
}

/// Whether a process is gone (no such pid, or a zombie nobody reaped yet).
pub(crate) fn process_is_gone(pid: u32) -> bool {
    if unsafe { libc::kill(pid as i32, 0) } != 0 {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => !cfg!(target_os = "linux"),
    }
}

/// Polls `cond` every 20 ms for up to `within`.
pub(crate) async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Calls the demo server's `echo` and asserts the text comes back.
pub(crate) async fn assert_echoes(server: &ServerHandle, text: &str) {
    let result = server
        .call_tool("echo", serde_json::json!({ "text": text }))
        .await
        .unwrap_or_else(|e| panic!("echo {text:?}: {e}"));
    assert_eq!(result.text(), text);
}

/// Starts `n` demo `sleep` calls of 30 s, each in its own task, and waits until all are in
/// flight: calls for a crash or a shutdown to end.
pub(crate) async fn pending_sleeps(
    server: &ServerHandle,
    n: usize,
) -> Vec<tokio::task::JoinHandle<switchboard::Result<switchboard::model::CallToolResult>>> {
    let calls: Vec<_> = (0..n)
        .map(|_| tokio::spawn(server.call_tool("sleep", serde_json::json!({"ms": 30000}))))
        .collect();
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == n).await);
    calls
}

/// The params of every `notifications/cancelled` the demo server (`--faults`) received, in
/// the order it read them.
pub(crate) async fn cancellations(server: &ServerHandle) -> Vec<serde_json::Value> {
    let seen = server
        .call_tool("cancellations", serde_json::json!({}))
        .await
        .expect("the cancellations tool");
    match seen.structured_content {
        Some(serde_json::Value::Object(mut content)) => match content.remove("cancelled") {
            Some(serde_json::Value::Array(cancelled)) => cancelled,
            other => panic!("cancellations: {other:?}"),
        },
        other => panic!("cancellations: {other:?}"),
    }
}

/// The `requestId` of every `notifications/cancelled` the demo server received, in order.
pub(crate) async fn cancelled_ids(server: &ServerHandle) -> Vec<i64> {
    cancellations(server)
        .await
        .iter()
        .map(|c| c["requestId"].as_i64().expect("a numeric requestId"))
        .collect()
}

/// The ids of the `tools/call` requests for `tool` the demo server (`--faults`) received, in
/// the order it read them: the ids on the wire.
pub(crate) async fn call_ids(server: &ServerHandle, tool: &str) -> Vec<i64> {
    let seen = server
        .call_tool("calls", serde_json::json!({}))
        .await
        .expect("the calls tool");
    let content = seen.structured_content.expect("structured content");
    content["calls"]
        .as_array()
        .expect("an array of calls")
        .iter()
        .filter(|c| c["name"] == tool)
        .map(|c| c["id"].as_i64().expect("a numeric id"))
        .collect()
}

/// Waits (up to 10 s) until the demo server has received a `notifications/cancelled` for
/// request `id`, and returns every cancellation it received by then.
pub(crate) async fn until_cancelled(server: &ServerHandle, id: i64) -> Vec<serde_json::Value> {
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen = cancellations(server).await;
        if seen.iter().any(|c| c["requestId"] == id) {
            return seen;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "no notifications/cancelled for request {id} within 10 s; the server saw {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
