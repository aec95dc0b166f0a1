//! Bodies and events that are not messages, or are larger than the limit, come out as
//! `Skipped` and the connection goes on: an oversized JSON body, an oversized SSE event, a
//! malformed legacy `message` event.

use std::sync::{Arc, Mutex};

use hyper::Method;
use switchboard_codecs::jsonrpc::Id;
use switchboard_codecs::lines::SkipKind;
use switchboard_transports::http::{self, Config, Kind};
use switchboard_transports::Event;
use tokio::sync::mpsc;

use crate::http_support::*;
use crate::support::{next_event, number_id, request};

#[tokio::test]
async fn oversized_json_and_sse_are_skipped() {
    let server = TestServer::start(|seen: Seen| async move {
        let id = seen.rpc_id().unwrap();
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"n","params":{{"x":"{}"}}}}"#,
            "a".repeat(500)
        );
        if id == "1" {
            json(200, &big)
        } else {
            sse(&[&event(Some("x1"), &big), &event(Some("x2"), &result(&id))])
        }
    })
    .await;
    let config = Config::new(server.url("/mcp")).max_event_size(256);
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Skipped(s) => assert_eq!(s.kind, SkipKind::TooLong),
        other => panic!("expected Skipped, got {other:?}"),
    }
    match next_event(&mut conn.events).await {
        Event::SendFailed { id, .. } => assert_eq!(id, Id::Number(1)),
        other => panic!("expected SendFailed, got {other:?}"),
    }
    conn.sender.send(request(2)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Skipped(s) => assert_eq!(s.kind, SkipKind::TooLong),
        other => panic!("expected Skipped, got {other:?}"),
    }
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(2)),
        other => panic!("expected the answer, got {other:?}"),
    }
    conn.control.close().await;
}

#[tokio::test]
async fn malformed_legacy_message_is_skipped() {
    let stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>> = Arc::default();
    let server = TestServer::start(move |seen: Seen| {
        let stream = stream.clone();
        async move {
            if seen.method == Method::GET {
                let (tx, response) = sse_channel();
                tx.send("event: endpoint\ndata: /m\n\n".into()).unwrap();
                *stream.lock().unwrap() = Some(tx);
                return response;
            }
            if let Some(tx) = stream.lock().unwrap().as_ref() {
                tx.send(event(None, r#"{"jsonrpc":"2.0","id":1,"result":"#))
                    .unwrap();
                tx.send(event(None, &result("1"))).unwrap();
            }
            empty(202)
        }
    })
    .await;
    let mut conn = http::connect("t", &Config::new(server.url("/sse")), Kind::Sse)
        .await
        .unwrap();
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Skipped(s) => assert_eq!(s.kind, SkipKind::NotJson),
        other => panic!("expected Skipped, got {other:?}"),
    }
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(1)),
        other => panic!("expected the answer, got {other:?}"),
    }
    conn.control.close().await;
}
