//! A server that cannot start fails calls at once with the reason, however long their
//! deadline, and goes on doing so while it is retried: a spawn error, an unsupported
//! protocol version, an `initialize` answered with an error.

use std::time::Duration;

use serde_json::json;
use switchboard::{Error, RestartPolicy, Runtime, ServerConfig, ServerHandle, ServerState};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::*;

/// Every call's own deadline: far longer than "at once".
const DEADLINE: Duration = Duration::from_secs(30);

/// What "at once" means here: a wide margin, yet a third of the deadline.
const AT_ONCE: Duration = Duration::from_secs(10);

/// A runtime with one server named `broken`, retried with the default backoff for as long
/// as the test runs: the default crash-loop guard would give up after five failures (some
/// 8 s), and a server that gave up fails even a call that waited, within the 10 s.
async fn broken(config: impl Into<ServerConfig>) -> (Runtime, ServerHandle) {
    let retrying = RestartPolicy::default().with_crash_loop(1000, Duration::from_secs(60));
    let rt = Runtime::builder()
        .server("broken", config.into().restart(retrying))
        .build()
        .await
        .expect("runtime");
    let server = rt.server("broken").expect("server");
    (rt, server)
}

/// Calls `echo` with a 30 s deadline; the call must fail within 10 s, as `Unavailable`.
async fn unavailable_at_once(server: &ServerHandle) -> String {
    let call = server
        .call_tool("echo", json!({"text": "x"}))
        .timeout(DEADLINE);
    let err = tokio::time::timeout(AT_ONCE, call)
        .await
        .expect("the call waited for its deadline instead of failing at once")
        .unwrap_err();
    let Error::Unavailable { reason, .. } = &err else {
        panic!("expected Unavailable, got {err:?}")
    };
    let state = server.status().state;
    assert!(
        matches!(
            state,
            ServerState::Restarting { .. } | ServerState::Starting
        ),
        "the server gave up instead of being retried: {state:?}"
    );
    reason.to_string()
}

/// Waits until the server has been retried once and that attempt has failed too.
async fn until_a_restart_attempt_failed(server: &ServerHandle) {
    let retried = || {
        let status = server.status();
        status.restarts >= 1 && matches!(status.state, ServerState::Restarting { .. })
    };
    assert!(
        eventually(Duration::from_secs(10), retried).await,
        "no failed restart attempt: {:?}",
        server.status()
    );
}

#[tokio::test]
async fn a_command_that_does_not_exist_fails_calls_at_once_with_the_spawn_error() {
    let (rt, server) = broken(ServerConfig::stdio("/nonexistent/mcp-server")).await;
    let reason = unavailable_at_once(&server).await;
    assert!(
        reason.contains("could not be started") && reason.contains("/nonexistent/mcp-server"),
        "{reason}"
    );
    until_a_restart_attempt_failed(&server).await;
    let reason = unavailable_at_once(&server).await;
    assert!(reason.contains("/nonexistent/mcp-server"), "{reason}");
    rt.shutdown().await;
}

#[tokio::test]
async fn an_unsupported_protocol_version_fails_calls_at_once_naming_it() {
    let (rt, server) = broken(demo_memory(&["--protocol-version", "1999-01-01"])).await;
    let reason = unavailable_at_once(&server).await;
    assert!(reason.contains("1999-01-01"), "{reason}");
    until_a_restart_attempt_failed(&server).await;
    let reason = unavailable_at_once(&server).await;
    assert!(reason.contains("1999-01-01"), "{reason}");
    rt.shutdown().await;
}

/// A peer that answers `initialize` with a JSON-RPC error, and nothing else (it drops the
/// era probe, so it is configured as legacy: the probe would wait for its timeout).
fn refusing_peer() -> ServerConfig<switchboard::transport::Memory> {
    let peer = ServerConfig::memory(|io| async move {
        let (reader, mut writer) = tokio::io::split(io);
        let mut lines = BufReader::new(reader).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if msg["method"] != "initialize" {
                continue;
            }
            let refusal = json!({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32603, "message": "no clients today"
            }});
            let mut out = refusal.to_string().into_bytes();
            out.push(b'\n');
            if writer.write_all(&out).await.is_err() {
                break;
            }
        }
    });
    peer.protocol(switchboard::Protocol::Legacy)
}

#[tokio::test]
async fn an_initialize_answered_with_an_error_fails_calls_at_once_naming_the_error() {
    let (rt, server) = broken(refusing_peer()).await;
    let reason = unavailable_at_once(&server).await;
    assert!(
        reason.contains("initialize") && reason.contains("no clients today"),
        "{reason}"
    );
    until_a_restart_attempt_failed(&server).await;
    let reason = unavailable_at_once(&server).await;
    assert!(reason.contains("no clients today"), "{reason}");
    rt.shutdown().await;
}
