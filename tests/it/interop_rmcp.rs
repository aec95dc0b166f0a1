//! Servers built on the official Rust SDK, as users built them: rmcp 0.16 (the 2025 line,
//! handshake era only, which exits when its first request is not `initialize`) and rmcp
//! 3.11 (both eras). Both work under default settings, first time, and fast: the 0.x server
//! answers the era probe by exiting, so it is started again at once in the handshake era,
//! and kept there for later restarts.
//!
//! The fixtures are `tests/peers/rmcp0` and `tests/peers/rmcp3` (pinned crates, built by
//! `.ci/run` into `.ci/peers/rust-target`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::{Era, Liveness, Runtime, ServerConfig, ServerHandle};

use crate::peers::{eventually, rmcp_server};

/// Well under the 10 s the probe would wait for a server that drops it.
const FAST: Duration = Duration::from_secs(5);

/// `program`, started through `sh`, which appends a line to `starts` each time.
fn counted(program: &Path, starts: &Path) -> ServerConfig<switchboard::transport::Stdio> {
    let script = format!(
        "echo start >> '{}'; exec '{}'",
        starts.display(),
        program.display()
    );
    ServerConfig::stdio("sh").args(["-c", &script])
}

fn starts(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A runtime with one server named `rmcp`, under the default settings (liveness off: the
/// test kills the server itself); ready, and built within [`FAST`].
async fn ready(config: ServerConfig<switchboard::transport::Stdio>) -> (Runtime, ServerHandle) {
    let started = Instant::now();
    let rt = Runtime::builder()
        .server("rmcp", config.liveness(Liveness::off()))
        .build()
        .await
        .unwrap();
    let server = rt.server("rmcp").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert!(
        started.elapsed() < FAST,
        "ready after {:?}",
        started.elapsed()
    );
    (rt, server)
}

async fn echoes_and_adds(server: &ServerHandle) {
    let names: Vec<String> = server.tools().iter().map(|t| t.name.clone()).collect();
    assert!(
        names.contains(&"echo".to_owned()) && names.contains(&"add".to_owned()),
        "{names:?}"
    );
    let echoed = server
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "hi");
    let sum = server
        .call_tool("add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(sum.text(), "42");
}

#[tokio::test]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target (.ci/run builds them)"]
async fn an_rmcp_0_16_server_works_under_defaults_first_time_and_is_not_probed_on_restart() {
    let file = std::env::temp_dir().join(format!("sb-rmcp0-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let (rt, server) = ready(counted(&rmcp_server("rmcp0-server"), &file)).await;
    let status = server.status();
    assert_eq!(status.era, Some(Era::Legacy));
    assert_eq!(status.restarts, 0, "the fallback is not a restart");
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("rmcp")
    );
    assert_eq!(
        starts(&file),
        2,
        "the probed process, then the handshake one"
    );
    echoes_and_adds(&server).await;

    // A crash: the restart goes to `initialize` at once, one process.
    unsafe { libc::kill(status.pid.unwrap() as i32, libc::SIGKILL) };
    let restarted = || {
        let status = server.status();
        status.restarts == 1 && status.is_ready()
    };
    assert!(
        eventually(Duration::from_secs(10), restarted).await,
        "{:?}",
        server.status()
    );
    assert_eq!(starts(&file), 3, "the restart probed again");
    echoes_and_adds(&server).await;
    rt.shutdown().await;
    let _ = std::fs::remove_file(&file);
}

#[tokio::test]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target (.ci/run builds them)"]
async fn an_rmcp_3_server_works_under_defaults_in_the_stateless_era() {
    let (rt, server) = ready(ServerConfig::stdio(rmcp_server("rmcp3-server"))).await;
    let status = server.status();
    assert_eq!(status.era, Some(Era::Modern));
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    echoes_and_adds(&server).await;
    rt.shutdown().await;
}
