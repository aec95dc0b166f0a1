//! Watching a file `serve` reads again: `SIGHUP`, or a change of its modification time
//! (looked at every second). One watch for the config file's reload and the credentials file.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::signal::unix::{signal, Signal, SignalKind};

/// How often the file's modification time is looked at.
const POLL: Duration = Duration::from_secs(1);

/// A file, and when it was last read.
pub(crate) struct FileWatch {
    path: PathBuf,
    seen: Option<SystemTime>,
    hangup: Option<Signal>,
    tick: tokio::time::Interval,
}

impl FileWatch {
    /// Watches `path`, last read when its time was `seen`.
    pub(crate) fn new(path: PathBuf, seen: Option<SystemTime>) -> FileWatch {
        let hangup = match signal(SignalKind::hangup()) {
            Ok(signal) => Some(signal),
            Err(e) => {
                tracing::warn!("SIGHUP cannot be caught ({e}): the file is still watched");
                None
            }
        };
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        FileWatch {
            path,
            seen,
            hangup,
            tick,
        }
    }

    /// Waits until the file is to be read again, and says why; its time is taken as seen.
    pub(crate) async fn next(&mut self) -> &'static str {
        loop {
            let asked = async {
                match self.hangup.as_mut() {
                    Some(signal) => drop(signal.recv().await),
                    None => std::future::pending().await,
                }
            };
            let why = tokio::select! {
                () = asked => "SIGHUP",
                _ = self.tick.tick() => {
                    if modified(&self.path) == self.seen {
                        continue;
                    }
                    "the file changed"
                }
            };
            self.seen = modified(&self.path);
            return why;
        }
    }
}

/// The file's modification time, if it can be read.
pub(crate) fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
