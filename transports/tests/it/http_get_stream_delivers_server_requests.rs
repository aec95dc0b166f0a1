//! After the protocol version is set, the GET stream opens (with the session and version
//! headers) and delivers server-initiated requests; their answers are POSTed back.

use std::time::Duration;

use hyper::Method;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::Event;

use crate::http_support::*;
use crate::support::{next_event, PATIENCE};

#[tokio::test]
async fn server_requests_arrive_on_the_get_stream() {
    let server = TestServer::start(|seen: Seen| async move {
        match seen.method {
            Method::POST if seen.rpc_method().as_deref() == Some("initialize") => with_header(
                json(200, &result(&seen.rpc_id().unwrap())),
                "mcp-session-id",
                "s1",
            ),
            Method::POST => empty(202),
            Method::GET => {
                let (tx, response) = sse_channel();
                tokio::spawn(async move {
                    tx.send("id: g0\ndata: \n\n".into()).unwrap();
                    tx.send(event(
                        Some("g1"),
                        r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#,
                    ))
                    .unwrap();
                    tokio::time::sleep(Duration::from_secs(30)).await;
                });
                response
            }
            _ => empty(200),
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
    assert!(
        server.seen_with(Method::GET).is_empty(),
        "no GET before the version is set"
    );
    conn.control.set_protocol_version("2025-06-18");
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(m.method(), Some("roots/list")),
        other => panic!("expected the server's request, got {other:?}"),
    }
    let get = &server.seen_with(Method::GET)[0];
    assert_eq!(get.header("mcp-session-id"), Some("s1"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-06-18"));

    conn.sender
        .send(outbound(
            r#"{"jsonrpc":"2.0","id":"r1","result":{"roots":[]}}"#,
        ))
        .unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while server.seen_with(Method::POST).len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the answer was not posted"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answer = &server.seen_with(Method::POST)[1];
    assert_eq!(answer.rpc_id().as_deref(), Some("\"r1\""));
    assert_eq!(answer.header("mcp-session-id"), Some("s1"));
    conn.control.close().await;
}
