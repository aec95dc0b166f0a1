//! One client's session: a stdio connection, a handshake-era HTTP session, or the one
//! request of a stateless HTTP exchange.
//!
//! It holds what the protocol keeps between requests: whether `initialize` happened and
//! what it negotiated (what [`crate::client`] keeps of the client: bounded, whatever the
//! client sent), the log level, the subscribed URIs, the requests in flight (so that
//! `notifications/cancelled` can stop one) and the requests sent to the client awaiting
//! answers. Each is behind its own short lock; none is held across an await.
//!
//! Every session hears the server's list changes (a stdio client may never send
//! `initialize`, and an HTTP session exists only after it); a stateless one has no stream
//! to hear them on.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use switchboard_codecs::jsonrpc::{Id, Outcome};
use switchboard_transports::server::{Notifier, Principal};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use crate::client::Negotiated;
use crate::logging;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A session's state.
pub struct Session {
    pub(crate) notifier: Notifier,
    pub(crate) stateless: bool,
    /// Its key in the server's registry of sessions that hear changes.
    pub(crate) key: u64,
    /// What `initialize` negotiated: shared, since every request's context holds it.
    negotiated: Mutex<Option<Arc<Negotiated>>>,
    log_level: AtomicUsize,
    subscriptions: Mutex<HashSet<String>>,
    /// Requests in flight by id.
    in_flight: Mutex<HashMap<Id, InFlight>>,
    next_generation: AtomicU64,
    waiters: Mutex<HashMap<Id, oneshot::Sender<Outcome>>>,
    next_client_id: AtomicU64,
    closed: AtomicBool,
    /// Who its requests come from, with inbound authentication.
    principal: OnceLock<Arc<Principal>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("key", &self.key)
            .field("stateless", &self.stateless)
            .finish_non_exhaustive()
    }
}

/// A request in flight.
struct InFlight {
    /// So that a late removal of a finished request cannot remove a newer one that reused
    /// its id.
    generation: u64,
    task: AbortHandle,
    /// Whether its first poll is done (and it waits).
    started: bool,
}

/// A request's task: its first poll, then the rest unless its session closed meanwhile;
/// however it ends (answered, panicked, aborted), its entry goes.
struct Running {
    session: Arc<Session>,
    id: Id,
    generation: u64,
}

impl Running {
    async fn run<F: std::future::Future<Output = ()>>(self, task: F) {
        let mut task = std::pin::pin!(task);
        let mut first = true;
        std::future::poll_fn(|cx| {
            let polled = std::future::Future::poll(task.as_mut(), cx);
            // Closed before its first poll ended: it stops here, as a close stops every
            // request that waits.
            if polled.is_pending()
                && std::mem::take(&mut first)
                && !self.session.started(&self.id, self.generation)
            {
                return std::task::Poll::Ready(());
            }
            polled
        })
        .await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A handler that panics loses its request (its task catches the panic, as tokio's
        // tasks do), said with the request's id.
        if std::thread::panicking() {
            tracing::error!(id = ?self.id, "a request's handler panicked");
        }
        self.session.finished(&self.id, self.generation);
    }
}

/// Removes a waiter however its request ends: answered, timed out, or dropped.
pub(crate) struct Forget {
    session: Arc<Session>,
    id: Id,
}

impl Drop for Forget {
    fn drop(&mut self) {
        lock(&self.session.waiters).remove(&self.id);
    }
}

impl Session {
    pub(crate) fn new(notifier: Notifier, stateless: bool, key: u64) -> Self {
        Session {
            notifier,
            stateless,
            key,
            negotiated: Mutex::new(None),
            log_level: AtomicUsize::new(logging::DEFAULT),
            subscriptions: Mutex::default(),
            in_flight: Mutex::default(),
            next_generation: AtomicU64::new(0),
            waiters: Mutex::default(),
            next_client_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            principal: OnceLock::new(),
        }
    }

    /// Its requests come from `principal` (the first one told; the transport lets nobody
    /// else use the session).
    pub(crate) fn authenticated(&self, principal: &Arc<Principal>) {
        let _ = self.principal.set(principal.clone());
    }

    /// Who its requests come from, with inbound authentication.
    pub(crate) fn principal(&self) -> Option<&Arc<Principal>> {
        self.principal.get()
    }

    /// `initialize` answered: the session speaks with the client as `negotiated` says.
    pub(crate) fn initialize(&self, negotiated: Negotiated) {
        *lock(&self.negotiated) = Some(Arc::new(negotiated));
    }

    /// What `initialize` negotiated (before it, the latest version and no capabilities).
    pub(crate) fn negotiated(&self) -> Arc<Negotiated> {
        lock(&self.negotiated)
            .clone()
            .unwrap_or_else(Negotiated::before_initialize)
    }

    /// What `initialize` negotiated, if it happened.
    pub(crate) fn initialized(&self) -> Option<Arc<Negotiated>> {
        lock(&self.negotiated).clone()
    }

    pub(crate) fn log_level(&self) -> usize {
        self.log_level.load(Ordering::Relaxed)
    }

    pub(crate) fn set_log_level(&self, level: usize) {
        self.log_level.store(level, Ordering::Relaxed);
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        lock(&self.subscriptions).insert(uri.to_owned());
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Runs a request on a task of its own, registered under its id until it ends, so that
    /// a cancel can stop it.
    ///
    /// Never polled here, on the caller's task (the stdio reader, an HTTP connection): a
    /// handler may compute, or block, for as long as it likes before its first `.await`,
    /// and a poll cannot be stopped part-way, so no budget could bound how long an inline
    /// poll would hold up reading every other request of the connection. A spawn costs every
    /// request the same small, bounded price instead.
    ///
    /// A request read before its session closed gets its first poll all the same: one that
    /// answers at once (a list, a quick tool) is answered, as it would have been had it run
    /// before the close; one that waits ends there.
    pub(crate) fn spawn<F>(self: &Arc<Self>, id: Id, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        if self.is_closed() {
            return;
        }
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let running = Running {
            session: self.clone(),
            id: id.clone(),
            generation,
        };
        // Held across the spawn so that the task's own removal cannot run before the insert.
        let mut in_flight = lock(&self.in_flight);
        let handle = tokio::spawn(running.run(task));
        in_flight.insert(
            id,
            InFlight {
                generation,
                task: handle.abort_handle(),
                started: false,
            },
        );
    }

    /// The request `id` of `generation` has had its first poll and waits: from now on a
    /// close stops it. `false` if the session closed already (then it ends itself).
    fn started(&self, id: &Id, generation: u64) -> bool {
        let mut in_flight = lock(&self.in_flight);
        // Read under the lock that `close` takes after setting it: either `close` finds
        // this request started and aborts it, or this finds the session closed.
        if self.is_closed() {
            return false;
        }
        if let Some(entry) = in_flight.get_mut(id).filter(|e| e.generation == generation) {
            entry.started = true;
        }
        true
    }

    fn finished(&self, id: &Id, generation: u64) {
        let mut in_flight = lock(&self.in_flight);
        if in_flight
            .get(id)
            .is_some_and(|e| e.generation == generation)
        {
            in_flight.remove(id);
        }
    }

    /// Stops the request `id` (a `notifications/cancelled`); `false` if none runs.
    pub(crate) fn cancel(&self, id: &Id) -> bool {
        let removed = lock(&self.in_flight).remove(id);
        match removed {
            Some(entry) => {
                entry.task.abort();
                true
            }
            None => false,
        }
    }

    /// A fresh id for a request to the client, and where its answer will arrive.
    pub(crate) fn expect_answer(self: &Arc<Self>) -> (Id, oneshot::Receiver<Outcome>, Forget) {
        let n = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let id = Id::String(format!("s-{n}").into());
        let (tx, rx) = oneshot::channel();
        lock(&self.waiters).insert(id.clone(), tx);
        let forget = Forget {
            session: self.clone(),
            id: id.clone(),
        };
        (id, rx, forget)
    }

    /// Settles a request to the client; `false` if nobody waits for `id`.
    pub(crate) fn answered(&self, id: &Id, outcome: Outcome) -> bool {
        match lock(&self.waiters).remove(id) {
            // The waiter may have just timed out; then nobody wants the answer.
            Some(waiter) => {
                let _ = waiter.send(outcome);
                true
            }
            None => false,
        }
    }

    /// Ends the session: every request still running stops, every wait for the client fails.
    pub(crate) fn close(&self) {
        let stopped: Vec<AbortHandle> = {
            let mut in_flight = lock(&self.in_flight);
            // Set under the lock that `started` reads it under.
            self.closed.store(true, Ordering::Relaxed);
            // A request not yet polled is left its first poll (see `spawn`).
            in_flight
                .drain()
                .filter(|(_, entry)| entry.started)
                .map(|(_, entry)| entry.task)
                .collect()
        };
        for task in stopped {
            task.abort();
        }
        lock(&self.waiters).clear();
        self.notifier.detach();
    }
}
