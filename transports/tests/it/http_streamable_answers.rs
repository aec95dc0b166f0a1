//! Streamable HTTP answers: JSON (one message and a batch), SSE streams with priming events
//! and server messages before the response, out-of-order answers on concurrent streams,
//! the session and version headers, and DELETE on close.

use std::time::Duration;

use hyper::Method;
use switchboard_codecs::jsonrpc::Message;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::{CloseCause, Event};

use crate::http_support::*;
use crate::support::{next_event, number_id, request, until_closed};

fn message(event: Event) -> Message {
    match event {
        Event::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

#[tokio::test]
async fn json_answers_session_headers_and_delete_on_close() {
    let server = TestServer::start(|seen: Seen| async move {
        match (seen.method.clone(), seen.rpc_method().as_deref()) {
            (Method::POST, Some("initialize")) => with_header(
                json(200, &result(&seen.rpc_id().unwrap())),
                "mcp-session-id",
                "sess-1",
            ),
            (Method::POST, Some("ping")) => json(
                200,
                &format!(
                    r#"[{{"jsonrpc":"2.0","method":"notifications/message"}},{}]"#,
                    result(&seen.rpc_id().unwrap())
                ),
            ),
            (Method::POST, _) => empty(202),
            (Method::GET, _) => empty(405),
            (Method::DELETE, _) => empty(200),
            _ => empty(500),
        }
    })
    .await;
    let config = Config::new(server.url("/mcp"));
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    assert_eq!(conn.control.kind().as_str(), "http");
    assert!(server.seen().is_empty(), "connect does no i/o");

    conn.sender.send(initialize(1)).unwrap();
    assert_eq!(
        number_id(&message(next_event(&mut conn.events).await)),
        Some(1)
    );
    conn.control.set_protocol_version("2025-11-25");
    conn.sender.send(initialized()).unwrap();
    conn.sender.send(request(2)).unwrap();
    assert_eq!(
        message(next_event(&mut conn.events).await).method(),
        Some("notifications/message")
    );
    assert_eq!(
        number_id(&message(next_event(&mut conn.events).await)),
        Some(2)
    );

    conn.control.close().await;
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);

    let posts = server.seen_with(Method::POST);
    assert_eq!(posts.len(), 3);
    for post in &posts {
        assert_eq!(
            post.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(post.header("content-type"), Some("application/json"));
    }
    assert_eq!(posts[0].header("mcp-session-id"), None);
    assert_eq!(posts[0].header("mcp-protocol-version"), None);
    for later in &posts[1..] {
        assert_eq!(later.header("mcp-session-id"), Some("sess-1"));
        assert_eq!(later.header("mcp-protocol-version"), Some("2025-11-25"));
    }
    let gets = server.seen_with(Method::GET);
    assert_eq!(gets.len(), 1, "one GET stream attempt; 405 is final");
    assert_eq!(gets[0].header("accept"), Some("text/event-stream"));
    assert_eq!(gets[0].header("mcp-session-id"), Some("sess-1"));
    let deletes = server.seen_with(Method::DELETE);
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].header("mcp-session-id"), Some("sess-1"));
}

#[tokio::test]
async fn sse_answers_with_priming_events_and_server_messages_first() {
    let server = TestServer::start(|seen: Seen| async move {
        if seen.method != Method::POST {
            return empty(405);
        }
        let (Some(id), Some(_)) = (seen.rpc_id(), seen.rpc_method()) else {
            return empty(202);
        };
        let priming = "id: prime-1\ndata: \n\n".to_owned();
        let progress = event(
            Some("e1"),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
        );
        let sampling = event(
            Some("e2"),
            r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage"}"#,
        );
        let answer = event(Some("e3"), &result(&id));
        sse(&[&priming, ": keep-alive\n\n", &progress, &sampling, &answer])
    })
    .await;
    let mut conn = http::connect("t", &Config::new(server.url("/mcp")), Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(7)).unwrap();
    assert_eq!(
        message(next_event(&mut conn.events).await).method(),
        Some("notifications/progress")
    );
    assert_eq!(
        message(next_event(&mut conn.events).await).method(),
        Some("sampling/createMessage")
    );
    assert_eq!(
        number_id(&message(next_event(&mut conn.events).await)),
        Some(7)
    );
    // The server request's answer goes back as a POST of its own.
    conn.sender
        .send(outbound(r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#))
        .unwrap();
    conn.control.close().await;
    let (messages, reason) = until_closed(&mut conn.events).await;
    assert!(messages.is_empty(), "{messages:?}");
    assert_eq!(reason.cause, CloseCause::Closed);
    let posts = server.seen_with(Method::POST);
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[1].rpc_id().as_deref(), Some("\"s1\""));
}

#[tokio::test]
async fn concurrent_requests_are_answered_out_of_order() {
    let server = TestServer::start(|seen: Seen| async move {
        let id: u64 = seen.rpc_id().unwrap().parse().unwrap();
        let (tx, response) = sse_channel();
        tokio::spawn(async move {
            tx.send(format!("id: {id}-0\ndata: \n\n")).unwrap();
            // Later requests are answered first, far enough apart for a loaded machine.
            tokio::time::sleep(Duration::from_millis(1600 - 500 * id)).await;
            tx.send(event(Some(&format!("{id}-1")), &result(&id.to_string())))
                .unwrap();
            // The stream stays open after the answer: the client stops reading.
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        response
    })
    .await;
    let mut conn = http::connect("t", &Config::new(server.url("/mcp")), Kind::StreamableHttp)
        .await
        .unwrap();
    for id in 1..=3 {
        conn.sender.send(request(id)).unwrap();
    }
    let mut order = Vec::new();
    for _ in 1..=3 {
        order.push(number_id(&message(next_event(&mut conn.events).await)).unwrap());
    }
    assert_eq!(order, [3, 2, 1]);
    conn.control.close().await;
}
