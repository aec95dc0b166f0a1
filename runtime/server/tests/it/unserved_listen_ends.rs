//! A 2026-07-28 `subscriptions/listen` of which the server serves none is acknowledged
//! (with no notifications) and ended at once with the result that closes a subscription
//! gracefully, instead of holding a stream that can carry nothing; one the server serves
//! any of stays open as before.

use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_server::http::Config;
use switchboard_server::{Handler, Info, Server};

use crate::http_support::{next_events, start, start_serving};
use crate::support::{meta, server, LineClient, Probe, WAIT};

/// A server of tools that announces no list changes and serves no resources: a listen for
/// anything is one it serves none of.
struct ToolsOnly;

impl Handler for ToolsOnly {
    fn info(&self) -> Info {
        Info::new("tools-only", "1")
    }
}

/// Everything a listen can ask for.
fn everything() -> Value {
    json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
        "resourceSubscriptions": ["x://a"]})
}

fn listen(id: i64, notifications: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "notifications": notifications, "_meta": meta(json!({}))}})
}

/// Asserts that `ack` acknowledges listen `id` with `granted`.
fn assert_acknowledged(ack: &Value, id: i64, granted: Value) {
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["notifications"], granted, "{ack}");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
}

/// Asserts that `answer` ends listen `id` gracefully.
fn assert_closed(answer: &Value, id: i64) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
}

#[tokio::test]
async fn over_stdio_it_is_acknowledged_and_answered() {
    let mut client = LineClient::start(Server::new(ToolsOnly));
    client.send(listen(1, everything())).await;
    assert_acknowledged(&client.recv().await, 1, json!({}));
    assert_closed(&client.recv().await, 1);
    client.close().await;

    // A listen that asks for nothing is one the server serves none of too.
    let (server, _) = server();
    let mut client = LineClient::start(server.clone());
    client.send(listen(1, json!({}))).await;
    assert_acknowledged(&client.recv().await, 1, json!({}));
    assert_closed(&client.recv().await, 1);

    // One it serves part of stays open and carries what it serves.
    client.send(listen(2, everything())).await;
    assert_acknowledged(
        &client.recv().await,
        2,
        json!({"toolsListChanged": true, "promptsListChanged": true,
            "resourcesListChanged": true, "resourceSubscriptions": ["x://a"]}),
    );
    server.tools_changed();
    // The line's session hears it plainly too; the listen hears it on its subscription.
    loop {
        let message = client.recv().await;
        assert_ne!(message["id"], 2, "the listen was ended: {message}");
        if message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 2 {
            assert_eq!(message["method"], "notifications/tools/list_changed");
            break;
        }
    }
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}))
        .await;
    client.close().await;
}

#[tokio::test]
async fn over_http_its_response_completes() {
    let tools_only = start_serving(
        Server::new(ToolsOnly),
        Arc::new(Probe::default()),
        Config::default(),
    )
    .await;
    let response = tools_only
        .modern(
            1,
            "subscriptions/listen",
            json!({"notifications": everything()}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The whole body: the stream ends.
    let body = tokio::time::timeout(WAIT, response.text())
        .await
        .expect("the listen's response completes")
        .unwrap();
    let events = crate::http_support::events(&body);
    assert_eq!(events.len(), 2, "{body}");
    assert_acknowledged(&events[0], 1, json!({}));
    assert_closed(&events[1], 1);
    tools_only.settled().await;

    // One it serves part of stays open and carries what it serves.
    let running = start(Config::default()).await;
    let mut stream = running
        .modern(
            2,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut events = Vec::new();
    while events.is_empty() {
        events = next_events(&mut stream).await;
    }
    assert_acknowledged(&events[0], 2, json!({"toolsListChanged": true}));
    running.server.tools_changed();
    let changed = loop {
        let changed = events
            .iter()
            .find(|e| e["method"] == "notifications/tools/list_changed");
        if let Some(changed) = changed {
            break changed.clone();
        }
        assert!(events.iter().all(|e| e.get("id").is_none()), "{events:?}");
        events = next_events(&mut stream).await;
    };
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2
    );
    drop(stream);
    running.settled().await;
}
