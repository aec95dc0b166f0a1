//! A server that answers and exits: the answer comes first, then Closed with the exit code
//! and the stderr tail.

use switchboard_transports::stdio::{self, Config};
use switchboard_transports::CloseCause;

use crate::support::until_closed;

#[tokio::test]
async fn exit_code_and_stderr_tail_come_after_the_last_message() {
    let script = r#"printf '%s\n' '{"jsonrpc":"2.0","method":"last"}'; echo boom >&2; exit 3"#;
    let config = Config::new("/bin/sh").args(["-c", script]);
    let mut conn = stdio::connect("crashes", &config).await.unwrap();

    let (messages, reason) = until_closed(&mut conn.events).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].method(), Some("last"));
    assert_eq!(
        reason.cause,
        CloseCause::Exited {
            code: Some(3),
            signal: None
        }
    );
    assert!(reason.stderr_tail.iter().any(|l| l == "boom"), "{reason:?}");
    assert!(reason.to_string().contains("status 3"), "{reason}");
}

#[tokio::test]
async fn a_signal_death_is_reported_as_such() {
    let config = Config::new("/bin/sh").args(["-c", "kill -9 $$"]);
    let mut conn = stdio::connect("killed", &config).await.unwrap();
    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(
        reason.cause,
        CloseCause::Exited {
            code: None,
            signal: Some(9)
        }
    );
}
