//! No process of a server's group survives the runtime, whichever way it ends.

use std::time::Duration;

use serde_json::json;
use switchboard::{Runtime, ServerHandle};

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
