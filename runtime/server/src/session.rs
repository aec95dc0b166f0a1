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
    /// Requests in flight by id, each with a generation so that a late removal of a
    /// finished request cannot remove a newer one that reused its id.
    in_flight: Mutex<HashMap<Id, (u64, AbortHandle)>>,
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

    /// Runs a request: at once, and if it cannot finish without waiting, on a task of its
    /// own, registered under its id until it ends, so that a cancel can stop it.
    ///
    /// Most requests (a list, a quick tool) need not wait for anything: the first poll, here
    /// on the caller's task, answers them, which spares a task's spawn, scheduling and
    /// registration per request. A request that waits is spawned after that first poll,
    /// and its task's polls re-register whatever it waits on with the task's own waker (the
    /// first poll's waker does nothing), as every future must allow.
    pub(crate) fn spawn<F>(self: &Arc<Self>, id: Id, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        if self.is_closed() {
            return;
        }
        let mut task = Box::pin(task);
        let mut first = std::task::Context::from_waker(noop_waker());
        // A handler that panics loses its request, as it would on a task of its own, and
        // not the caller's task (the stdio reader, an HTTP connection).
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::future::Future::poll(task.as_mut(), &mut first)
        }));
        match polled {
            Ok(std::task::Poll::Ready(())) => return,
            Ok(std::task::Poll::Pending) => {}
            Err(_) => {
                tracing::error!(?id, "a request's handler panicked");
                return;
            }
        }
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let session = self.clone();
        let key = id.clone();
        // Held across the spawn so that the task's own removal cannot run before the insert.
        let mut in_flight = lock(&self.in_flight);
        let handle = tokio::spawn(async move {
            task.await;
            session.finished(&key, generation);
        });
        in_flight.insert(id, (generation, handle.abort_handle()));
    }

    fn finished(&self, id: &Id, generation: u64) {
        let mut in_flight = lock(&self.in_flight);
        if in_flight.get(id).is_some_and(|(g, _)| *g == generation) {
            in_flight.remove(id);
        }
    }

    /// Stops the request `id` (a `notifications/cancelled`); `false` if none runs.
    pub(crate) fn cancel(&self, id: &Id) -> bool {
        match lock(&self.in_flight).remove(id) {
            Some((_, task)) => {
                task.abort();
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
        self.closed.store(true, Ordering::Relaxed);
        for (_, (_, task)) in lock(&self.in_flight).drain() {
            task.abort();
        }
        lock(&self.waiters).clear();
        self.notifier.detach();
    }
}

/// A waker that does nothing, for a request's first poll (`Waker::noop` is newer than
/// this crate's MSRV).
fn noop_waker() -> &'static std::task::Waker {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    static NOOP: std::sync::OnceLock<std::task::Waker> = std::sync::OnceLock::new();
    NOOP.get_or_init(|| std::task::Waker::from(Arc::new(Noop)))
}
