//! A call over Streamable HTTP that times out: the caller gets `ErrorKind::Timeout`, and the
//! server gets `notifications/cancelled` for that request, in its session, as a POST of its
//! own. Against a scripted server on 127.0.0.1 whose `hang` tool holds its POST open.

use crate::http_fixture::{empty, json_response, read};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig};
use tokio::sync::mpsc;

/// One JSON-RPC message as the server received it, with the session it came in.
#[derive(Debug, Clone)]
struct Posted {
    session: Option<String>,
    message: Value,
}

/// What the server saw: every POST, and the cancellations as they arrive.
struct Wire {
    posted: Mutex<Vec<Posted>>,
    cancels: mpsc::UnboundedSender<Posted>,
}

async fn handle(
    wire: Arc<Wire>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (verb, session, body) = read(request).await;
    if verb != Method::POST {
        // No GET stream; DELETE ends the session.
        return Ok(empty(if verb == Method::DELETE {
            StatusCode::OK
        } else {
            StatusCode::METHOD_NOT_ALLOWED
        }));
    }
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let posted = Posted { session, message };
    wire.posted.lock().unwrap().push(posted.clone());
    let message = &posted.message;
    let id = &message["id"];
    let response = match message["method"].as_str() {
        Some("initialize") => json_response(
            StatusCode::OK,
            Some("s1"),
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted-http", "version": "0"}
            }}),
        ),
        Some("notifications/cancelled") => {
            let _ = wire.cancels.send(posted.clone());
            empty(StatusCode::ACCEPTED)
        }
        _ if id.is_null() => empty(StatusCode::ACCEPTED),
        Some("tools/list") => json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": "hang", "inputSchema": {"type": "object"}}
            ]}}),
        ),
        // `hang`: the POST is never answered.
        Some("tools/call") => std::future::pending().await,
        _ => json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        ),
    };
    Ok(response)
}

/// Serves the script on 127.0.0.1 (a free port) until the test's runtime ends.
async fn serve() -> (String, Arc<Wire>, mpsc::UnboundedReceiver<Posted>) {
    let (cancels, cancelled) = mpsc::unbounded_channel();
    let wire = Arc::new(Wire {
        posted: Mutex::new(Vec::new()),
        cancels,
    });
    let serving = wire.clone();
    let addr = crate::http_fixture::serve(move |request| handle(serving.clone(), request)).await;
    (format!("http://{addr}/mcp"), wire, cancelled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_call_that_times_out_returns_timeout_and_the_server_gets_cancelled() {
    let (url, wire, mut cancelled) = serve().await;
    let rt = Runtime::builder()
        .server(
            "remote",
            ServerConfig::http(url, HttpKind::StreamableHttp)
                // A handshake-era script: the era probe would be one more cancelled request.
                .protocol(switchboard::Protocol::Legacy)
                .restart(RestartPolicy::off())
                .liveness(Liveness::off()),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("remote").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert_eq!(server.status().transport.as_str(), "http");

    let err = server
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let (true, Some(request_id)) = (err.is_timeout(), err.request_id()) else {
        panic!("expected Timeout, got {err:?}")
    };
    assert_eq!(err.tool(), Some("hang"));

    let cancel = tokio::time::timeout(Duration::from_secs(10), cancelled.recv())
        .await
        .expect("no notifications/cancelled within 10 s")
        .expect("the server is running");
    assert_eq!(
        cancel.message["params"]["requestId"], request_id,
        "{cancel:?}"
    );
    assert!(
        cancel.message["params"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("timed out")),
        "{cancel:?}"
    );
    assert_eq!(cancel.session.as_deref(), Some("s1"));
    // The request it cancels is the call the server received.
    let calls: Vec<_> = wire
        .posted
        .lock()
        .unwrap()
        .iter()
        .filter(|p| p.message["method"] == "tools/call")
        .map(|p| p.message["id"].clone())
        .collect();
    assert_eq!(calls, [json!(request_id)]);
    assert_eq!(server.in_flight(), 0);
    rt.shutdown().await;
}
