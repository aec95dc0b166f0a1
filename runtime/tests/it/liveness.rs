//! Liveness never kills a server that answers: a timed-out call is a strike only when
//! nothing at all was heard from the server since it was written, calls timing out together
//! are one silence, and callers whose deadline passed get `Timeout`, never `Disconnected`.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::json;

use switchboard::transport::Memory;
use switchboard::ErrorKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig, ServerHandle};

use crate::support::*;

/// The demo server in memory with fault tools, default liveness unless told otherwise,
/// restarted quickly.
fn faulty() -> ServerConfig<Memory> {
    demo_memory(&["--faults"]).restart(
        RestartPolicy::default()
            .with_initial_delay(Duration::from_millis(100))
            .with_jitter(0.0),
    )
}

fn hang(server: &ServerHandle, timeout: Duration) -> switchboard::Call {
    server.call_tool("hang", json!({})).timeout(timeout)
}

/// A runtime with one server named `demo` that exports its metrics, so that a test can see
/// when something was heard from the server without sending it anything.
async fn counting(config: impl Into<ServerConfig>) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .server("demo", config)
        .metrics_listener(([127, 0, 0, 1], 0).into())
        .build()
        .await
        .expect("runtime");
    let server = rt.server("demo").expect("server");
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    (rt, server)
}

/// Messages heard from the server so far (answers and notifications, every incarnation).
fn heard(rt: &Runtime) -> f64 {
    let body = rt.render_metrics().expect("the runtime exports metrics");
    body.lines()
        .find_map(|line| {
            line.strip_prefix(r#"switchboard_messages_total{server="demo",direction="in"} "#)
        })
        .map_or(0.0, |n| n.trim().parse().expect("a number"))
}

/// Waits until something more than `before` messages was heard from the server: after a
/// silent timeout that is the answer to the actor's probe, the only request it still answers.
async fn until_probe_answered(rt: &Runtime, before: f64) {
    assert!(
        eventually(Duration::from_secs(10), || heard(rt) > before).await,
        "the probe that follows a silent timeout was never answered"
    );
}

fn assert_still_up(server: &ServerHandle) {
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.restarts, 0, "the server was restarted");
}

#[tokio::test]
async fn a_slow_tool_timing_out_again_and_again_never_restarts_a_server_that_answers_pings() {
    // Idle pings far apart: only the probe after a silent timeout can hear the server.
    let liveness = Liveness::default().with_ping(Duration::from_secs(600), Duration::from_secs(5));
    let (rt, server) = counting(faulty().liveness(liveness)).await;
    for _ in 0..5 {
        let before = heard(&rt);
        let err = hang(&server, Duration::from_millis(100)).await.unwrap_err();
        assert!(err.is_timeout(), "{err:?}");
        // Each timeout is a silence, probed at once; the probe's answer comes before the
        // next silence, so the strikes never add up.
        until_probe_answered(&rt, before).await;
    }
    assert_still_up(&server);
    assert_echoes(&server, "still here").await;
    rt.shutdown().await;
}

#[tokio::test]
async fn three_concurrent_timeouts_while_another_call_is_answered_every_10ms_do_not_restart() {
    let (rt, server) = runtime_with(faulty()).await;
    let chatter = {
        let server = server.clone();
        tokio::spawn(async move {
            for i in 0..150 {
                assert_echoes(&server, &format!("tick {i}")).await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    for _ in 0..3 {
        let calls = (0..3).map(|_| hang(&server, Duration::from_millis(200)));
        for result in join_all(calls).await {
            let err = result.unwrap_err();
            assert!(err.is_timeout(), "{err:?}");
        }
    }
    chatter.await.unwrap();
    assert_still_up(&server);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_thousand_calls_timing_out_together_are_a_thousand_timeouts_and_no_restart() {
    let (rt, server) = counting(faulty()).await;
    let before = heard(&rt);
    let calls = (0..1000).map(|_| hang(&server, Duration::from_millis(300)));
    let results = join_all(calls).await;
    let mut timed_out: Vec<i64> = results
        .iter()
        .filter_map(|r| match r {
            Err(e) if e.is_timeout() => e.request_id(),
            _ => None,
        })
        .collect();
    assert_eq!(
        timed_out.len(),
        1000,
        "{:?}",
        results
            .iter()
            .find(|r| !matches!(r, Err(e) if matches!(e.kind(), ErrorKind::Timeout { .. })))
    );
    assert_eq!(server.in_flight(), 0);
    // One silence, one probe; once it is answered nothing more can strike the server.
    until_probe_answered(&rt, before).await;
    assert_still_up(&server);
    // Every timed-out call was cancelled on the wire, each under its own id.
    let mut cancelled;
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        cancelled = cancelled_ids(&server).await;
        if cancelled.len() >= 1000 || tokio::time::Instant::now() >= end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancelled.sort_unstable();
    timed_out.sort_unstable();
    assert_eq!(cancelled, timed_out);
    rt.shutdown().await;
}

#[tokio::test]
async fn ten_thousand_mixed_calls_never_restart_the_server_and_leave_nothing_in_flight() {
    let (rt, server) = runtime_with(faulty()).await;
    let (mut answered, mut tool_errors, mut timeouts, mut dropped) = (0, 0, 0, 0);
    for wave in 0..20 {
        let calls = (0..500).map(|i| {
            let server = server.clone();
            async move {
                match (wave * 500 + i) % 4 {
                    0 => {
                        let text = format!("call {i}");
                        let result = server.call_tool("echo", json!({"text": text})).await;
                        assert_eq!(result.unwrap().text(), text);
                        0
                    }
                    1 => {
                        let result = server.call_tool("fail", json!({"message": "no"})).await;
                        assert!(result.unwrap().is_error());
                        1
                    }
                    2 => {
                        let err = hang(&server, Duration::from_millis(50)).await.unwrap_err();
                        assert!(err.is_timeout(), "{err:?}");
                        2
                    }
                    _ => {
                        let call = hang(&server, Duration::from_secs(30));
                        let gave_up = tokio::time::timeout(Duration::from_millis(20), call).await;
                        assert!(gave_up.is_err(), "a hang call answered");
                        3
                    }
                }
            }
        });
        for kind in join_all(calls).await {
            match kind {
                0 => answered += 1,
                1 => tool_errors += 1,
                2 => timeouts += 1,
                _ => dropped += 1,
            }
        }
    }
    assert_eq!(
        (answered, tool_errors, timeouts, dropped),
        (2500, 2500, 2500, 2500)
    );
    assert_eq!(server.in_flight(), 0);
    assert_still_up(&server);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_silent_server_is_restarted_after_three_silences_and_late_callers_still_get_timeout() {
    // Idle pings far apart and slow: the calls' own silences must do it.
    let liveness = Liveness::default()
        .with_ping(Duration::from_secs(600), Duration::from_secs(600))
        .with_max_failures(3);
    let (rt, server) = runtime_with(faulty().liveness(liveness)).await;
    // The actor's own listings after the handshake answered first: answered after the freeze,
    // they would be heard during the first round, which then is no silence.
    let listed = || {
        let status = server.status();
        !status.prompts.is_empty() && !status.resources.is_empty()
    };
    assert!(eventually(Duration::from_secs(10), listed).await);
    assert_eq!(
        server.call_tool("freeze", json!({})).await.unwrap().text(),
        "frozen"
    );
    // Each round is written after the previous strike, so each is a new silence; the third
    // restarts the server in the instant twenty callers' deadlines pass. A caller whose
    // deadline had passed gets `Timeout`; only one still inside its deadline when the server
    // went down (its call written a little later, on a loaded machine) may get
    // `Disconnected`. (The test reads the time a little after the runtime settled the call,
    // hence the margin; that a deadline passed before a close always means `Timeout` is
    // checked exactly in `table_tests`.)
    let timeout = Duration::from_millis(150);
    let margin = Duration::from_millis(100);
    for round in 0..3 {
        let calls = (0..20).map(|_| async {
            let started = Instant::now();
            (hang(&server, timeout).await, started.elapsed())
        });
        for (result, elapsed) in join_all(calls).await {
            let err = result.unwrap_err();
            let before_deadline =
                matches!(err.kind(), ErrorKind::Disconnected { .. }) && elapsed < timeout + margin;
            assert!(
                err.is_timeout() || before_deadline,
                "round {round}, after {elapsed:?}: {err:?}"
            );
        }
    }
    let restarted = || server.status().restarts >= 1 && server.status().is_ready();
    assert!(
        eventually(Duration::from_secs(10), restarted).await,
        "{:?}",
        server.status().state
    );
    assert_echoes(&server, "back").await;
    rt.shutdown().await;
}
