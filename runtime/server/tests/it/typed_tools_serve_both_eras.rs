//! Typed tools in both eras: a handshake-era session over a line stream, and stateless
//! 2026-07-28 calls over a line stream and over HTTP, where a tool that asks the client
//! (its `Context` as a second argument) answers an input-required round.

use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_server::http::Config;

use crate::http_support::start_serving;
use crate::support::{meta, LineClient, Probe};
use crate::typed_support::{good_order, handshake, tool, typed_server};

#[tokio::test]
async fn a_handshake_session_lists_and_calls_typed_tools() {
    let mut client = handshake("2025-03-26").await;
    let list = client.request(1, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 5);
    assert_eq!(tool(&list, "order")["inputSchema"]["type"], "object");
    let call = client
        .request(
            2,
            "tools/call",
            json!({"name": "order", "arguments": good_order()}),
        )
        .await;
    assert_eq!(call["result"]["content"][0]["type"], "text", "{call}");
    client.close().await;
}

#[tokio::test]
async fn a_stateless_call_runs_a_typed_tool_and_its_input_round() {
    let mut client = LineClient::start(typed_server());
    let params = |extra: Value| {
        let mut params = json!({"name": "greet", "arguments": {"word": "Hello"}, "_meta": meta(json!({"elicitation": {}}))});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        params
    };
    let first = client.request(1, "tools/call", params(json!({}))).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let state = result["requestState"].clone();
    let key = result["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("one input request");
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let retry = client
        .request(
            2,
            "tools/call",
            params(json!({"inputResponses": {key: answer}, "requestState": state})),
        )
        .await;
    assert_eq!(retry["result"]["resultType"], "complete", "{retry}");
    assert_eq!(retry["result"]["content"][0]["text"], "Hello, Ada!");

    let mut wrong = good_order();
    wrong["customer"] = json!(7);
    let call = client
        .request(
            3,
            "tools/call",
            json!({"name": "order", "arguments": wrong, "_meta": meta(json!({}))}),
        )
        .await;
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert_eq!(
        call["result"]["content"][0]["text"],
        "invalid arguments for tool order: customer: invalid type: integer `7`, expected a string"
    );
    client.close().await;
}

#[tokio::test]
async fn over_http_a_stateless_call_runs_a_typed_tool() {
    let running = start_serving(
        typed_server(),
        Arc::new(Probe::default()),
        Config::default(),
    )
    .await;
    let list: Value = running
        .modern(1, "tools/list", json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        tool(&list, "order")["inputSchema"]["required"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    let response = running
        .modern(
            2,
            "tools/call",
            json!({"name": "order", "arguments": good_order()}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let call: Value = response.json().await.unwrap();
    assert_eq!(
        call["result"]["content"][0]["text"], "3 (apples, pears) for Ada to Paris -, express",
        "{call}"
    );
    let read: Value = running
        .modern(3, "resources/read", json!({"uri": "shop://catalogue"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        read["result"]["contents"][0]["text"], "apples, pears",
        "{read}"
    );
    running.settled().await;
}
