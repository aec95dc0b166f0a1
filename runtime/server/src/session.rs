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

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};

use switchboard_codecs::jsonrpc::{Id, Outcome};
use switchboard_transports::server::{Notifier, Principal};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;

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
    /// Requests that wait, by id, and cancels that came before their request waited.
    in_flight: Mutex<Registry>,
    waiters: Mutex<HashMap<Id, oneshot::Sender<Outcome>>>,
    next_client_id: AtomicU64,
    closed: AtomicBool,
    /// Who its requests come from, with inbound authentication.
    principal: OnceLock<Arc<Principal>>,
    /// Whether its requests run on one thread: a current-thread runtime, or a multi-thread
    /// one with a single worker (see `spawn`).
    one_thread: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("key", &self.key)
            .field("stateless", &self.stateless)
            .finish_non_exhaustive()
    }
}

/// A request that waits, by id: what a cancel or a close needs to stop it.
struct InFlight {
    /// So that a late removal of a finished request cannot remove a newer one that reused
    /// its id.
    generation: u64,
    stop: Arc<AtomicBool>,
    /// Its task's waker, so that a stop is heard at once.
    waker: Waker,
}

/// How many cancels for no request in flight are remembered: a cancel may cross its request
/// between the read and the first poll (see [`Session::cancel`]).
const EARLY_CANCELS: usize = 32;

/// Who a request's task is: its session and id, and its registration once it waits.
/// However the task ends (answered, panicked, stopped), its entry goes.
struct Running {
    session: Arc<Session>,
    id: Id,
    /// Its registration, once it waits.
    registered: Option<(u64, Arc<AtomicBool>)>,
}

pin_project_lite::pin_project! {
    /// A request's task: its first poll; then, if it waits, its registration (unless its
    /// session closed or a cancel came first) and the rest, until it ends or is stopped.
    ///
    /// A future of its own rather than an `async fn` that pins its argument: that would hold
    /// the handler's future twice (the argument and the pinned local), and this is what every
    /// request allocates.
    struct Request<F> {
        running: Running,
        #[pin]
        task: F,
    }
}

impl<F: Future<Output = ()>> Future for Request<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let running = this.running;
        if let Some((_, stop)) = &running.registered {
            if stop.load(Ordering::Acquire) {
                // Dropping the handler's future is its cancellation.
                return Poll::Ready(());
            }
        }
        let polled = this.task.poll(cx);
        // Registered at its first wait on its own task: the poll on the reader (see
        // `Session::spawn`) has no waker to wake it by.
        if polled.is_pending()
            && running.registered.is_none()
            && !cx.waker().will_wake(noop_waker())
        {
            match running.session.register(&running.id, cx.waker()) {
                Some(registration) => running.registered = Some(registration),
                None => return Poll::Ready(()),
            }
        }
        polled
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A handler that panics loses its request (its task catches the panic, as tokio's
        // tasks do), said with the request's id.
        if std::thread::panicking() {
            tracing::error!(id = ?self.id, "a request's handler panicked");
        }
        if let Some((generation, _)) = self.registered {
            self.session.finished(&self.id, generation);
        }
    }
}

/// The requests of a session that wait.
#[derive(Default)]
struct Registry {
    waiting: HashMap<Id, InFlight>,
    next_generation: u64,
    early_cancels: VecDeque<Id>,
}

impl InFlight {
    fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
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
            waiters: Mutex::default(),
            next_client_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            principal: OnceLock::new(),
            one_thread: Handle::try_current().is_ok_and(|runtime| {
                runtime.runtime_flavor() == RuntimeFlavor::CurrentThread
                    || runtime.metrics().num_workers() == 1
            }),
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

    /// Runs a request on a task of its own; one that waits is registered under its id
    /// until it ends, so that a cancel can stop it.
    ///
    /// On a runtime of several threads a handler's future is never polled here, on the
    /// caller's task (the stdio reader, an HTTP connection): a handler may compute, or block,
    /// for as long as it likes before its first `.await`, and a poll cannot be stopped
    /// part-way, so no budget could bound how long an inline poll would hold up reading every
    /// other request of the connection. A spawn costs every request the same small, bounded
    /// price instead, and another worker goes on reading.
    ///
    /// On a runtime of one thread, or of a single worker, there is no other worker: a
    /// handler that computes holds up reading whichever task polls it. There the first poll happens here, and only a request
    /// that then waits gets a task; most answer at once (a list, a quick tool), and are
    /// spared the spawn, about a third of a stdio server's CPU per call (`BENCHMARKS.md`).
    ///
    /// Either way, the registration (a lock, an entry, a flag) is paid only by the requests
    /// that wait, since one that answers at its first poll has nothing left to cancel; and a
    /// request read before its session closed gets its first poll all the same: one that
    /// answers at once is answered, as it would have been had it run before the close; one
    /// that waits ends there.
    pub(crate) fn spawn<F>(self: &Arc<Self>, id: Id, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.is_closed() {
            return;
        }
        let request = Request {
            running: Running {
                session: self.clone(),
                id,
                registered: None,
            },
            task,
        };
        if !self.one_thread {
            drop(tokio::spawn(request));
            return;
        }
        let mut task = Box::pin(request);
        let mut first = Context::from_waker(noop_waker());
        // A handler that panics loses its request (said by `Running`'s drop), as on a task
        // of its own, and not the reader's task.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| task.as_mut().poll(&mut first)));
        if let Ok(Poll::Pending) = polled {
            drop(tokio::spawn(task));
        }
    }

    /// The request `id` had its first poll and waits: from now on a cancel or a close stops
    /// it. `None` if it must end now: its session closed, or a cancel for it came first.
    fn register(&self, id: &Id, waker: &Waker) -> Option<(u64, Arc<AtomicBool>)> {
        let mut in_flight = lock(&self.in_flight);
        // Read under the lock that `close` takes after setting it: either `close` finds
        // this request and stops it, or this finds the session closed.
        if self.is_closed() {
            return None;
        }
        if let Some(at) = in_flight.early_cancels.iter().position(|c| c == id) {
            in_flight.early_cancels.remove(at);
            return None;
        }
        let generation = in_flight.next_generation;
        in_flight.next_generation += 1;
        let stop = Arc::new(AtomicBool::new(false));
        in_flight.waiting.insert(
            id.clone(),
            InFlight {
                generation,
                stop: stop.clone(),
                waker: waker.clone(),
            },
        );
        Some((generation, stop))
    }

    fn finished(&self, id: &Id, generation: u64) {
        let mut in_flight = lock(&self.in_flight);
        if in_flight
            .waiting
            .get(id)
            .is_some_and(|e| e.generation == generation)
        {
            in_flight.waiting.remove(id);
        }
    }

    /// Stops the request `id` (a `notifications/cancelled`); `false` if none waits.
    ///
    /// A cancel for a request that is not waiting is remembered for a while: it may have
    /// been read right after its request, before that request's first poll, and then stops
    /// it should it wait. (One that answered already is past stopping, as the spec allows.)
    pub(crate) fn cancel(&self, id: &Id) -> bool {
        let removed = {
            let mut in_flight = lock(&self.in_flight);
            let removed = in_flight.waiting.remove(id);
            if removed.is_none() {
                if in_flight.early_cancels.len() == EARLY_CANCELS {
                    in_flight.early_cancels.pop_front();
                }
                in_flight.early_cancels.push_back(id.clone());
            }
            removed
        };
        match removed {
            Some(entry) => {
                entry.stop();
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
        let stopped: Vec<InFlight> = {
            let mut in_flight = lock(&self.in_flight);
            // Set under the lock that `register` reads it under.
            self.closed.store(true, Ordering::Relaxed);
            // A request not yet polled is left its first poll (see `spawn`).
            in_flight.early_cancels.clear();
            in_flight.waiting.drain().map(|(_, entry)| entry).collect()
        };
        for entry in stopped {
            entry.stop();
        }
        lock(&self.waiters).clear();
        self.notifier.detach();
    }
}

/// A waker that does nothing, for a request's first poll on the reader (`Waker::noop` is
/// newer than this crate's MSRV); a request's own task always polls it once more.
fn noop_waker() -> &'static Waker {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    static NOOP: OnceLock<Waker> = OnceLock::new();
    NOOP.get_or_init(|| Waker::from(Arc::new(Noop)))
}
