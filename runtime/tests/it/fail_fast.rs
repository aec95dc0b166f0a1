//! A server that cannot start fails calls at once with the reason, however long their
//! deadline, and goes on doing so while it is retried: a spawn error, an unsupported
//! protocol version, an `initialize` answered with an error.

use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;
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
    let ErrorKind::Unavailable { reason, .. } = err.kind() else {
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

/// `sh -c SCRIPT`: a command that starts, so its spawn succeeds, and then does what the
/// script says.
fn shell(script: &str) -> ServerConfig<switchboard::transport::Stdio> {
    ServerConfig::stdio("sh").args(["-c", script])
}

/// The errors behind `error`, outermost first.
fn causes(error: &Error) -> Vec<Error> {
    let mut chain = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = next {
        if let Some(e) = cause.downcast_ref::<Error>() {
            chain.push(e.clone());
        } else if let Some(e) = cause.downcast_ref::<std::sync::Arc<Error>>() {
            chain.push((**e).clone());
        }
        next = cause.source();
    }
    chain
}

#[tokio::test]
async fn a_process_that_exits_during_its_handshake_fails_calls_at_once_with_its_exit_status() {
    let (rt, server) = broken(shell("echo 'cannot find module x' >&2; exit 3")).await;
    for _ in 0..2 {
        let call = server
            .call_tool("echo", json!({"text": "x"}))
            .timeout(DEADLINE);
        let err = tokio::time::timeout(AT_ONCE, call)
            .await
            .expect("the call waited for its deadline instead of failing at once")
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Unavailable { .. }),
            "{err:?}"
        );
        // The exit status and the stderr tail are the call's source, typed.
        let disconnect = causes(&err).into_iter().find_map(|e| match e.kind() {
            ErrorKind::Disconnected { reason } => Some(reason.clone()),
            _ => None,
        });
        let reason = disconnect.unwrap_or_else(|| panic!("no disconnect behind {err:?}"));
        assert_eq!(
            reason.cause,
            switchboard::CloseCause::Exited {
                code: Some(3),
                signal: None
            },
            "{reason}"
        );
        assert!(
            reason
                .stderr_tail
                .iter()
                .any(|l| l.contains("cannot find module x")),
            "{reason}"
        );
        until_a_restart_attempt_failed(&server).await;
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_made_while_a_retry_runs_waits_for_that_retry_only() {
    // The first start exits; the second is slow (a second), then serves.
    let dir = std::env::temp_dir().join(format!("sb-retry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("started-once");
    let _ = std::fs::remove_file(&marker);
    let script = format!(
        "if [ -e '{m}' ]; then sleep 1; exec {demo}; else touch '{m}'; exit 3; fi",
        m = marker.display(),
        demo = demo_child_command_line(),
    );
    // A long backoff, so that "during the backoff" and "during the retry" are far apart.
    let retrying = RestartPolicy::default()
        .with_initial_delay(Duration::from_secs(3))
        .with_jitter(0.0)
        .with_crash_loop(1000, Duration::from_secs(60));
    let rt = Runtime::builder()
        .server(
            "broken",
            shell(&script)
                .env(switchboard_demo::ENV_VAR, "")
                .protocol(switchboard::Protocol::Legacy)
                .restart(retrying),
        )
        .build()
        .await
        .expect("runtime");
    let server = rt.server("broken").unwrap();
    // During the backoff: at once.
    unavailable_at_once(&server).await;
    // Once the retry is under way, a call waits for it, and it succeeds.
    let retrying = || {
        let status = server.status();
        status.restarts >= 1 && matches!(status.state, ServerState::Starting)
    };
    assert!(
        eventually(Duration::from_secs(10), retrying).await,
        "no retry: {:?}",
        server.status()
    );
    let result = server
        .call_tool("echo", json!({"text": "waited"}))
        .timeout(DEADLINE)
        .await
        .expect("the call made during the retry was not served by it");
    assert_eq!(result.text(), "waited");
    rt.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
