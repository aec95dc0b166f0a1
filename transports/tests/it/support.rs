//! Helpers shared by the tests: messages, event collection, process checks.
#![allow(dead_code)]

use std::time::Duration;

use switchboard_codecs::jsonrpc::{Id, Message};
use switchboard_transports::{CloseReason, Event, Outbound};
use tokio::sync::mpsc;

/// Generous bound for anything that should happen "at once".
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// A `ping` request with `id`.
pub(crate) fn request(id: i64) -> Outbound {
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    let message = Message::from_slice(text.as_bytes()).expect("a valid request");
    Outbound::from_message(&message)
}

/// The id of a message, as a number.
pub(crate) fn number_id(message: &Message) -> Option<i64> {
    match message.id() {
        Some(Id::Number(n)) => Some(*n),
        _ => None,
    }
}

/// The next event, or a panic after [`PATIENCE`].
pub(crate) async fn next_event(events: &mut mpsc::Receiver<Event>) -> Event {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("an event in time")
        .expect("the events stream ended without Closed")
}

/// Everything up to `Closed`: the messages, the skipped count, and the reason. Also checks
/// that nothing follows `Closed`.
pub(crate) async fn until_closed(
    events: &mut mpsc::Receiver<Event>,
) -> (Vec<Message>, CloseReason) {
    let mut messages = Vec::new();
    loop {
        match next_event(events).await {
            Event::Message(m) => messages.push(m),
            Event::Closed(reason) => {
                let after = tokio::time::timeout(PATIENCE, events.recv()).await;
                assert!(matches!(after, Ok(None)), "events after Closed: {after:?}");
                return (messages, reason);
            }
            _ => {}
        }
    }
}

#[cfg(unix)]
pub(crate) mod process {
    use std::time::{Duration, Instant};

    /// Whether `pid` names a process that is running (a zombie is not).
    pub(crate) fn pid_alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks existence.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return false;
        }
        !is_zombie(pid)
    }

    /// Whether any non-zombie process of group `pgid` exists.
    pub(crate) fn group_alive(pgid: i32) -> bool {
        // SAFETY: signal 0 only checks existence.
        if unsafe { libc::kill(-pgid, 0) } != 0 {
            return false;
        }
        if cfg!(target_os = "linux") {
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return true;
            };
            entries.flatten().any(|entry| {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                else {
                    return false;
                };
                let Some((state, group)) = stat(pid) else {
                    return false;
                };
                group == pgid && state != "Z" && state != "X"
            })
        } else {
            true
        }
    }

    /// Polls until `check` is false, for at most `limit`.
    pub(crate) async fn wait_until_gone(limit: Duration, check: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while check() {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    fn is_zombie(pid: i32) -> bool {
        matches!(stat(pid), Some((state, _)) if state == "Z" || state == "X")
    }

    /// State and process group from /proc (Linux only).
    fn stat(pid: i32) -> Option<(String, i32)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = text.rsplit_once(')')?;
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.to_owned();
        let _ppid = fields.next()?;
        let group = fields.next()?.parse().ok()?;
        Some((state, group))
    }
}
