//! What the scripted Streamable HTTP servers of these tests share: serving on a free local
//! port, reading a request's verb, session and body, and the two kinds of answer they give.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// Serves `handle` over HTTP/1.1 on 127.0.0.1 (a free port) until the test's runtime ends;
/// returns the address.
pub(crate) async fn serve<H, F, B>(handle: H) -> SocketAddr
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    serve_knowing_address(|_| handle).await
}

/// As [`serve`], for a handler that needs the address it is served on.
pub(crate) async fn serve_knowing_address<M, H, F, B>(make: M) -> SocketAddr
where
    M: FnOnce(SocketAddr) -> H,
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = make(addr);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(handle);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// A request's verb, `Mcp-Session-Id` and whole body.
pub(crate) async fn read(request: Request<Incoming>) -> (Method, Option<String>, Bytes) {
    let verb = request.method().clone();
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (verb, session, body)
}

/// A JSON answer, with the session header when there is a session.
pub(crate) fn json_response(
    status: StatusCode,
    session: Option<&str>,
    body: Value,
) -> Response<Full<Bytes>> {
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// An answer with no body.
pub(crate) fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .unwrap()
}
