//! What an HTTP server checks, bounds and routes: its [`Config`], the health [`Probes`], the
//! per-client [`ClientLimits`], and the hook that hears every [`Rejection`].

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use super::auth::Auth;
use super::sealed;
use crate::connection::BoxFuture;

/// How the HTTP server checks, bounds and routes.
///
/// Every bound has a default a production operator would keep; the README's Gateway section
/// lists each with what a client past it gets.
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
    /// The most handshake-era sessions open at once. A new one beyond ends the session
    /// least recently used (nothing in flight, no GET stream, unused for
    /// [`session_grace`](Self::session_grace)), if any; else it is refused (503).
    pub max_sessions: usize,
    /// How long a handshake-era session may stay quiet (nothing in flight, no GET stream)
    /// before it is ended, so that clients gone without a DELETE do not hold their sessions;
    /// `None` keeps quiet sessions until DELETE or eviction.
    pub session_idle: Option<Duration>,
    /// A session used more recently than this is never ended to make room for another.
    /// With sealed ids ([`with_session_keys`](Self::with_session_keys)) it does not apply:
    /// a session ended to make room is restored from its id when it is next used.
    pub session_grace: Duration,
    /// The most requests in flight per session (429 beyond).
    pub max_in_flight_per_session: usize,
    /// The most requests in flight in all, stateless ones included (503 beyond).
    pub max_in_flight: usize,
    /// The most connections open at once. A connection beyond closes the idlest one that
    /// has no request in progress; when every one is busy, it is answered 503 (health
    /// probes: 200) and closed.
    pub max_connections: usize,
    /// How many messages may wait toward one client stream before its handler waits.
    pub stream_queue: usize,
    /// The longest a request's head may take, from the connection's start or from its
    /// first byte after the previous response (the connection is closed beyond).
    pub head_timeout: Duration,
    /// The longest a request's body may go without a byte arriving (the connection is
    /// closed beyond): a slow upload that keeps moving passes.
    pub body_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// The longest a response (a body or an event stream) may wait on a client that does
    /// not read it (the connection is closed, and its requests cancelled, beyond).
    pub send_timeout: Duration,
    /// How often a GET or listen stream that has nothing to say sends an SSE comment, so
    /// that a client gone or no longer reading shows; `None`: never.
    pub stream_keep_alive: Option<Duration>,
    /// The bytes held for clients, across every connection: answers and messages built and
    /// not yet sent, and the bodies of requests being served. Past it, the connections that
    /// are not reading are cut, longest stalled first, and a new request body is refused
    /// (503).
    pub answer_budget: usize,
    /// What one client may hold and ask; `None`: [`ClientLimits::share_of`] this config.
    pub client: Option<ClientLimits>,
    /// The addresses of proxies whose `X-Forwarded-For` names the client (the rightmost
    /// address that is not one of them); from anyone else the header is ignored.
    pub trusted_proxies: Vec<IpAddr>,
    /// Seals handshake-era session ids ([`with_session_keys`](Self::with_session_keys)).
    pub(crate) sealing: Option<Arc<sealed::SessionSeal>>,
    /// `/healthz` and `/readyz`, when set (404 without).
    pub probes: Option<Probes>,
    /// Who may call, when set ([`with_auth`](Self::with_auth)); without it, anyone who
    /// reaches the address.
    pub auth: Option<Auth>,
    /// Told of every rejection ([`with_rejections`](Self::with_rejections)).
    pub(crate) rejections: Option<Rejections>,
    /// Pages served beside the endpoint ([`with_page`](Self::with_page)).
    pub(crate) pages: Vec<Page>,
}

/// What one client (its authenticated principal, else its address) may hold and ask at
/// once; each default is a fair share of the server's own bound.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ClientLimits {
    /// Handshake-era sessions it opened (429 beyond, once none of its own is idle enough
    /// to end for the new one).
    pub sessions: usize,
    /// GET streams and `subscriptions/listen` streams open (429 beyond).
    pub streams: usize,
    /// Requests in flight, in every session and outside them (429 beyond).
    pub in_flight: usize,
    /// Requests per second, sustained; `None`: no rate limit.
    pub rate: Option<f64>,
    /// Requests it may make at once above the rate (the token bucket's depth).
    pub burst: u32,
}

impl ClientLimits {
    /// The default share of a server bounded as `config` is: an eighth of its sessions and
    /// of its requests in flight, a sixteenth of its sessions as streams, 1,000 requests a
    /// second with bursts of 2,000.
    pub fn share_of(config: &Config) -> Self {
        ClientLimits {
            sessions: (config.max_sessions / 8).max(1),
            streams: (config.max_sessions / 16).max(1),
            in_flight: (config.max_in_flight / 8).max(1),
            rate: Some(1000.0),
            burst: 2000,
        }
    }

    /// With at most `sessions` sessions.
    pub fn with_sessions(mut self, sessions: usize) -> Self {
        self.sessions = sessions.max(1);
        self
    }

    /// With at most `streams` streams.
    pub fn with_streams(mut self, streams: usize) -> Self {
        self.streams = streams.max(1);
        self
    }

    /// With at most `requests` in flight.
    pub fn with_in_flight(mut self, requests: usize) -> Self {
        self.in_flight = requests.max(1);
        self
    }

    /// With at most `per_second` requests a second, sustained, and `burst` above it
    /// (`None`: no limit).
    pub fn with_rate(mut self, per_second: Option<f64>, burst: u32) -> Self {
        self.rate = per_second.filter(|r| r.is_finite() && *r > 0.0);
        self.burst = burst.max(1);
        self
    }
}

/// Why the server turned something away: each is counted (see
/// [`Config::with_rejections`]) and logged at warn once per client per ten seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// A connection past the cap with every connection busy: answered 503 and closed.
    ConnectionShed,
    /// An idle connection closed to make room for a new one.
    ConnectionEvicted,
    /// A request head that did not arrive in time.
    HeadTimeout,
    /// A request body that stopped arriving.
    BodyTimeout,
    /// A response the client did not read in time.
    SendTimeout,
    /// A body over the limit (413).
    BodyTooLarge,
    /// Over the client's request rate (429).
    Rate,
    /// Over the server's requests in flight (503).
    InFlight,
    /// Over the client's requests in flight (429).
    ClientInFlight,
    /// Over the session's requests in flight (429).
    SessionInFlight,
    /// Over the server's sessions, none idle enough to end (503).
    Sessions,
    /// Over the client's sessions, none of its own idle enough to end (429).
    ClientSessions,
    /// A quiet session ended to make room for a new one.
    SessionEvicted,
    /// Over the client's streams (429).
    ClientStreams,
    /// A connection cut because the answers waiting for slow readers passed the budget.
    AnswerBudget,
    /// A request body refused because what is held for clients is over the budget (503).
    BodyBudget,
    /// A request with no token, or one the authenticator refused (401).
    Unauthenticated,
    /// A request whose token lacks a required scope, or that names another client's
    /// session (403).
    Forbidden,
}

impl Rejection {
    /// Every rejection, for registering their series up front.
    pub const ALL: [Rejection; 18] = [
        Rejection::ConnectionShed,
        Rejection::ConnectionEvicted,
        Rejection::HeadTimeout,
        Rejection::BodyTimeout,
        Rejection::SendTimeout,
        Rejection::BodyTooLarge,
        Rejection::Rate,
        Rejection::InFlight,
        Rejection::ClientInFlight,
        Rejection::SessionInFlight,
        Rejection::Sessions,
        Rejection::ClientSessions,
        Rejection::SessionEvicted,
        Rejection::ClientStreams,
        Rejection::AnswerBudget,
        Rejection::BodyBudget,
        Rejection::Unauthenticated,
        Rejection::Forbidden,
    ];

    /// Its name, a metric label: one of a fixed set.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::ConnectionShed => "connection_shed",
            Rejection::ConnectionEvicted => "connection_evicted",
            Rejection::HeadTimeout => "head_timeout",
            Rejection::BodyTimeout => "body_timeout",
            Rejection::SendTimeout => "send_timeout",
            Rejection::BodyTooLarge => "body_too_large",
            Rejection::Rate => "rate",
            Rejection::InFlight => "in_flight",
            Rejection::ClientInFlight => "client_in_flight",
            Rejection::SessionInFlight => "session_in_flight",
            Rejection::Sessions => "sessions",
            Rejection::ClientSessions => "client_sessions",
            Rejection::SessionEvicted => "session_evicted",
            Rejection::ClientStreams => "client_streams",
            Rejection::AnswerBudget => "answer_budget",
            Rejection::BodyBudget => "body_budget",
            Rejection::Unauthenticated => "unauthenticated",
            Rejection::Forbidden => "forbidden",
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The hook told of every rejection.
#[derive(Clone)]
pub(crate) struct Rejections(pub(crate) Arc<dyn Fn(Rejection) + Send + Sync>);

impl fmt::Debug for Rejections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Rejections")
    }
}

/// The health endpoints: `GET /healthz` answers 200 while the server runs, `GET /readyz`
/// 200 when `ready` says so and 503 before.
///
/// They are served before the `Host` and `Origin` checks, on purpose: a load balancer or a
/// kubelet probes by address, and the answer (a status and a word) tells nothing a page
/// could abuse. They are answered even past the connection cap, when every connection is
/// busy: a connection beyond the cap is still read, and a probe on it answered.
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

/// A page a person's browser reaches beside the endpoint (`GET` at a path of its own): what
/// a gateway's OAuth redirect lands on. It is given the request's query, and answers a status
/// and plain text. It is served after the `Host` checks, without authentication (a browser
/// carries no token), and counts against its address's rate.
#[derive(Clone)]
pub struct Page {
    pub(crate) path: String,
    pub(crate) answer: Arc<dyn Fn(String) -> BoxFuture<(u16, String)> + Send + Sync>,
}

impl fmt::Debug for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Page").field("path", &self.path).finish()
    }
}

impl Page {
    /// A page at `path` answered by `answer`, given the query (without `?`, empty when none).
    pub fn new(
        path: impl Into<String>,
        answer: impl Fn(String) -> BoxFuture<(u16, String)> + Send + Sync + 'static,
    ) -> Self {
        Page {
            path: path.into(),
            answer: Arc::new(answer),
        }
    }
}

/// The loopback names a local server answers to by default.
pub const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

/// The default [`Config::answer_budget`]: a sixteenth of the machine's memory, between
/// 64 MiB and 2 GiB (1 GiB where the memory cannot be read).
pub fn default_answer_budget() -> usize {
    const MIB: u64 = 1024 * 1024;
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(16 * 1024 * MIB);
    usize::try_from((total / 16).clamp(64 * MIB, 2048 * MIB)).unwrap_or(usize::MAX)
}

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
            session_grace: Duration::from_secs(10),
            max_in_flight_per_session: 256,
            max_in_flight: 4096,
            max_connections: 4096,
            stream_queue: 64,
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(30),
            stream_keep_alive: Some(Duration::from_secs(15)),
            answer_budget: default_answer_budget(),
            client: None,
            trusted_proxies: Vec::new(),
            sealing: None,
            probes: None,
            pages: Vec::new(),
            auth: None,
            rejections: None,
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

    /// Never ends a session used within `grace` to make room for another.
    pub fn with_session_grace(mut self, grace: Duration) -> Self {
        self.session_grace = grace;
        self
    }

    /// Bounds the requests in flight per session.
    pub fn with_max_in_flight_per_session(mut self, requests: usize) -> Self {
        self.max_in_flight_per_session = requests;
        self
    }

    /// Bounds the requests in flight in all.
    pub fn with_max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// Bounds the open connections.
    pub fn with_max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// Closes a connection whose request head takes longer than `timeout`.
    pub fn with_head_timeout(mut self, timeout: Duration) -> Self {
        self.head_timeout = timeout;
        self
    }

    /// Closes a connection whose request body goes longer than `timeout` without a byte.
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Closes a keep-alive connection idle for longer than `timeout`.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Closes a connection whose client has not taken a byte of its response for `timeout`.
    pub fn with_send_timeout(mut self, timeout: Duration) -> Self {
        self.send_timeout = timeout;
        self
    }

    /// Sends an SSE comment on a quiet GET or listen stream every `every` (`None`: never).
    pub fn with_stream_keep_alive(mut self, every: Option<Duration>) -> Self {
        self.stream_keep_alive = every;
        self
    }

    /// Bounds the bytes of answers not yet sent, across connections.
    pub fn with_answer_budget(mut self, bytes: usize) -> Self {
        self.answer_budget = bytes.max(1);
        self
    }

    /// What one client may hold and ask.
    pub fn with_client_limits(mut self, limits: ClientLimits) -> Self {
        self.client = Some(limits);
        self
    }

    /// The client limits in force: the ones given, else the default share.
    pub fn client_limits(&self) -> ClientLimits {
        self.client.unwrap_or_else(|| ClientLimits::share_of(self))
    }

    /// Trusts these proxies' `X-Forwarded-For` to name the client.
    pub fn with_trusted_proxies(mut self, proxies: impl IntoIterator<Item = IpAddr>) -> Self {
        self.trusted_proxies = proxies.into_iter().collect();
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

    /// Serves `page` at its path (see [`Page`]).
    pub fn with_page(mut self, page: Page) -> Self {
        self.pages.push(page);
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

    /// Calls `hook` with every rejection (a metric's counter, say); it must not block.
    pub fn with_rejections(mut self, hook: impl Fn(Rejection) + Send + Sync + 'static) -> Self {
        self.rejections = Some(Rejections(Arc::new(hook)));
        self
    }
}
