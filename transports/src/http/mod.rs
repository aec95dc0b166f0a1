//! MCP over HTTP: Streamable HTTP (2025-03-26 … 2025-11-25) and the legacy HTTP+SSE
//! transport (2024-11-05), producing the same [`Connection`] as stdio.
//!
//! [`connect`] takes a [`Config`] (URL, headers, credentials, timeouts) and a [`Kind`]:
//! Streamable HTTP, legacy SSE, or [`Kind::Auto`], which starts with Streamable HTTP and
//! falls back to legacy SSE when the server refuses the `initialize` POST with 400, 404 or
//! 405. The runtime's correlation, deadlines and mass-fail are unchanged: requests go out
//! through the [`Sender`], answers come back as [`Event`]s in any order.
//!
//! ```no_run
//! use switchboard_transports::http::{self, Config, Kind};
//!
//! # async fn run() -> Result<(), http::Error> {
//! let config = Config::new("http://127.0.0.1:3001/mcp").bearer_token(Some("secret".into()));
//! let conn = http::connect("everything", &config, Kind::Auto).await?;
//! // ... send `initialize` through conn.sender, read conn.events ...
//! conn.control.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Streamable HTTP
//!
//! [`connect`] does no network I/O: the first POST is the runtime's `initialize`. Every
//! message is its own POST, in its own task, over one keep-alive client, so concurrent
//! requests get concurrent answers. An answer is JSON (one message or a batch), an SSE
//! stream (requests and notifications may precede the response), or 202. Two orderings
//! are kept: nothing is sent while the POST of `notifications/initialized` is in flight, so
//! the server sees it before any request of the session (servers that enforce the
//! lifecycle, such as the Python SDK's, refuse requests that come first); and nothing is
//! sent while the GET stream opens (at most 2 s), so that a server's own requests sent
//! there as soon as the session is used are not lost.
//!
//! - **Stateless requests (2026-07-28).** A request framed with [`Stateless`](crate::connection::Stateless) facts carries
//!   `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the tool's `Mcp-Param-{Name}`
//!   headers as its framer built them from the same values as its body; no session, no GET
//!   stream. A JSON-RPC error answering the request that comes with a
//!   4xx status is delivered as that error. `notifications/cancelled` for such a request
//!   is not sent: its POST is dropped, which closes its stream (the era's cancellation).
//!
//! - **Session.** The `Mcp-Session-Id` of the `initialize` answer is sent on every later
//!   request; `MCP-Protocol-Version` once [`Control::set_protocol_version`] was called, which
//!   also opens the optional GET stream for server-initiated messages (405: the server has
//!   none).
//! - **Session loss** is a 404 to a request that carried the session id, or a 400 to such a
//!   request whose body is a JSON-RPC error (`{"error":{"message":…}}`) whose message
//!   contains `session` in any case (server-everything answers
//!   `400 "Bad Request: No valid session ID provided"`). The session id is dropped and
//!   [`Event::SessionExpired`] names the rejected request, once per session; requests
//!   rejected after it get [`Event::SendFailed`]. The next `initialize` goes without a
//!   session header and its answer's session id is captured.
//! - **Resumption.** When a POST's SSE stream ends (or stays idle past
//!   [`Config::idle_timeout`]) before its answer, the transport GETs the endpoint with
//!   `Last-Event-ID` after exactly the stream's `retry:` delay (1 s when it sent none), then
//!   with a capped, jittered backoff, 5 attempts in all. A stream that never carried an event
//!   id cannot resume: its request fails with [`Event::SendFailed`]. A stateless-era
//!   (2026-07-28) request's stream is never resumed (the era has none): when it ends, or its
//!   JSON answer breaks off, before the answer, the request is reported lost with
//!   [`Event::StreamBroken`], and the runtime decides whether to send it again.
//! - **End.** No single stream's end means "disconnected". The connection ends with
//!   [`CloseCause::Closed`] after [`Control::close`] (which first DELETEs the session), or
//!   with [`CloseCause::WriteFailed`] when a POST cannot connect to the server at all (the
//!   server is gone), so the runtime fails what is pending and reconnects; that POST's
//!   request, which did not run, is reported first as [`Event::Unreachable`].
//!
//! # Legacy HTTP+SSE
//!
//! [`connect`] GETs the event stream (through `reqwest-eventsource`, never reconnecting on
//! its own: reconnecting is the runtime's job) and waits for the `endpoint` event, within
//! [`Config::connect_timeout`]. The endpoint is resolved against the stream URL and must
//! have the same origin, or the connection is refused ([`Error::CrossOriginEndpoint`]) so
//! that credentials never follow it. Each message is POSTed there (2xx expected); every
//! server message arrives as a `message` event. The end of the stream (or no event for
//! [`Config::idle_timeout`]) is the end of the connection.
//!
//! # Security
//!
//! `Authorization`, `Cookie`, `Proxy-Authorization`, `X-Api-Key` and the names given to
//! [`Config::secret_header`] are marked sensitive; no header value, token or session id
//! appears in `Debug` output, logs or error messages, and URLs in errors show no user info
//! and no query. Redirects are followed only within the same origin.
//!
//! Streamable HTTP bounds everything it reads: SSE events by the [`sse`](switchboard_codecs::sse)
//! codec, JSON bodies by [`Config::max_event_size`] (read chunk by chunk, dropped past the
//! limit). The legacy SSE stream is parsed by `reqwest-eventsource`, which cannot bound an
//! event's size: an oversized `message` event is skipped, but only after it was buffered,
//! so a hostile legacy server can make the client hold one event of any size.

mod challenge;
mod client;
mod legacy_sse;
mod modern;
mod session;
mod streamable;

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::connection::{
    BoxFuture, CloseCause, CloseReason, Connection, Control, Event, KillHandle,
    Kind as ConnectionKind, Outbound, Sender,
};

pub use self::challenge::Challenge;
use self::client::Shared;
use self::session::SessionState;

/// The default largest SSE event or JSON body read: 16 MiB.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// Headers whose values are always treated as secrets.
const ALWAYS_SECRET: [&str; 4] = [
    "authorization",
    "cookie",
    "proxy-authorization",
    "x-api-key",
];

/// Which HTTP transport to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Kind {
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
    /// Streamable HTTP, falling back to legacy SSE at the same URL when the server refuses
    /// the `initialize` POST with 400, 404 or 405 (unless the body is a JSON-RPC error about
    /// a session).
    #[default]
    Auto,
}

/// Supplies bearer tokens, for servers that need OAuth or rotating credentials.
///
/// The transport asks [`token`](Self::token) before each request with `challenge` `None`
/// (an implementation may return a cached token). When the server refuses the request with
/// a challenge (a 401, or a 403 whose `WWW-Authenticate` says
/// `error="insufficient_scope"`), it asks [`refused`](Self::refused) and retries with the
/// new token, at most [`MAX_AUTH_ROUNDS`] times per request and only once after a 401. `Ok(None)` sends no token (or
/// [`Config::bearer_token`], when set). An `Err` fails the request with [`Error::Auth`]; its
/// text must not contain the token. A 401 that stays (no hook, or the new token refused too)
/// is reported as [`Event::Unauthorized`] with the challenge's `resource_metadata` URL,
/// where an OAuth flow would start; a 403 that stays is an HTTP error.
pub trait Auth: Send + Sync + fmt::Debug {
    /// A bearer token for the next request.
    fn token(&self, challenge: Option<&Challenge>) -> BoxFuture<Result<Option<String>, String>>;

    /// A new token after the server refused the token `rejected` (`None`: the request
    /// carried none) with `challenge`.
    ///
    /// Knowing which token was refused lets an implementation serve many requests refused
    /// at once with one refresh: a request refused with an older token gets the newer one.
    /// The default asks [`token`](Self::token) with the challenge.
    fn refused(
        &self,
        rejected: Option<&str>,
        challenge: &Challenge,
    ) -> BoxFuture<Result<Option<String>, String>> {
        let _ = rejected;
        self.token(Some(challenge))
    }
}

/// How many times one request is retried with a new token after the server refused it
/// (a 401, then perhaps a 403 asking for more scope): bounded, so that a server that never
/// accepts cannot make a request loop.
pub const MAX_AUTH_ROUNDS: usize = 3;

/// Where and how to reach an HTTP server. Build it with [`Config::new`] and the chained
/// setters.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) bearer_token: Option<String>,
    pub(crate) auth: Option<Arc<dyn Auth>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_event_size: usize,
    pub(crate) secret_headers: Vec<String>,
}

impl Config {
    /// A server at `url` (`http` or `https`; checked by [`connect`]), with the defaults: no
    /// headers and no credentials, a 10 s connect timeout, a 5 min idle timeout, 16 MiB
    /// events.
    pub fn new(url: impl Into<String>) -> Self {
        Config {
            url: url.into(),
            headers: Vec::new(),
            bearer_token: None,
            auth: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
            secret_headers: Vec::new(),
        }
    }

    /// The server's URL, as configured.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Adds a header sent on every request (checked by [`connect`]).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Adds headers sent on every request.
    pub fn headers<I, K, V>(mut self, headers: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        for (name, value) in headers {
            self = self.header(name, value);
        }
        self
    }

    /// A static bearer token, sent as `Authorization: Bearer <token>` (replacing an
    /// `Authorization` header) unless the [`Auth`] hook gives one.
    pub fn bearer_token(mut self, token: Option<String>) -> Self {
        self.bearer_token = token;
        self
    }

    /// The hook asked for a bearer token before each request and after a 401.
    pub fn auth(mut self, auth: Option<Arc<dyn Auth>>) -> Self {
        self.auth = auth;
        self
    }

    /// How long establishing a connection may take (default 10 s); for legacy SSE, also the
    /// bound on receiving the `endpoint` event.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a stream may stay silent before it counts as dropped (default 5 min). This
    /// is not a request deadline (the runtime enforces those): a silent Streamable HTTP
    /// stream is resumed, a silent legacy SSE stream ends the connection.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The largest SSE event or JSON body read (default 16 MiB); larger ones are skipped.
    pub fn max_event_size(mut self, max: usize) -> Self {
        self.max_event_size = max;
        self
    }

    /// Treats the header `name` as a secret too (besides `Authorization`, `Cookie`,
    /// `Proxy-Authorization` and `X-Api-Key`).
    pub fn secret_header(mut self, name: impl Into<String>) -> Self {
        self.secret_headers.push(name.into());
        self
    }

    pub(crate) fn is_secret(&self, name: &str) -> bool {
        ALWAYS_SECRET.iter().any(|s| s.eq_ignore_ascii_case(name))
            || self
                .secret_headers
                .iter()
                .any(|s| s.eq_ignore_ascii_case(name))
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values, tokens and the URL's user info and query may be secrets.
        let header_names: Vec<_> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Config")
            .field("url", &client::redact_url_str(&self.url))
            .field("header_names", &header_names)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("auth", &self.auth.as_ref().map(|_| "<hook>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_event_size", &self.max_event_size)
            .field("secret_headers", &self.secret_headers)
            .finish()
    }
}

/// Why an HTTP connection (or one request over it) failed. Messages never contain header
/// values, tokens or session ids.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot be used (bad URL, bad header name or value).
    #[error("{server}: invalid configuration: {reason}")]
    InvalidConfig {
        /// The server's name.
        server: Arc<str>,
        /// What is wrong (header names, never values).
        reason: String,
    },
    /// No connection could be made to the server.
    #[error("{server}: cannot connect to {url}: {reason}")]
    Connect {
        /// The server's name.
        server: Arc<str>,
        /// The URL (without user info or query).
        url: String,
        /// The cause.
        reason: String,
    },
    /// A request failed after its connection was made (reset, broken body, …).
    #[error("{server}: request to {url} failed: {reason}")]
    Request {
        /// The server's name.
        server: Arc<str>,
        /// The URL (without user info or query).
        url: String,
        /// The cause.
        reason: String,
    },
    /// Nothing came within the configured time.
    #[error("{server}: {what} timed out after {after:?}")]
    Timeout {
        /// The server's name.
        server: Arc<str>,
        /// What was awaited.
        what: &'static str,
        /// The bound.
        after: Duration,
    },
    /// The server answered 401 and no token (or no new token) made it accept.
    #[error("{server}: unauthorized by {url}{}", resource_metadata.as_ref().map(|r| format!(" (resource metadata at {r})")).unwrap_or_default())]
    Unauthorized {
        /// The server's name.
        server: Arc<str>,
        /// The URL (without user info or query).
        url: String,
        /// The Protected Resource Metadata URL from `WWW-Authenticate`, where OAuth starts.
        resource_metadata: Option<String>,
    },
    /// The [`Auth`] hook failed.
    #[error("{server}: the auth hook failed: {reason}")]
    Auth {
        /// The server's name.
        server: Arc<str>,
        /// Its explanation.
        reason: String,
    },
    /// The server answered with an unexpected HTTP status.
    #[error("{server}: {url} answered http status {status}")]
    Http {
        /// The server's name.
        server: Arc<str>,
        /// The URL (without user info or query).
        url: String,
        /// The status code.
        status: u16,
    },
    /// A legacy SSE server announced a POST endpoint on another origin.
    #[error("{server}: the endpoint {endpoint} is not on the origin of {stream_url}")]
    CrossOriginEndpoint {
        /// The server's name.
        server: Arc<str>,
        /// The event stream's URL (without user info or query).
        stream_url: String,
        /// The announced endpoint (without user info or query).
        endpoint: String,
    },
    /// The server broke the protocol (no `endpoint` event, wrong content type, …).
    #[error("{server}: protocol error: {reason}")]
    Protocol {
        /// The server's name.
        server: Arc<str>,
        /// What went wrong.
        reason: String,
    },
}

/// Opens a connection to the HTTP server described by `config`.
///
/// `name` names the server in log fields and errors. For [`Kind::StreamableHttp`] and
/// [`Kind::Auto`] this only checks the configuration: the first request is the runtime's
/// `initialize`. For [`Kind::Sse`] it opens the event stream and waits for the `endpoint`
/// event. [`Control::kind`] tells which transport is in use.
///
/// # Cancel safety
///
/// Dropping the future drops the event stream it may have opened; nothing is left behind.
///
/// # Drop behavior
///
/// Dropping the connection (its events receiver or its control) without
/// [`Control::close`] aborts its requests and streams at once, without DELETE.
///
/// # Panics
///
/// Must be called within a tokio runtime: it spawns the connection's task.
pub async fn connect(name: &str, config: &Config, kind: Kind) -> Result<Connection, Error> {
    let (events_tx, events_rx) = mpsc::channel(crate::framed::EVENTS_CAPACITY);
    let transport = Arc::new(AtomicU8::new(match kind {
        Kind::Sse => TRANSPORT_SSE,
        _ => TRANSPORT_HTTP,
    }));
    let shared = Arc::new(Shared::new(name, config, events_tx, transport.clone())?);
    let opened = match kind {
        Kind::Sse => Some(legacy_sse::open(&shared).await?),
        _ => None,
    };
    tracing::info!(
        server = %shared.name,
        transport = transport_name(transport.load(Ordering::Relaxed)),
        url = %shared.display_url,
        "http connection opened",
    );
    let (outbound_tx, outbound_rx) = mpsc::unbounded_channel();
    let (commands_tx, commands_rx) = mpsc::unbounded_channel();
    let inputs = Inputs {
        outbound: outbound_rx,
        commands: commands_rx,
        outbound_open: true,
    };
    let session = shared.session.clone();
    tokio::spawn(drive(shared.clone(), inputs, kind, opened));
    Ok(Connection {
        inline: Default::default(),
        sender: Sender::new(outbound_tx),
        events: events_rx,
        control: Box::new(HttpControl {
            server: shared.name.clone(),
            session,
            transport,
            commands: commands_tx,
        }),
    })
}

const TRANSPORT_HTTP: u8 = 0;
const TRANSPORT_SSE: u8 = 1;

fn transport_name(code: u8) -> &'static str {
    if code == TRANSPORT_SSE {
        "sse"
    } else {
        "http"
    }
}

/// What the connection's task reads besides the network.
#[derive(Debug)]
pub(crate) struct Inputs {
    pub(crate) outbound: mpsc::UnboundedReceiver<Outbound>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    /// Whether a [`Sender`] is left.
    pub(crate) outbound_open: bool,
}

/// What the control asks of the connection's task.
#[derive(Debug)]
pub(crate) enum Command {
    /// The protocol version was set (it is already in the session state).
    ProtocolVersion,
    /// Close, and report on the sender when done.
    Close(oneshot::Sender<()>),
}

/// How an engine ended.
#[derive(Debug)]
pub(crate) enum End {
    /// The connection is over.
    Over {
        cause: CloseCause,
        /// The caller of [`Control::close`], told once `Closed` is sent.
        done: Option<oneshot::Sender<()>>,
    },
    /// Auto mode: the server refused Streamable HTTP; this `initialize` goes to legacy SSE.
    Fallback(Outbound),
}

/// Runs the connection, then sends the one `Closed` event.
async fn drive(
    shared: Arc<Shared>,
    mut inputs: Inputs,
    kind: Kind,
    opened: Option<legacy_sse::Opened>,
) {
    let end = match opened {
        Some(opened) => legacy_sse::run(&shared, &mut inputs, opened, None).await,
        None => streamable::run(&shared, &mut inputs, kind == Kind::Auto).await,
    };
    let end = match end {
        End::Fallback(initialize) => {
            shared.transport.store(TRANSPORT_SSE, Ordering::Relaxed);
            tracing::info!(
                server = %shared.name,
                transport = "sse",
                "the server refused streamable http; falling back to legacy http+sse",
            );
            match legacy_sse::open(&shared).await {
                Ok(opened) => legacy_sse::run(&shared, &mut inputs, opened, Some(initialize)).await,
                Err(e) => {
                    let reason = e.to_string();
                    shared
                        .fail_error(initialize.request_id().cloned(), &e)
                        .await;
                    End::Over {
                        cause: CloseCause::ReadFailed(reason),
                        done: None,
                    }
                }
            }
        }
        over => over,
    };
    let (cause, done) = match end {
        End::Over { cause, done } => (cause, done),
        End::Fallback(_) => (CloseCause::Aborted("fell back twice".into()), None),
    };
    tracing::debug!(server = %shared.name, cause = %cause, "http connection ended");
    let _ = shared
        .events
        .send(Event::Closed(CloseReason {
            cause,
            stderr_tail: Vec::new(),
        }))
        .await;
    if let Some(done) = done {
        let _ = done.send(());
    }
}

/// How long a graceful close waits for messages already sent (notifications, answers) to
/// be delivered before it ends the session.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// On close: starts a task for each message still queued, then waits (at most
/// [`CLOSE_GRACE`]) for the running ones; whatever is left is then aborted by the caller.
async fn settle<T: Send + 'static>(
    inputs: &mut Inputs,
    tasks: &mut tokio::task::JoinSet<T>,
    mut start: impl FnMut(Outbound) -> BoxFuture<T>,
) {
    while let Ok(outbound) = inputs.outbound.try_recv() {
        tasks.spawn(start(outbound));
    }
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
}

/// The control of an HTTP connection.
struct HttpControl {
    server: Arc<str>,
    session: Arc<Mutex<SessionState>>,
    transport: Arc<AtomicU8>,
    commands: mpsc::UnboundedSender<Command>,
}

impl fmt::Debug for HttpControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpControl")
            .field("server", &self.server)
            .field("transport", &Control::kind(self))
            .finish_non_exhaustive()
    }
}

impl Control for HttpControl {
    fn set_protocol_version(&mut self, version: &str) {
        match reqwest::header::HeaderValue::from_str(version) {
            Ok(value) => {
                session::lock(&self.session).protocol_version = Some(value);
                let _ = self.commands.send(Command::ProtocolVersion);
            }
            Err(_) => {
                tracing::warn!(server = %self.server, "protocol version is not a valid header value")
            }
        }
    }

    fn close(self: Box<Self>) -> BoxFuture<()> {
        let (done_tx, done_rx) = oneshot::channel();
        // Sent before the future is polled, so the close starts even if it never is.
        let requested = self.commands.send(Command::Close(done_tx)).is_ok();
        let server = self.server.clone();
        Box::pin(async move {
            if requested {
                // An error only means the connection had already ended.
                let _ = done_rx.await;
            }
            tracing::debug!(server = %server, "http connection closed");
        })
    }

    fn kill_handle(&self) -> Option<KillHandle> {
        None
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn kind(&self) -> ConnectionKind {
        if self.transport.load(Ordering::Relaxed) == TRANSPORT_SSE {
            ConnectionKind::Sse
        } else {
            ConnectionKind::StreamableHttp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_header_names_only() {
        let config = Config::new("https://user:pw@example.com/mcp?key=k1")
            .header("X-Api-Key", "value-1")
            .header("X-Custom", "value-2")
            .bearer_token(Some("tok-3".into()));
        let text = format!("{config:?}");
        for secret in ["pw", "k1", "value-1", "value-2", "tok-3"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("X-Custom") && text.contains("example.com/mcp"));
        assert!(config.is_secret("x-api-key") && !config.is_secret("x-custom"));
        assert!(config.secret_header("X-Custom").is_secret("x-custom"));
    }
}
