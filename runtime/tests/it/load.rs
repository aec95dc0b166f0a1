//! Many calls at once, from many threads, and a server flooding stderr.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_concurrent_calls_complete_with_nothing_left_pending() {
    let (rt, server) = runtime_with(demo_memory(&[])).await;
    let tasks: Vec<_> = (0..10_000)
        .map(|i| {
            let server = server.clone();
            tokio::spawn(async move {
                let text = format!("m{i}");
                let r = server.call_tool("echo", json!({ "text": text })).await?;
                assert_eq!(r.text(), text);
                Ok::<_, switchboard::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(server.in_flight(), 0);
    rt.shutdown().await;
}

/// Over stdio a lone caller writes its line itself and a burst goes through the writer
/// task: callers on plain threads and on the runtime's workers, at once, mix both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_works_from_a_multi_threaded_runtime_and_plain_threads() {
    let (rt, server) = runtime_with(demo_stdio(&[])).await;
    let handle = tokio::runtime::Handle::current();
    let add = |server: switchboard::ServerHandle, t: i64| async move {
        for i in 0..200 {
            let r = server
                .call_tool("add", json!({"a": t, "b": i}))
                .await
                .unwrap();
            assert_eq!(r.text(), (t + i).to_string());
            if i % 50 == 0 {
                // Dropped before its answer: a cancellation follows its request.
                let call = server.call_tool("sleep", json!({"ms": 1000}));
                let _ = tokio::time::timeout(Duration::from_millis(1), call).await;
            }
        }
    };
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (server, handle) = (server.clone(), handle.clone());
            std::thread::spawn(move || handle.block_on(add(server, t)))
        })
        .collect();
    let tasks: Vec<_> = (4..8)
        .map(|t| tokio::spawn(add(server.clone(), t)))
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 0).await);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_stderr_flood_does_not_stall_calls() {
    let (rt, server) = runtime_with(demo_stdio(&["--faults"])).await;
    let flood = tokio::spawn(
        server
            .call_tool(
                "stderr_burst",
                json!({"lines": 200_000, "bytes_per_line": 200}),
            )
            .timeout(Duration::from_secs(60)),
    );
    let started = Instant::now();
    for i in 0..50 {
        let r = server
            .call_tool("echo", json!({"text": format!("{i}")}))
            .await
            .unwrap();
        assert_eq!(r.text(), format!("{i}"));
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    let r = flood.await.unwrap().unwrap();
    assert!(r.text().contains("200000"), "{}", r.text());
    rt.shutdown().await;
}
