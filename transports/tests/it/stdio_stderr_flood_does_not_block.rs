//! A server flooding stderr keeps answering: stderr is drained continuously.

use switchboard_transports::stdio::{self, Config};
use switchboard_transports::Event;

use crate::support::{next_event, number_id, request, until_closed};

#[tokio::test]
async fn messages_pass_while_the_server_floods_stderr() {
    // 50 MB of stderr in the background, then a notification when it is all written.
    let script = r#"(yes xxxxxxxx | head -c 50000000 >&2; printf '%s\n' '{"jsonrpc":"2.0","method":"flooded"}') & exec cat"#;
    let config = Config::new("/bin/sh").args(["-c", script]);
    let mut conn = stdio::connect("flood", &config).await.unwrap();
    let mut flooded = false;
    for id in 1..=3 {
        conn.sender.send(request(id)).unwrap();
        loop {
            match next_event(&mut conn.events).await {
                Event::Message(m) if m.method() == Some("flooded") => flooded = true,
                Event::Message(m) => {
                    assert_eq!(number_id(&m), Some(id));
                    break;
                }
                other => panic!("expected message {id}, got {other:?}"),
            }
        }
    }
    while !flooded {
        match next_event(&mut conn.events).await {
            Event::Message(m) if m.method() == Some("flooded") => flooded = true,
            other => panic!("expected the end of the flood, got {other:?}"),
        }
    }
    conn.control.close().await;
    let (_, reason) = until_closed(&mut conn.events).await;
    assert!(
        reason.stderr_tail.len() <= 20,
        "{}",
        reason.stderr_tail.len()
    );
    assert!(
        reason.stderr_tail.iter().any(|l| l == "xxxxxxxx"),
        "{:?}",
        reason.stderr_tail
    );
}
