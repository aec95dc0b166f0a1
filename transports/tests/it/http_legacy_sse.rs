//! The legacy HTTP+SSE transport: Auto mode falls back to it when the `initialize` POST
//! gets 404 (and the pending initialize is still answered); an endpoint on another origin
//! is refused; the end of the stream ends the connection.

use std::sync::{Arc, Mutex};

use hyper::Method;
use switchboard_transports::http::{self, Config, Error, Kind};
use switchboard_transports::{CloseCause, Event};
use tokio::sync::mpsc;

use crate::http_support::*;
use crate::support::{next_event, number_id, request, until_closed};

/// A legacy server: `GET /sse` opens the stream and announces `/message?sessionId=abc`;
/// each POST there is answered on the stream.
async fn legacy_server(endpoint: &'static str) -> TestServer {
    let stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>> = Arc::default();
    TestServer::start(move |seen: Seen| {
        let stream = stream.clone();
        async move {
            match (seen.method.clone(), seen.uri.as_str()) {
                (Method::GET, "/sse") => {
                    let (tx, response) = sse_channel();
                    tx.send(format!("event: endpoint\ndata: {endpoint}\n\n"))
                        .unwrap();
                    *stream.lock().unwrap() = Some(tx);
                    response
                }
                (Method::POST, "/message?sessionId=abc") => {
                    if let (Some(id), Some(method)) = (seen.rpc_id(), seen.rpc_method()) {
                        let mut stream = stream.lock().unwrap();
                        if let Some(tx) = stream.as_ref() {
                            tx.send(event(None, &result(&id))).unwrap();
                        }
                        if method == "shutdown-stream" {
                            stream.take();
                        }
                    }
                    empty(202)
                }
                // What a legacy server says to a Streamable POST.
                _ => empty(404),
            }
        }
    })
    .await
}

#[tokio::test]
async fn auto_falls_back_to_legacy_sse_and_answers_the_initialize() {
    let server = legacy_server("/message?sessionId=abc").await;
    let mut conn = http::connect("t", &Config::new(server.url("/sse")), Kind::Auto)
        .await
        .unwrap();
    assert_eq!(conn.control.kind().as_str(), "http");
    conn.sender.send(initialize(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(1)),
        other => panic!("expected the initialize answer, got {other:?}"),
    }
    assert_eq!(conn.control.kind().as_str(), "sse");
    conn.control.set_protocol_version("2024-11-05");
    conn.sender.send(request(2)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(2)),
        other => panic!("expected the answer, got {other:?}"),
    }
    let seen: Vec<_> = server
        .seen()
        .iter()
        .map(|s| format!("{} {}", s.method, s.uri))
        .collect();
    assert_eq!(
        seen,
        [
            "POST /sse",
            "GET /sse",
            "POST /message?sessionId=abc",
            "POST /message?sessionId=abc"
        ]
    );
    conn.control.close().await;
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);
}

#[tokio::test]
async fn the_end_of_the_legacy_stream_ends_the_connection() {
    let server = legacy_server("/message?sessionId=abc").await;
    let mut conn = http::connect("t", &Config::new(server.url("/sse")), Kind::Sse)
        .await
        .unwrap();
    assert_eq!(conn.control.kind().as_str(), "sse");
    conn.sender
        .send(outbound(
            r#"{"jsonrpc":"2.0","id":4,"method":"shutdown-stream"}"#,
        ))
        .unwrap();
    let (messages, reason) = until_closed(&mut conn.events).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(reason.cause, CloseCause::Eof);
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused() {
    let server = legacy_server("http://evil.example:8080/steal?sessionId=abc").await;
    let config = Config::new(server.url("/sse")).bearer_token(Some("tok-sekrit".into()));
    let err = http::connect("t", &config, Kind::Sse).await.unwrap_err();
    assert!(matches!(err, Error::CrossOriginEndpoint { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("evil.example") && !text.contains("sessionId"),
        "{text}"
    );
    assert!(!text.contains("tok-sekrit"));
    assert_eq!(server.seen_with(Method::POST).len(), 0);
}
