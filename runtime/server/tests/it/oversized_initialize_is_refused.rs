//! An `initialize` whose params are over the server's limit (64 KiB by default, measured as
//! the text they came in) is refused with -32602 naming the limit, before anything of it is
//! parsed: the session stays uninitialized, and serving goes on for a client that
//! initializes as clients do.

use serde_json::{json, Value};
use switchboard_server::http::Config;
use switchboard_server::Options;

use crate::http_support::{start, ACCEPT};
use crate::support::{initialize_line, server, server_with, LineClient};

/// The finding: 300,000 small `experimental` keys, 3.8 MB of JSON.
const KEYS: usize = 300_000;

/// The version and capabilities the oversized `initialize` asks for, which the session
/// must not take.
fn oversized(id: i64) -> String {
    let line = initialize_line(
        id,
        "2025-03-26",
        &json!({"sampling": {}}),
        KEYS,
        &json!({"name": "big", "version": "1"}),
    );
    assert!(line.len() > 3_500_000, "{} bytes", line.len());
    line
}

/// Asserts that `answer` refuses request `id` as over a limit of `limit` bytes.
fn assert_refused(answer: &Value, id: i64, limit: usize) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("initialize") && message.contains(&format!("limit of {limit} bytes")),
        "{message}"
    );
}

#[tokio::test]
async fn over_stdio_it_is_refused_and_the_session_is_initialized_by_the_next_one() {
    let (server, _) = server();
    let mut client = LineClient::start(server);
    client.send_raw(oversized(1).as_bytes()).await;
    assert_refused(&client.recv().await, 1, 64 * 1024);
    // Not initialized by it: the session has neither its version nor its capabilities.
    let whoami = client
        .request(2, "tools/call", json!({"name": "whoami"}))
        .await;
    assert_eq!(
        whoami["result"]["structuredContent"],
        json!({"protocolVersion": "2025-11-25", "capabilities": {}})
    );
    let init = client
        .request(
            3,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
                "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let whoami = client
        .request(4, "tools/call", json!({"name": "whoami"}))
        .await;
    assert_eq!(
        whoami["result"]["structuredContent"],
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
            "clientInfo": {"name": "t", "version": "1"}})
    );
    client.close().await;
}

#[tokio::test]
async fn over_http_it_is_refused_and_opens_no_session() {
    let running = start(Config::default()).await;
    let refused = running
        .http
        .post(&running.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(oversized(0))
        .send()
        .await
        .unwrap();
    assert!(refused.headers().get("mcp-session-id").is_none());
    let answer: Value = refused.json().await.unwrap();
    assert_refused(&answer, 0, 64 * 1024);
    running.sessions_become(0).await;
    // A client that initializes as clients do is served.
    let session = running.initialize().await;
    assert_eq!(running.echo_in(&session).await, 200);
    running.delete(&session).await;
    running.settled().await;
}

#[tokio::test]
async fn the_limit_is_the_servers_to_set() {
    let small = initialize_line(
        1,
        "2025-11-25",
        &json!({}),
        200,
        &json!({"name": "t", "version": "1"}),
    );
    // Its params alone are over 1 KiB.
    assert!(small.len() > 2048, "{}", small.len());
    let (server, _) = server_with(Options::default().with_max_initialize_params(1024));
    let mut client = LineClient::start(server);
    client.send_raw(small.as_bytes()).await;
    assert_refused(&client.recv().await, 1, 1024);
    client.close().await;

    // Raised, the 3.8 MB one is served (what the session keeps of it is bounded_session's).
    let (server, _) = server_with(Options::default().with_max_initialize_params(8 << 20));
    let mut client = LineClient::start(server);
    client.send_raw(oversized(1).as_bytes()).await;
    let init = client.recv().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");
    client.close().await;
}
