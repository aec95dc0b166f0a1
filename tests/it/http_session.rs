//! Session loss over Streamable HTTP, against a scripted in-process server: the runtime
//! initializes a new session once, resends only the request the server rejected, fails the
//! other request that was in flight on the old session, and ends the new session with DELETE.

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
use switchboard::ErrorKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig};
use tokio::sync::Notify;

/// One HTTP request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    verb: Method,
    session: Option<String>,
    rpc_method: Option<String>,
    id: Option<Value>,
    tool: Option<String>,
}

/// The script's state: what arrived, and the moments the test and the handlers wait for.
#[derive(Debug, Default)]
struct Script {
    seen: Mutex<Vec<Seen>>,
    first_call_arrived: Notify,
    second_call_arrived: Notify,
    reinitialized: Notify,
}

impl Script {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn initializes(&self) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.rpc_method.as_deref() == Some("initialize"))
            .count()
    }

    fn calls_on(&self, session: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| {
                s.rpc_method.as_deref() == Some("tools/call")
                    && s.session.as_deref() == Some(session)
            })
            .count()
    }
}

/// How long a handler waits for the next step of the script before giving up on it.
const STEP: Duration = Duration::from_secs(10);

async fn handle(
    script: Arc<Script>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (verb, session, body) = read(request).await;
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = Seen {
        verb: verb.clone(),
        session: session.clone(),
        rpc_method: message["method"].as_str().map(str::to_owned),
        id: message.get("id").cloned(),
        tool: message["params"]["name"].as_str().map(str::to_owned),
    };
    let calls_on_s1_before = script.calls_on("s1");
    script.seen.lock().unwrap().push(seen.clone());

    let response = match (verb, seen.rpc_method.as_deref()) {
        (Method::GET, _) => empty(StatusCode::METHOD_NOT_ALLOWED),
        (Method::DELETE, _) => empty(StatusCode::OK),
        (Method::POST, Some("initialize")) => {
            let id = if script.initializes() == 1 {
                "s1"
            } else {
                "s2"
            };
            if id == "s2" {
                script.reinitialized.notify_waiters();
            }
            json_response(
                StatusCode::OK,
                Some(id),
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted-http", "version": "0"}
                }}),
            )
        }
        (Method::POST, _) if seen.id.is_none() => empty(StatusCode::ACCEPTED),
        (Method::POST, Some("tools/list")) => json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [
                {"name": "first", "inputSchema": {"type": "object"}},
                {"name": "second", "inputSchema": {"type": "object"}}
            ]}}),
        ),
        (Method::POST, Some("tools/call")) if session.as_deref() == Some("s1") => {
            if calls_on_s1_before == 0 {
                // The first call: held until the second one is in flight too, then the
                // session is "gone".
                let second = script.second_call_arrived.notified();
                script.first_call_arrived.notify_one();
                let _ = tokio::time::timeout(STEP, second).await;
            } else {
                // The second call: held until the client has a new session.
                let reinitialized = script.reinitialized.notified();
                script.second_call_arrived.notify_one();
                let _ = tokio::time::timeout(STEP, reinitialized).await;
            }
            json_response(
                StatusCode::NOT_FOUND,
                None,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Session not found"}}),
            )
        }
        (Method::POST, Some("tools/call")) if session.as_deref() == Some("s2") => json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "content": [{"type": "text", "text": format!("ok: {}", seen.tool.unwrap_or_default())}]
            }}),
        ),
        (Method::POST, _) => empty(StatusCode::NOT_FOUND),
        _ => empty(StatusCode::METHOD_NOT_ALLOWED),
    };
    Ok(response)
}

/// Serves the script on 127.0.0.1 (a free port) until the test's runtime ends.
async fn serve(script: Arc<Script>) -> String {
    let addr = crate::http_fixture::serve(move |request| handle(script.clone(), request)).await;
    format!("http://{addr}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_loss_reinitializes_once_and_resends_only_the_rejected_call() {
    let script = Arc::new(Script::default());
    let url = serve(script.clone()).await;
    let rt = Runtime::builder()
        .server(
            "remote",
            ServerConfig::http(url, HttpKind::StreamableHttp)
                // Sessions are of the handshake era; the script knows no `server/discover`.
                .protocol(switchboard::Protocol::Legacy)
                .restart(RestartPolicy::off())
                .liveness(Liveness::off())
                .timeout(Duration::from_secs(20)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("remote").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert_eq!(server.status().transport.as_str(), "http");

    // The first call reaches the server before the second one is sent.
    let arrived = script.first_call_arrived.notified();
    let first = tokio::spawn(server.call_tool("first", json!({})));
    tokio::time::timeout(STEP, arrived)
        .await
        .expect("the first call never reached the server");
    let second = tokio::spawn(server.call_tool("second", json!({})));

    let first = first.await.unwrap();
    let second = second.await.unwrap();
    let first = first.expect("the rejected call is resent on the new session");
    assert_eq!(first.text(), "ok: first");
    assert!(
        matches!(second, Err(ref e) if matches!(e.kind(), ErrorKind::Disconnected { .. })),
        "the other call in flight on the lost session fails: {second:?}"
    );
    assert!(server.status().is_ready(), "{:?}", server.status().state);

    let seen = script.seen();
    assert_eq!(script.initializes(), 2, "{seen:#?}");
    let initializes: Vec<_> = seen
        .iter()
        .filter(|s| s.rpc_method.as_deref() == Some("initialize"))
        .collect();
    assert_eq!(
        initializes[1].session, None,
        "the new initialize goes without the lost session's id"
    );
    let calls: Vec<_> = seen
        .iter()
        .filter(|s| s.rpc_method.as_deref() == Some("tools/call"))
        .collect();
    let first_posts: Vec<_> = calls
        .iter()
        .filter(|s| s.tool.as_deref() == Some("first"))
        .collect();
    assert_eq!(first_posts.len(), 2, "{calls:#?}");
    assert_eq!(first_posts[0].id, first_posts[1].id, "resent as it was");
    assert_eq!(first_posts[0].session.as_deref(), Some("s1"));
    assert_eq!(first_posts[1].session.as_deref(), Some("s2"));
    let second_posts = calls
        .iter()
        .filter(|s| s.tool.as_deref() == Some("second"))
        .count();
    assert_eq!(second_posts, 1, "nothing else is replayed: {calls:#?}");
    for s in &seen {
        assert!(
            matches!(
                s.rpc_method.as_deref(),
                None | Some(
                    "initialize" | "notifications/initialized" | "tools/list" | "tools/call"
                )
            ),
            "unexpected message: {s:?}"
        );
    }

    rt.shutdown().await;
    let deletes: Vec<_> = script
        .seen()
        .into_iter()
        .filter(|s| s.verb == Method::DELETE)
        .collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0].session.as_deref(), Some("s2"));
}

/// A server that refuses every request with 401 and a Protected Resource Metadata pointer.
pub(crate) async fn serve_unauthorized() -> String {
    let addr = crate::http_fixture::serve_knowing_address(|addr| {
        move |_request: Request<Incoming>| {
            let challenge = format!(
                "Bearer resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\""
            );
            async move {
                Ok::<_, Infallible>(
                    Response::builder()
                        .status(StatusCode::UNAUTHORIZED)
                        .header("www-authenticate", challenge)
                        .body(Full::new(Bytes::new()))
                        .unwrap(),
                )
            }
        }
    })
    .await;
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn a_401_without_an_auth_hook_is_a_typed_error_with_the_resource_metadata() {
    let url = serve_unauthorized().await;
    let rt = Runtime::builder()
        .server(
            "locked",
            ServerConfig::http(&url, HttpKind::StreamableHttp)
                .bearer_token("wrong-secret-token")
                .restart(RestartPolicy::off()),
        )
        .build()
        .await
        .unwrap();
    let status = rt.server("locked").unwrap().status();
    let switchboard::ServerState::Failed { error } = status.state else {
        panic!("{:?}", status.state)
    };
    let ErrorKind::Unauthorized { resource_metadata } = error.kind() else {
        panic!("{error:?}")
    };
    assert!(
        resource_metadata
            .as_deref()
            .is_some_and(|r| r.ends_with("/.well-known/oauth-protected-resource/mcp")),
        "{resource_metadata:?}"
    );
    // The token never shows.
    assert!(!error.to_string().contains("wrong-secret-token"));
    assert!(!format!("{error:?}").contains("wrong-secret-token"));
    rt.shutdown().await;
}
