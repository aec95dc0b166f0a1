//! The direct lane of one connection: calls that go from the caller straight to the
//! connection's writer, and answers that go from the connection's reader straight back to
//! the caller, without a hop through the server actor.
//!
//! On a machine where waking a thread costs tens of microseconds, the actor in the middle of
//! every call was most of a call's latency and CPU (see `BENCHMARKS.md`, "Where the time
//! goes"). So, while a line-framed connection (stdio, memory) is ready, a caller registers
//! its answer's [`Waiter`] here, writes its own frame, and enforces its own deadline; the
//! connection's [`route`] task completes waiters as answers arrive and fails all of them the
//! moment the connection closes. Everything else stays with the actor: the handshake,
//! restarts, liveness, progress-driven deadlines, calls queued while a server is starting,
//! HTTP sessions, and every message that is not an answer to a waiter.
//!
//! The table is sharded by id and each shard is a plain mutex held for one hash-map
//! operation: callers and the reader touch different shards most of the time, and an
//! uncontended lock costs an atomic, where the actor hop cost two thread wake-ups.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{Id, Message, Outcome, Response};
use switchboard_transports::connection::{Event, Outbound, Sender};
use switchboard_transports::CloseReason;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};

use crate::error::Error;
use crate::metrics::{CancelReason, ServerMetrics};

/// Shards of the waiter table (a power of two: ids are sequential, so `id % SHARDS` spreads
/// consecutive calls over every shard).
const SHARDS: usize = 16;

/// What a caller receives: the raw result, or why there is none.
pub(crate) type Answer = Result<Box<RawValue>, Error>;

/// A caller waiting for the answer to one request.
pub(crate) struct Waiter {
    pub(crate) tx: oneshot::Sender<Answer>,
    pub(crate) method: Arc<str>,
    pub(crate) tool: Option<Arc<str>>,
    /// The caller's in-flight slot, freed as soon as the waiter leaves the table.
    pub(crate) permit: OwnedSemaphorePermit,
}

impl Waiter {
    /// Frees the slot, then wakes the caller (so a caller woken by its answer can start its
    /// next call at once).
    pub(crate) fn settle(self, answer: Answer) {
        let Waiter { tx, permit, .. } = self;
        drop(permit);
        let _ = tx.send(answer);
    }
}

#[derive(Default)]
struct Shard {
    closed: bool,
    waiters: HashMap<i64, Waiter, BuildHasherDefault<IdHasher>>,
}

/// Ids are small sequential integers: one multiplication spreads them over the hash bits.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The direct lane of one connection.
pub(crate) struct Lane {
    server: Arc<str>,
    sender: Sender,
    shards: Box<[Mutex<Shard>]>,
    /// Answers delivered through the lane: the actor's liveness check reads it, since those
    /// answers never reach the actor.
    heard: AtomicU64,
    /// Unreadable frames the lane did not claim, for the count in a timeout error.
    dropped: AtomicU64,
    metrics: Arc<ServerMetrics>,
}

impl Lane {
    pub(crate) fn new(server: Arc<str>, sender: Sender, metrics: Arc<ServerMetrics>) -> Self {
        Lane {
            server,
            sender,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            heard: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            metrics,
        }
    }

    fn shard(&self, id: i64) -> MutexGuard<'_, Shard> {
        let shard = &self.shards[(id as u64 as usize) % SHARDS];
        // Nothing panics while a shard is held; a poisoned one is still consistent.
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a waiter; hands it back when the lane is closed.
    pub(crate) fn insert(&self, id: i64, waiter: Waiter) -> Result<(), Waiter> {
        let mut shard = self.shard(id);
        if shard.closed {
            return Err(waiter);
        }
        shard.waiters.insert(id, waiter);
        Ok(())
    }

    /// Removes a waiter (its caller gave up, or its answer came).
    pub(crate) fn take(&self, id: i64) -> Option<Waiter> {
        self.shard(id).waiters.remove(&id)
    }

    /// Closes the lane: nothing can be registered any more, and every waiter is handed to
    /// `fail`.
    pub(crate) fn close(&self, mut fail: impl FnMut(i64, Waiter)) {
        for shard in self.shards.iter() {
            let drained: Vec<(i64, Waiter)> = {
                let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
                shard.closed = true;
                shard.waiters.drain().collect()
            };
            for (id, waiter) in drained {
                fail(id, waiter);
            }
        }
    }

    /// Closes the lane, failing every waiter with what `error` makes of it.
    pub(crate) fn close_with(&self, error: impl Fn(&Waiter) -> Error) {
        self.close(|_, waiter| {
            let e = error(&waiter);
            waiter.settle(Err(e));
        });
    }

    /// How many callers are waiting.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).waiters.len())
            .sum()
    }

    /// Answers delivered so far.
    pub(crate) fn heard(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    /// Unreadable frames seen so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues one frame for the writer, counted as sent. `false` when the writer is gone
    /// (the connection's close then fails the waiter).
    pub(crate) fn write(&self, id: Option<i64>, payload: Bytes) -> bool {
        let len = payload.len() as u64;
        let sent = self
            .sender
            .send(Outbound {
                id: id.map(Id::Number),
                payload,
            })
            .is_ok();
        if sent {
            self.metrics.messages_out.increment(1);
            self.metrics.bytes_out.increment(len);
        }
        sent
    }

    /// Tells the server to stop working on request `id`.
    pub(crate) fn cancel(&self, id: i64, why: CancelReason, reason: &str) {
        self.metrics.cancelled(why);
        let frame = super::server::notification_frame(
            switchboard_codecs::mcp::methods::CANCELLED,
            &serde_json::json!({ "requestId": id, "reason": reason }),
        );
        self.write(None, frame);
    }

    /// Delivers an answer to its waiter, or hands the response back when nobody here
    /// waits for it.
    fn claim(&self, response: Response) -> Option<Response> {
        let Some(Id::Number(id)) = response.id else {
            return Some(response);
        };
        let Some(waiter) = self.take(id) else {
            return Some(response);
        };
        self.heard.fetch_add(1, Ordering::Relaxed);
        self.metrics.messages_in.increment(1);
        let answer = match response.outcome {
            Outcome::Result(raw) => Ok(raw),
            Outcome::Error(e) => Err(super::server::rpc_error(
                self.server.clone(),
                waiter.method.clone(),
                waiter.tool.clone(),
                e,
            )),
        };
        waiter.settle(answer);
        None
    }
}

/// Routes a connection's events: answers to the lane's waiters, everything else on to the
/// actor, in order. The close is the actor's to handle: it marks the server down, then fails
/// every waiter at once (a caller told "disconnected" then finds the server down, not ready).
///
/// Runs until the connection's event stream ends. If the actor goes away first, answers
/// still reach their callers; only the forwarding stops (the actor's drop fails the rest).
pub(crate) async fn route(
    lane: Arc<Lane>,
    mut events: mpsc::Receiver<Event>,
    actor: mpsc::Sender<Event>,
) {
    let mut forwarding = true;
    while let Some(event) = events.recv().await {
        let event = match event {
            Event::Message(Message::Response(response)) => match lane.claim(response) {
                None => continue,
                Some(response) => Event::Message(Message::Response(response)),
            },
            Event::Skipped(skipped) => {
                let waiter = match skipped.id {
                    Some(Id::Number(id)) => lane.take(id).map(|w| (id, w)),
                    _ => None,
                };
                match waiter {
                    Some((_, waiter)) => {
                        lane.metrics.skipped(skipped.kind.as_str());
                        let error = Error::Protocol {
                            server: lane.server.clone(),
                            method: waiter.method.clone(),
                            tool: waiter.tool.clone(),
                            detail: format!("malformed answer: {}", skipped.reason()),
                        };
                        waiter.settle(Err(error));
                        continue;
                    }
                    None => {
                        lane.dropped.fetch_add(1, Ordering::Relaxed);
                        Event::Skipped(skipped)
                    }
                }
            }
            other => other,
        };
        if forwarding && actor.send(event).await.is_err() {
            forwarding = false;
        }
    }
}

/// The error of a waiter whose connection ended.
pub(crate) fn disconnected(server: &Arc<str>, waiter: &Waiter, reason: Arc<CloseReason>) -> Error {
    Error::Disconnected {
        server: server.clone(),
        method: waiter.method.clone(),
        tool: waiter.tool.clone(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    fn lane() -> (Lane, mpsc::UnboundedReceiver<Outbound>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let metrics = crate::metrics::RuntimeMetrics::new(crate::metrics::Sink::Global);
        let lane = Lane::new("s".into(), Sender::new(tx), Arc::new(metrics.server("s")));
        (lane, rx)
    }

    fn waiter(permits: &Arc<Semaphore>) -> (Waiter, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        let permit = permits.clone().try_acquire_owned().expect("a free slot");
        let waiter = Waiter {
            tx,
            method: "tools/call".into(),
            tool: Some("echo".into()),
            permit,
        };
        (waiter, rx)
    }

    fn response(id: i64, result: &str) -> Response {
        Response {
            id: Some(Id::Number(id)),
            outcome: Outcome::Result(RawValue::from_string(result.into()).expect("json")),
        }
    }

    #[test]
    fn an_answer_reaches_its_waiter_and_frees_the_slot() {
        let (lane, _rx) = lane();
        let permits = Arc::new(Semaphore::new(2));
        let (w1, mut rx1) = waiter(&permits);
        let (w2, mut rx2) = waiter(&permits);
        assert!(lane.insert(1, w1).is_ok());
        assert!(lane.insert(2, w2).is_ok());
        assert_eq!(permits.available_permits(), 0);
        assert!(lane.claim(response(2, "{\"n\":2}")).is_none());
        assert_eq!(permits.available_permits(), 1);
        let answer = rx2.try_recv().expect("answered").expect("a result");
        assert_eq!(answer.get(), "{\"n\":2}");
        assert!(rx1.try_recv().is_err(), "the other waiter still waits");
        assert_eq!(lane.len(), 1);
        assert_eq!(lane.heard(), 1);
    }

    #[test]
    fn an_unknown_or_string_id_is_handed_back() {
        let (lane, _rx) = lane();
        assert!(lane.claim(response(7, "{}")).is_some());
        let string_id = Response {
            id: Some(Id::String("7".into())),
            outcome: Outcome::Result(RawValue::from_string("{}".into()).expect("json")),
        };
        assert!(lane.claim(string_id).is_some());
        assert_eq!(lane.heard(), 0);
    }

    #[test]
    fn a_closed_lane_fails_every_waiter_and_refuses_new_ones() {
        let (lane, _rx) = lane();
        let permits = Arc::new(Semaphore::new(40));
        let mut receivers = Vec::new();
        for id in 0..33 {
            let (w, rx) = waiter(&permits);
            assert!(lane.insert(id, w).is_ok());
            receivers.push(rx);
        }
        lane.close_with(|w| disconnected(&"s".into(), w, Arc::new(CloseReason::aborted("test"))));
        for mut rx in receivers {
            assert!(matches!(rx.try_recv(), Ok(Err(Error::Disconnected { .. }))));
        }
        assert_eq!(permits.available_permits(), 40);
        let (w, _rx) = waiter(&permits);
        assert!(lane.insert(99, w).is_err());
    }

    #[test]
    fn cancel_writes_a_cancelled_notification() {
        let (lane, mut rx) = lane();
        lane.cancel(5, CancelReason::Caller, "gone");
        let out = rx.try_recv().expect("a frame");
        let text = std::str::from_utf8(&out.payload).expect("utf-8");
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"gone","requestId":5}}"#
        );
        assert!(out.id.is_none());
    }
}
