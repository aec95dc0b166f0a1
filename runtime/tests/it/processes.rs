//! No process of a server's group survives the runtime, whichever way it ends.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::transport::Stdio;
use switchboard::{Runtime, ServerConfig, ServerHandle};

use crate::support::*;

async fn server_and_grandchild() -> (Runtime, ServerHandle, u32, u32) {
    let (rt, server) = runtime_with(demo_stdio(&["--faults"])).await;
    let pid = server.status().pid.expect("pid");
    let r = server
        .call_tool("spawn_grandchild", json!({}))
        .await
        .unwrap();
    let grandchild = r.structured_content.unwrap()["pid"].as_u64().unwrap() as u32;
    assert!(!process_is_gone(pid) && !process_is_gone(grandchild));
    (rt, server, pid, grandchild)
}

#[tokio::test]
async fn shutdown_leaves_no_process_of_the_group() {
    let (rt, server, pid, grandchild) = server_and_grandchild().await;
    rt.shutdown().await;
    assert!(eventually(Duration::from_secs(5), || process_is_gone(pid)).await);
    assert!(eventually(Duration::from_secs(5), || process_is_gone(grandchild)).await);
    assert!(matches!(
        server.status().state,
        switchboard::ServerState::Stopped
    ));
}

#[tokio::test]
async fn dropping_the_runtime_kills_the_group() {
    let (rt, server, pid, grandchild) = server_and_grandchild().await;
    drop(server);
    drop(rt);
    assert!(eventually(Duration::from_secs(5), || process_is_gone(pid)).await);
    assert!(eventually(Duration::from_secs(5), || process_is_gone(grandchild)).await);
}

#[tokio::test]
async fn a_crashed_server_leaves_no_grandchild() {
    let (rt, server, pid, grandchild) = server_and_grandchild().await;
    let _ = server.call_tool("crash", json!({"code": 1})).await;
    assert!(eventually(Duration::from_secs(5), || process_is_gone(pid)).await);
    assert!(eventually(Duration::from_secs(8), || process_is_gone(grandchild)).await);
    rt.shutdown().await;
}

#[tokio::test]
async fn shutdown_is_graceful_for_a_well_behaved_server() {
    // A grace long beside a loaded machine's stalls: what is checked is that the server is
    // not signalled, not how fast it exits.
    let config = demo_stdio(&[]).close_timeouts(Duration::from_secs(10), Duration::from_secs(2));
    let (rt, server) = runtime_with(config).await;
    let pid = server.status().pid.unwrap();
    let started = std::time::Instant::now();
    rt.shutdown().await;
    // The demo server exits on stdin EOF, well before the grace period.
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    assert!(process_is_gone(pid));
}

/// A demo server under a shell that outlives it, as many servers' wrappers do: the shell
/// starts a `sleep` (its pid in `pidfile`), runs the demo server, and waits for the sleep
/// once the demo has left at stdin EOF. With `ignore_term`, both ignore `SIGTERM`.
fn lingering(pidfile: &Path, ignore_term: bool) -> ServerConfig<Stdio> {
    let trap = if ignore_term { "trap '' TERM; " } else { "" };
    let script = format!(
        "{trap}sleep 600 & echo $! > '{pidfile}'; {demo}; wait",
        pidfile = pidfile.display(),
        demo = demo_child_command_line(),
    );
    ServerConfig::stdio("sh")
        .args(["-c", &script])
        .env(switchboard_demo::ENV_VAR, "")
}

/// A file name of this test process's, for a pid.
fn pidfile(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sb-{name}-{}.pid", std::process::id()))
}

/// The pid a [`lingering`] server wrote.
fn read_pid(pidfile: &Path) -> u32 {
    let text = std::fs::read_to_string(pidfile).expect("the pidfile");
    let _ = std::fs::remove_file(pidfile);
    text.trim().parse().expect("a pid")
}

#[tokio::test]
async fn shutdown_within_ends_a_server_that_ignores_eof_and_sigterm_in_its_grace() {
    let file = pidfile("stubborn");
    // Its own waits are long: only the grace can make the shutdown short.
    let config =
        lingering(&file, true).close_timeouts(Duration::from_secs(10), Duration::from_secs(10));
    let (rt, server) = runtime_with(config).await;
    let shell = server.status().pid.expect("pid");
    let sleep = read_pid(&file);
    let grace = Duration::from_millis(200);
    let started = Instant::now();
    rt.shutdown_within(grace).await;
    let took = started.elapsed();
    // The grace, then SIGKILL and the reaping (room for a loaded machine), not 20 s.
    assert!(took >= grace, "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(process_is_gone(shell), "the shell survived");
    assert!(
        eventually(Duration::from_secs(1), || process_is_gone(sleep)).await,
        "its sleep survived"
    );
    assert!(matches!(
        server.status().state,
        switchboard::ServerState::Stopped
    ));
}

#[tokio::test]
async fn shutdown_closes_every_server_at_once() {
    // Three servers whose shells linger after stdin EOF until SIGTERM: each close takes its
    // 1 s stdin wait. Together, the shutdown takes one of them, not three.
    let files: Vec<PathBuf> = (0..3).map(|i| pidfile(&format!("slow-{i}"))).collect();
    let mut builder = Runtime::builder();
    for (i, file) in files.iter().enumerate() {
        let config =
            lingering(file, false).close_timeouts(Duration::from_secs(1), Duration::from_secs(2));
        builder = builder.server(format!("slow{i}"), config);
    }
    let rt = builder.build().await.expect("runtime");
    let mut pids = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let status = rt.server(&format!("slow{i}")).expect("server").status();
        assert!(status.is_ready(), "{:?}", status.state);
        pids.push(status.pid.expect("pid"));
        pids.push(read_pid(file));
    }
    let started = Instant::now();
    rt.shutdown().await;
    let took = started.elapsed();
    // Graceful: each waited its second after stdin closed.
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_millis(2500), "{took:?}");
    for pid in pids {
        assert!(
            eventually(Duration::from_secs(1), || process_is_gone(pid)).await,
            "{pid} survived"
        );
    }
}
