//! What the scripted Streamable HTTP servers of these tests share: reading a request's verb,
//! session and body, and the two kinds of answer they give.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

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
