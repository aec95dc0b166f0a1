//! Session loss: a 404 (the spec) or a 400 whose JSON-RPC error speaks of the session
//! (server-everything) to a request that carried the session id gives one `SessionExpired`
//! naming it; a new `initialize` then goes without a session header and its new session id
//! is used from then on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hyper::Method;
use switchboard_codecs::jsonrpc::Id;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::Event;

use crate::http_support::*;
use crate::support::{next_event, number_id, request};

async fn session_is_renewed_after(rejection: fn() -> hyper::Response<Body>) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let server = TestServer::start(move |seen: Seen| {
        let sessions = sessions.clone();
        async move {
            if seen.method != Method::POST {
                return empty(405);
            }
            let id = seen.rpc_id().unwrap_or_default();
            match (seen.rpc_method().as_deref(), seen.header("mcp-session-id")) {
                (Some("initialize"), None) => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    with_header(json(200, &result(&id)), "mcp-session-id", &format!("s{n}"))
                }
                (Some("initialize"), Some(_)) => empty(500),
                // The first session is forgotten at once.
                (_, Some("s1")) => rejection(),
                (_, Some(_)) => json(200, &result(&id)),
                (_, None) => empty(400),
            }
        }
    })
    .await;
    let mut conn = http::connect("t", &Config::new(server.url("/mcp")), Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(initialize(1)).unwrap();
    assert!(matches!(
        next_event(&mut conn.events).await,
        Event::Message(_)
    ));
    conn.sender.send(request(2)).unwrap();
    match next_event(&mut conn.events).await {
        Event::SessionExpired { id } => assert_eq!(id, Some(Id::Number(2))),
        other => panic!("expected SessionExpired, got {other:?}"),
    }
    // What the runtime does: handshake again, resend the rejected request.
    conn.sender.send(initialize(3)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(3)),
        other => panic!("expected the initialize answer, got {other:?}"),
    }
    conn.sender.send(request(2)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(2)),
        other => panic!("expected the answer, got {other:?}"),
    }
    let posts = server.seen_with(Method::POST);
    let sessions: Vec<_> = posts.iter().map(|p| p.header("mcp-session-id")).collect();
    assert_eq!(sessions, [None, Some("s1"), None, Some("s2")]);
    conn.control.close().await;
}

#[tokio::test]
async fn not_found_means_the_session_expired() {
    session_is_renewed_after(|| empty(404)).await;
}

#[tokio::test]
async fn bad_request_about_the_session_means_it_expired() {
    session_is_renewed_after(|| {
        json(
            400,
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
        )
    })
    .await;
}

#[tokio::test]
async fn other_bad_requests_only_fail_the_request() {
    let server = TestServer::start(|seen: Seen| async move {
        match seen.rpc_method().as_deref() {
            Some("initialize") => with_header(
                json(200, &result(&seen.rpc_id().unwrap())),
                "mcp-session-id",
                "s1",
            ),
            _ => json(
                400,
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Unsupported protocol version"},"id":null}"#,
            ),
        }
    })
    .await;
    let mut conn = http::connect("t", &Config::new(server.url("/mcp")), Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(initialize(1)).unwrap();
    assert!(matches!(
        next_event(&mut conn.events).await,
        Event::Message(_)
    ));
    conn.sender.send(request(2)).unwrap();
    match next_event(&mut conn.events).await {
        Event::SendFailed { id, reason } => {
            assert_eq!(id, Id::Number(2));
            assert!(reason.contains("400"), "{reason}");
        }
        other => panic!("expected SendFailed, got {other:?}"),
    }
    conn.control.close().await;
}
