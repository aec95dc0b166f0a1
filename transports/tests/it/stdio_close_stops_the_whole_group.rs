//! close() stops a server that ignores stdin EOF and SIGTERM, and every process of its
//! group, grandchildren included; close_within() takes the same steps within its grace.

use std::time::{Duration, Instant};

use switchboard_transports::stdio::{self, Config};
use switchboard_transports::{CloseCause, Connection, Event};

use crate::support::{next_event, process, until_closed};

/// Prints the pid of a background `sleep` as a notification, then echoes.
pub(crate) const GRANDCHILD: &str =
    r#"sleep 300 & printf '{"jsonrpc":"2.0","method":"pid","params":{"pid":%s}}\n' $!; exec cat"#;

/// Reads the grandchild pid notification sent by [`GRANDCHILD`].
pub(crate) async fn grandchild_pid(conn: &mut Connection) -> i32 {
    match next_event(&mut conn.events).await {
        Event::Message(m) => {
            let text = serde_json::to_string(&m).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            value["params"]["pid"].as_i64().unwrap() as i32
        }
        other => panic!("expected the pid notification, got {other:?}"),
    }
}

#[tokio::test]
async fn close_kills_a_server_that_ignores_eof_and_sigterm() {
    // `sleep` inherits the ignored SIGTERM: two stubborn members in the group. The shell says
    // when its trap is in place.
    let script = r#"trap "" TERM; printf '{"jsonrpc":"2.0","method":"trapped"}\n'; sleep 60"#;
    let config = Config::new("/bin/sh").args(["-c", script]);
    let mut conn = stdio::connect("stubborn", &config).await.unwrap();
    let pgid = conn.control.pid().unwrap() as i32;
    // The close starts once the trap is installed.
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(m.method(), Some("trapped")),
        other => panic!("expected the shell's notice, got {other:?}"),
    }

    let started = Instant::now();
    conn.control.close().await;
    let took = started.elapsed();
    // 2 s stdin grace + 2 s SIGTERM grace, with room for a slow machine.
    assert!(took >= Duration::from_millis(3900), "{took:?}");
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(!process::group_alive(pgid), "the group survived close");

    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);
}

#[tokio::test]
async fn close_within_takes_the_same_steps_in_its_grace() {
    // The shell says when SIGTERM comes (on stdout, where the connection reads) and lives
    // on, a new `sleep` in place of the one the signal ended. Only SIGKILL ends it.
    let script = r#"trap 'printf "{\"jsonrpc\":\"2.0\",\"method\":\"term\"}\n"' TERM
printf '{"jsonrpc":"2.0","method":"trapped"}\n'
while :; do sleep 60 & wait; done"#;
    let config = Config::new("/bin/sh")
        .args(["-c", script])
        .close_timeouts(Duration::from_secs(10), Duration::from_secs(10));
    let mut conn = stdio::connect("stubborn", &config).await.unwrap();
    let pgid = conn.control.pid().unwrap() as i32;
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(m.method(), Some("trapped")),
        other => panic!("expected the shell's notice, got {other:?}"),
    }

    let grace = Duration::from_millis(200);
    let started = Instant::now();
    conn.control.close_within(grace).await;
    let took = started.elapsed();
    // Not the 10 s waits: the grace, and a moment to reap (room for a loaded machine).
    assert!(took >= grace, "{took:?}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert!(
        !process::group_alive(pgid),
        "the group survived close_within"
    );

    // SIGTERM came first, within the grace: the shell said so before it was killed.
    let (messages, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);
    assert!(
        messages.iter().any(|m| m.method() == Some("term")),
        "no SIGTERM before SIGKILL: {messages:?}"
    );
}

#[tokio::test]
async fn close_kills_a_grandchild_left_in_the_group() {
    let config = Config::new("/bin/sh").args(["-c", GRANDCHILD]);
    let mut conn = stdio::connect("grandparent", &config).await.unwrap();
    let pgid = conn.control.pid().unwrap() as i32;
    let grandchild = grandchild_pid(&mut conn).await;
    assert!(process::pid_alive(grandchild));

    let started = Instant::now();
    conn.control.close().await;
    // `cat` leaves at stdin EOF; only the grandchild needed a SIGTERM.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let gone = process::wait_until_gone(Duration::from_secs(2), || process::pid_alive(grandchild));
    assert!(gone.await, "the grandchild {grandchild} survived close");
    assert!(!process::group_alive(pgid));

    let (_, reason) = until_closed(&mut conn.events).await;
    assert_eq!(reason.cause, CloseCause::Closed);
}

#[tokio::test]
async fn an_exit_does_not_leave_a_grandchild_behind() {
    // The leader exits at once; the grandchild keeps stdout open.
    let config = Config::new("/bin/sh").args(["-c", "sleep 300 & exit 0"]);
    let mut conn = stdio::connect("orphaner", &config).await.unwrap();
    let pgid = conn.control.pid().unwrap() as i32;
    let (_, reason) = until_closed(&mut conn.events).await;
    assert!(
        matches!(reason.cause, CloseCause::Exited { code: Some(0), .. }),
        "{reason:?}"
    );
    assert!(
        !process::group_alive(pgid),
        "the grandchild outlived its connection"
    );
}
