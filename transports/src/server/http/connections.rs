//! The server's connections: admitted against a cap that no client can exhaust, watched for
//! the timeouts of head, body, keep-alive and send, and cut when the answers waiting for
//! clients that do not read pass the byte budget.
//!
//! Each connection shares a [`Conn`] of counters with the code that serves it: its socket
//! ([`Tracked`]) counts the bytes it reads and writes and says when a write waits for the
//! client; the exchange says when a request starts and ends and while a body is read. None
//! of that takes a lock or reads a clock: a sweep, every fraction of the shortest timeout,
//! looks at every connection's counters and cuts the ones that stopped moving. Cutting a
//! connection aborts its task, which drops everything it holds: its requests are cancelled
//! as if the client had gone.
//!
//! Past the cap a new connection is still accepted, never left in the backlog: the idlest
//! connection that has no request in progress (a keep-alive connection waiting, or one
//! still sending its head) is closed to make room; when every connection is busy, the
//! newcomer is answered on a small lane of its own (503 with `Retry-After`, or the health
//! probes' answer) and closed.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

use super::clients::{Client, Held, Quota};
use super::config::{Config, Rejection, Rejections};

/// One connection's counters, shared by its socket, its requests and the sweep.
pub(crate) struct Conn {
    /// The client its address names.
    pub(crate) peer: Arc<Client>,
    /// Its place in that client's count of connections.
    _counted: Held,
    pub(crate) addr: std::net::IpAddr,
    /// The client its last request came from, when that was not `peer` (a principal, a
    /// forwarded address): the next request is most likely from it too.
    pub(crate) last_client: Mutex<Option<Arc<Client>>>,
    connections: Arc<Connections>,
    in_progress: AtomicUsize,
    started: AtomicU64,
    read: AtomicU64,
    /// `read` when its last request ended: more since means a head is arriving.
    read_at_rest: AtomicU64,
    /// When its last request ended (or it was accepted), by the sweep's clock.
    rested_at: AtomicU64,
    written: AtomicU64,
    write_blocked: AtomicBool,
    reading_body: AtomicBool,
    /// Bytes charged to the answer budget and not yet sent.
    unsent: AtomicUsize,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("peer", &self.peer.key)
            .finish_non_exhaustive()
    }
}

impl Conn {
    /// A request starts on it; it ends when the guard drops (with the response's body).
    pub(crate) fn begin(self: &Arc<Self>) -> InProgress {
        self.in_progress.fetch_add(1, Ordering::Relaxed);
        self.started.fetch_add(1, Ordering::Relaxed);
        InProgress(self.clone())
    }

    /// Its request's body is being read until the guard drops.
    pub(crate) fn reading_body(self: &Arc<Self>) -> ReadingBody {
        self.reading_body.store(true, Ordering::Relaxed);
        ReadingBody(self.clone())
    }

    /// `frame`, counted against the answer budget until the last of it is written (or
    /// dropped unsent).
    pub(crate) fn charge(self: &Arc<Self>, frame: Bytes) -> Bytes {
        let len = frame.len();
        self.unsent.fetch_add(len, Ordering::Relaxed);
        let budget = &self.connections.budget;
        if budget.used.fetch_add(len, Ordering::Relaxed) + len > budget.limit {
            Connections::over_budget(&self.connections);
        }
        Bytes::from_owner(Charged {
            frame,
            conn: self.clone(),
        })
    }
}

impl Conn {
    /// Whether `len` more bytes fit in the budget: now, or once the connections whose
    /// clients do not read are cut to make room for them (a client that reads is never
    /// refused for what those hold).
    pub(crate) fn fits(&self, len: usize) -> bool {
        let budget = &self.connections.budget;
        let excess = budget
            .used
            .load(Ordering::Relaxed)
            .saturating_add(len)
            .saturating_sub(budget.limit);
        excess == 0 || self.connections.cut_stalled(excess) >= excess
    }

    /// A request body of `len` bytes, counted against the budget while its request is
    /// served.
    pub(crate) fn hold(self: &Arc<Self>, len: usize) -> Holding {
        self.connections
            .budget
            .used
            .fetch_add(len, Ordering::Relaxed);
        Holding {
            conn: self.clone(),
            len,
        }
    }
}

/// A request body counted against the budget; given back by drop.
pub(crate) struct Holding {
    conn: Arc<Conn>,
    len: usize,
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.conn
            .connections
            .budget
            .used
            .fetch_sub(self.len, Ordering::Relaxed);
    }
}

/// A frame charged to the budget: given back when the last copy of it is dropped, which
/// hyper does once the socket has taken all of it.
struct Charged {
    frame: Bytes,
    conn: Arc<Conn>,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        &self.frame
    }
}

impl Drop for Charged {
    fn drop(&mut self) {
        let len = self.frame.len();
        self.conn.unsent.fetch_sub(len, Ordering::Relaxed);
        self.conn
            .connections
            .budget
            .used
            .fetch_sub(len, Ordering::Relaxed);
    }
}

/// A request in progress on a connection; it ends by drop.
pub(crate) struct InProgress(Arc<Conn>);

impl InProgress {
    pub(crate) fn conn(&self) -> &Arc<Conn> {
        &self.0
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        let conn = &self.0;
        conn.read_at_rest
            .store(conn.read.load(Ordering::Relaxed), Ordering::Relaxed);
        conn.rested_at
            .store(conn.connections.clock(), Ordering::Relaxed);
        conn.in_progress.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A body being read; it stops by drop.
pub(crate) struct ReadingBody(Arc<Conn>);

impl Drop for ReadingBody {
    fn drop(&mut self) {
        self.0.reading_body.store(false, Ordering::Relaxed);
    }
}

/// A connection's socket, counting what moves through it.
pub(crate) struct Tracked {
    io: TcpStream,
    conn: Arc<Conn>,
}

impl Tracked {
    pub(crate) fn new(io: TcpStream, conn: Arc<Conn>) -> Self {
        Tracked { io, conn }
    }

    fn wrote(&self, result: &Poll<io::Result<usize>>) {
        match result {
            Poll::Ready(Ok(n)) => {
                self.conn.written.fetch_add(*n as u64, Ordering::Relaxed);
                self.conn.write_blocked.store(false, Ordering::Relaxed);
            }
            Poll::Pending => self.conn.write_blocked.store(true, Ordering::Relaxed),
            Poll::Ready(Err(_)) => {}
        }
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.io).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if read > 0 {
            self.conn.read.fetch_add(read as u64, Ordering::Relaxed);
        }
        result
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(&result);
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(&result);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The most connections cut and not yet gone before a newcomer past the cap is shed
/// instead of making room.
const PENDING_CUTS: usize = 64;

/// The answer budget's count.
struct Budget {
    used: AtomicUsize,
    limit: usize,
    /// A look again is due shortly (see [`Connections::over_budget`]).
    recheck: AtomicBool,
}

/// How soon the budget is looked at again when the connections over it were still
/// writing: a client that does not read shows as a write that waits within that time.
const BUDGET_RECHECK: Duration = Duration::from_millis(10);

/// What the sweep knows of one connection.
struct Watched {
    conn: Arc<Conn>,
    /// Its task, once spawned.
    abort: Option<AbortHandle>,
    /// Cut already: no longer counted, its task ending.
    cut: bool,
    /// `started` when last seen, and since when a head has been seen arriving.
    seen_started: u64,
    head_since: Option<Instant>,
    /// `read` when last seen to change, and since when.
    seen_read: u64,
    read_since: Instant,
    /// `written` when last seen to change while blocked, and since when.
    seen_written: u64,
    blocked_since: Option<Instant>,
}

impl Watched {
    fn cut(&mut self) {
        self.cut = true;
        if let Some(abort) = &self.abort {
            abort.abort();
        }
    }
}

struct Table {
    next: u64,
    /// Entries not cut.
    live: usize,
    entries: HashMap<u64, Watched>,
}

/// The timeouts the sweep applies.
#[derive(Debug, Clone, Copy)]
struct Timeouts {
    head: Duration,
    body: Duration,
    idle: Duration,
    send: Duration,
}

/// Every connection of a server, and the answer budget they share.
pub(crate) struct Connections {
    table: Mutex<Table>,
    max: usize,
    timeouts: Timeouts,
    budget: Budget,
    rejections: Option<Rejections>,
    /// The sweep's clock: microseconds since `origin`, as of the last sweep.
    clock: AtomicU64,
    origin: Instant,
}

/// What [`Connections::admit`] decided.
pub(crate) enum Admitted {
    /// Served, under this id (its task's abort handle is still to be given); whether a
    /// connection was cut to make room.
    Served(u64, Arc<Conn>, bool),
    /// Past the cap with every connection busy.
    Shed,
}

/// Removes a connection from the table when its task ends, however it ends.
pub(crate) struct Registration {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut table = self.connections.lock();
        if let Some(gone) = table.entries.remove(&self.id) {
            if !gone.cut {
                table.live -= 1;
            }
        }
    }
}

impl Connections {
    pub(crate) fn new(config: &Config) -> Arc<Self> {
        Arc::new(Connections {
            table: Mutex::new(Table {
                next: 0,
                live: 0,
                entries: HashMap::new(),
            }),
            max: config.max_connections.max(1),
            timeouts: Timeouts {
                head: config.head_timeout,
                body: config.body_timeout,
                idle: config.idle_timeout,
                send: config.send_timeout,
            },
            budget: Budget {
                used: AtomicUsize::new(0),
                limit: config.answer_budget.max(1),
                recheck: AtomicBool::new(false),
            },
            rejections: config.rejections.clone(),
            clock: AtomicU64::new(0),
            origin: Instant::now(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn clock(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }

    /// How often the sweep should run: an eighth of the shortest timeout, within 20 ms
    /// and a second.
    pub(crate) fn sweep_every(&self) -> Duration {
        let t = self.timeouts;
        (t.head.min(t.body).min(t.idle).min(t.send) / 8)
            .clamp(Duration::from_millis(20), Duration::from_secs(1))
    }

    /// The bytes charged and not yet sent, across connections.
    pub(crate) fn unsent(&self) -> usize {
        self.budget.used.load(Ordering::Relaxed)
    }

    /// Admits a connection from `peer`: makes room past the cap by cutting a connection
    /// without a request in progress, or sheds it when every one is busy.
    ///
    /// The one cut is of the client that holds the most connections, its idlest: a client
    /// that opens connections past the cap closes its own, never another client's while it
    /// holds more (a probe, a well-behaved client's keep-alive connection).
    pub(crate) fn admit(self: &Arc<Self>, peer: Arc<Client>, addr: std::net::IpAddr) -> Admitted {
        let now = Instant::now();
        let clock = self.clock();
        let mut table = self.lock();
        // Connections cut and not yet gone still hold their sockets: past a few, a
        // newcomer is shed rather than another cut, so that descriptors stay bounded
        // however fast evicted clients come back.
        if table.live >= self.max && table.entries.len() - table.live >= PENDING_CUTS {
            return Admitted::Shed;
        }
        let mut made_room = false;
        if table.live >= self.max {
            made_room = true;
            let idlest = table
                .entries
                .values_mut()
                .filter(|w| !w.cut && w.conn.in_progress.load(Ordering::Relaxed) == 0)
                .max_by_key(|w| {
                    let rested_at = w.conn.rested_at.load(Ordering::Relaxed);
                    (w.conn.peer.holds(Quota::Connections), u64::MAX - rested_at)
                });
            match idlest {
                Some(victim) => {
                    victim.cut();
                    let client = victim.conn.peer.clone();
                    table.live -= 1;
                    drop(table);
                    client.reject(Rejection::ConnectionEvicted, self.rejections.as_ref());
                    table = self.lock();
                }
                None => return Admitted::Shed,
            }
        }
        let conn = Arc::new(Conn {
            _counted: peer.count(Quota::Connections),
            peer,
            addr,
            last_client: Mutex::new(None),
            connections: self.clone(),
            in_progress: AtomicUsize::new(0),
            started: AtomicU64::new(0),
            read: AtomicU64::new(0),
            read_at_rest: AtomicU64::new(0),
            rested_at: AtomicU64::new(clock),
            written: AtomicU64::new(0),
            write_blocked: AtomicBool::new(false),
            reading_body: AtomicBool::new(false),
            unsent: AtomicUsize::new(0),
        });
        let id = table.next;
        table.next += 1;
        table.live += 1;
        table.entries.insert(
            id,
            Watched {
                conn: conn.clone(),
                abort: None,
                cut: false,
                seen_started: 0,
                head_since: None,
                seen_read: 0,
                read_since: now,
                seen_written: 0,
                blocked_since: None,
            },
        );
        Admitted::Served(id, conn, made_room)
    }

    /// Gives the connection `id` its task, which a cut aborts; the registration removes it
    /// when the task ends.
    pub(crate) fn spawned(self: &Arc<Self>, id: u64, abort: AbortHandle) {
        if let Some(watched) = self.lock().entries.get_mut(&id) {
            if watched.cut {
                abort.abort();
            }
            watched.abort = Some(abort);
        }
    }

    /// The registration that removes `id` when dropped (by its task).
    pub(crate) fn registration(self: &Arc<Self>, id: u64) -> Registration {
        Registration {
            connections: self.clone(),
            id,
        }
    }

    /// Looks at every connection and cuts the ones past a timeout or, over the answer
    /// budget, stalled; moves the clock on.
    pub(crate) fn sweep(self: &Arc<Self>) {
        let now = Instant::now();
        self.clock.store(
            u64::try_from(now.duration_since(self.origin).as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let clock = self.clock();
        let t = self.timeouts;
        let mut cuts: Vec<(Arc<Client>, Option<Rejection>)> = Vec::new();
        {
            let mut table = self.lock();
            let mut cut_now = 0;
            for watched in table.entries.values_mut().filter(|w| !w.cut) {
                if let Some(why) = watched.overdue(now, clock, &t) {
                    watched.cut();
                    cut_now += 1;
                    cuts.push((watched.conn.peer.clone(), why));
                }
            }
            table.live -= cut_now;
        }
        for (client, why) in cuts {
            match why {
                Some(rejection) => client.reject(rejection, self.rejections.as_ref()),
                None => tracing::trace!("closed a connection that sent nothing within its timeout"),
            }
        }
        Connections::over_budget(self);
    }

    /// The answers not yet sent are over the budget: cuts the connections whose writes
    /// wait for their clients, longest waiting first, until what they hold covers the
    /// excess. A connection whose client reads is never cut for it; when the excess is
    /// still there (answers just built, whose writes have not started), looks again in
    /// [`BUDGET_RECHECK`], and the sweep does at every tick.
    fn over_budget(this: &Arc<Self>) {
        let budget = &this.budget;
        let excess = budget
            .used
            .load(Ordering::Relaxed)
            .saturating_sub(budget.limit);
        if excess == 0 {
            return;
        }
        if this.cut_stalled(excess) < excess {
            // Outside a runtime (a notification sent from an embedder's own thread) the
            // sweep's next tick looks again instead.
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            if !budget.recheck.swap(true, Ordering::Relaxed) {
                let again = this.clone();
                runtime.spawn(async move {
                    tokio::time::sleep(BUDGET_RECHECK).await;
                    again.budget.recheck.store(false, Ordering::Relaxed);
                    Connections::over_budget(&again);
                });
            }
        }
    }

    /// Cuts stalled connections holding at least `excess` unsent bytes, if there are
    /// that many; how many bytes they held.
    fn cut_stalled(&self, excess: usize) -> usize {
        let mut cut = Vec::new();
        let freed = {
            let mut table = self.lock();
            let mut stalled: Vec<&mut Watched> = table
                .entries
                .values_mut()
                .filter(|w| {
                    !w.cut
                        && w.conn.write_blocked.load(Ordering::Relaxed)
                        && w.conn.unsent.load(Ordering::Relaxed) > 0
                })
                .collect();
            stalled.sort_by_key(|w| w.blocked_since.unwrap_or_else(Instant::now));
            let mut freed = 0;
            for watched in stalled {
                if freed >= excess {
                    break;
                }
                freed += watched.conn.unsent.load(Ordering::Relaxed);
                watched.cut();
                cut.push(watched.conn.peer.clone());
            }
            table.live -= cut.len();
            freed
        };
        for client in cut {
            client.reject(Rejection::AnswerBudget, self.rejections.as_ref());
        }
        freed
    }
}

impl Watched {
    /// Why it should be cut now, if it should: `Some(None)` for a keep-alive connection
    /// idle too long, or one that never said a word (no rejection: only housekeeping).
    fn overdue(&mut self, now: Instant, clock: u64, t: &Timeouts) -> Option<Option<Rejection>> {
        let conn = &self.conn;
        let read = conn.read.load(Ordering::Relaxed);
        if read != self.seen_read {
            self.seen_read = read;
            self.read_since = now;
        }
        let written = conn.written.load(Ordering::Relaxed);
        if conn.write_blocked.load(Ordering::Relaxed) && written == self.seen_written {
            let since = *self.blocked_since.get_or_insert(now);
            if now.duration_since(since) > t.send {
                return Some(Some(Rejection::SendTimeout));
            }
        } else {
            self.seen_written = written;
            self.blocked_since = None;
        }
        let started = conn.started.load(Ordering::Relaxed);
        if started != self.seen_started {
            self.seen_started = started;
            self.head_since = None;
        }
        if conn.in_progress.load(Ordering::Relaxed) > 0 {
            self.head_since = None;
            let stalled = now.duration_since(self.read_since) > t.body;
            return (conn.reading_body.load(Ordering::Relaxed) && stalled)
                .then_some(Some(Rejection::BodyTimeout));
        }
        if read > conn.read_at_rest.load(Ordering::Relaxed) {
            let since = *self.head_since.get_or_insert(now);
            return (now.duration_since(since) > t.head).then_some(Some(Rejection::HeadTimeout));
        }
        let rested =
            Duration::from_micros(clock.saturating_sub(conn.rested_at.load(Ordering::Relaxed)));
        if started == 0 {
            // Not a byte since it was accepted: closed at the head timeout, but not counted
            // against anyone (clients open spare connections, browsers preconnect).
            return (rested > t.head).then_some(None);
        }
        (rested > t.idle).then_some(None)
    }
}
