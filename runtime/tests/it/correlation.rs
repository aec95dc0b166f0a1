//! Correlation by id: out-of-order answers, stray answers, batches, malformed answers.

use std::time::{Duration, Instant};

use serde_json::json;

use switchboard::ErrorKind;

use crate::support::*;

#[tokio::test]
async fn answers_out_of_order_reach_their_callers() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let slow = server.call_tool("sleep", json!({"ms": 400}));
    let fast = server.call_tool("echo", json!({"text": "fast"}));
    let slow = tokio::spawn(async move {
        let r = slow.await;
        (r, Instant::now())
    });
    // The slow call is on the wire first.
    let end = Instant::now() + Duration::from_secs(10);
    while call_ids(&server, "sleep").await.is_empty() {
        assert!(
            Instant::now() < end,
            "the slow call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let fast_result = fast.await.unwrap();
    let fast_done = Instant::now();
    let (slow_result, slow_done) = slow.await.unwrap();
    assert_eq!(fast_result.text(), "fast");
    assert_eq!(slow_result.unwrap().text(), "slept 400 ms");
    assert!(fast_done < slow_done);
    rt.shutdown().await;
}

#[tokio::test]
async fn answers_to_unknown_ids_are_ignored() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let r = server.call_tool("unknown_id", json!({})).await.unwrap();
    assert_eq!(r.text(), "ok");
    assert_echoes(&server, "still").await;
    rt.shutdown().await;
}

#[tokio::test]
async fn a_batch_line_is_delivered_as_its_messages() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let r = server.call_tool("batch_answer", json!({})).await.unwrap();
    assert!(!r.is_error());
    assert_echoes(&server, "after").await;
    rt.shutdown().await;
}

#[tokio::test]
async fn a_malformed_answer_with_a_readable_id_fails_its_call_at_once() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let started = Instant::now();
    let err = server
        .call_tool("malformed_answer", json!({}))
        .timeout(Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Protocol { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.to_string().contains("malformed_answer"), "{err}");
    rt.shutdown().await;
}

#[tokio::test]
async fn an_unreadable_answer_fails_at_the_deadline_noting_the_dropped_frame() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let err = server
        .call_tool("drop_answer", json!({}))
        .timeout(Duration::from_millis(300))
        .await
        .unwrap_err();
    let ErrorKind::Timeout { dropped_frames, .. } = err.kind() else {
        panic!("{err:?}")
    };
    assert!(*dropped_frames >= 1);
    assert!(err.to_string().contains("unreadable"), "{err}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_ping_is_answered() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let r = server.call_tool("ping_client", json!({})).await.unwrap();
    assert_eq!(r.text(), "pong");
    rt.shutdown().await;
}

#[tokio::test]
async fn json_rpc_errors_and_tool_errors_are_told_apart() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let err = server.call_tool("nosuch", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Rpc { code: -32602, .. }),
        "{err:?}"
    );
    let r = server
        .call_tool("fail", json!({"message": "nope"}))
        .await
        .unwrap();
    assert!(r.is_error());
    let err = server.call_tool("echo", json!([1])).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidArguments { .. }),
        "{err:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn arguments_given_as_json_text_reach_the_server() {
    let (rt, _server) = runtime_with(demo_memory(&["--faults"])).await;
    let text = |t: &str| serde_json::value::RawValue::from_string(t.to_owned()).unwrap();
    let r = rt
        .call_tool_json("echo", text(r#"{"text":"caf\u00e9 \"x\""}"#))
        .await
        .unwrap();
    assert_eq!(r.text(), "café \"x\"");
    let err = rt.call_tool_json("echo", text("[1]")).await.unwrap_err();
    match err.kind() {
        ErrorKind::InvalidArguments { got } => {
            assert_eq!((*got, err.tool()), ("an array", Some("echo")));
        }
        other => panic!("{other:?}"),
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn other_server_requests_get_method_not_found() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let r = server
        .call_tool("ping_client", json!({"method": "sampling/createMessage"}))
        .await
        .unwrap();
    assert!(r.is_error());
    assert!(r.text().contains("-32601"), "{}", r.text());
    rt.shutdown().await;
}
