//! `notifications/initialized` reaches a Streamable HTTP server before any later request:
//! each message is its own POST, so without waiting a request could overtake it (servers that
//! enforce the lifecycle, such as the Python SDK's, refuse requests that come first).

use std::time::Duration;

use hyper::Method;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::Event;

use crate::http_support::*;
use crate::support::{next_event, number_id, request};

/// How long the server takes to accept `notifications/initialized`.
const SLOW: Duration = Duration::from_millis(300);

#[tokio::test]
async fn requests_wait_for_the_initialized_post() {
    let server = TestServer::start(|seen: Seen| async move {
        match (seen.method.clone(), seen.rpc_method().as_deref()) {
            (Method::POST, Some("initialize")) => with_header(
                json(200, &result(&seen.rpc_id().unwrap())),
                "mcp-session-id",
                "sess-1",
            ),
            (Method::POST, Some("notifications/initialized")) => {
                tokio::time::sleep(SLOW).await;
                empty(202)
            }
            (Method::POST, Some(_)) => json(200, &result(&seen.rpc_id().unwrap())),
            (Method::GET, _) => empty(405),
            _ => empty(200),
        }
    })
    .await;
    let config = Config::new(server.url("/mcp"));
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(initialize(1)).unwrap();
    assert!(matches!(
        next_event(&mut conn.events).await,
        Event::Message(_)
    ));
    conn.control.set_protocol_version("2025-11-25");
    conn.sender.send(initialized()).unwrap();
    conn.sender.send(request(2)).unwrap();
    conn.sender.send(request(3)).unwrap();
    for _ in 0..2 {
        match next_event(&mut conn.events).await {
            Event::Message(m) => assert!(matches!(number_id(&m), Some(2 | 3))),
            other => panic!("expected an answer, got {other:?}"),
        }
    }
    conn.control.close().await;

    let posts = server.seen_with(Method::POST);
    let methods: Vec<_> = posts.iter().map(|p| p.rpc_method()).collect();
    assert_eq!(posts.len(), 4, "{methods:?}");
    assert_eq!(
        posts[1].rpc_method().as_deref(),
        Some("notifications/initialized")
    );
    for later in &posts[2..] {
        assert!(
            later.at >= posts[1].at + SLOW,
            "a request was sent before the initialized POST was answered: {methods:?}"
        );
    }
}
