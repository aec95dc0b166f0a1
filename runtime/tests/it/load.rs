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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_works_from_a_multi_threaded_runtime_and_plain_threads() {
    let (rt, server) = runtime_with(demo_stdio(&[])).await;
    let handle = tokio::runtime::Handle::current();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let server = server.clone();
            let handle = handle.clone();
            std::thread::spawn(move || {
                handle.block_on(async move {
                    for i in 0..50 {
                        let r = server
                            .call_tool("add", json!({"a": t, "b": i}))
                            .await
                            .unwrap();
                        assert_eq!(r.text(), (t + i).to_string());
                    }
                })
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
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
