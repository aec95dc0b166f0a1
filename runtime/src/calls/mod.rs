//! The data plane: one call table per connection, the router that settles it, and the owned
//! request that every call to a server is.
//!
//! Every request the client sends (tool calls with or without a progress reset, lists,
//! `initialize`, `ping`), over every transport, takes the same road:
//!
//! 1. [`request::send`] registers a [`table::Waiter`] under the request's id in the
//!    connection's [`table::Table`] and writes the frame to the connection's writer itself;
//! 2. the task that reads the connection settles the waiter in place when the answer (or a
//!    malformed answer, an HTTP send failure or a 401 for that id) arrives, and moves the
//!    caller's deadline when a progress notification asks for it: over stdio and in-process
//!    connections the reader itself ([`router::settle_inline`]), over HTTP the router task
//!    ([`router::route`]) that the response tasks queue their events for;
//! 3. the connection's deadline task ([`table::run_deadlines`], one timer per connection)
//!    times out a waiter whose deadline passed and tells the server with
//!    `notifications/cancelled`; a request whose future is dropped takes its waiter back and
//!    does the same;
//! 4. when the connection ends, the server actor closes the table once and every waiter
//!    fails with the cause.
//!
//! No answer passes through an actor's mailbox: the actors (the control plane) only see what
//! is not an answer — notifications other than progress, requests from the server, session
//! loss, and the close.

pub(crate) mod reissue;
pub(crate) mod request;
pub(crate) mod router;
pub(crate) mod table;

use std::sync::Arc;

/// A progress notification for one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far (increases with each notification).
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
}

/// A progress callback; runs on the task that reads the server's connection, so it must be
/// quick.
pub(crate) type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// Whether a server takes calls now, as the server actor publishes it for handles.
pub(crate) enum Gate {
    /// Connecting or running the handshake (first start, or a restart after the server was
    /// ready): calls wait for readiness within their own deadline.
    Starting,
    /// Ready: calls go through this connection's table.
    Ready(Arc<table::Table>),
    /// Not starting, or failing to start (a spawn failure, a refused handshake, a crash
    /// loop, a shutdown): calls fail at once with this reason, and the error behind it.
    Unavailable {
        reason: Arc<str>,
        cause: Option<Arc<crate::error::Error>>,
    },
}
