//! One request in flight, as one owned future: it registers in the connection's call table
//! with its deadline (which the connection's deadline task enforces, and progress may move),
//! writes its frame, and cancels itself when its future is dropped.
//!
//! Every request the client sends is one of these: a caller's tool call, list or raw
//! request, and the server actor's own `initialize`, `tools/list` and `ping`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::table::{Answer, Registration, Table, Track};
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
    let (tx, rx) = oneshot::channel();
    let registration = Registration {
        id,
        method: spec.method.clone(),
        tool: spec.tool.clone(),
        permit,
        started: spec.started,
        deadline,
        track,
        cancellable: spec.cancellable,
        reports_silence: spec.reports_silence,
    };
    table.register(registration, frame, tx)?;
    let guard = CancelOnDrop {
        table,
        id,
        cancellable: spec.cancellable,
    };
    // The connection's deadline task times the request out (see `table`): the answer, the
    // timeout and the close all arrive here.
    let result = rx.await;
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
