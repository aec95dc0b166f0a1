//! The process task: owns the child, notices how the connection ends, stops and reaps
//! everything in the child's group, and sends the one [`Event::Closed`].
//!
//! `Closed` goes out only after the stdout reader has stopped, so every message the server
//! wrote (say, an answer just before it exited) is delivered first.

use std::io;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinError, JoinHandle};
use tokio::time::{timeout, Instant};

use super::group::Group;
use super::stderr::Ring;
use crate::connection::{CloseCause, CloseReason, Event};
use crate::framed::ReadEnd;

/// After an exit, how long stdout and stderr get to reach EOF, so the last messages and the
/// crash message are in.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// After an EOF or a failed write, how long to wait for an exit status, which explains
/// the end better.
const EXIT_AFTER_TROUBLE: Duration = Duration::from_millis(100);

/// After `SIGKILL`, how long to wait for the group to empty (the kernel needs a moment).
const KILL_GRACE: Duration = Duration::from_millis(500);

/// How long a close waits for the server to leave: after closing its stdin, then after
/// `SIGTERM` (and for what is left of its group once it has gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Graces {
    pub(super) stdin: Duration,
    pub(super) term: Duration,
}

impl Graces {
    /// These waits cut to fit in `budget` together: the one after closing stdin takes at
    /// most half of it (a server that leaves at EOF does so at once), the one after
    /// `SIGTERM` what is left.
    pub(super) fn within(self, budget: Duration) -> Graces {
        let stdin = self.stdin.min(budget / 2);
        Graces {
            stdin,
            term: self.term.min(budget.saturating_sub(stdin)),
        }
    }
}

/// A control's request to close: `done` is answered once nothing of the connection is left;
/// `within` caps the close's waits ([`Graces::within`]).
#[derive(Debug)]
pub(super) struct Close {
    pub(super) done: oneshot::Sender<()>,
    pub(super) within: Option<Duration>,
}

/// What ended the main wait.
enum Trigger {
    Exited(io::Result<ExitStatus>),
    StdoutEnded,
    WriteFailed(io::Error),
    Close(Close),
}

/// Everything the process task owns.
pub(super) struct Process {
    pub(super) server: Arc<str>,
    pub(super) child: Child,
    pub(super) group: Arc<Group>,
    /// `None` once finished (its result is then in `read_end`).
    pub(super) reader: Option<JoinHandle<ReadEnd>>,
    pub(super) read_end: Option<Result<ReadEnd, JoinError>>,
    pub(super) stop_reader: Option<oneshot::Sender<()>>,
    /// `None` once finished.
    pub(super) writer: Option<JoinHandle<io::Result<()>>>,
    /// Dropping it makes the writer flush and close stdin.
    pub(super) shutdown_writer: Option<oneshot::Sender<()>>,
    /// `None` once finished.
    pub(super) stderr: Option<JoinHandle<()>>,
    /// `None` once the control is gone (closed or dropped).
    pub(super) close: Option<oneshot::Receiver<Close>>,
    pub(super) events: mpsc::Sender<Event>,
    pub(super) ring: Ring,
    /// The waits of a close, and of stopping what is left of the group after an exit.
    pub(super) graces: Graces,
}

impl Process {
    pub(super) async fn run(mut self) {
        let trigger = self.wait_for_trigger().await;
        let (cause, done) = match trigger {
            Trigger::Exited(status) => (self.after_exit(status).await, None),
            Trigger::StdoutEnded => (self.after_stdout_ended().await, None),
            Trigger::WriteFailed(e) => (self.after_write_failure(e).await, None),
            Trigger::Close(Close { done, within }) => {
                let graces = match within {
                    Some(budget) => self.graces.within(budget),
                    None => self.graces,
                };
                self.close_sequence(graces).await;
                (CloseCause::Closed, Some(done))
            }
        };
        // Nothing of the group runs any more (or it is out of our reach): never signal it
        // again, its id may be recycled.
        self.group.mark_gone();
        tracing::debug!(server = %self.server, cause = %cause, "server stopped");

        // A close() that raced with another ending resolves now, too.
        self.close = None;
        if let Some(done) = done {
            let _ = done.send(());
        }
        self.shutdown_writer = None;
        if let Some(writer) = self.writer.take() {
            // It can only be stuck on a pipe some escaped process holds; nothing to deliver.
            writer.abort();
        }
        if let Some(stderr) = self.stderr.as_mut() {
            if timeout(DRAIN_AFTER_EXIT, &mut *stderr).await.is_err() {
                stderr.abort();
            }
        }
        // Everything already written to stdout is delivered before the reader stops.
        self.stop_reader = None;
        finish(&mut self.reader, &mut self.read_end).await;

        let reason = CloseReason {
            cause,
            stderr_tail: self.ring.snapshot(),
        };
        let _ = self.events.send(Event::Closed(reason)).await;
    }

    async fn wait_for_trigger(&mut self) -> Trigger {
        loop {
            tokio::select! {
                status = self.child.wait() => return Trigger::Exited(status),
                () = finish(&mut self.reader, &mut self.read_end), if self.reader.is_some() => {
                    return Trigger::StdoutEnded;
                }
                written = join(&mut self.writer), if self.writer.is_some() => {
                    if let Some(Ok(Err(e))) = written {
                        return Trigger::WriteFailed(e);
                    }
                    // Every sender is gone: stdin is closed, and the child will usually
                    // exit, which the first branch sees.
                }
                request = recv(&mut self.close), if self.close.is_some() => {
                    self.close = None;
                    // None: dropped without close; its Drop sent SIGKILL, the exit follows.
                    if let Some(close) = request {
                        return Trigger::Close(close);
                    }
                }
            }
        }
    }

    async fn after_exit(&mut self, status: io::Result<ExitStatus>) -> CloseCause {
        let (reader, read_end, stderr) = (&mut self.reader, &mut self.read_end, &mut self.stderr);
        let _ = timeout(DRAIN_AFTER_EXIT, async {
            tokio::join!(finish(reader, read_end), join(stderr));
        })
        .await;
        // A grandchild holding stdout open must not keep the connection alive.
        self.stop_remainder(self.graces.term).await;
        exit_cause(status)
    }

    async fn after_stdout_ended(&mut self) -> CloseCause {
        if let Ok(status) = timeout(EXIT_AFTER_TROUBLE, self.child.wait()).await {
            return self.after_exit(status).await;
        }
        let cause = match &self.read_end {
            Some(Ok(ReadEnd::Failed(e))) => CloseCause::ReadFailed(e.to_string()),
            Some(Err(e)) => CloseCause::ReadFailed(e.to_string()),
            _ => CloseCause::Eof,
        };
        self.close_sequence(self.graces).await;
        cause
    }

    async fn after_write_failure(&mut self, error: io::Error) -> CloseCause {
        if let Ok(status) = timeout(EXIT_AFTER_TROUBLE, self.child.wait()).await {
            return self.after_exit(status).await;
        }
        // stdin is broken, so there is no point in closing it and waiting.
        self.terminate(self.graces.term).await;
        CloseCause::WriteFailed(error.to_string())
    }

    /// The MCP stdio shutdown: close stdin, wait, then terminate.
    async fn close_sequence(&mut self, graces: Graces) {
        self.shutdown_writer = None;
        if timeout(graces.stdin, self.child.wait()).await.is_ok() {
            self.stop_remainder(graces.term).await;
        } else {
            self.terminate(graces.term).await;
        }
    }

    /// `SIGTERM` to the group, wait up to `grace`, `SIGKILL` to the group, reap the leader,
    /// then deal with any member left.
    async fn terminate(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        self.group.signal(libc::SIGTERM);
        let exited = timeout(grace, self.child.wait()).await.is_ok();
        let emptied = exited
            && self
                .group
                .wait_empty(deadline.saturating_duration_since(Instant::now()))
                .await;
        if !emptied {
            self.group.signal(libc::SIGKILL);
        }
        let _ = self.child.wait().await;
        // The group has had its SIGTERM, and its SIGKILL unless it emptied: no more waits.
        self.stop_remainder(Duration::ZERO).await;
    }

    /// With the leader reaped: `SIGTERM` the members still running, wait up to `grace`,
    /// `SIGKILL`.
    async fn stop_remainder(&mut self, grace: Duration) {
        if !self.group.has_live_members().await {
            return;
        }
        tracing::debug!(server = %self.server, "stopping what is left of the process group");
        self.group.signal(libc::SIGTERM);
        if self.group.wait_empty(grace).await {
            return;
        }
        self.group.signal(libc::SIGKILL);
        if !self.group.wait_empty(KILL_GRACE).await {
            tracing::warn!(server = %self.server, "the server's process group did not empty");
        }
    }
}

/// Awaits a task if it still runs, then forgets it.
async fn join<T>(task: &mut Option<JoinHandle<T>>) -> Option<Result<T, JoinError>> {
    let handle = task.as_mut()?;
    let result = handle.await;
    *task = None;
    Some(result)
}

/// Awaits the reader if it still runs and keeps how it ended.
async fn finish(
    reader: &mut Option<JoinHandle<ReadEnd>>,
    end: &mut Option<Result<ReadEnd, JoinError>>,
) {
    if let Some(result) = join(reader).await {
        *end = Some(result);
    }
}

async fn recv<T>(rx: &mut Option<oneshot::Receiver<T>>) -> Option<T> {
    match rx.as_mut() {
        Some(rx) => rx.await.ok(),
        None => std::future::pending().await,
    }
}

fn exit_cause(status: io::Result<ExitStatus>) -> CloseCause {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(status) => CloseCause::Exited {
            code: status.code(),
            signal: status.signal(),
        },
        Err(_) => CloseCause::Exited {
            code: None,
            signal: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_budget_cuts_the_waits_of_a_close_to_fit_in_it() {
        let graces = Graces {
            stdin: ms(2000),
            term: ms(2000),
        };
        // Half for the server to leave at EOF, the rest after SIGTERM.
        assert_eq!(
            graces.within(ms(50)),
            Graces {
                stdin: ms(25),
                term: ms(25)
            }
        );
        // Waits already shorter than their share keep their length; the term wait may
        // take what the stdin wait left.
        let short = Graces {
            stdin: ms(10),
            term: ms(100),
        };
        assert_eq!(
            short.within(ms(50)),
            Graces {
                stdin: ms(10),
                term: ms(40)
            }
        );
        // A budget longer than both changes nothing; none at all is SIGKILL at once.
        assert_eq!(graces.within(ms(10_000)), graces);
        assert_eq!(
            graces.within(Duration::ZERO),
            Graces {
                stdin: Duration::ZERO,
                term: Duration::ZERO
            }
        );
    }
}
