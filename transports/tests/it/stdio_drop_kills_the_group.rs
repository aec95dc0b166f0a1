//! Dropping a connection without close kills its whole process group at once.

use std::time::Duration;

use switchboard_transports::stdio::{self, Config};

use crate::stdio_close_stops_the_whole_group::{grandchild_pid, GRANDCHILD};
use crate::support::process;

#[tokio::test]
async fn dropping_the_connection_kills_child_and_grandchild() {
    let config = Config::new("/bin/sh").args(["-c", GRANDCHILD]);
    let mut conn = stdio::connect("dropped", &config).await.unwrap();
    let pid = conn.control.pid().unwrap() as i32;
    let grandchild = grandchild_pid(&mut conn).await;

    drop(conn);
    let gone = process::wait_until_gone(Duration::from_secs(5), || {
        process::pid_alive(pid) || process::pid_alive(grandchild)
    });
    assert!(gone.await, "a process survived the drop");
}

#[tokio::test]
async fn the_kill_handle_kills_the_group() {
    let config = Config::new("/bin/sh").args(["-c", GRANDCHILD]);
    let mut conn = stdio::connect("killed", &config).await.unwrap();
    let grandchild = grandchild_pid(&mut conn).await;
    let kill = conn.control.kill_handle().unwrap();
    kill.kill();
    let gone = process::wait_until_gone(Duration::from_secs(5), || process::pid_alive(grandchild));
    assert!(gone.await, "the grandchild survived the kill handle");
    let (_, reason) = crate::support::until_closed(&mut conn.events).await;
    assert!(
        matches!(
            reason.cause,
            switchboard_transports::CloseCause::Exited {
                signal: Some(9),
                ..
            }
        ),
        "{reason:?}"
    );
    // Harmless once everything is gone.
    kill.kill();
}
