//! `RuntimeBuilder::io_runtime`: servers' I/O on the caller's tokio runtime behaves as it does
//! on the actor thread (answers in any order, deadlines, cancels, crashes, restarts), and an
//! I/O runtime that shuts down fails calls and kills the server instead of hanging them.

use std::time::{Duration, Instant};

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{RestartPolicy, Runtime, ServerConfig, ServerHandle};

use crate::support::*;

async fn on_this_runtime(config: impl Into<ServerConfig>) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .io_runtime(tokio::runtime::Handle::current())
        .server("demo", config)
        .build()
        .await
        .expect("runtime");
    let server = rt.server("demo").expect("server");
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    (rt, server)
}

#[tokio::test(flavor = "current_thread")]
async fn one_thread_runs_the_calls_and_the_servers_io() {
    let (rt, server) = on_this_runtime(demo_stdio(&["--faults"])).await;
    for i in 0..200 {
        assert_echoes(&server, &format!("call {i}")).await;
    }
    // Answers out of order: the slow call is answered last, the others in between.
    let slow = tokio::spawn(server.call_tool("sleep", json!({"ms": 3000})));
    let many: Vec<_> = (0..64)
        .map(|i| {
            let server = server.clone();
            tokio::spawn(async move {
                let r = server
                    .call_tool("echo", json!({ "text": format!("n{i}") }))
                    .await
                    .unwrap();
                assert_eq!(r.text(), format!("n{i}"));
            })
        })
        .collect();
    for task in many {
        task.await.unwrap();
    }
    assert!(!slow.is_finished());
    slow.await.unwrap().unwrap();
    assert_eq!(server.in_flight(), 0);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_and_a_dropped_call_are_cancelled_on_the_wire() {
    let (rt, server) = on_this_runtime(demo_memory(&["--faults"])).await;
    let err = server
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let (true, Some(request_id)) = (err.is_timeout(), err.request_id()) else {
        panic!("{err:?}")
    };
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        server.call_tool("hang", json!({})),
    )
    .await;
    assert!(dropped.is_err(), "the hang call cannot finish");
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 0).await);
    // Both hang calls the server received were cancelled, each under its own id.
    let hung = call_ids(&server, "hang").await;
    assert_eq!(hung.len(), 2, "{hung:?}");
    assert_eq!(hung[0], request_id);
    until_cancelled(&server, hung[1]).await;
    assert_eq!(cancelled_ids(&server).await, hung);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_fails_pending_calls_at_once_and_the_server_comes_back() {
    let config = demo_stdio(&["--faults"]).restart(
        RestartPolicy::default()
            .with_initial_delay(Duration::from_millis(50))
            .with_max_delay(Duration::from_millis(200)),
    );
    let (rt, server) = on_this_runtime(config).await;
    let first_pid = server.status().pid.expect("a pid");
    let pending = pending_sleeps(&server, 3).await;
    let started = Instant::now();
    let _ = server
        .call_tool("crash", json!({"code": 4, "message": "boom"}))
        .await;
    for call in pending {
        let err = call.await.unwrap().unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Disconnected { .. })
                && err.to_string().contains("status 4"),
            "{err}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let status = server.status();
    assert!(
        !status.is_ready() || status.pid != Some(first_pid),
        "the crashed server is marked down before its callers hear of it"
    );
    let restarted = || {
        let status = server.status();
        status.is_ready() && status.pid != Some(first_pid)
    };
    assert!(eventually(Duration::from_secs(10), restarted).await);
    assert!(process_is_gone(first_pid));
    assert_echoes(&server, "back").await;
    let pid = server.status().pid.expect("a pid");
    rt.shutdown().await;
    assert!(process_is_gone(pid));
}

#[test]
fn when_the_io_runtime_shuts_down_calls_fail_and_the_server_is_killed() {
    let io = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let callers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let handle = io.handle().clone();
    let (rt, server, pending) = callers.block_on(async {
        let rt = Runtime::builder()
            .io_runtime(handle)
            .server(
                "demo",
                demo_stdio(&["--faults"]).restart(RestartPolicy::off()),
            )
            .build()
            .await
            .unwrap();
        let server = rt.server("demo").unwrap();
        assert_echoes(&server, "before").await;
        let pending = pending_sleeps(&server, 1).await;
        (rt, server, pending)
    });
    let pid = server.status().pid.expect("a pid");
    io.shutdown_background();
    callers.block_on(async {
        let [pending] = <[_; 1]>::try_from(pending).expect("one call");
        let err = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .expect("the pending call fails instead of hanging")
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Disconnected { .. })
                && err.to_string().contains("I/O runtime"),
            "{err}"
        );
        assert!(eventually(Duration::from_secs(5), || process_is_gone(pid)).await);
        assert!(!server.status().is_ready());
        let err = server
            .call_tool("echo", json!({"text": "after"}))
            .await
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Unavailable { .. }),
            "{err:?}"
        );
        rt.shutdown().await;
    });
}
