//! A stateless (2026-07-28) request is cancelled by closing its stream; a cancel that
//! crosses the request's answer is dropped, never POSTed: the era has no
//! `notifications/cancelled` over HTTP, and the server would refuse one without its headers.

use hyper::Method;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::Event;

use crate::http_support::*;
use crate::support::{next_event, number_id};

const STATELESS_PING: &str = r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
const CANCEL_5: &str = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"late"}}"#;

#[tokio::test]
async fn a_cancel_after_the_answer_is_not_posted_on_a_stateless_connection() {
    let server = TestServer::start(|seen: Seen| async move {
        match (seen.method.clone(), seen.rpc_method().as_deref()) {
            (Method::POST, Some("ping")) => json(200, &result(&seen.rpc_id().unwrap())),
            (Method::POST, _) => empty(202),
            _ => empty(405),
        }
    })
    .await;
    let config = Config::new(server.url("/mcp"));
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(stateless(STATELESS_PING)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(5)),
        other => panic!("expected the answer, got {other:?}"),
    }
    // The caller's deadline passed while the answer was on its way: its cancel comes late.
    conn.sender.send(outbound(CANCEL_5)).unwrap();
    // A later request shows the cancel was handled (the writer takes messages in order).
    conn.sender
        .send(stateless(&STATELESS_PING.replace(r#""id":5"#, r#""id":6"#)))
        .unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(6)),
        other => panic!("expected the answer, got {other:?}"),
    }
    let methods: Vec<_> = server
        .seen_with(Method::POST)
        .iter()
        .map(|s| s.rpc_method())
        .collect();
    assert_eq!(methods, [Some("ping".into()), Some("ping".into())]);
    // A cancel still queued when the connection closes (a runtime shutting down cancels
    // what is pending) is not POSTed either.
    conn.sender
        .send(outbound(
            &CANCEL_5.replace(r#""requestId":5"#, r#""requestId":6"#),
        ))
        .unwrap();
    conn.control.close().await;
    let cancels = server
        .seen_with(Method::POST)
        .iter()
        .filter(|s| s.rpc_method().as_deref() == Some("notifications/cancelled"))
        .count();
    assert_eq!(cancels, 0);
}
