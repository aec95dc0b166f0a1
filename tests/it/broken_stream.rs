//! A 2026-07-28 server over Streamable HTTP whose response streams end before the answer
//! (scripted): the era has no resumption, so reads are sent again under a new id, and a tool
//! call is sent again only when its tool or server opted in; otherwise it fails with
//! `ErrorKind::StreamBroken` naming the server and the tool.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::ErrorKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig, ToolPolicy};

use crate::http_fixture::json_response;

/// Every request the server saw, by what it asked for (`tools/call once`, `resources/read
/// x://a`): the ids, in order.
type Seen = Arc<Mutex<HashMap<String, Vec<Value>>>>;

/// The first request for each thing breaks its stream; the tool `flaky_forever` and the
/// resource `x://never` break every time.
async fn handle(
    seen: Seen,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (_, _, body) = crate::http_fixture::read(request).await;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = body["id"].clone();
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let what = body["params"]["name"]
        .as_str()
        .or(body["params"]["uri"].as_str())
        .unwrap_or_default();
    let key = format!("{method} {what}").trim().to_owned();
    let times = {
        let mut seen = seen.lock().unwrap();
        let ids = seen.entry(key).or_default();
        ids.push(id.clone());
        ids.len()
    };
    let ok = |result: Value| {
        json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    };
    let breaks = matches!(method.as_str(), "tools/call" | "resources/read")
        && (times == 1 || what == "flaky_forever" || what == "x://never");
    if breaks {
        // An event stream that ends with a comment and no answer.
        return Ok(Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "text/event-stream")
            .body(Full::new(Bytes::from_static(b": working\n\n")))
            .unwrap());
    }
    let response = match method.as_str() {
        "server/discover" => ok(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}}
        })),
        "tools/list" => ok(json!({"resultType": "complete", "ttlMs": 60_000, "tools": [
            {"name": "book", "inputSchema": {"type": "object"}},
            {"name": "lookup", "inputSchema": {"type": "object"}},
            {"name": "flaky_forever", "inputSchema": {"type": "object"}}
        ]})),
        "resources/list" => ok(json!({"resultType": "complete", "resources": []})),
        "resources/templates/list" => {
            ok(json!({"resultType": "complete", "resourceTemplates": []}))
        }
        "resources/read" => ok(json!({"resultType": "complete", "contents": [
            {"uri": what, "text": "read"}
        ]})),
        "tools/call" => ok(json!({"resultType": "complete",
            "content": [{"type": "text", "text": format!("ran {what}")}]})),
        _ => json_response(
            StatusCode::NOT_FOUND,
            None,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
        ),
    };
    Ok(response)
}

async fn serve(seen: Seen) -> String {
    let addr = crate::http_fixture::serve(move |r| handle(seen.clone(), r)).await;
    format!("http://{addr}/mcp")
}

async fn runtime(config: ServerConfig<switchboard::transport::Http>) -> Runtime {
    Runtime::builder()
        .server(
            "remote",
            config
                .restart(RestartPolicy::off())
                .liveness(Liveness::off())
                .timeout(Duration::from_secs(10)),
        )
        .build()
        .await
        .unwrap()
}

/// The ids the server saw for `key`.
fn ids(seen: &Seen, key: &str) -> Vec<Value> {
    seen.lock().unwrap().get(key).cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_sent_again_and_tool_calls_only_when_opted_in() {
    let seen = Seen::default();
    let url = serve(seen.clone()).await;
    let rt = runtime(
        ServerConfig::http(url, HttpKind::StreamableHttp)
            .tool("lookup", ToolPolicy::new().reissue_on_broken_stream(true)),
    )
    .await;
    let server = rt.server("remote").unwrap();

    // A read: sent again, under a new id.
    let contents = server.read_resource("x://a").await.unwrap();
    assert_eq!(contents.contents.len(), 1);
    let read = ids(&seen, "resources/read x://a");
    assert_eq!(read.len(), 2);
    assert_ne!(read[0], read[1], "the second read has a new id");

    // A tool call nobody said is safe to repeat: a typed error naming server and tool.
    let err = server.call_tool("book", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::StreamBroken { .. })
            && err.server() == Some("remote")
            && err.tool() == Some("book"),
        "{err:?}"
    );
    assert!(err.to_string().contains("may or may not have run"), "{err}");
    assert_eq!(ids(&seen, "tools/call book").len(), 1, "not sent again");

    // The tool that opted in: sent again, and answered.
    let result = server.call_tool("lookup", json!({})).await.unwrap();
    assert_eq!(result.text(), "ran lookup");
    let calls = ids(&seen, "tools/call lookup");
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0], calls[1]);

    // Streams that always break: sent again at most twice, then the typed error.
    let err = server.read_resource("x://never").await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::StreamBroken { .. }),
        "{err:?}"
    );
    assert_eq!(ids(&seen, "resources/read x://never").len(), 3);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_setting_opts_every_tool_in_and_a_tool_policy_opts_out() {
    let seen = Seen::default();
    let url = serve(seen.clone()).await;
    let rt = runtime(
        ServerConfig::http(url, HttpKind::StreamableHttp)
            .reissue_on_broken_stream(true)
            .tool("lookup", ToolPolicy::new().reissue_on_broken_stream(false)),
    )
    .await;
    let server = rt.server("remote").unwrap();
    let result = server.call_tool("book", json!({})).await.unwrap();
    assert_eq!(result.text(), "ran book");
    assert_eq!(ids(&seen, "tools/call book").len(), 2);
    let err = server.call_tool("lookup", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::StreamBroken { .. }) && err.tool() == Some("lookup"),
        "{err:?}"
    );
    assert_eq!(ids(&seen, "tools/call lookup").len(), 1);
    rt.shutdown().await;
}
