//! A caller that drops its call cancels it: the slot is freed and the server told.

use std::time::Duration;

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
    // The only slot is free again.
    let seen = server
        .call_tool("cancellations", json!({}))
        .timeout(Duration::from_secs(5))
        .await
        .unwrap();
    let cancelled = &seen.structured_content.unwrap()["cancelled"];
    assert_eq!(cancelled.as_array().unwrap().len(), 1, "{cancelled}");
    assert!(cancelled[0]["reason"]
        .as_str()
        .unwrap()
        .contains("cancelled"));
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
            err,
            switchboard::Error::Overloaded {
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
