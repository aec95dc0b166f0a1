//! An upstream that was killed keeps its tools in the gateway's lists while it restarts: the
//! first `tools/call` after the kill is never -32602 (no such tool) but waits for the
//! restart and is served; when the restart cannot finish within the call's deadline, the
//! call is -32603 saying that the upstream is restarting.
//!
//! The upstream is the demo server as a real child process (see [`crate::child`]), behind a
//! gateway served in memory to a front runtime.

use std::time::Duration;

use serde_json::json;
use switchboard::{RestartPolicy, Runtime, ServerHandle, ServerState};

use crate::child::demo_stdio;
use crate::support::{fronted, WAIT};

/// An upstream runtime whose one server, `demo`, is the demo child with these settings.
async fn upstream(config: switchboard::ServerConfig) -> (Runtime, ServerHandle) {
    let upstream = Runtime::builder()
        .server("demo", config)
        .build()
        .await
        .expect("the upstream runtime");
    let demo = upstream.server("demo").expect("the demo server");
    assert!(demo.status().is_ready(), "{:?}", demo.status().state);
    (upstream, demo)
}

/// Kills the upstream's process (`SIGKILL`) and returns once its runtime has seen it go:
/// 10 ms later, or when its status leaves `ready`, whichever comes last.
async fn kill(upstream: &Runtime, demo: &ServerHandle) {
    let pid = demo.status().pid.expect("a child process");
    let mut watch = upstream.watch();
    // SAFETY: a plain signal to a process of ours.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    tokio::time::sleep(Duration::from_millis(10)).await;
    tokio::time::timeout(WAIT, async {
        while demo.status().is_ready() {
            assert!(watch.changed().await, "the upstream runtime is gone");
        }
    })
    .await
    .expect("the upstream runtime saw the kill");
}

#[tokio::test]
async fn the_first_call_after_an_upstream_is_killed_waits_for_its_restart_and_is_served() {
    // The default backoff: the restart comes some half a second after the kill.
    let (upstream, demo) = upstream(demo_stdio(&["--faults"]).into()).await;
    let (front, gateway, _served) = fronted(&upstream).await;
    let listed = upstream.catalogue();
    assert!(listed.get("echo").is_some());
    kill(&upstream, &demo).await;
    assert!(
        matches!(demo.status().state, ServerState::Restarting { .. }),
        "{:?}",
        demo.status().state
    );
    let echo = gateway
        .call_tool("echo", json!({"text": "after the kill"}))
        .timeout(WAIT)
        .await
        .unwrap_or_else(|e| panic!("the first call after the kill failed: {e}"));
    assert_eq!(echo.text(), "after the kill");
    assert_eq!(demo.status().restarts, 1);
    // The tools never left the catalogue the gateway lists (its front clients heard no
    // list change): a rebuild that changed them would have given it a new version.
    assert_eq!(upstream.catalogue().version(), listed.version());
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn a_call_whose_upstream_cannot_restart_in_time_is_an_internal_error_naming_the_restart() {
    // The restart is 30 s away; the upstream's calls may take 300 ms.
    let slow = RestartPolicy::default()
        .with_initial_delay(Duration::from_secs(30))
        .with_jitter(0.0);
    let config = demo_stdio(&["--faults"])
        .restart(slow)
        .timeout(Duration::from_millis(300));
    let (upstream, demo) = upstream(config.into()).await;
    let (front, gateway, _served) = fronted(&upstream).await;
    kill(&upstream, &demo).await;
    let err = gateway
        .call_tool("echo", json!({"text": "too soon"}))
        .timeout(WAIT)
        .await
        .unwrap_err();
    match err.kind() {
        switchboard::ErrorKind::Rpc { code, message, .. } => {
            assert_eq!(*code, -32603, "{message}");
            assert!(message.contains("demo"), "names the upstream: {message}");
            assert!(message.contains("restarting"), "says why: {message}");
        }
        other => panic!("not the gateway's error: {other:?}"),
    }
    front.shutdown().await;
    upstream.shutdown().await;
}
