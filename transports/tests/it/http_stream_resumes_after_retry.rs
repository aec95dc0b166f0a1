//! A POST's SSE stream that drops before its answer is resumed by GET with `Last-Event-ID`
//! after exactly the stream's `retry:` delay (the conformance window is −50/+200 ms); a
//! stream without event ids cannot resume and its request fails.

use std::time::Duration;

use hyper::Method;
use switchboard_codecs::jsonrpc::Id;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::Event;

use crate::http_support::*;
use crate::support::{next_event, number_id, request};

#[tokio::test]
async fn dropped_stream_is_resumed_with_last_event_id_after_retry() {
    let server = TestServer::start(|seen: Seen| async move {
        match seen.method {
            // Priming event with retry, then the stream ends without the answer.
            Method::POST => sse(&["id: ev-1\nretry: 2000\ndata: \n\n"]),
            Method::GET if seen.header("last-event-id") == Some("ev-1") => {
                sse(&[&event(Some("ev-2"), &result("5"))])
            }
            _ => empty(400),
        }
    })
    .await;
    let mut conn = http::connect("t", &Config::new(server.url("/mcp")), Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(5)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(5)),
        other => panic!("expected the answer, got {other:?}"),
    }
    let post = &server.seen_with(Method::POST)[0];
    let gets = server.seen_with(Method::GET);
    assert_eq!(gets.len(), 1);
    assert_eq!(gets[0].header("accept"), Some("text/event-stream"));
    let waited = gets[0].at - post.at;
    // A delay long beside this machine's stalls: the bound checked is that the stream's own
    // `retry:` is waited for (not the 1 s default, not less), with room for a loaded VM
    // (the exact timer is unit-tested in the session).
    assert!(
        waited >= Duration::from_millis(1950) && waited <= Duration::from_millis(3500),
        "resumed after {waited:?}, expected the stream's 2 s"
    );
    conn.control.close().await;
}

#[tokio::test]
async fn dropped_stream_without_event_id_reports_its_request_lost() {
    let server =
        TestServer::start(|_seen: Seen| async move { sse(&["data: \n\n", ": nothing else\n\n"]) })
            .await;
    let mut conn = http::connect("t", &Config::new(server.url("/mcp")), Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(9)).unwrap();
    match next_event(&mut conn.events).await {
        Event::StreamBroken { id, reason } => {
            assert_eq!(id, Id::Number(9));
            assert!(reason.contains("cannot be resumed"), "{reason}");
        }
        other => panic!("expected StreamBroken, got {other:?}"),
    }
    assert!(server.seen_with(Method::GET).is_empty());
    conn.control.close().await;
}

#[tokio::test]
async fn idle_stream_counts_as_dropped_and_resumes() {
    let server = TestServer::start(|seen: Seen| async move {
        match seen.method {
            Method::POST => {
                let (tx, response) = sse_channel();
                tokio::spawn(async move {
                    tx.send("id: a1\nretry: 100\ndata: \n\n".into()).unwrap();
                    // Silent, but open.
                    tokio::time::sleep(Duration::from_secs(30)).await;
                });
                response
            }
            _ => sse(&[&event(Some("a2"), &result("3"))]),
        }
    })
    .await;
    let config = Config::new(server.url("/mcp")).idle_timeout(Duration::from_millis(300));
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(3)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(3)),
        other => panic!("expected the answer, got {other:?}"),
    }
    assert_eq!(
        server.seen_with(Method::GET)[0].header("last-event-id"),
        Some("a1")
    );
    conn.control.close().await;
}
