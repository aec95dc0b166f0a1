//! Supervised restarts: backoff, re-initialize, crash loops, calls during a restart,
//! liveness, panicking actors, and adding and removing servers at run time.

use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig, ServerState, Unavailability};

use crate::support::*;

fn fast_restarts() -> RestartPolicy {
    RestartPolicy::default()
        .with_initial_delay(Duration::from_millis(100))
        .with_jitter(0.0)
}

/// The demo server in memory, pinged every `ping` when idle, dead after 3 strikes, restarted
/// quickly.
fn watched(ping: Duration, timeout: Duration) -> ServerConfig<switchboard::transport::Memory> {
    let liveness = Liveness::default()
        .with_ping(ping, timeout)
        .with_max_failures(3);
    demo_memory(&["--faults"])
        .liveness(liveness)
        .restart(fast_restarts())
}

/// The server was restarted at least once, is ready again, and answers.
async fn assert_back_after_a_restart(server: &switchboard::ServerHandle, text: &str) {
    let restarted_and_ready = || {
        let status = server.status();
        status.restarts >= 1 && status.is_ready()
    };
    assert!(
        eventually(Duration::from_secs(10), restarted_and_ready).await,
        "{:?}",
        server.status().state
    );
    assert_echoes(server, text).await;
}

async fn wait_for_state(
    server: &switchboard::ServerHandle,
    within: Duration,
    want: impl Fn(&ServerState) -> bool,
) -> bool {
    eventually(within, || want(&server.status().state)).await
}

#[tokio::test]
async fn a_crash_is_followed_by_backoff_a_new_handshake_and_the_tools_back() {
    let config = demo_stdio(&["--faults"]).restart(fast_restarts());
    let (rt, server) = runtime_with(config).await;
    let first_pid = server.status().pid.unwrap();
    let tools_before = server.tools().len();
    let err = server
        .call_tool("crash", json!({"code": 9}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Disconnected { .. }),
        "{err:?}"
    );
    assert!(
        wait_for_state(&server, Duration::from_secs(5), |s| matches!(
            s,
            ServerState::Restarting { .. }
        ))
        .await
            || server.status().restarts >= 1
    );
    assert!(
        wait_for_state(
            &server,
            Duration::from_secs(10),
            ServerState::is_ready_state
        )
        .await
    );
    let status = server.status();
    assert_eq!(status.restarts, 1);
    assert_ne!(status.pid, Some(first_pid));
    assert_eq!(status.tools.len(), tools_before);
    assert_echoes(&server, "back").await;
    rt.shutdown().await;
}

#[tokio::test]
async fn a_crash_loop_ends_in_failed() {
    let policy = fast_restarts()
        .with_initial_delay(Duration::from_millis(10))
        .with_crash_loop(3, Duration::from_secs(30));
    let rt = Runtime::builder()
        .server(
            "broken",
            ServerConfig::stdio("/nonexistent/server").restart(policy),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("broken").unwrap();
    assert!(
        wait_for_state(&server, Duration::from_secs(10), |s| matches!(
            s,
            ServerState::Failed { .. }
        ))
        .await,
        "{:?}",
        server.status().state
    );
    let ServerState::Failed { error } = server.status().state else {
        unreachable!()
    };
    assert!(
        matches!(error.kind(), ErrorKind::CrashLoop { failures: 3, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("/nonexistent/server"), "{error}");
    // Failed for good: calls fail at once (no start to wait for), saying so. (That nothing
    // restarts it by itself is the backoff's unit test.)
    let err = server.call_tool("x", json!({})).await.unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unavailable {
                because: Unavailability::GaveUp,
                ..
            }
        ),
        "{err:?}"
    );
    let restarts = server.status().restarts;
    // Asking starts it again, with the crash-loop guard reset.
    rt.restart_server("broken").await.unwrap();
    assert!(server.status().restarts > restarts);
    assert!(
        !matches!(server.status().state, ServerState::Failed { .. }),
        "{:?}",
        server.status().state
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_during_a_restart_waits_then_succeeds_or_fails_unavailable() {
    let policy = fast_restarts().with_initial_delay(Duration::from_millis(600));
    let (rt, server) = runtime_with(demo_stdio(&["--faults"]).restart(policy)).await;
    let _ = server.call_tool("crash", json!({})).await;
    assert!(
        wait_for_state(&server, Duration::from_secs(5), |s| matches!(
            s,
            ServerState::Restarting { .. }
        ))
        .await
    );
    let patient = tokio::spawn(
        server
            .call_tool("echo", json!({"text": "waited"}))
            .timeout(Duration::from_secs(10)),
    );
    let hasty = server
        .call_tool("echo", json!({"text": "hasty"}))
        .timeout(Duration::from_millis(100))
        .await
        .unwrap_err();
    let ErrorKind::Unavailable { reason, .. } = hasty.kind() else {
        panic!("{hasty:?}")
    };
    assert!(
        reason.contains("restarting") && reason.contains("status"),
        "{reason}"
    );
    assert_eq!(patient.await.unwrap().unwrap().text(), "waited");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_made_right_after_a_crash_waits_for_the_restart_and_succeeds() {
    // The default restart policy: the restart comes after a backoff of about half a second.
    let (rt, server) = runtime_with(demo_stdio(&["--faults"])).await;
    let first_pid = server.status().pid;
    let err = server.call_tool("crash", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Disconnected { .. }),
        "{err:?}"
    );
    // At once, while the server is down: the call waits for readiness within its deadline.
    let result = server
        .call_tool("echo", json!({"text": "after the restart"}))
        .timeout(Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("the call did not wait for the restart: {e}"));
    assert_eq!(result.text(), "after the restart");
    let status = server.status();
    assert_eq!(status.restarts, 1);
    assert_ne!(status.pid, first_pid);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_hung_server_is_detected_by_liveness_and_restarted() {
    let (rt, server) = runtime_with(watched(
        Duration::from_millis(100),
        Duration::from_millis(400),
    ))
    .await;
    assert_eq!(
        server.call_tool("freeze", json!({})).await.unwrap().text(),
        "frozen"
    );
    assert!(
        wait_for_state(&server, Duration::from_secs(10), |s| matches!(
            s,
            ServerState::Restarting { last_error, .. } if last_error.contains("stopped responding")
        ))
        .await
            || server.status().restarts >= 1,
        "{:?}",
        server.status().state
    );
    assert_back_after_a_restart(&server, "alive").await;
    rt.shutdown().await;
}

#[tokio::test]
async fn a_burst_of_list_changed_causes_one_relist() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    // Once ready, the server's prompts are listed and published: wait for that first, so
    // that the next publication is the re-list's.
    let prompts_listed = || !server.status().prompts.is_empty();
    assert!(eventually(Duration::from_secs(10), prompts_listed).await);
    let resources_listed = || !server.status().resources.is_empty();
    assert!(eventually(Duration::from_secs(10), resources_listed).await);
    let mut watch = rt.watch();
    let published = server.status().since;
    server
        .call_tool("list_changed", json!({"count": 4}))
        .await
        .unwrap();
    // The re-list publishes the server's status again: that is the moment to count.
    assert!(
        eventually(Duration::from_secs(10), || server.status().since
            != published)
        .await,
        "no re-list after list_changed"
    );
    assert!(
        tokio::time::timeout(Duration::from_secs(5), watch.changed())
            .await
            .is_ok_and(|alive| alive),
        "the runtime's watch did not see the re-list"
    );
    let stats = server.call_tool("stats", json!({})).await.unwrap();
    let lists = stats.structured_content.unwrap()["methods"]["tools/list"]
        .as_u64()
        .unwrap();
    // One during the handshake, one for the burst.
    assert_eq!(lists, 2);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_panicking_actor_counts_as_a_crash() {
    let (rt, server) = runtime_with(demo_stdio(&["--faults"]).restart(fast_restarts())).await;
    let pid = server.status().pid.unwrap();
    let pending = tokio::spawn(server.call_tool("hang", json!({})));
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 1).await);
    rt.inject_actor_panic("demo");
    let err = pending.await.unwrap().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Disconnected { .. }),
        "{err:?}"
    );
    // The old process is killed with its actor, and a new one takes over.
    assert!(eventually(Duration::from_secs(5), || process_is_gone(pid)).await);
    assert!(
        wait_for_state(
            &server,
            Duration::from_secs(10),
            ServerState::is_ready_state
        )
        .await
    );
    assert_echoes(&server, "again").await;
    assert!(server.status().restarts >= 1);
    rt.shutdown().await;
}

#[tokio::test]
async fn servers_can_be_added_and_removed_at_run_time() {
    let (rt, _first) = runtime_with(demo_memory(&[])).await;
    let mut watch = rt.watch();
    let second = rt.add_server("second", demo_stdio(&[])).await.unwrap();
    assert!(second.status().is_ready());
    assert!(watch.changed().await);
    assert_eq!(rt.servers().len(), 2);
    let err = rt.add_server("second", demo_memory(&[])).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DuplicateServer), "{err:?}");
    let pid = second.status().pid.unwrap();
    rt.remove_server("second").await.unwrap();
    assert!(process_is_gone(pid));
    assert_eq!(rt.servers().len(), 1);
    assert!(rt.server("second").is_err());
    let err = second
        .call_tool("echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. }),
        "{err:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn one_broken_server_does_not_disturb_two_others() {
    let rt = Runtime::builder()
        .server("a", demo_memory(&[]))
        .server("b", demo_stdio(&[]))
        .server("broken", ServerConfig::stdio("/nonexistent/server"))
        .build()
        .await
        .unwrap();
    let broken = rt.server("broken").unwrap();
    assert!(!broken.status().is_ready());
    for name in ["a", "b"] {
        let s = rt.server(name).unwrap();
        assert_eq!(
            s.call_tool("echo", json!({"text": name}))
                .await
                .unwrap()
                .text(),
            name
        );
    }
    rt.shutdown().await;
}

/// Answers `roots/list` slowly, counting the requests it finished.
#[derive(Debug)]
struct SlowRoots(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl switchboard::client::RootsHandler for SlowRoots {
    fn list_roots(
        &self,
        _server: &str,
    ) -> switchboard::client::BoxFuture<Result<Vec<switchboard::client::Root>, String>> {
        let done = self.0.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(vec![switchboard::client::Root::new("file:///tmp")])
        })
    }
}

#[tokio::test]
async fn a_server_request_in_flight_across_a_restart_is_answered_into_the_void_not_leaked() {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handlers = switchboard::client::ClientHandlers::new().roots(SlowRoots(done.clone()));
    let config = demo_stdio(&["--faults"])
        .restart(fast_restarts())
        .client_handlers(handlers);
    let (rt, server) = runtime_with(config).await;
    // The server asks for roots, and crashes while the handler is still working on it.
    let asking = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .call_tool("ping_client", json!({"method": "roots/list"}))
                .await
        }
    });
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 1).await);
    let _ = server.call_tool("crash", json!({"code": 1})).await;
    let lost = asking.await.unwrap().unwrap_err();
    assert!(
        matches!(lost.kind(), ErrorKind::Disconnected { .. }),
        "{lost:?}"
    );
    // The handler finishes, its answer goes nowhere, and the new session works.
    assert!(
        eventually(Duration::from_secs(5), || done
            .load(std::sync::atomic::Ordering::SeqCst)
            == 1)
        .await
    );
    assert_back_after_a_restart(&server, "after").await;
    assert_eq!(server.in_flight(), 0);
    // The restarted server's own request is answered as usual.
    let again = server
        .call_tool("ping_client", json!({"method": "roots/list"}))
        .await
        .unwrap();
    assert!(again.text().contains("file:///tmp"), "{}", again.text());
    rt.shutdown().await;
}

#[tokio::test]
async fn a_replacement_whose_actor_panics_while_it_starts_is_revived_and_takes_the_name() {
    let (rt, old) = runtime_with(demo_stdio(&[]).restart(fast_restarts())).await;
    let old_pid = old.status().pid.expect("the old server's pid");
    // The new one takes a second to start, so that its actor can panic before it is ready.
    let slow = ServerConfig::stdio("sh")
        .args([
            "-c",
            &format!("sleep 1; exec {}", demo_child_command_line()),
        ])
        .env(switchboard_demo::ENV_VAR, "")
        .restart(fast_restarts());
    let replacing = tokio::spawn({
        let rt = rt.clone();
        async move { rt.replace_server("demo", slow).await }
    });
    // The replacement is under way (its message reached the supervisor) well within the
    // second its start takes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    rt.inject_replacement_panic("demo");
    // Unheard, the panic left the replacement `Starting` for good and this wait with it.
    let new = tokio::time::timeout(Duration::from_secs(20), replacing)
        .await
        .expect("replace_server returns although the new server's actor panicked")
        .unwrap()
        .expect("the replacement takes the name");
    assert!(
        wait_for_state(&new, Duration::from_secs(10), ServerState::is_ready_state).await,
        "the revived replacement becomes ready: {:?}",
        new.status().state
    );
    assert!(new.status().restarts >= 1, "{:?}", new.status());
    assert_echoes(&rt.server("demo").unwrap(), "after").await;
    assert!(eventually(Duration::from_secs(10), || process_is_gone(old_pid)).await);
    rt.shutdown().await;
}
