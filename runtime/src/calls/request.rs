//! One request in flight, as one owned future: it registers in the connection's call table,
//! writes its frame, enforces its deadline (which progress may move), and cancels itself
//! when it times out or its future is dropped.
//!
//! Every request the client sends is one of these: a caller's tool call, list or raw
//! request, and the server actor's own `initialize`, `tools/list` and `ping`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::table::{Answer, Registration, Silence, Table, Track};
use super::ProgressFn;
use crate::deadline::DeadlinePolicy;
use crate::metrics::CancelReason;
use switchboard_transports::CloseReason;

/// What a request is, apart from its id and frame.
pub(crate) struct Spec {
    pub(crate) method: Arc<str>,
    pub(crate) tool: Option<Arc<str>>,
    pub(crate) started: Instant,
    /// The deadline rules; `None`: no deadline of its own (`initialize`, which the startup
    /// timeout bounds by closing the connection).
    pub(crate) policy: Option<DeadlinePolicy>,
    pub(crate) progress: Option<ProgressFn>,
    /// Whether a timeout or a drop tells the server with `notifications/cancelled` (never for
    /// `initialize`, which the spec forbids cancelling).
    pub(crate) cancellable: bool,
    /// Whether a timeout with nothing heard from the server is reported as liveness evidence
    /// (the actor's own pings count their failures themselves).
    pub(crate) reports_silence: bool,
}

/// Sends one request through `table` and waits for its answer under its deadline.
///
/// Returns the permit when the table was already closed (nothing was written): the caller
/// then waits for the server's next connection.
///
/// # Cancel safety
///
/// Dropping the future takes the request out of the table, frees its slot, and sends
/// `notifications/cancelled` when the request is cancellable.
pub(crate) async fn send(
    table: &Table,
    id: i64,
    frame: Bytes,
    spec: &Spec,
    permit: Option<OwnedSemaphorePermit>,
) -> Result<Answer, Option<OwnedSemaphorePermit>> {
    let deadline = spec.policy.map(|p| p.first(spec.started));
    let track = Track::new(spec.started, spec.policy, spec.progress.clone());
    let (tx, mut rx) = oneshot::channel();
    let heard = table.heard();
    let registration = Registration {
        id,
        method: spec.method.clone(),
        tool: spec.tool.clone(),
        permit,
        started: spec.started,
        deadline,
        track: track.clone(),
    };
    table.register(registration, frame, tx)?;
    let written = Instant::now();
    let guard = CancelOnDrop {
        table,
        id,
        cancellable: spec.cancellable,
    };
    let result = match deadline {
        None => (&mut rx).await,
        Some(first) => {
            let mut at = first;
            loop {
                match tokio::time::timeout_at(at.into(), &mut rx).await {
                    Ok(result) => break result,
                    Err(_) => {
                        if let Some(moved) = track.as_ref().and_then(|t| t.moved_past(at)) {
                            at = moved;
                            continue;
                        }
                        match table.take(id) {
                            Some(waiter) => {
                                std::mem::forget(guard);
                                let error = waiter.timeout(table.dropped());
                                waiter.discard();
                                timed_out(table, id, spec, heard, written);
                                return Ok(Err(error));
                            }
                            // The answer is being delivered right now.
                            None => break (&mut rx).await,
                        }
                    }
                }
            }
        }
    };
    std::mem::forget(guard);
    Ok(result.unwrap_or_else(|_| {
        // Unreachable in practice: a waiter settles its caller even when dropped.
        Err(crate::error::Error::Disconnected {
            server: table.server().clone(),
            method: spec.method.clone(),
            tool: spec.tool.clone(),
            reason: Arc::new(CloseReason::aborted("the answer was lost")),
        })
    }))
}

/// A request's deadline passed: tell the server, and liveness if the server was silent.
fn timed_out(table: &Table, id: i64, spec: &Spec, heard: u64, written: Instant) {
    if spec.cancellable {
        let reason = format!("timed out after {} ms", spec.started.elapsed().as_millis());
        table.cancel(id, CancelReason::Timeout, &reason);
    }
    // Only silence is evidence: a server that answered anything since this request was
    // written is alive, however slow this one tool is.
    if spec.reports_silence && table.heard() == heard {
        table.report_silence(Silence {
            written,
            timed_out: Instant::now(),
        });
    }
}

/// Takes back a request whose caller stopped waiting, and tells the server.
struct CancelOnDrop<'a> {
    table: &'a Table,
    id: i64,
    cancellable: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        // Only if still waiting: an answered or failed request needs no cancel.
        if let Some(waiter) = self.table.take(self.id) {
            waiter.discard();
            if self.cancellable {
                self.table.cancel(
                    self.id,
                    CancelReason::Caller,
                    "the caller cancelled the request",
                );
            }
        }
    }
}
