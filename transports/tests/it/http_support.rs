//! A scripted HTTP server on 127.0.0.1 for the HTTP transport tests: every request is
//! recorded, and a handler written by the test answers it.
#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use switchboard_codecs::jsonrpc::Message;
use switchboard_transports::Outbound;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// A response body.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    /// Path and query.
    pub(crate) uri: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) at: Instant,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC method of the body, if any.
    pub(crate) fn rpc_method(&self) -> Option<String> {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()?
            .get("method")?
            .as_str()
            .map(str::to_owned)
    }

    /// The JSON-RPC id of the body, as JSON text.
    pub(crate) fn rpc_id(&self) -> Option<String> {
        let value = serde_json::from_slice::<serde_json::Value>(&self.body).ok()?;
        value.get("id").map(|id| id.to_string())
    }
}

type Handler =
    Arc<dyn Fn(Seen) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync>;

/// The running server.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    log: Arc<Mutex<Vec<Seen>>>,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl TestServer {
    /// Starts a server answering with `handler`.
    pub(crate) async fn start<F, Fut>(handler: F) -> TestServer
    where
        F: Fn(Seen) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |seen| Box::pin(handler(seen)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let log = log.clone();
            let tasks = tasks.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let handler = handler.clone();
                    let log = log.clone();
                    let service =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let log = log.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let seen = Seen {
                                    method: parts.method,
                                    uri: parts
                                        .uri
                                        .path_and_query()
                                        .map(|p| p.to_string())
                                        .unwrap_or_default(),
                                    headers: parts.headers,
                                    body,
                                    at: Instant::now(),
                                };
                                log.lock().unwrap().push(seen.clone());
                                Ok::<_, Infallible>(handler(seen).await)
                            }
                        });
                    let connection = tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                    tasks.lock().unwrap().push(connection.abort_handle());
                }
            })
        };
        tasks.lock().unwrap().push(accept.abort_handle());
        TestServer { addr, log, tasks }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// The requests so far with this HTTP method.
    pub(crate) fn seen_with(&self, method: Method) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == method)
            .collect()
    }

    /// Stops listening and drops every connection.
    pub(crate) fn stop(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A JSON answer.
pub(crate) fn json(status: u16, body: &str) -> Response<Body> {
    response(
        status,
        "application/json",
        Full::new(Bytes::from(body.to_owned())).boxed_unsync(),
    )
}

/// An empty answer.
pub(crate) fn empty(status: u16) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    r
}

/// A complete event stream.
pub(crate) fn sse(events: &[&str]) -> Response<Body> {
    response(
        200,
        "text/event-stream",
        Full::new(Bytes::from(events.concat())).boxed_unsync(),
    )
}

/// An event stream that goes on while the returned sender lives.
pub(crate) fn sse_channel() -> (mpsc::UnboundedSender<String>, Response<Body>) {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|text| (Ok::<_, Infallible>(Frame::data(Bytes::from(text))), rx))
    });
    (
        tx,
        response(
            200,
            "text/event-stream",
            BodyExt::boxed_unsync(StreamBody::new(stream.boxed())),
        ),
    )
}

fn response(status: u16, content_type: &str, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_str(content_type).unwrap());
    r
}

/// Adds a header to a response.
pub(crate) fn with_header(
    mut r: Response<Body>,
    name: &'static str,
    value: &str,
) -> Response<Body> {
    r.headers_mut()
        .insert(name, HeaderValue::from_str(value).unwrap());
    r
}

/// One SSE `message` event.
pub(crate) fn event(id: Option<&str>, data: &str) -> String {
    match id {
        Some(id) => format!("event: message\nid: {id}\ndata: {data}\n\n"),
        None => format!("event: message\ndata: {data}\n\n"),
    }
}

/// Parses a message, for sending.
pub(crate) fn outbound(text: &str) -> Outbound {
    Outbound::from_message(&Message::from_slice(text.as_bytes()).expect("a valid message"))
}

/// `text`, a request, framed as a stateless (2026-07-28) one: what the runtime's framer says
/// of a request whose `_meta` names that version.
pub(crate) fn stateless(text: &str) -> Outbound {
    let Ok(Message::Request(request)) = Message::from_slice(text.as_bytes()) else {
        panic!("not a request: {text}")
    };
    let facts = switchboard_transports::connection::Stateless::new("2026-07-28".into());
    Outbound::request(
        request.id,
        request.method.as_str().into(),
        Some(std::sync::Arc::new(facts)),
        bytes::Bytes::copy_from_slice(text.as_bytes()),
    )
}

/// An `initialize` request.
pub(crate) fn initialize(id: i64) -> Outbound {
    outbound(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    ))
}

/// A result for request `id`.
pub(crate) fn result(id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
}

/// A `notifications/initialized`.
pub(crate) fn initialized() -> Outbound {
    outbound(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
}
