//! A 2026-07-28 server over Streamable HTTP, scripted: the headers each POST carries match
//! its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), a tool with an
//! invalid `x-mcp-header` is left out of the catalogue, and an error body that comes with
//! HTTP 400 reaches the caller as its typed error.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::ErrorKind;
use switchboard::{Era, Liveness, RestartPolicy, Runtime, ServerConfig};

use crate::http_fixture::json_response;

/// One POST as the server saw it: the stateless headers and the body.
#[derive(Debug, Clone)]
struct Seen {
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// Set when the server sees the stream of the `slow` tool's call closed before it answered.
static SLOW_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets [`SLOW_CLOSED`] when dropped unanswered (hyper drops the request's future when its
/// connection closes).
struct ClosedGuard(bool);

impl Drop for ClosedGuard {
    fn drop(&mut self) {
        if !self.0 {
            SLOW_CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

async fn handle(log: Log, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("mcp-"))
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let (_, _, body) = crate::http_fixture::read(request).await;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push(Seen {
        headers,
        body: body.clone(),
    });
    let id = body["id"].clone();
    let ok = |result: Value| {
        json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    };
    let response = match body["method"].as_str() {
        Some("server/discover") => ok(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"
        })),
        Some("tools/list") => ok(json!({"resultType": "complete", "tools": [
            {"name": "query", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "sql": {"type": "string"}}}},
            {"name": "broken", "inputSchema": {"type": "object", "properties": {
                "n": {"type": "number", "x-mcp-header": "N"}}}},
            {"name": "strict", "inputSchema": {"type": "object"}},
            {"name": "slow", "inputSchema": {"type": "object"}}
        ]})),
        Some("tools/call") if body["params"]["name"] == "slow" => {
            let mut guard = ClosedGuard(false);
            tokio::time::sleep(Duration::from_secs(30)).await;
            guard.0 = true;
            ok(json!({"resultType": "complete", "content": []}))
        }
        Some("tools/call") if body["params"]["name"] == "strict" => json_response(
            StatusCode::BAD_REQUEST,
            None,
            json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32020, "message": "Mcp-Name header value 'x' does not match body value 'strict'"
            }}),
        ),
        Some("tools/call") => ok(json!({
            "resultType": "complete", "content": [{"type": "text", "text": "done"}]
        })),
        _ => json_response(
            StatusCode::NOT_FOUND,
            None,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
        ),
    };
    Ok(response)
}

async fn serve(log: Log) -> String {
    let addr = crate::http_fixture::serve(move |r| handle(log.clone(), r)).await;
    format!("http://{addr}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_http_requests_carry_headers_that_match_their_bodies() {
    let log = Log::default();
    let log_after = log.clone();
    let url = serve(log.clone()).await;
    let rt = Runtime::builder()
        .server(
            "remote",
            ServerConfig::http(url, HttpKind::Auto)
                .restart(RestartPolicy::off())
                .liveness(Liveness::off())
                .timeout(Duration::from_secs(20)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("remote").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.era, Some(Era::Modern));
    let names: Vec<String> = server.tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        names,
        ["query", "strict", "slow"],
        "the tool with a number header is left out"
    );

    let result = server
        .call_tool("query", json!({"region": "Zürich", "sql": "select 1"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "done");
    let err = server.call_tool("strict", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::HeaderMismatch { .. }) && err.tool() == Some("strict"),
        "{err:?}"
    );

    let log = log.lock().unwrap().clone();
    for seen in &log {
        assert_eq!(
            seen.header("mcp-protocol-version"),
            Some("2026-07-28"),
            "{seen:?}"
        );
        assert_eq!(
            seen.header("mcp-method"),
            seen.body["method"].as_str(),
            "{seen:?}"
        );
        assert_eq!(
            seen.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(seen.header("mcp-session-id"), None);
    }
    let call = log
        .iter()
        .find(|s| s.body["params"]["name"] == "query")
        .expect("the call was posted");
    assert_eq!(call.header("mcp-name"), Some("query"));
    // Non-ASCII: Base64 of the UTF-8, in the sentinel.
    assert_eq!(
        call.header("mcp-param-region"),
        Some("=?base64?WsO8cmljaA==?=")
    );
    assert_eq!(log[0].header("mcp-name"), None, "discover names nothing");
    drop(log);

    // A stateless call is cancelled by closing its stream, not by a notification.
    let err = server
        .call_tool("slow", json!({}))
        .timeout(Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !SLOW_CLOSED.load(std::sync::atomic::Ordering::SeqCst)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        SLOW_CLOSED.load(std::sync::atomic::Ordering::SeqCst),
        "the server saw the cancelled call's stream closed"
    );
    rt.shutdown().await;
    let seen = log_after.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|s| s.body["method"] != "notifications/cancelled"),
        "{seen:?}"
    );
}
