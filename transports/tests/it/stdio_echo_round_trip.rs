//! Messages sent to `cat` come back in order; close() then ends the connection and reaps
//! the child.

use switchboard_transports::stdio::{self, Config};
use switchboard_transports::{CloseCause, Event};

use crate::support::{next_event, number_id, process, request, until_closed, PATIENCE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_come_back_in_order_and_close_reaps_the_child() {
    let mut conn = stdio::connect("cat", &Config::new("cat")).await.unwrap();
    let pid = conn.control.pid().unwrap() as i32;
    for id in 1..=3 {
        conn.sender.send(request(id)).unwrap();
    }
    for id in 1..=3 {
        match next_event(&mut conn.events).await {
            Event::Message(m) => assert_eq!(number_id(&m), Some(id)),
            other => panic!("expected message {id}, got {other:?}"),
        }
    }

    tokio::time::timeout(PATIENCE, conn.control.close())
        .await
        .expect("close in time");
    let (messages, reason) = until_closed(&mut conn.events).await;
    assert!(messages.is_empty());
    assert_eq!(reason.cause, CloseCause::Closed);
    assert!(!process::pid_alive(pid), "cat still runs after close");
}

#[tokio::test]
async fn a_current_thread_runtime_works_too() {
    let mut conn = stdio::connect("cat", &Config::new("cat")).await.unwrap();
    conn.sender.send(request(7)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(7)),
        other => panic!("expected a message, got {other:?}"),
    }
    conn.control.close().await;
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);
}
