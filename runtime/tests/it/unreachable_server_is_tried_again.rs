//! An HTTP server the runtime could not reach is tried again when a call wants it, ahead of
//! the backoff: a call made once the server is back on its port is served, instead of
//! failing with the refusal of an attempt made while it was down; a call made while it is
//! still down fails with the error of one new attempt, not after its whole deadline; and
//! however many calls knock, the attempts stay few and never add up to a crash loop.
//!
//! The server is the demo as a child process serving Streamable HTTP, killed (`SIGKILL`)
//! and started again on the same port.

use std::time::{Duration, Instant};

use serde_json::json;

use switchboard::transport::HttpKind;
use switchboard::ErrorKind;
use switchboard::Unavailability::StartFailed;
use switchboard::{Error, RestartPolicy, Runtime, ServerConfig, ServerHandle, ServerState};

use crate::support::*;

/// Every call's own deadline.
const DEADLINE: Duration = Duration::from_secs(10);

/// A runtime whose one server, `demo`, is Streamable HTTP on `port` of 127.0.0.1, retried
/// after `first_retry` (doubling), and given up only after `max_failures` failures within a
/// minute.
async fn runtime_on(
    port: u16,
    first_retry: Duration,
    max_failures: u32,
) -> (Runtime, ServerHandle) {
    let policy = RestartPolicy::default()
        .with_initial_delay(first_retry)
        .with_max_delay(first_retry.max(Duration::from_secs(30)))
        .with_jitter(0.0)
        .with_crash_loop(max_failures, Duration::from_secs(60));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = ServerConfig::http(url, HttpKind::StreamableHttp).restart(policy);
    let rt = Runtime::builder()
        .server("demo", config)
        .build()
        .await
        .expect("runtime");
    let server = rt.server("demo").expect("server");
    (rt, server)
}

/// Whether `error` is the failure of a start (an attempt that could not reach the server).
fn is_a_failed_start(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::Unavailable {
            because: StartFailed,
            ..
        }
    )
}

#[tokio::test]
async fn a_call_to_an_http_server_back_before_its_retry_is_served_and_one_while_it_is_down_fails_after_one_new_attempt(
) {
    let port = free_port();
    // The first start finds nothing on the port; the backoff's retry is 30 s away.
    let (rt, server) = runtime_on(port, Duration::from_secs(30), 1000).await;
    let failed_once = || matches!(server.status().state, ServerState::Restarting { .. });
    assert!(
        eventually(DEADLINE, failed_once).await,
        "{:?}",
        server.status().state
    );
    assert_eq!(server.status().restarts, 0);
    let ServerState::Restarting { next_retry_at, .. } = server.status().state else {
        unreachable!()
    };

    // Still down: the call has the server tried once more, and gets that attempt's refusal
    // (not the first start's, and not after its 10 s).
    let asked = Instant::now();
    let err = server
        .call_tool("echo", json!({"text": "x"}))
        .timeout(DEADLINE)
        .await
        .unwrap_err();
    assert!(is_a_failed_start(&err), "{err:?}");
    assert!(asked.elapsed() < DEADLINE / 2, "{:?}", asked.elapsed());
    let status = server.status();
    assert_eq!(status.restarts, 1, "one new attempt for the call");
    // That attempt ran ahead of the backoff, whose retry stays where it was.
    match status.state {
        ServerState::Restarting {
            next_retry_at: still,
            ..
        } => assert_eq!(still, next_retry_at),
        other => panic!("{other:?}"),
    }

    // Back on its port: the next call is served by a new attempt, long before the retry.
    let demo = HttpDemo::start(port).await;
    let asked = Instant::now();
    let result = server
        .call_tool("echo", json!({"text": "back"}))
        .timeout(DEADLINE)
        .await
        .unwrap_or_else(|e| panic!("the call made once the server was back failed: {e}"));
    assert_eq!(result.text(), "back");
    assert!(asked.elapsed() < DEADLINE / 2, "{:?}", asked.elapsed());
    assert!(server.status().is_ready());
    rt.shutdown().await;
    demo.kill();
}

#[tokio::test]
async fn many_calls_to_an_http_server_still_down_share_few_attempts_and_never_make_a_crash_loop() {
    let port = free_port();
    // Two failures within a minute would be a crash loop: the first start is one.
    let (rt, server) = runtime_on(port, Duration::from_secs(30), 2).await;
    let failed_once = || matches!(server.status().state, ServerState::Restarting { .. });
    assert!(
        eventually(DEADLINE, failed_once).await,
        "{:?}",
        server.status().state
    );
    for wave in 0..3 {
        let before = server.status().restarts;
        let calls: Vec<_> = (0..20)
            .map(|_| {
                tokio::spawn(
                    server
                        .call_tool("echo", json!({"text": "x"}))
                        .timeout(DEADLINE),
                )
            })
            .collect();
        for call in calls {
            let err = call.await.unwrap().unwrap_err();
            assert!(is_a_failed_start(&err), "wave {wave}: {err:?}");
        }
        let attempts = server.status().restarts - before;
        // Calls made before an attempt began share it; a straggler made while it ran may
        // have one more, 250 ms later.
        assert!(
            (1..=3).contains(&attempts),
            "wave {wave}: 20 calls made {attempts} attempts"
        );
        // The early attempts failed ahead of the retry: no crash loop, the server is still
        // retried.
        let state = server.status().state;
        assert!(
            matches!(state, ServerState::Restarting { .. }),
            "wave {wave}: {state:?}"
        );
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn an_http_server_restarted_on_its_port_50_times_serves_every_call_made_once_it_accepts() {
    let port = free_port();
    let mut demo = HttpDemo::start(port).await;
    // Fifty restarts in a minute are a crash loop by the default guard: not this one's.
    let (rt, server) = runtime_on(port, Duration::from_millis(500), 10_000).await;
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    let began = Instant::now();
    for round in 0..50 {
        demo.kill();
        // While it is down, calls fail, until one has an attempt made and refused: the
        // runtime's reconnect ran while the server was down, and its failure is what a
        // call made next would get, were it not tried again.
        let mut refused = false;
        for _ in 0..20 {
            let down = server
                .call_tool("echo", json!({"text": "down"}))
                .timeout(DEADLINE)
                .await;
            match down {
                Err(e) if is_a_failed_start(&e) => {
                    refused = true;
                    break;
                }
                Err(_) => {}
                Ok(_) => panic!("round {round}: served while the server was down"),
            }
        }
        assert!(refused, "round {round}: no attempt was refused while down");
        demo = HttpDemo::start(port).await;
        // Every call made once the port accepts is served.
        let calls: Vec<_> = (0..4)
            .map(|i| {
                let text = format!("round {round}, call {i}");
                let call = server
                    .call_tool("echo", json!({ "text": text }))
                    .timeout(DEADLINE);
                tokio::spawn(async move { (text, call.await) })
            })
            .collect();
        for call in calls {
            let (text, result) = call.await.unwrap();
            let result = result.unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(result.text(), text);
        }
    }
    let status = server.status();
    eprintln!(
        "50 restarts of an HTTP demo server on its port: {:?}, {} attempts",
        began.elapsed(),
        status.restarts
    );
    assert!(status.is_ready(), "{:?}", status.state);
    rt.shutdown().await;
    demo.kill();
}
