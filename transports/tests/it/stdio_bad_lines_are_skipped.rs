//! Garbage and oversized lines are reported as skipped, and the next message still arrives.

use switchboard_codecs::lines::SkipKind;
use switchboard_transports::stdio::{self, Config};
use switchboard_transports::Event;

use crate::support::next_event;

#[tokio::test]
async fn garbage_and_oversized_lines_are_skipped_and_the_next_message_arrives() {
    let long = "a".repeat(5000);
    let config = Config::new("/bin/sh")
        .args([
            "-c",
            r#"printf '%s\n' 'not json' "$1" '{"jsonrpc":"2.0","method":"after"}'; exec cat"#,
            "sh",
            &long,
        ])
        .max_frame_length(1024);
    let mut conn = stdio::connect("garbage", &config).await.unwrap();

    match next_event(&mut conn.events).await {
        Event::Skipped(s) => {
            assert_eq!(s.kind, SkipKind::NotJson);
            assert!(s.excerpt.contains("not json"), "{s:?}");
        }
        other => panic!("expected a skipped frame, got {other:?}"),
    }
    match next_event(&mut conn.events).await {
        Event::Skipped(s) => assert_eq!(s.kind, SkipKind::TooLong),
        other => panic!("expected a skipped frame, got {other:?}"),
    }
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(m.method(), Some("after")),
        other => panic!("expected the message after the garbage, got {other:?}"),
    }
    conn.control.close().await;
}
