//! What a session keeps of its client is bounded whatever the client sent: the
//! capabilities serving reads (sampling, elicitation, roots, tasks, each with its own
//! fields) and the client's name and version cut short, never `experimental` or the rest of
//! the tree. The same holds for what a sealed session id carries and for a 2026-07-28
//! request's context; and what the client declared still works: a handler asks it for
//! input.

use serde_json::{json, Value};
use switchboard_server::http::Config;
use switchboard_server::Options;

use crate::http_support::start_serving;
use crate::support::{initialize_line, meta, server, server_with, LineClient};

/// A client that declares elicitation and sampling amid fields nothing reads, with a name,
/// version and title far longer than anyone's.
fn declared() -> (Value, Value) {
    let junk = "j".repeat(2_000);
    let capabilities = json!({
        "elicitation": {"form": {}, "junk": junk},
        "sampling": {"tools": {"junk": junk}},
        "extensions": {"io.example/x": {"junk": junk}},
    });
    let client_info = json!({
        "name": "n".repeat(10_000), "version": "v".repeat(5_000), "title": "t".repeat(5_000),
    });
    (capabilities, client_info)
}

/// What a server keeps of [`declared`].
fn kept(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"elicitation": {"form": {}}, "sampling": {"tools": {}}},
        "clientInfo": {"name": "n".repeat(128), "version": "v".repeat(64)},
    })
}

#[tokio::test]
async fn a_session_keeps_the_capabilities_serving_reads_and_asks_for_them() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    let (capabilities, client_info) = declared();
    // Under the 64 KiB limit, with 3,000 keys of `experimental`.
    let line = initialize_line(1, "2025-11-25", &capabilities, 3_000, &client_info);
    assert!((50_000..64 * 1024).contains(&line.len()), "{}", line.len());
    client.send_raw(line.as_bytes()).await;
    assert_eq!(
        client.recv().await["result"]["protocolVersion"],
        "2025-11-25"
    );

    let whoami = client
        .request(2, "tools/call", json!({"name": "whoami"}))
        .await;
    let whoami = &whoami["result"]["structuredContent"];
    assert_eq!(whoami, &kept("2025-11-25"));
    assert!(whoami.to_string().len() < 512, "{whoami}");

    // What it declared, it is asked: a form, then a sampling request.
    client
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask"}}))
        .await;
    let elicit = client.recv().await;
    assert_eq!(elicit["method"], "elicitation/create");
    client
        .send(json!({"jsonrpc": "2.0", "id": elicit["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}))
        .await;
    let sample = client.recv().await;
    assert_eq!(sample["method"], "sampling/createMessage");
    client
        .send(json!({"jsonrpc": "2.0", "id": sample["id"], "result": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "y"}}}))
        .await;
    let answer = client.recv().await;
    assert_eq!(answer["result"]["content"][0]["text"], "Ada via m");
    client.close().await;
}

#[tokio::test]
async fn a_sealed_session_id_stays_small_whatever_the_client_sent() {
    // The limit raised so that the finding's 3.8 MB `initialize` is served.
    let replica = || {
        let (server, probe) = server_with(Options::default().with_max_initialize_params(8 << 20));
        start_serving(server, probe, Config::default().with_session_keys(&["key"]))
    };
    let (a, b) = (replica().await, replica().await);
    let (capabilities, client_info) = declared();
    let line = initialize_line(0, "2025-06-18", &capabilities, 300_000, &client_info);
    let opened = a
        .http
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", crate::http_support::ACCEPT)
        .body(line)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    // Sealed (a state too large for a header would have been given a random id, which no
    // other replica knows), and a few hundred bytes long.
    assert!(session.starts_with("s1."), "{session}");
    assert!(session.len() < 1_000, "{} bytes", session.len());
    // The replica that never saw it serves it with what it carries.
    assert_eq!(b.whoami(&session).await, kept("2025-06-18"));
    assert_eq!(a.whoami(&session).await, kept("2025-06-18"));
    a.delete(&session).await;
    b.delete(&session).await;
    a.settled().await;
    b.settled().await;
}

#[tokio::test]
async fn a_stateless_requests_context_keeps_the_same_bounds() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    let (mut capabilities, client_info) = declared();
    let experimental: serde_json::Map<String, Value> =
        (0..3_000).map(|i| (format!("k{i}"), json!({}))).collect();
    capabilities["experimental"] = Value::Object(experimental);
    let mut meta = meta(capabilities);
    meta["io.modelcontextprotocol/clientInfo"] = client_info;

    let whoami = client
        .request(
            1,
            "tools/call",
            json!({"name": "whoami", "_meta": meta.clone()}),
        )
        .await;
    assert_eq!(
        whoami["result"]["structuredContent"],
        kept("2026-07-28"),
        "{whoami}"
    );
    // What it declared, it is asked for: both inputs in one input-required round.
    let asked = client
        .request(2, "tools/call", json!({"name": "ask", "_meta": meta}))
        .await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["result"]["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    client.close().await;
}
