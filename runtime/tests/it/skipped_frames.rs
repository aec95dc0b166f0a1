//! Oversized, garbage, non-UTF-8 and non-JSON-RPC lines are skipped; the stream goes on.

use serde_json::json;
use switchboard::ErrorKind;

use crate::support::*;

#[tokio::test]
async fn bad_lines_are_skipped_and_the_next_call_succeeds() {
    let config = demo_stdio(&["--faults"]).max_frame_length(64 * 1024);
    let (rt, server) = runtime_with(config).await;
    for (kind, bytes) in [
        ("text", 0),
        ("non_utf8", 0),
        ("non_jsonrpc", 0),
        ("oversized", 200_000),
    ] {
        let r = server
            .call_tool("garbage", json!({"kind": kind, "bytes": bytes}))
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(r.text(), "ok", "{kind}");
        let echo = server
            .call_tool("echo", json!({"text": kind}))
            .await
            .unwrap();
        assert_eq!(echo.text(), kind);
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn a_large_result_within_the_frame_limit_arrives_whole() {
    let (rt, server) = runtime_with(demo_stdio(&["--faults"])).await;
    let r = server
        .call_tool("large", json!({"bytes": 4 * 1024 * 1024}))
        .await
        .unwrap();
    assert_eq!(r.text().len(), 4 * 1024 * 1024);
    rt.shutdown().await;
}

#[tokio::test]
async fn an_answer_over_the_frame_limit_fails_its_call_at_once_naming_the_limit() {
    let config = demo_stdio(&["--faults"]).max_frame_length(64 * 1024);
    let (rt, server) = runtime_with(config).await;
    let err = server
        .call_tool("large", json!({"bytes": 256 * 1024}))
        .timeout(std::time::Duration::from_secs(30))
        .await
        .unwrap_err();
    // Not a timeout after 30 s: the caller is told why as soon as the line is skipped.
    let ErrorKind::Protocol { detail, .. } = err.kind() else {
        panic!("{err:?}")
    };
    assert!(detail.contains("limit of 65536 bytes"), "{detail}");
    // The connection goes on.
    assert_echoes(&server, "after").await;
    rt.shutdown().await;
}
