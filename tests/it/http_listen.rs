//! `subscriptions/listen` over Streamable HTTP with a scripted 2026-07-28 server: the listen
//! is a POST whose event stream stays open; list changes and resource updates on it reach
//! the catalogue and the subscriber; `subscribe` replaces it (closing the old stream, the
//! era's cancellation over HTTP); a stream that ends without an answer is opened again.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{Either, Full};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::{Era, Liveness, RestartPolicy, Runtime, ServerConfig};
use tokio::sync::mpsc;

use crate::http_fixture::json_response;

/// An SSE body fed by the test, open until its sender is dropped.
struct Events(mpsc::UnboundedReceiver<Bytes>);

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|event| event.map(|e| Ok(Frame::data(e))))
    }
}

/// One listen the server took: its request and the way to its stream.
struct Listen {
    body: Value,
    mcp_method: Option<String>,
    events: mpsc::UnboundedSender<Bytes>,
}

impl Listen {
    /// Sends `message` as an SSE event on this listen's stream.
    fn send(&self, message: Value) {
        let _ = self
            .events
            .send(Bytes::from(format!("event: message\ndata: {message}\n\n")));
    }

    /// Sends a notification tagged with this listen's id.
    fn notify(&self, method: &str, mut params: Value) {
        params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": self.body["id"]});
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

#[derive(Default)]
struct Server {
    listens: Mutex<Vec<Listen>>,
    /// The tool listing's version: tool `t{n}`.
    version: AtomicUsize,
}

type Body = Either<Full<Bytes>, Events>;

async fn handle(
    server: Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let mcp_method = request
        .headers()
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (_, _, body) = crate::http_fixture::read(request).await;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = body["id"].clone();
    let ok = |result: Value| {
        json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
        .map(Either::Left)
    };
    let version = server.version.load(Ordering::SeqCst);
    let response = match body["method"].as_str() {
        Some("server/discover") => ok(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}}
        })),
        Some("tools/list") => ok(json!({"resultType": "complete", "ttlMs": 60_000, "tools": [
            {"name": format!("t{version}"), "inputSchema": {"type": "object"}}
        ]})),
        Some("resources/list") => ok(json!({"resultType": "complete", "resources": []})),
        Some("resources/templates/list") => {
            ok(json!({"resultType": "complete", "resourceTemplates": []}))
        }
        Some("subscriptions/listen") => {
            let (events, stream) = mpsc::unbounded_channel();
            let listen = Listen {
                mcp_method,
                events,
                body: body.clone(),
            };
            listen.send(json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
                           "notifications": body["params"]["notifications"]}}));
            server.listens.lock().unwrap().push(listen);
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "text/event-stream")
                .body(Either::Right(Events(stream)))
                .unwrap()
        }
        _ => json_response(
            StatusCode::NOT_FOUND,
            None,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
        )
        .map(Either::Left),
    };
    Ok(response)
}

async fn serve(server: Arc<Server>) -> String {
    let addr = crate::http_fixture::serve(move |r| handle(server.clone(), r)).await;
    format!("http://{addr}/mcp")
}

/// Waits (at most 10 s) for `done`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_http_server_is_listened_to_on_a_post_stream_that_is_replaced_and_reopened() {
    let state = Arc::new(Server::default());
    let url = serve(state.clone()).await;
    let rt = Runtime::builder()
        .server(
            "remote",
            ServerConfig::http(url, HttpKind::StreamableHttp)
                .restart(RestartPolicy::off())
                .liveness(Liveness::off())
                .timeout(Duration::from_secs(10)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("remote").unwrap();
    assert_eq!(server.status().era, Some(Era::Modern));
    let listens = || state.listens.lock().unwrap().len();
    until("the listen", || listens() == 1).await;
    {
        let all = state.listens.lock().unwrap();
        assert_eq!(all[0].mcp_method.as_deref(), Some("subscriptions/listen"));
        assert_eq!(
            all[0].body["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
    }

    // A list change on the stream: the tools are listed again.
    state.version.store(1, Ordering::SeqCst);
    state.listens.lock().unwrap()[0].notify("notifications/tools/list_changed", json!({}));
    until("the new listing", || server.tools()[0].name == "t1").await;

    // Subscribing replaces the listen; the old stream is closed.
    let mut updates = server.subscribe("x://a").await.unwrap();
    {
        let all = state.listens.lock().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[1].body["params"]["notifications"]["resourceSubscriptions"],
            json!(["x://a"])
        );
    }
    until("the old stream closed", || {
        state.listens.lock().unwrap()[0].events.is_closed()
    })
    .await;
    state.listens.lock().unwrap()[1]
        .notify("notifications/resources/updated", json!({"uri": "x://a"}));
    let update = tokio::time::timeout(Duration::from_secs(10), updates.recv())
        .await
        .expect("an update in time")
        .unwrap();
    assert_eq!(update.uri, "x://a");

    // The server drops the stream without answering: the listen is opened again, with the
    // same subscriptions.
    let (events, _) = mpsc::unbounded_channel();
    let dropped = std::mem::replace(&mut state.listens.lock().unwrap()[1].events, events);
    drop(dropped);
    until("the listen opened again", || listens() == 3).await;
    assert_eq!(
        state.listens.lock().unwrap()[2].body["params"]["notifications"]["resourceSubscriptions"],
        json!(["x://a"])
    );
    rt.shutdown().await;
}
