//! Streamable HTTP, the server side, on hyper: one endpoint (`/mcp` by default) for both
//! eras.
//!
//! A POST carries one message. A request's answer is a JSON body when the handler answers
//! without saying anything first, else an event stream (`text/event-stream`) carrying what
//! it sent about the request (progress, log messages, requests to the client) and then the
//! answer. Closing that stream, or the connection, cancels the request. In the handshake era
//! `initialize` opens a session (`Mcp-Session-Id`), GET opens its stream for messages that
//! belong to no request, and DELETE ends it; a 2026-07-28 request (its `_meta` names the
//! version) needs no session and has its `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//! headers checked against its body (-32020 on a mismatch).
//!
//! # Security
//!
//! [`Config::default`] accepts only loopback `Host` and `Origin` values (DNS rebinding), and
//! bounds what any client can make the server hold: the time a request's head and body may
//! take, an idle keep-alive connection, a response its client does not read; the
//! connections (past the cap, an idle one is closed for a newcomer, and health probes are
//! always answered); the body of a POST; the sessions, the requests in flight per session
//! and in all; the bytes of answers not yet sent; and per client (its principal, else its
//! address) its sessions, streams, requests in flight and request rate. Each refusal has
//! its status (408 or a closed connection, 413, 429 or 503 with `Retry-After`) and is
//! counted ([`Config::with_rejections`]). Bind a loopback address unless the server
//! authenticates its clients.
//!
//! ```no_run
//! # async fn run<S: switchboard_transports::server::Service>(service: std::sync::Arc<S>) -> std::io::Result<()> {
//! use switchboard_transports::server::http::{Config, Server};
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! Server::new(listener, service, Config::default()).run().await
//! # }
//! ```

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};

use super::Service;

mod auth;
mod body;
mod clients;
mod config;
pub(crate) mod connections;
mod exchange;
mod guard;
mod listen;
mod sealed;
mod sessions;

pub use auth::{Auth, AuthFuture, AuthRefusal, Authenticate, Principal};
pub use body::{Chunk, ResponseBody};
pub use config::{default_answer_budget, ClientLimits, Config, Page, Probes, Rejection, LOOPBACK};
pub use listen::{listen_addr, InvalidListenAddr};

use clients::{ClientKey, Quota};
use connections::{Admitted, Tracked};

/// What an HTTP server holds open right now; every count returns to zero when its clients
/// are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Open TCP connections (those past the cap, answered and closed on a lane of their
    /// own, included).
    pub connections: usize,
    /// Open handshake-era sessions.
    pub sessions: usize,
    /// Requests whose answer has not been delivered (or abandoned) yet.
    pub in_flight: usize,
    /// Bytes of answers and messages built and not yet taken by a socket.
    pub unsent: usize,
}

/// The counts behind [`Stats`], shared by the server's tasks.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections: Arc<AtomicUsize>,
    pub(crate) in_flight: Arc<AtomicUsize>,
    /// Connections on the lane past the cap.
    pub(crate) shed: Arc<AtomicUsize>,
}

/// A handle on a running server's counts.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<dyn SharedStats>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Handle {
    /// The counts now.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }
}

trait SharedStats: Send + Sync {
    fn stats(&self) -> Stats;
}

impl<S: Service> SharedStats for exchange::Shared<S> {
    fn stats(&self) -> Stats {
        Stats {
            connections: self.counters.connections.load(Ordering::Relaxed),
            sessions: self.sessions.len(),
            in_flight: self.counters.in_flight.load(Ordering::Relaxed),
            unsent: self.connections.unsent(),
        }
    }
}

/// A Streamable HTTP server: a listener, the service it feeds, and its [`Config`].
pub struct Server<S: Service> {
    listener: TcpListener,
    shared: Arc<exchange::Shared<S>>,
}

impl<S: Service> fmt::Debug for Server<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

/// The read and write buffers hyper keeps per connection at most: a request head beyond it
/// is refused (431), and what a connection can hold stays small at the connection cap.
const CONNECTION_BUFFER: usize = 64 * 1024;

/// The connections past the cap answered at once (503, or a probe's answer), and how long
/// their head may take: a few, briefly, so that they cost nothing to keep.
const SHED_LANE: usize = 64;
const SHED_LANE_PER_CLIENT: usize = 8;
const SHED_HEAD_TIMEOUT: Duration = Duration::from_secs(2);

impl<S: Service> Server<S> {
    /// A server that will accept on `listener`.
    pub fn new(listener: TcpListener, service: Arc<S>, config: Config) -> Self {
        Server {
            listener,
            shared: Arc::new(exchange::Shared::new(service, config)),
        }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// A handle on its counts.
    pub fn handle(&self) -> Handle {
        Handle {
            shared: self.shared.clone(),
        }
    }

    /// Accepts and serves connections until accepting fails for good.
    ///
    /// Every connection is accepted as soon as it arrives: past the cap, the idlest one
    /// without a request in progress is closed for it, or, when every one is busy, it is
    /// answered 503 (a health probe: its answer) and closed.
    pub async fn run(self) -> io::Result<()> {
        if let Some(idle) = self.shared.config.session_idle {
            tokio::spawn(expire_idle_sessions(Arc::downgrade(&self.shared), idle));
        }
        tokio::spawn(sweep(Arc::downgrade(&self.shared)));
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                // Out of descriptors, a reset before accept: the listener itself is fine.
                Err(e) if is_transient(&e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let _ = stream.set_nodelay(true);
            let shared = &self.shared;
            let client = shared.clients.get(ClientKey::address(peer.ip()));
            match shared.connections.admit(client.clone(), peer.ip()) {
                Admitted::Served(id, conn, made_room) => {
                    let registration = shared.connections.registration(id);
                    let task = tokio::spawn(serve(shared.clone(), stream, conn, registration));
                    shared.connections.spawned(id, task.abort_handle());
                    if made_room {
                        // The connection cut for this one closes its socket when its task
                        // is dropped: let that happen before the next is accepted.
                        tokio::task::yield_now().await;
                    }
                }
                Admitted::Shed => {
                    let rejections = shared.config.rejections.as_ref();
                    client.reject(Rejection::ConnectionShed, rejections);
                    // Beyond the lane, or past a client's share of it, the connection is
                    // closed at once: one client cannot fill the lane that answers probes.
                    if shared.counters.shed.load(Ordering::Relaxed) < SHED_LANE
                        && client.holds(Quota::Shed) < SHED_LANE_PER_CLIENT
                    {
                        let lane = (
                            exchange::Count::new(&shared.counters.shed),
                            client.count(Quota::Shed),
                        );
                        tokio::spawn(shed(shared.clone(), stream, lane));
                    }
                }
            }
        }
    }
}

/// Serves one admitted connection until it ends or is cut.
async fn serve<S: Service>(
    shared: Arc<exchange::Shared<S>>,
    stream: TcpStream,
    conn: Arc<connections::Conn>,
    registration: connections::Registration,
) {
    let _registration = registration;
    let _open = exchange::Count::new(&shared.counters.connections);
    let io = TokioIo::new(Tracked::new(stream, conn.clone()));
    let service = service_fn(move |request| {
        let shared = shared.clone();
        let in_progress = conn.begin();
        async move {
            let mut response = shared.handle(request, in_progress.conn()).await;
            response.body_mut().hold(in_progress);
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    if let Err(e) = http1::Builder::new()
        .keep_alive(true)
        .max_buf_size(CONNECTION_BUFFER)
        .serve_connection(io, service)
        .await
    {
        tracing::debug!("connection ended: {e}");
    }
}

/// Answers a connection past the cap: its probe, or 503 with `Retry-After`; then closes it.
async fn shed<S: Service>(
    shared: Arc<exchange::Shared<S>>,
    stream: TcpStream,
    lane: (exchange::Count, clients::Held),
) {
    let _lane = lane;
    let _open = exchange::Count::new(&shared.counters.connections);
    let service = service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(shared.shed(&request)) }
    });
    let served = http1::Builder::new()
        .keep_alive(false)
        .max_buf_size(8 * 1024)
        .timer(TokioTimer::new())
        .header_read_timeout(SHED_HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(SHED_HEAD_TIMEOUT * 2, served).await;
}

/// Cuts the connections past a timeout, and forgets the clients at rest, until the server
/// is gone.
async fn sweep<S: Service>(shared: std::sync::Weak<exchange::Shared<S>>) {
    let Some(every) = shared.upgrade().map(|s| s.connections.sweep_every()) else {
        return;
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut since_clients = Duration::ZERO;
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.connections.sweep();
        since_clients += every;
        if since_clients >= Duration::from_secs(1) {
            since_clients = Duration::ZERO;
            shared.clients.sweep();
        }
    }
}

/// Ends idle sessions every quarter of `idle` (within 10 ms and 30 s), until the server is
/// gone.
async fn expire_idle_sessions<S: Service>(
    shared: std::sync::Weak<exchange::Shared<S>>,
    idle: Duration,
) {
    let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.expire(idle);
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    ) || e
        .raw_os_error()
        .is_some_and(|code| code == 24 || code == 23)
}
