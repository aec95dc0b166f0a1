//! A crash fails every pending call at once; calls while down fail fast.

use std::time::{Duration, Instant};

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{CloseCause, RestartPolicy, ServerState};

use crate::support::*;

#[tokio::test]
async fn a_crash_fails_every_pending_call_at_once_with_status_and_stderr() {
    let config = demo_stdio(&["--faults"]).restart(RestartPolicy::off());
    let (rt, server) = runtime_with(config).await;
    let pending = pending_sleeps(&server, 3).await;
    let started = Instant::now();
    let crash = server
        .call_tool(
            "crash",
            json!({"code": 3, "message": "fatal: demo exploded"}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(crash.kind(), ErrorKind::Disconnected { .. }),
        "{crash:?}"
    );
    for call in pending {
        let err = call.await.unwrap().unwrap_err();
        let ErrorKind::Disconnected { reason } = err.kind() else {
            panic!("{err:?}")
        };
        assert_eq!(err.tool(), Some("sleep"));
        assert_eq!(
            reason.cause,
            CloseCause::Exited {
                code: Some(3),
                signal: None
            }
        );
        assert!(
            reason
                .stderr_tail
                .iter()
                .any(|l| l.contains("fatal: demo exploded")),
            "{:?}",
            reason.stderr_tail
        );
        let text = err.to_string();
        assert!(
            text.contains("status 3") && text.contains("demo exploded"),
            "{text}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.in_flight(), 0);
    assert!(matches!(server.status().state, ServerState::Down { .. }));

    // While down, calls fail fast.
    let t = Instant::now();
    let err = server
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("status 3"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(1));
    rt.shutdown().await;
}

#[tokio::test]
async fn an_in_memory_server_that_goes_away_fails_pending_calls() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let pending = tokio::spawn(server.call_tool("hang", json!({})));
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 1).await);
    rt.shutdown().await;
    let err = pending.await.unwrap().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. }),
        "{err:?}"
    );
    let err = server
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. }),
        "{err:?}"
    );
}
