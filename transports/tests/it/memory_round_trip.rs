//! The in-memory connection: a round trip through an echo server on the other end, and the
//! two ways it ends.

use switchboard_transports::{memory, CloseCause, Event};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use crate::support::{next_event, number_id, request, until_closed};

/// Echoes up to `limit` lines, then drops its end.
async fn echo(server: DuplexStream, limit: usize) {
    let (read, mut write) = tokio::io::split(server);
    let mut lines = BufReader::new(read).lines();
    let mut count = 0;
    while let Ok(Some(line)) = lines.next_line().await {
        write.write_all(line.as_bytes()).await.unwrap();
        write.write_all(b"\n").await.unwrap();
        count += 1;
        if count == limit {
            break;
        }
    }
}

#[tokio::test]
async fn messages_round_trip_and_the_server_dropping_is_an_eof() {
    let (mut conn, server) = memory::connect("echo");
    assert!(conn.control.pid().is_none());
    assert!(conn.control.kill_handle().is_none());
    tokio::spawn(echo(server, 3));
    for id in 1..=3 {
        conn.sender.send(request(id)).unwrap();
    }
    for id in 1..=3 {
        match next_event(&mut conn.events).await {
            Event::Message(m) => assert_eq!(number_id(&m), Some(id)),
            other => panic!("expected message {id}, got {other:?}"),
        }
    }
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Eof);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_with_closed() {
    let (mut conn, server) = memory::connect("echo");
    let server = tokio::spawn(echo(server, usize::MAX));
    conn.sender.send(request(1)).unwrap();
    assert!(matches!(
        next_event(&mut conn.events).await,
        Event::Message(_)
    ));
    conn.control.close().await;
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);
    // The server saw our EOF and finished.
    server.await.unwrap();
}

#[tokio::test]
async fn an_inline_handler_takes_what_it_settles_and_the_rest_is_queued_in_order() {
    let (mut conn, server) = memory::connect("echo");
    tokio::spawn(echo(server, 4));
    // Before a handler is set, every event is queued.
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(1)),
        other => panic!("expected message 1, got {other:?}"),
    }
    let (taken_tx, mut taken) = tokio::sync::mpsc::unbounded_channel();
    let handler: switchboard_transports::InlineFn = Box::new(move |event| match &event {
        // Even ids are settled in place, odd ones go on.
        Event::Message(m) if number_id(m).is_some_and(|id| id % 2 == 0) => {
            taken_tx.send(number_id(m)).unwrap();
            None
        }
        _ => Some(event),
    });
    assert!(conn.inline.set(handler));
    let again: switchboard_transports::InlineFn = Box::new(Some);
    assert!(!conn.inline.set(again), "set once");
    for id in 2..=4 {
        conn.sender.send(request(id)).unwrap();
    }
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(3)),
        other => panic!("expected message 3, got {other:?}"),
    }
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Eof);
    assert_eq!(taken.recv().await, Some(Some(2)));
    assert_eq!(taken.recv().await, Some(Some(4)));
}
