//! A caller that drops its call cancels it: the slot is freed and the server told, with the
//! id of the request it received.

use std::time::Duration;
use switchboard::ErrorKind;

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_dropped_call_is_cancelled_and_frees_its_slot() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"]).max_in_flight(1)).await;
    let call = server.call_tool("hang", json!({}));
    let task = tokio::spawn(call);
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 1).await);
    task.abort();
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 0).await);
    // The only slot is free again: the next calls get it.
    let hung = call_ids(&server, "hang").await;
    assert_eq!(hung.len(), 1, "{hung:?}");
    let cancelled = until_cancelled(&server, hung[0]).await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["requestId"], hung[0]);
    assert!(cancelled[0]["reason"]
        .as_str()
        .unwrap()
        .contains("cancelled"));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_dropped_progress_reset_call_sends_cancelled_with_its_id() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let call = server
        .call_tool("hang", json!({}))
        .timeout(Duration::from_secs(30))
        .reset_on_progress(true)
        .max_total(Duration::from_secs(60));
    let task = tokio::spawn(call);
    // Dropped once the server is working on it.
    let on_the_wire = || async { call_ids(&server, "hang").await.len() == 1 };
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while !on_the_wire().await {
        assert!(tokio::time::Instant::now() < end, "the call never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let hung = call_ids(&server, "hang").await;
    let cancelled = until_cancelled(&server, hung[0]).await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert!(
        cancelled[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("cancelled")),
        "{cancelled:?}"
    );
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 0).await);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_waits_for_a_slot_then_fails_overloaded() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"]).max_in_flight(2)).await;
    let a = tokio::spawn(server.call_tool("sleep", json!({"ms": 600})));
    let b = tokio::spawn(server.call_tool("sleep", json!({"ms": 600})));
    assert!(eventually(Duration::from_secs(5), || server.in_flight() == 2).await);
    let err = server
        .call_tool("echo", json!({"text": "x"}))
        .timeout(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Overloaded {
                max_in_flight: 2,
                ..
            }
        ),
        "{err:?}"
    );
    // With a longer deadline it waits for a slot and succeeds.
    let r = server
        .call_tool("echo", json!({"text": "x"}))
        .timeout(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(r.text(), "x");
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
    rt.shutdown().await;
}
