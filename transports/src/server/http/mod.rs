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
//! bounds the body of a POST, the sessions, the requests in flight per session and in all,
//! and the queue toward each client: a client that stops reading its stream slows only its
//! own handlers. Bind a loopback address unless the server authenticates its clients.
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
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::Service;

mod auth;
mod body;
mod exchange;
mod guard;
mod sealed;
mod sessions;

pub use auth::{Auth, AuthFuture, AuthRefusal, Authenticate, Principal};
pub use body::ResponseBody;

/// How the HTTP server checks, bounds and routes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The endpoint's path.
    pub path: String,
    /// The host names (without port) a `Host` header may name; `None` accepts any (only
    /// behind something that checks it).
    pub allowed_hosts: Option<Vec<String>>,
    /// The host names (without port) an `Origin` header may name; `None` accepts any.
    /// A request without `Origin` (not from a browser) is not refused for it.
    pub allowed_origins: Option<Vec<String>>,
    /// The largest POST body, in bytes (413 beyond).
    pub max_body: usize,
    /// The most handshake-era sessions open at once. A new one beyond ends the session quiet
    /// longest (nothing in flight, no GET stream), if any; else it is refused (503).
    pub max_sessions: usize,
    /// How long a handshake-era session may stay quiet (nothing in flight, no GET stream)
    /// before it is ended, so that clients gone without a DELETE do not hold their sessions;
    /// `None` keeps quiet sessions until DELETE or eviction.
    pub session_idle: Option<Duration>,
    /// The most requests in flight per session (429 beyond).
    pub max_in_flight_per_session: usize,
    /// The most requests in flight in all, stateless ones included (503 beyond).
    pub max_in_flight: usize,
    /// The most connections open at once; more wait to be accepted.
    pub max_connections: usize,
    /// How many messages may wait toward one client stream before its handler waits.
    pub stream_queue: usize,
    /// Seals handshake-era session ids ([`with_session_keys`](Self::with_session_keys)).
    sealing: Option<Arc<sealed::SessionSeal>>,
    /// `/healthz` and `/readyz`, when set (404 without).
    pub probes: Option<Probes>,
    /// Who may call, when set ([`with_auth`](Self::with_auth)); without it, anyone who
    /// reaches the address.
    pub auth: Option<Auth>,
}

/// The health endpoints: `GET /healthz` answers 200 while the server runs, `GET /readyz`
/// 200 when `ready` says so and 503 before.
///
/// They are served before the `Host` and `Origin` checks, on purpose: a load balancer or a
/// kubelet probes by address, and the answer (a status and a word) tells nothing a page
/// could abuse.
#[derive(Clone)]
pub struct Probes {
    ready: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl fmt::Debug for Probes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probes")
            .field("ready", &(self.ready)())
            .finish()
    }
}

impl Probes {
    /// Probes whose readiness is `ready()`, asked on every `GET /readyz`: keep it cheap.
    pub fn new(ready: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Probes {
            ready: Arc::new(ready),
        }
    }

    /// The status `GET path` answers, if `path` is a probe's.
    pub(crate) fn answer(&self, path: &str) -> Option<(u16, &'static str)> {
        match path {
            "/healthz" => Some((200, "ok")),
            "/readyz" if (self.ready)() => Some((200, "ready")),
            "/readyz" => Some((503, "not ready")),
            _ => None,
        }
    }
}

/// The loopback names a local server answers to by default.
pub const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

impl Default for Config {
    fn default() -> Self {
        let loopback: Vec<String> = LOOPBACK.iter().map(|h| h.to_string()).collect();
        Config {
            path: "/mcp".to_owned(),
            allowed_hosts: Some(loopback.clone()),
            allowed_origins: Some(loopback),
            max_body: 4 * 1024 * 1024,
            max_sessions: 1024,
            session_idle: Some(Duration::from_secs(30 * 60)),
            max_in_flight_per_session: 256,
            max_in_flight: 4096,
            max_connections: 4096,
            stream_queue: 64,
            sealing: None,
            probes: None,
            auth: None,
        }
    }
}

impl Config {
    /// Accepts these host names (without port) in `Host` and `Origin`, beside loopback.
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let hosts: Vec<String> = hosts.into_iter().map(Into::into).collect();
        for list in [&mut self.allowed_hosts, &mut self.allowed_origins]
            .into_iter()
            .flatten()
        {
            list.extend(hosts.iter().cloned());
        }
        self
    }

    /// Accepts any `Host` and `Origin`.
    ///
    /// # Security
    ///
    /// Only behind a proxy that checks them, or with authentication: a local server that
    /// accepts any host can be reached by any web page through DNS rebinding.
    pub fn allow_any_host(mut self) -> Self {
        self.allowed_hosts = None;
        self.allowed_origins = None;
        self
    }

    /// Serves at `path` instead of `/mcp`.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Bounds a POST body to `bytes`.
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Bounds the open sessions.
    pub fn with_max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// Ends handshake-era sessions quiet for longer than `idle` (`None`: never).
    pub fn with_session_idle(mut self, idle: Option<Duration>) -> Self {
        self.session_idle = idle;
        self
    }

    /// Bounds the requests in flight per session.
    pub fn with_max_in_flight_per_session(mut self, requests: usize) -> Self {
        self.max_in_flight_per_session = requests;
        self
    }

    /// Makes handshake-era session ids sealed: each carries its session's state, encrypted
    /// and authenticated under the first of `keys` (any length; each is hashed to a 256-bit
    /// key), so that every replica configured with the same keys serves every session, with
    /// no shared table. Rotate by putting a new key first and keeping the old ones after it
    /// while their sessions live. What still needs the replica that holds a session (its GET
    /// stream, an answer to a request the server sent, its log level and subscriptions) is
    /// in the README. No keys: random ids, served only by the process that made them.
    pub fn with_session_keys<K: AsRef<[u8]>>(mut self, keys: &[K]) -> Self {
        self.sealing = sealed::SessionSeal::new(keys).map(Arc::new);
        self
    }

    /// Serves `/healthz` and `/readyz` (see [`Probes`]).
    pub fn with_probes(mut self, probes: Probes) -> Self {
        self.probes = Some(probes);
        self
    }

    /// Lets in only the requests `auth` authenticates (see [`Auth`]): `401`/`403` with
    /// `WWW-Authenticate` otherwise, and the protected-resource metadata served.
    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Bounds the queue toward one client stream.
    pub fn with_stream_queue(mut self, messages: usize) -> Self {
        self.stream_queue = messages;
        self
    }
}

/// What an HTTP server holds open right now; every count returns to zero when its clients
/// are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Open TCP connections.
    pub connections: usize,
    /// Open handshake-era sessions.
    pub sessions: usize,
    /// Requests whose answer has not been delivered (or abandoned) yet.
    pub in_flight: usize,
}

/// The counts behind [`Stats`], shared by the server's tasks.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections: Arc<AtomicUsize>,
    pub(crate) in_flight: Arc<AtomicUsize>,
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
    pub async fn run(self) -> io::Result<()> {
        if let Some(idle) = self.shared.config.session_idle {
            tokio::spawn(expire_idle_sessions(Arc::downgrade(&self.shared), idle));
        }
        let limit = Arc::new(tokio::sync::Semaphore::new(
            self.shared.config.max_connections.max(1),
        ));
        loop {
            let permit = limit
                .clone()
                .acquire_owned()
                .await
                .map_err(io::Error::other)?;
            let (stream, _) = match self.listener.accept().await {
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
            let shared = self.shared.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let _open = exchange::Count::new(&shared.counters.connections);
                let service = service_fn(move |request| {
                    let shared = shared.clone();
                    async move { Ok::<_, std::convert::Infallible>(shared.handle(request).await) }
                });
                if let Err(e) = http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!("connection ended: {e}");
                }
            });
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
