//! The actors behind the handles: one [`server::ServerActor`] per server.
//!
//! Handles talk to an actor through plain channels rather than actix messages on the hot path:
//! a bounded queue of [`Submit`]s (the mailbox bound) and an unbounded queue of [`Notice`]s
//! (at most one per in-flight request, sent from drop guards, which cannot wait). While a
//! line-framed server is ready, most calls skip the actor altogether: see [`lane`].

pub(crate) mod lane;
pub(crate) mod pending;
pub(crate) mod server;
pub(crate) mod supervisor;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use crate::call::ProgressFn;
use crate::deadline::DeadlinePolicy;
use crate::error::Error;

/// A request for the server, already serialized by the caller.
pub(crate) struct Submit {
    pub(crate) id: i64,
    pub(crate) method: Arc<str>,
    pub(crate) tool: Option<Arc<str>>,
    pub(crate) payload: Bytes,
    pub(crate) policy: DeadlinePolicy,
    pub(crate) started: Instant,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) reply: oneshot::Sender<Result<Box<RawValue>, Error>>,
    pub(crate) permit: OwnedSemaphorePermit,
}

/// What a caller tells the actor without waiting (at most once per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    /// The caller of request `.0` is gone: free its entry and tell the server.
    Cancel(i64),
    /// A request on the direct lane timed out: a liveness strike.
    TimedOut,
}
