//! Both eras over a line stream: the handshake, stateless requests, input in each era,
//! cancellation and bad lines.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::support::{meta, server, LineClient};

#[tokio::test]
async fn the_handshake_era_negotiates_lists_calls_and_pings() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    let init = client
        .request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "test");
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    let unknown = client
        .request(2, "initialize", json!({"protocolVersion": "1999-01-01"}))
        .await;
    assert_eq!(unknown["result"]["protocolVersion"], "2025-11-25");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let tools = client.request(3, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 7);
    assert!(
        tools["result"].get("ttlMs").is_none(),
        "no caching hints before 2026"
    );
    let echo = client
        .request(
            4,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "hi");
    assert_eq!(
        client.request(5, "ping", Value::Null).await["result"],
        json!({})
    );
    let level = client
        .request(6, "logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_eq!(level["error"]["code"], -32602);
    let missing = client
        .request(7, "resources/read", json!({"uri": "test://none"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(
        client.request(8, "nope", json!({})).await["error"]["code"],
        -32601
    );
    client.close().await;
}

#[tokio::test]
async fn a_stateless_request_carries_result_type_caching_hints_and_server_info() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    let discover = client
        .request(1, "server/discover", json!({"_meta": meta(json!({}))}))
        .await;
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    assert_eq!(discover["result"]["resultType"], "complete");
    let tools = client
        .request(2, "tools/list", json!({"_meta": meta(json!({}))}))
        .await;
    let result = &tools["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"] == "public",
        "{result}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test"
    );
    let read = client
        .request(
            3,
            "resources/read",
            json!({"uri": "test://a", "_meta": meta(json!({}))}),
        )
        .await;
    assert_eq!(read["result"]["cacheScope"], "private");
    // 2026-07-28's code for a missing resource.
    let missing = client
        .request(
            4,
            "resources/read",
            json!({"uri": "test://b", "_meta": meta(json!({}))}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32602);
    let no_caps = client
        .request(
            5,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        )
        .await;
    assert_eq!(no_caps["error"]["code"], -32602);
    let mut old = meta(json!({}));
    old["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let version = client
        .request(6, "tools/list", json!({ "_meta": old }))
        .await;
    assert_eq!(version["error"]["code"], -32022);
    assert_eq!(version["error"]["data"]["supported"], json!(["2026-07-28"]));
    for (id, removed) in [(7, "ping"), (8, "initialize"), (9, "logging/setLevel")] {
        let answer = client
            .request(id, removed, json!({"_meta": meta(json!({}))}))
            .await;
        assert_eq!(answer["error"]["code"], -32601, "{removed}");
    }
    client.close().await;
}

#[tokio::test]
async fn input_is_an_input_required_round_with_a_sealed_state_in_2026() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    let caps = json!({"elicitation": {}, "sampling": {}});
    let call = |id: i64, extra: Value| {
        let mut params = json!({"name": "ask", "arguments": {}, "_meta": meta(caps.clone())});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        (id, params)
    };
    let (id, params) = call(1, json!({}));
    let first = client.request(id, "tools/call", params).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(
        first["result"]["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let (id, params) = call(
        2,
        json!({"requestState": state, "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}}),
    );
    let second = client.request(id, "tools/call", params).await;
    assert_eq!(second["result"]["resultType"], "input_required");
    assert!(
        second["result"]["inputRequests"].get("who").is_none(),
        "answered once is kept"
    );
    let state2 = second["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(state, state2);
    let (id, params) = call(
        3,
        json!({"requestState": state2, "inputResponses": {"model": {"role": "assistant", "model": "m1", "content": {"type": "text", "text": "x"}}}}),
    );
    let done = client.request(id, "tools/call", params).await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada via m1");
    assert_eq!(done["result"]["resultType"], "complete");
    // A state the client altered is refused.
    let mut tampered = state.clone().into_bytes();
    tampered[0] = if tampered[0] == b'7' { b'8' } else { b'7' };
    let (id, params) = call(
        4,
        json!({"requestState": String::from_utf8(tampered).unwrap()}),
    );
    assert_eq!(
        client.request(id, "tools/call", params).await["error"]["code"],
        -32602
    );
    // Without the capability, -32021 naming it.
    let params = json!({"name": "ask", "_meta": meta(json!({}))});
    let refused = client.request(5, "tools/call", params).await;
    assert_eq!(refused["error"]["code"], -32021);
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    client.close().await;
}

#[tokio::test]
async fn input_is_a_request_to_the_client_in_the_handshake_era() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    client
        .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}, "sampling": {}}}))
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}))
        .await;
    let elicit = client.recv().await;
    assert_eq!(elicit["method"], "elicitation/create");
    client
        .send(json!({"jsonrpc": "2.0", "id": elicit["id"], "result": {"action": "accept", "content": {"name": "Grace"}}}))
        .await;
    let sample = client.recv().await;
    assert_eq!(sample["method"], "sampling/createMessage");
    assert_ne!(sample["id"], elicit["id"]);
    client
        .send(json!({"jsonrpc": "2.0", "id": sample["id"], "result": {"role": "assistant", "model": "m2", "content": {"type": "text", "text": "y"}}}))
        .await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "Grace via m2");
    client.close().await;
}

#[tokio::test]
async fn a_cancel_stops_the_handler_and_others_go_on() {
    let (server, probe) = server();
    let mut client = LineClient::start(server);
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "_meta": {"progressToken": "p"}}}))
        .await;
    let progress = client.recv().await;
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], "p");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        .await;
    // Served after the cancel, on the same stream: the slow one never answers.
    let echo = client
        .request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "next"}}),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "next");
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    while probe.dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled handler was dropped"
        );
        tokio::task::yield_now().await;
    }
    client.close().await;
}

/// A cancel read in the same write as its request may be read before the request's first
/// poll on its own task, when it is not registered yet: it stops the request all the same.
async fn a_cancel_read_right_behind_its_request_stops_it() {
    let (server, probe) = server();
    let mut client = LineClient::start(server);
    let slow =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}});
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    client
        .send_raw(format!("{slow}\n{cancel}").as_bytes())
        .await;
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    while probe.dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled handler was dropped"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Nothing answers the cancelled request: the next message is the ping's answer.
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    let next = client.recv().await;
    assert_eq!(
        (&next["id"], &next["result"]),
        (&json!(2), &json!({})),
        "{next}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_cancel_right_behind_its_request_stops_it_on_one_thread() {
    a_cancel_read_right_behind_its_request_stops_it().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_right_behind_its_request_stops_it_on_two_workers() {
    a_cancel_read_right_behind_its_request_stops_it().await;
}

/// A client that pipes its requests and closes its end at once gets every answer: those
/// that wait for room in the output queue are answers already, not work to stop.
async fn every_piped_request_is_answered_after_eof() {
    const CALLS: usize = 3000;
    let (server, _) = server();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (their_reader, their_writer) = tokio::io::split(theirs);
    let served = tokio::spawn(async move { server.serve(their_reader, their_writer).await });
    let (reader, mut writer) = tokio::io::split(ours);
    let reading = tokio::spawn(async move {
        // A client that reads its answers only once it has written every request: the
        // output queue fills, and answers wait for room.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut lines = tokio::io::BufReader::new(reader).lines();
        let mut answered = 0;
        while let Some(line) = lines.next_line().await.expect("the output reads") {
            let answer: Value = serde_json::from_str(&line).expect("an answer is JSON");
            assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
            answered += 1;
        }
        answered
    });
    let mut burst = String::new();
    for id in 1..=CALLS {
        burst.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}}})
            .to_string(),
        );
        burst.push('\n');
    }
    writer.write_all(burst.as_bytes()).await.unwrap();
    writer.shutdown().await.unwrap();
    let served = tokio::time::timeout(crate::support::WAIT, served)
        .await
        .expect("serve returns after EOF");
    assert!(served.unwrap().is_ok());
    assert_eq!(reading.await.unwrap(), CALLS);
}

#[tokio::test]
async fn every_piped_request_is_answered_after_eof_on_one_thread() {
    every_piped_request_is_answered_after_eof().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_piped_request_is_answered_after_eof_on_two_workers() {
    every_piped_request_is_answered_after_eof().await;
}

#[tokio::test]
async fn bad_lines_are_answered_and_the_stream_goes_on() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    client.send_raw(b"{not json").await;
    let error = client.recv().await;
    assert_eq!(
        (&error["id"], &error["error"]["code"]),
        (&Value::Null, &json!(-32700))
    );
    client.send_raw(br#"{"jsonrpc":"2.0","id":7}"#).await;
    let error = client.recv().await;
    assert_eq!(error["error"]["code"], -32600);
    let echo = client
        .request(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "still here");
    client.close().await;
}

#[tokio::test]
async fn listen_acknowledges_and_carries_list_changes() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": true, "promptsListChanged": false},
            "_meta": meta(json!({}))}}),
        )
        .await;
    let ack = client.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    let params = json!({"name": "changed", "_meta": meta(json!({}))});
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}))
        .await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let message = client.recv().await;
        if message["method"] == "notifications/tools/list_changed"
            && message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
        {
            seen.push("changed");
        }
        if message["id"] == 2 {
            seen.push("answer");
        }
    }
    assert!(seen.contains(&"changed"), "{seen:?}");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
        .await;
    assert_eq!(
        client.request(3, "ping", Value::Null).await["result"],
        json!({})
    );
    client.close().await;
}

#[tokio::test]
async fn a_server_level_change_reaches_every_session_and_listen_stream() {
    let (server, _) = server();
    let mut old = LineClient::start(server.clone());
    let init = old
        .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let mut new = LineClient::start(server.clone());
    new.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true, "promptsListChanged": true},
        "_meta": meta(json!({}))}}),
    )
    .await;
    assert_eq!(
        new.recv().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    // Outside any request: the way a gateway hears its upstreams changed.
    server.tools_changed();
    server.prompts_changed();
    assert_eq!(
        old.recv().await["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        old.recv().await["method"],
        "notifications/prompts/list_changed"
    );
    // The listen stream hears both on its subscription (the line's session may hear them
    // plainly too).
    let mut heard = Vec::new();
    while heard.len() < 2 {
        let message = new.recv().await;
        if message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1 {
            heard.push(message["method"].as_str().unwrap_or("").to_owned());
        }
    }
    assert_eq!(
        heard,
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed"
        ]
    );
    old.close().await;
    new.close().await;
}
