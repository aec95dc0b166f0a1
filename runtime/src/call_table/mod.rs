//! The call table of one connection: who waits for which answer, and what settles them
//! ([`settle`]).
//!
//! One table per connection (per server incarnation), shared by the callers that register in
//! it, the router that settles it and the server actor that closes it. It is sharded by id and
//! each shard is a plain mutex held for one hash-map operation: callers and the router touch
//! different shards most of the time, and an uncontended lock costs an atomic, where a hop
//! through an actor costs two thread wake-ups (see `benches/HISTORY.md`).
//!
//! The table also keeps the facts liveness needs without an actor on the hot path: how many
//! events were heard from the server (a timed-out call is suspicious only if nothing at all
//! was heard since it was written) and how many unreadable frames nobody claimed.
//!
//! Deadlines are kept here too, ordered per shard, and one task per connection
//! ([`run_deadlines`]) sleeps until the earliest: a call registers no timer of its own (a
//! tokio timer entry per call cost about as much as the rest of a task's round trip; see
//! `benches/HISTORY.md`). When a deadline passes, that task moves it if progress asked for it, or
//! times the request out: `notifications/cancelled`, the liveness report, then the caller's
//! [`ErrorKind::Timeout`].

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{Id, Outcome, Response};
use switchboard_codecs::mcp::ProgressNotificationParams;
use switchboard_transports::connection::{Kind, Outbound, Sender};
use switchboard_transports::CloseReason;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::admission::Slot;
use crate::call_scope::Scope;
use crate::deadline::DeadlinePolicy;
use crate::error::{Error, ErrorContext, ErrorKind};
use crate::framer;
use crate::metrics::{CancelReason, ServerMetrics};

pub(crate) mod settle;

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

/// Shards of the table (a power of two: ids are sequential, so `id % SHARDS` spreads
/// consecutive calls over every shard).
const SHARDS: usize = 16;

/// What a caller receives: the raw result, or why there is none.
pub(crate) type Answer = Result<Box<RawValue>, Error>;

/// A timed-out request that heard nothing from the server after it was written: evidence,
/// for the server actor, that the server may have stopped answering.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Silence {
    /// When the request was written.
    pub(crate) written: Instant,
    /// When its deadline passed.
    pub(crate) timed_out: Instant,
}

/// A call's progress: its callback, and its deadline when progress may move it; and the
/// call's own [`Scope`] for the server's messages about it.
pub(crate) struct Track {
    callback: Option<ProgressFn>,
    scope: Option<Arc<Scope>>,
    /// `Some` when each notification restarts the timeout.
    reset: Option<(Instant, DeadlinePolicy)>,
    /// The moved deadline, in nanoseconds after the call started (0: not moved).
    moved: AtomicU64,
}

impl Track {
    /// A track for a round whose deadline rules count from `since`, or `None` when the call
    /// neither listens to progress nor lets progress move its deadline, and has no scope of
    /// its own (most calls: they carry no track).
    pub(crate) fn new(
        policy: Option<(Instant, DeadlinePolicy)>,
        callback: Option<ProgressFn>,
        scope: Option<Arc<Scope>>,
    ) -> Option<Arc<Track>> {
        let reset = policy.filter(|(_, p)| p.reset_on_progress);
        (reset.is_some() || callback.is_some() || scope.is_some()).then(|| {
            Arc::new(Track {
                callback,
                scope,
                reset,
                moved: AtomicU64::new(0),
            })
        })
    }

    /// Runs the callback and moves the deadline, as one notification asks.
    fn on_progress(&self, progress: Progress, now: Instant) {
        if let Some((started, policy)) = self.reset {
            if let Some(at) = policy.on_progress(started, now) {
                let nanos = at.saturating_duration_since(started).as_nanos();
                self.moved
                    .fetch_max(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
            }
        }
        if let Some(callback) = &self.callback {
            callback(progress);
        }
    }

    /// The deadline progress moved past `current`, if it did.
    pub(crate) fn moved_past(&self, current: Instant) -> Option<Instant> {
        let (started, _) = self.reset?;
        let nanos = self.moved.load(Ordering::Relaxed);
        let at = started.checked_add(Duration::from_nanos(nanos))?;
        (nanos > 0 && at > current).then_some(at)
    }
}

/// A caller waiting for the answer to one request.
///
/// # Drop behavior
///
/// A waiter dropped unanswered (its table was dropped without being closed, say because the
/// tasks that held it stopped) settles its caller with [`ErrorKind::Disconnected`], so no caller
/// ever sees a bare channel error.
pub(crate) struct Waiter {
    tx: Option<oneshot::Sender<Answer>>,
    server: Arc<str>,
    pub(crate) method: Arc<str>,
    pub(crate) tool: Option<Arc<str>>,
    /// The caller's in-flight slot, freed as soon as the waiter is settled.
    slot: Option<Slot>,
    id: i64,
    started: Instant,
    /// The first deadline; `None` for a request without one of its own (`initialize`).
    deadline: Option<Instant>,
    track: Option<Arc<Track>>,
    /// The table's count of unclaimed unreadable frames when the request was written.
    dropped_at_write: u64,
    /// The table's count of events heard from the server when the request was written.
    heard_at_write: u64,
    /// When the request was written.
    written: Instant,
    /// The deadline under which the waiter is queued in its shard (`None`: not queued).
    queued: Option<Instant>,
    /// Whether a timeout tells the server with `notifications/cancelled`.
    cancellable: bool,
    /// The frame, kept where a lost HTTP session may need it resent once.
    frame: Option<Outbound>,
}

/// A request the table could not take because it was closed: nothing was written, and the
/// caller's slot comes back with it (the request goes to the server's next connection).
#[derive(Debug)]
pub(crate) struct Unsent {
    pub(crate) slot: Option<Slot>,
}

impl Waiter {
    /// The waiter of request `id` to `server` (of `method`, for `tool`), made at `started`,
    /// due at `deadline`, with its progress `track` and in-flight `slot`; `cancellable`: a
    /// timeout tells the server. The table fills in the rest when it registers it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        server: Arc<str>,
        id: i64,
        method: Arc<str>,
        tool: Option<Arc<str>>,
        started: Instant,
        deadline: Option<Instant>,
        track: Option<Arc<Track>>,
        cancellable: bool,
        slot: Option<Slot>,
        tx: oneshot::Sender<Answer>,
    ) -> Waiter {
        Waiter {
            tx: Some(tx),
            server,
            method,
            tool,
            slot,
            id,
            started,
            deadline,
            track,
            dropped_at_write: 0,
            heard_at_write: 0,
            written: started,
            queued: None,
            cancellable,
            frame: None,
        }
    }

    /// Frees the slot, then wakes the caller (so a caller woken by its answer can start its
    /// next call at once).
    pub(crate) fn settle(mut self, answer: Answer) {
        drop(self.slot.take());
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(answer);
        }
    }

    /// Forgets the waiter without telling the caller (the caller itself took it back).
    pub(crate) fn discard(mut self) -> Option<Slot> {
        self.tx = None;
        self.slot.take()
    }

    /// The request's id.
    pub(crate) fn id(&self) -> i64 {
        self.id
    }

    /// The deadline now, after any progress moved it.
    fn deadline_now(&self) -> Option<Instant> {
        let first = self.deadline?;
        Some(
            self.track
                .as_ref()
                .and_then(|t| t.moved_past(first))
                .unwrap_or(first),
        )
    }

    /// What an error of this request names: its server, method, tool and id.
    pub(crate) fn context(&self) -> ErrorContext {
        ErrorContext::of_request(self.server.clone(), self.method.clone(), self.tool.clone())
            .with_request_id(self.id)
    }

    /// [`ErrorKind::Timeout`] for this request, `elapsed` after it started.
    pub(crate) fn timeout(&self, dropped_now: u64) -> Error {
        self.context().error(ErrorKind::Timeout {
            elapsed: self.started.elapsed(),
            dropped_frames: dropped_now.saturating_sub(self.dropped_at_write),
        })
    }

    /// [`ErrorKind::Disconnected`] for this request.
    pub(crate) fn disconnected(&self, reason: Arc<CloseReason>) -> Error {
        self.context().error(ErrorKind::Disconnected { reason })
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let reason = Arc::new(CloseReason::aborted(
                "the connection's tasks stopped before the answer came",
            ));
            let _ = tx.send(Err(self.disconnected(reason)));
        }
    }
}

#[derive(Default)]
struct Shard {
    closed: bool,
    waiters: HashMap<i64, Waiter, BuildHasherDefault<IdHasher>>,
    /// The queued waiters' deadlines, earliest first. Calls with the same timeout arrive
    /// in deadline order and are mostly answered in order, so inserts and removals land
    /// near the ends.
    deadlines: VecDeque<(Instant, i64)>,
}

impl Shard {
    fn queue(&mut self, at: Instant, id: i64) {
        let key = (at, id);
        let index = match self.deadlines.back() {
            Some(last) if *last > key => self.deadlines.partition_point(|k| *k < key),
            _ => self.deadlines.len(),
        };
        self.deadlines.insert(index, key);
    }

    fn unqueue(&mut self, at: Instant, id: i64) {
        let key = (at, id);
        let index = match self.deadlines.front() {
            Some(first) if *first == key => Some(0),
            _ => self.deadlines.binary_search(&key).ok(),
        };
        if let Some(index) = index {
            self.deadlines.remove(index);
        }
    }

    fn remove(&mut self, id: i64) -> Option<Waiter> {
        let waiter = self.waiters.remove(&id)?;
        if let Some(at) = waiter.queued {
            self.unqueue(at, id);
        }
        Some(waiter)
    }
}

/// When the connection's deadline task wakes next, and how to wake it sooner.
struct Deadlines {
    /// The instant the wake-up times count from.
    epoch: Instant,
    /// Nanoseconds after `epoch` at which the task wakes; `u64::MAX`: it waits for a
    /// deadline (or is looking for the next one), so every new one wakes it.
    next_wake: AtomicU64,
    wake: Notify,
}

impl Deadlines {
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// A deadline was queued: the task wakes for it when it would sleep past it.
    fn queued(&self, at: Instant) {
        if self.nanos(at) < self.next_wake.load(Ordering::Acquire) {
            self.wake.notify_one();
        }
    }
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

/// The call table of one connection.
pub(crate) struct Table {
    server: Arc<str>,
    sender: Sender,
    shards: Box<[Mutex<Shard>]>,
    closed: AtomicBool,
    /// Events heard from the server (any message, any unreadable frame).
    heard: AtomicU64,
    /// Unreadable frames no waiter claimed, for the count in a timeout error.
    dropped: AtomicU64,
    /// The first of them, as a log line shows it: what a server that writes its own text
    /// on stdout wrote, for the error of a handshake that never completed.
    first_dropped: std::sync::OnceLock<String>,
    /// The connection's transport.
    kind: Kind,
    silences: mpsc::UnboundedSender<Silence>,
    deadlines: Arc<Deadlines>,
    pub(crate) metrics: Arc<ServerMetrics>,
    /// Whether the connection's reader settles in place ([`settle::settle_inline`] ran):
    /// then the router leaves alone what the reader did already.
    pub(crate) read_inline: AtomicBool,
    /// Whether the transport could not reach the server at all on this connection (it
    /// reported a request it could not deliver as unreachable): what tells a start that
    /// failed for want of the server from one the server refused.
    unreachable: AtomicBool,
}

impl Table {
    pub(crate) fn new(
        server: Arc<str>,
        sender: Sender,
        kind: Kind,
        silences: mpsc::UnboundedSender<Silence>,
        metrics: Arc<ServerMetrics>,
    ) -> Self {
        Table {
            server,
            sender,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            closed: AtomicBool::new(false),
            heard: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            first_dropped: std::sync::OnceLock::new(),
            kind,
            silences,
            deadlines: Arc::new(Deadlines {
                epoch: Instant::now(),
                next_wake: AtomicU64::new(u64::MAX),
                wake: Notify::new(),
            }),
            metrics,
            read_inline: AtomicBool::new(false),
            unreachable: AtomicBool::new(false),
        }
    }

    /// The transport could not reach the server (noted before the request it could not
    /// deliver is failed, so whoever that failure wakes sees it).
    pub(crate) fn note_unreachable(&self) {
        self.unreachable.store(true, Ordering::Release);
    }

    /// Whether the transport could not reach the server at all on this connection.
    pub(crate) fn found_unreachable(&self) -> bool {
        self.unreachable.load(Ordering::Acquire)
    }

    /// The server this table belongs to.
    pub(crate) fn server(&self) -> &Arc<str> {
        &self.server
    }

    /// The connection's transport.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    fn shard(&self, id: i64) -> MutexGuard<'_, Shard> {
        let shard = &self.shards[(id as u64 as usize) % SHARDS];
        // Nothing panics while a shard is held; a poisoned one is still consistent.
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `waiter` and writes its frame; hands the slot back when the table is
    /// closed (nothing was written then).
    pub(crate) fn register(&self, mut waiter: Waiter, outbound: Outbound) -> Result<(), Unsent> {
        let id = waiter.id;
        waiter.heard_at_write = self.heard();
        waiter.dropped_at_write = self.dropped();
        waiter.written = Instant::now();
        if self.kind.is_http() {
            waiter.frame = Some(outbound.clone());
        }
        let deadline = waiter.deadline;
        {
            let mut shard = self.shard(id);
            if shard.closed {
                drop(shard);
                return Err(Unsent {
                    slot: waiter.discard(),
                });
            }
            if let Some(at) = deadline {
                waiter.queued = Some(at);
                shard.queue(at, id);
            }
            shard.waiters.insert(id, waiter);
        }
        if let Some(at) = deadline {
            self.deadlines.queued(at);
        }
        // A failed write means the writer is gone; the connection's close follows and fails
        // the waiter with its cause.
        self.write(outbound);
        Ok(())
    }

    /// Removes a waiter (its caller gave up, or its answer came).
    pub(crate) fn take(&self, id: i64) -> Option<Waiter> {
        self.shard(id).remove(id)
    }

    /// Closes the table once: nothing can be registered any more, and every waiter fails
    /// with what `error` makes of it, except those whose deadline has already passed, which
    /// fail as [`ErrorKind::Timeout`] (they timed out; the close only raced their caller).
    pub(crate) fn close(&self, mut error: impl FnMut(&Waiter) -> Error) {
        self.closed.store(true, Ordering::Release);
        self.drain(true, None, |waiter| error(waiter));
        // The deadline task ends.
        self.deadlines.wake.notify_one();
    }

    /// Fails every waiter but `keep` without closing the table (the connection goes on).
    pub(crate) fn fail_all_except(&self, keep: Option<i64>, error: impl FnMut(&Waiter) -> Error) {
        self.drain(false, keep, error);
    }

    fn drain(&self, close: bool, keep: Option<i64>, mut error: impl FnMut(&Waiter) -> Error) {
        let now = Instant::now();
        let dropped = self.dropped();
        for shard in self.shards.iter() {
            let drained: Vec<Waiter> = {
                let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
                shard.closed |= close;
                let kept = keep.and_then(|id| shard.remove(id));
                let drained = shard.waiters.drain().map(|(_, w)| w).collect();
                shard.deadlines.clear();
                if let (Some(id), Some(w)) = (keep, kept) {
                    if let Some(at) = w.queued {
                        shard.queue(at, id);
                    }
                    shard.waiters.insert(id, w);
                }
                drained
            };
            for waiter in drained {
                let e = match waiter.deadline_now() {
                    Some(at) if at <= now => waiter.timeout(dropped),
                    _ => error(&waiter),
                };
                waiter.settle(Err(e));
            }
        }
    }

    /// Whether the table was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Calls waiting now.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).waiters.len())
            .sum()
    }

    /// The frame of a pending request, where frames are kept.
    pub(crate) fn frame_of(&self, id: i64) -> Option<Outbound> {
        self.shard(id)
            .waiters
            .get(&id)
            .and_then(|w| w.frame.clone())
    }

    /// The progress track of a pending request.
    #[cfg(test)]
    pub(crate) fn track_of(&self, id: i64) -> Option<Arc<Track>> {
        self.shard(id)
            .waiters
            .get(&id)
            .and_then(|w| w.track.clone())
    }

    /// Events heard from the server so far.
    pub(crate) fn heard(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    /// Counts one event from the server.
    pub(crate) fn hear(&self) {
        self.heard.fetch_add(1, Ordering::Relaxed);
    }

    /// Unclaimed unreadable frames so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Counts one unreadable frame nobody claimed.
    pub(crate) fn drop_frame(&self, described: impl FnOnce() -> String) {
        if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
            let _ = self.first_dropped.set(described());
        }
    }

    /// The first unreadable frame no waiter claimed, described (its excerpt and why).
    pub(crate) fn first_dropped(&self) -> Option<&str> {
        self.first_dropped.get().map(String::as_str)
    }

    /// Tells the server actor that a request timed out in silence.
    pub(crate) fn report_silence(&self, silence: Silence) {
        // The actor may be gone (shutting down): then nobody needs to know.
        let _ = self.silences.send(silence);
    }

    /// Queues one frame for the writer, counted as sent. `false` when the writer is gone.
    pub(crate) fn write(&self, outbound: Outbound) -> bool {
        let len = outbound.payload.len() as u64;
        let sent = self.sender.send(outbound).is_ok();
        if sent {
            self.metrics.messages_out.increment(1);
            self.metrics.bytes_out.increment(len);
        }
        sent
    }

    /// Tells the server to stop working on request `id`.
    pub(crate) fn cancel(&self, id: i64, why: CancelReason, reason: &str) {
        self.metrics.cancelled(why);
        self.write(framer::cancel(id, reason));
    }

    /// Delivers an answer to its waiter, or hands the response back when nobody here
    /// waits for it.
    pub(crate) fn claim(&self, response: Response) -> Option<Response> {
        let Some(Id::Number(id)) = response.id else {
            return Some(response);
        };
        let Some(waiter) = self.take(id) else {
            return Some(response);
        };
        let answer = match response.outcome {
            Outcome::Result(raw) => Ok(raw),
            Outcome::Error(e) => Err(crate::error::rpc_error(
                self.server.clone(),
                waiter.method.clone(),
                waiter.tool.clone(),
                e,
            )),
        };
        waiter.settle(answer);
        None
    }

    /// Settles request `id` with the error `make` builds from its waiter; `false` when
    /// nobody waits for it.
    pub(crate) fn fail(&self, id: i64, make: impl FnOnce(&Waiter) -> Error) -> bool {
        match self.take(id) {
            Some(waiter) => {
                let error = make(&waiter);
                waiter.settle(Err(error));
                true
            }
            None => false,
        }
    }

    /// The scope of the one pending call whose scope `wants` a message, or `None` when no
    /// call or more than one does (see [`crate::call_scope`]: a message with no link to its
    /// call is a call's only when nobody else could have caused it).
    pub(crate) fn sole_scope(&self, wants: impl Fn(&Scope) -> bool) -> Option<Arc<Scope>> {
        let mut found: Option<Arc<Scope>> = None;
        for shard in self.shards.iter() {
            let shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            for waiter in shard.waiters.values() {
                let Some(scope) = waiter.track.as_ref().and_then(|t| t.scope.as_ref()) else {
                    continue;
                };
                if wants(scope) {
                    if found.is_some() {
                        return None;
                    }
                    found = Some(scope.clone());
                }
            }
        }
        found
    }

    /// A progress notification: runs the call's callback and moves its deadline. `false`
    /// when no pending call has that token.
    pub(crate) fn progress(&self, params: ProgressNotificationParams) -> bool {
        let switchboard_codecs::mcp::ProgressToken::Number(id) = params.progress_token else {
            return false;
        };
        let track = match self.shard(id).waiters.get(&id) {
            Some(waiter) => waiter.track.clone(),
            None => return false,
        };
        // Outside the shard's lock: the callback is the application's code.
        if let Some(track) = track {
            track.on_progress(
                Progress {
                    progress: params.progress,
                    total: params.total,
                    message: params.message,
                },
                Instant::now(),
            );
        }
        true
    }
}

impl Table {
    /// Times out every request whose deadline passed by `now` (moving those whose deadline
    /// progress moved); returns the earliest deadline still queued.
    fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut due = Vec::new();
        let mut earliest: Option<Instant> = None;
        for shard in self.shards.iter() {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            while let Some(&(at, id)) = shard.deadlines.front() {
                if at > now {
                    break;
                }
                shard.deadlines.pop_front();
                // Progress may have moved it: decided under the lock, so that an answer
                // arriving meanwhile still finds its waiter.
                let moved = match shard.waiters.get_mut(&id) {
                    Some(waiter) => match waiter.deadline_now() {
                        Some(later) if later > now => {
                            waiter.queued = Some(later);
                            Some(later)
                        }
                        _ => None,
                    },
                    None => continue,
                };
                match moved {
                    Some(later) => shard.queue(later, id),
                    None => {
                        if let Some(mut waiter) = shard.waiters.remove(&id) {
                            waiter.queued = None;
                            due.push(waiter);
                        }
                    }
                }
            }
            if let Some(&(at, _)) = shard.deadlines.front() {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        }
        for waiter in due {
            self.time_out(waiter);
        }
        earliest
    }

    /// A request's deadline passed: tell the server, and liveness if the server was
    /// silent, then the caller.
    fn time_out(&self, waiter: Waiter) {
        let id = waiter.id;
        if waiter.cancellable {
            let reason = format!(
                "timed out after {} ms",
                waiter.started.elapsed().as_millis()
            );
            self.cancel(id, CancelReason::Timeout, &reason);
        }
        // Only silence is evidence: a server that answered anything since this request was
        // written is alive, however slow this one tool is.
        if self.heard() == waiter.heard_at_write {
            self.report_silence(Silence {
                written: waiter.written,
                timed_out: Instant::now(),
            });
        }
        let error = waiter.timeout(self.dropped());
        waiter.settle(Err(error));
    }
}

/// The deadline task of one connection: sleeps until the table's earliest deadline, times
/// out what is due, and ends when the table is closed or gone.
pub(crate) fn run_deadlines(table: &Arc<Table>) -> impl std::future::Future<Output = ()> + Send {
    let weak: Weak<Table> = Arc::downgrade(table);
    let deadlines = table.deadlines.clone();
    async move {
        loop {
            let next = {
                let Some(table) = weak.upgrade() else { return };
                if table.is_closed() {
                    return;
                }
                // Every deadline queued from here on wakes the task (a permit is stored if
                // it is not waiting yet), so none slips in between the sweep and the sleep.
                deadlines.next_wake.store(u64::MAX, Ordering::Release);
                let next = table.sweep(Instant::now());
                if let Some(at) = next {
                    deadlines
                        .next_wake
                        .store(deadlines.nanos(at), Ordering::Release);
                }
                next
            };
            match next {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at.into()) => {}
                        () = deadlines.wake.notified() => {}
                    }
                }
                None => deadlines.wake.notified().await,
            }
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // Dropped without a close (its tasks stopped): the deadline task ends too.
        self.deadlines.wake.notify_one();
    }
}

#[cfg(test)]
mod tests;
