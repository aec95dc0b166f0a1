//! The child's process group: signals to every member, and whether any member still lives.
//!
//! The child is started as the leader of its own group (pgid = its pid), so one signal
//! reaches it and everything it started that did not leave the group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// How often a stopping sequence looks whether the group is empty.
const POLL: Duration = Duration::from_millis(20);

/// One child's process group.
#[derive(Debug)]
pub(super) struct Group {
    pgid: libc::pid_t,
    /// Set once the group is known to be empty: its id may then be recycled, and must never
    /// be signalled again.
    gone: AtomicBool,
}

impl Group {
    /// The group of a child just started, which the guardian watches until it is gone.
    pub(super) fn new(pgid: libc::pid_t) -> Self {
        super::guardian::watch(pgid);
        Group {
            pgid,
            gone: AtomicBool::new(false),
        }
    }

    /// Sends `signal` to every member, unless the group is known to be gone.
    pub(super) fn signal(&self, signal: libc::c_int) {
        if self.gone.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: kill has no memory-safety preconditions; a negative pid addresses the
        // group, which is ours (see `gone`).
        unsafe {
            libc::kill(-self.pgid, signal);
        }
    }

    /// Marks the group as gone: no signal is sent to it from now on.
    pub(super) fn mark_gone(&self) {
        if !self.gone.swap(true, Ordering::AcqRel) {
            super::guardian::release(self.pgid);
        }
    }

    /// Whether a member of the group is still running. Zombies do not count: where init
    /// does not reap orphans (some containers), a dead grandchild stays a zombie in the
    /// group forever and no signal can change that.
    pub(super) async fn has_live_members(&self) -> bool {
        // SAFETY: as in `signal`; signal 0 only checks for existence.
        let exists = unsafe { libc::kill(-self.pgid, 0) } == 0;
        if !exists {
            return false;
        }
        #[cfg(target_os = "linux")]
        {
            let pgid = self.pgid;
            // Reading /proc is blocking file I/O; keep it off a single-threaded runtime.
            tokio::task::spawn_blocking(move || proc_has_live_member(pgid))
                .await
                .unwrap_or(true)
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }

    /// Waits until no member runs, polling, for at most `limit`. Returns whether the group
    /// emptied.
    pub(super) async fn wait_empty(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if !self.has_live_members().await {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL.min(deadline - Instant::now())).await;
        }
    }
}

/// Scans /proc for a process of group `pgid` that is not a zombie. Unreadable entries are
/// skipped (the process just ended); an unreadable /proc counts as "alive" so that the
/// caller escalates instead of assuming success.
#[cfg(target_os = "linux")]
fn proc_has_live_member(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, group)) = parse_stat(&stat) {
            if group == pgid && state != "Z" && state != "X" {
                return true;
            }
        }
    }
    false
}

/// The state and process group of a `/proc/<pid>/stat` line. The command name is in
/// parentheses and may itself contain spaces and parentheses, so fields are read after the
/// last `)`.
#[cfg(target_os = "linux")]
fn parse_stat(stat: &str) -> Option<(&str, libc::pid_t)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let stat = "42 (a) b (c) S 1 40 40 0 -1 4194560";
        assert_eq!(parse_stat(stat), Some(("S", 40)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
