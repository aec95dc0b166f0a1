//! What the runtime sees of a transport: a [`Connection`] with a stream of inbound
//! [`Event`]s, an outbound [`Sender`], and a [`Control`] for the protocol version and a
//! graceful close.
//!
//! Every transport (stdio, in-memory, and later HTTP) produces the same `Connection`, so the
//! runtime's correlation, deadlines and mass-fail do not depend on how bytes travel.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use switchboard_codecs::jsonrpc::{Id, Message};
use switchboard_codecs::lines::Skipped;
use tokio::sync::mpsc;

/// A boxed, sendable future, as returned by [`Control::close`].
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One open connection to an MCP server.
///
/// # Drop behavior
///
/// Dropping a connection without [`Control::close`] ends it at once: a stdio child's process
/// group is sent `SIGKILL` synchronously.
#[derive(Debug)]
pub struct Connection {
    /// Messages to the server.
    pub sender: Sender,
    /// Everything that arrives from the server, ending with exactly one [`Event::Closed`]
    /// (less what an [`Inline`] handler took in place).
    pub events: mpsc::Receiver<Event>,
    /// Where the connection's reader hands each event first, once the consumer set it.
    pub inline: Inline,
    /// Protocol version, close, and process facts.
    pub control: Box<dyn Control>,
}

/// What handles an event in place: returns the event when it must go on to
/// [`Connection::events`].
pub type InlineFn = Box<dyn Fn(Event) -> Option<Event> + Send + Sync>;

/// A handler the consumer of a connection may set once, which the reader of a byte-stream
/// connection (stdio, in-memory) calls with each event, on its own task, before queueing
/// what it hands back: what it settles (an answer reaching its caller) takes no hop through
/// another task. Events read before it is set are queued as they are; transports whose
/// events come from several tasks (HTTP) never call it.
#[derive(Clone, Default)]
pub struct Inline(Arc<std::sync::OnceLock<InlineFn>>);

impl Inline {
    /// Sets the handler; `false` when one was set already (it stays).
    pub fn set(&self, handler: InlineFn) -> bool {
        self.0.set(handler).is_ok()
    }

    /// `event` after the handler, or as it is when none is set.
    pub(crate) fn handle(&self, event: Event) -> Option<Event> {
        match self.0.get() {
            Some(handler) => handler(event),
            None => Some(event),
        }
    }
}

impl fmt::Debug for Inline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inline")
            .field("set", &self.0.get().is_some())
            .finish()
    }
}

/// Something that happened on a connection.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// A message from the server.
    Message(Message),
    /// An inbound frame was skipped (too long, not UTF-8, not JSON, not JSON-RPC); the
    /// connection goes on.
    Skipped(Skipped),
    /// A request could not be delivered (HTTP transports); the connection goes on.
    SendFailed {
        /// The request's id.
        id: Id,
        /// Why.
        reason: Arc<str>,
    },
    /// A request could not be delivered because the server could not be reached at all
    /// (HTTP transports: its connection was refused, its name did not resolve, no
    /// connection was made within the connect timeout). The request did not run. Over
    /// Streamable HTTP the connection then ends with [`CloseCause::WriteFailed`]; a caller
    /// that keeps the server's address may find it back at the same place later (a
    /// restart), unlike a request the server refused ([`Event::SendFailed`]).
    Unreachable {
        /// The request's id.
        id: Id,
        /// Why, without secrets.
        reason: Arc<str>,
    },
    /// A request's response broke before its answer (HTTP transports): the connection was
    /// reset or the body cut off after the request was sent, or its event stream ended and
    /// could not be resumed (a stateless-era stream, which the era never resumes, or one
    /// that carried no event id, or whose resumption failed). The request is lost: the
    /// server may or may not have run it. The connection goes on.
    StreamBroken {
        /// The request's id.
        id: Id,
        /// How the stream ended.
        reason: Arc<str>,
    },
    /// A request was refused with 401 and no credentials could fix it (HTTP transports);
    /// the connection goes on.
    Unauthorized {
        /// The request's id, if it was a request.
        id: Option<Id>,
        /// The Protected Resource Metadata URL from `WWW-Authenticate`, where OAuth starts.
        resource_metadata: Option<String>,
        /// The error, without secrets.
        reason: Arc<str>,
    },
    /// The server forgot the session (HTTP transports). `id` is the request it rejected,
    /// which it never processed.
    SessionExpired {
        /// The rejected request, if any.
        id: Option<Id>,
    },
    /// The connection is over. Always the last event.
    Closed(CloseReason),
}

/// One outbound message: its JSON text (compact, one line, no trailing newline) and what a
/// transport must know about it, said by whoever framed it, so that no transport parses the
/// text again.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// The JSON text of one message.
    pub payload: Bytes,
    /// What the message is.
    pub facts: Facts,
}

/// What a transport knows of an outbound message besides its text.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Facts {
    /// A request, which the server answers.
    Request(RequestFacts),
    /// A notification other than a cancellation.
    Notification {
        /// Its method.
        method: Arc<str>,
    },
    /// `notifications/cancelled` for an earlier request (a stateless-era request over
    /// HTTP is cancelled by closing its response stream instead).
    Cancel {
        /// The request it cancels.
        request: Id,
    },
    /// The answer to a request of the server's.
    Response,
}

/// What a transport knows of an outbound request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestFacts {
    /// The request's id (lets HTTP transports report [`Event::SendFailed`]).
    pub id: Id,
    /// Its method.
    pub method: Arc<str>,
    /// For a stateless-era (2026-07-28) request, what its HTTP headers carry; `None` for a
    /// handshake-era one.
    pub stateless: Option<Arc<Stateless>>,
}

/// The HTTP headers of a stateless-era (2026-07-28) request, which must mirror its body:
/// `MCP-Protocol-Version`, `Mcp-Method` (the request's method), `Mcp-Name` and the tool's
/// `Mcp-Param-{Name}` headers, values already encoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stateless {
    /// The protocol version its `_meta` names.
    pub protocol_version: Arc<str>,
    /// `Mcp-Name`: the tool or prompt name, or the resource URI, encoded.
    pub name: Option<String>,
    /// `Mcp-Param-{Name}` headers: (header name, encoded value).
    pub params: Vec<(String, String)>,
}

impl Stateless {
    /// The headers of a request in `protocol_version`.
    pub fn new(protocol_version: Arc<str>) -> Self {
        Stateless {
            protocol_version,
            name: None,
            params: Vec::new(),
        }
    }

    /// With `Mcp-Name` (already encoded).
    pub fn name(mut self, name: String) -> Self {
        self.name = Some(name);
        self
    }

    /// With one `Mcp-Param-{Name}` header (its full name and encoded value).
    pub fn param(mut self, header: String, value: String) -> Self {
        self.params.push((header, value));
        self
    }
}

impl Outbound {
    /// A request numbered `id`.
    pub fn request(
        id: Id,
        method: Arc<str>,
        stateless: Option<Arc<Stateless>>,
        payload: Bytes,
    ) -> Outbound {
        Outbound {
            payload,
            facts: Facts::Request(RequestFacts {
                id,
                method,
                stateless,
            }),
        }
    }

    /// A notification.
    pub fn notification(method: Arc<str>, payload: Bytes) -> Outbound {
        Outbound {
            payload,
            facts: Facts::Notification { method },
        }
    }

    /// `notifications/cancelled` for `request`.
    pub fn cancel(request: Id, payload: Bytes) -> Outbound {
        Outbound {
            payload,
            facts: Facts::Cancel { request },
        }
    }

    /// The answer to a request of the server's.
    pub fn response(payload: Bytes) -> Outbound {
        Outbound {
            payload,
            facts: Facts::Response,
        }
    }

    /// A message the caller holds parsed, as a handshake-era message (for tests and tools
    /// that speak raw JSON-RPC; the runtime frames its own).
    pub fn from_message(message: &Message) -> Outbound {
        let payload = Bytes::from(message.to_vec());
        match message {
            Message::Request(r) => {
                Outbound::request(r.id.clone(), r.method.as_str().into(), None, payload)
            }
            Message::Notification(n) if n.method == switchboard_codecs::mcp::methods::CANCELLED => {
                let request = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<CancelledParams>(p.get()).ok())
                    .map(|p| p.request_id);
                match request {
                    Some(request) => Outbound::cancel(request, payload),
                    None => Outbound::notification(n.method.as_str().into(), payload),
                }
            }
            Message::Notification(n) => Outbound::notification(n.method.as_str().into(), payload),
            Message::Response(_) => Outbound::response(payload),
        }
    }

    /// The request's id, for a request.
    pub fn request_id(&self) -> Option<&Id> {
        match &self.facts {
            Facts::Request(r) => Some(&r.id),
            _ => None,
        }
    }

    /// The method, for a request or a notification (`notifications/cancelled` for a cancel).
    pub fn method(&self) -> Option<&str> {
        match &self.facts {
            Facts::Request(r) => Some(&r.method),
            Facts::Notification { method } => Some(method),
            Facts::Cancel { .. } => Some(switchboard_codecs::mcp::methods::CANCELLED),
            Facts::Response => None,
        }
    }
}

#[derive(serde::Deserialize)]
struct CancelledParams {
    #[serde(rename = "requestId")]
    request_id: Id,
}

/// The sending half of a connection. Cheap to clone.
///
/// Sends never wait: the queue to the writer is unbounded because the runtime bounds what
/// enters it (at most `max_in_flight` requests per server, plus one cancellation or answer for
/// each of them); the writer drains it in batches with one flush per batch.
///
/// A transport may also let the sender write a message itself (stdio does, for a lone
/// small message); the order of the messages is the same either way.
#[derive(Debug, Clone)]
pub struct Sender {
    tx: mpsc::UnboundedSender<Outbound>,
    direct: Option<Arc<dyn Direct>>,
}

impl Sender {
    /// Wraps the queue a transport's writer drains.
    pub fn new(tx: mpsc::UnboundedSender<Outbound>) -> Self {
        Sender { tx, direct: None }
    }

    /// Wraps the queue a transport's writer drains, and a way to write past it.
    #[cfg_attr(not(all(unix, feature = "stdio")), allow(dead_code))]
    pub(crate) fn with_direct(
        tx: mpsc::UnboundedSender<Outbound>,
        direct: Arc<dyn Direct>,
    ) -> Self {
        Sender {
            tx,
            direct: Some(direct),
        }
    }

    /// Sends one message: written at once when the transport lets the sender do it,
    /// otherwise queued for the writer.
    pub fn send(&self, message: Outbound) -> Result<(), SendError> {
        let message = match &self.direct {
            Some(direct) => match direct.try_write(message) {
                Ok(()) => return Ok(()),
                Err(message) => message,
            },
            None => message,
        };
        self.tx.send(message).map_err(|_| SendError)
    }
}

/// A transport's way for a sender to write a message on its own thread, past the writer
/// task, when nothing is queued before it: saves the wake-up of the writer's thread.
pub(crate) trait Direct: Send + Sync + fmt::Debug {
    /// Writes `message` now, or hands it back to be queued (counted as queued from then).
    fn try_write(&self, message: Outbound) -> Result<(), Outbound>;
}

/// The connection's writer is gone.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the connection is closed")]
pub struct SendError;

/// Control of a connection apart from its messages.
pub trait Control: Send + fmt::Debug + 'static {
    /// Called after `initialize` with the negotiated version (HTTP sends it as a header).
    fn set_protocol_version(&mut self, version: &str);

    /// Closes the connection gracefully (for stdio: close stdin, wait, `SIGTERM`, wait,
    /// `SIGKILL`, reap) and resolves when nothing of it is left.
    fn close(self: Box<Self>) -> BoxFuture<()>;

    /// Closes the connection as [`close`](Self::close) does, within `grace`: for a caller
    /// that has a deadline of its own (a command line leaving on a Ctrl-C, a host given so
    /// long to stop).
    ///
    /// A stdio child's close keeps its steps with their waits cut to fit (at most half of
    /// `grace` after closing stdin, the rest after `SIGTERM`), then `SIGKILL`; it resolves
    /// once the group is reaped, a moment after `grace`. By default (HTTP, in-memory) the
    /// close is given `grace` to finish, and whatever is left of it (an HTTP session's
    /// `DELETE`, say) goes on in the background, within its own bounds.
    fn close_within(self: Box<Self>, grace: Duration) -> BoxFuture<()> {
        let close = self.close();
        Box::pin(async move {
            let _ = tokio::time::timeout(grace, close).await;
        })
    }

    /// A handle that ends the connection's processes synchronously, for drop paths.
    fn kill_handle(&self) -> Option<KillHandle>;

    /// The server's process id, for process transports.
    fn pid(&self) -> Option<u32>;

    /// The transport in use.
    fn kind(&self) -> Kind;
}

/// Which transport a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A child process over stdin/stdout.
    Stdio,
    /// A server in this process.
    Memory,
    /// Streamable HTTP.
    StreamableHttp,
    /// The legacy HTTP+SSE transport.
    Sse,
}

impl Kind {
    /// `stdio`, `memory`, `http` (Streamable HTTP) or `sse`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Memory => "memory",
            Kind::StreamableHttp => "http",
            Kind::Sse => "sse",
        }
    }

    /// Whether requests go over HTTP (each its own exchange, which a session may lose).
    pub fn is_http(self) -> bool {
        matches!(self, Kind::StreamableHttp | Kind::Sse)
    }

    /// Whether a stateless-era request's headers are sent ([`Stateless`]): Streamable HTTP.
    pub fn sends_request_headers(self) -> bool {
        self == Kind::StreamableHttp
    }

    /// Whether the server is a process of its own that the connection starts and ends.
    pub fn has_process(self) -> bool {
        self == Kind::Stdio
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kills a connection's process group synchronously, from any thread, without awaiting.
#[derive(Clone)]
pub struct KillHandle {
    kill: Arc<dyn Fn() + Send + Sync>,
}

impl KillHandle {
    /// Wraps a synchronous kill function.
    pub fn new(kill: impl Fn() + Send + Sync + 'static) -> Self {
        KillHandle {
            kill: Arc::new(kill),
        }
    }

    /// Kills now. Harmless when the processes are already gone.
    pub fn kill(&self) {
        (self.kill)()
    }
}

impl fmt::Debug for KillHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KillHandle")
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseReason {
    /// The cause.
    pub cause: CloseCause,
    /// The last lines the server wrote to stderr (stdio), oldest first.
    pub stderr_tail: Vec<String>,
}

/// The cause of a connection's end.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseCause {
    /// The process exited (`code` or `signal`; both `None` if the status is unknown).
    Exited {
        /// Exit code.
        code: Option<i32>,
        /// Terminating signal.
        signal: Option<i32>,
    },
    /// The server closed its output (EOF) while it kept running; it was then stopped.
    Eof,
    /// Reading from the server failed.
    ReadFailed(String),
    /// Writing to the server failed.
    WriteFailed(String),
    /// Closed by us ([`Control::close`]).
    Closed,
    /// The connection was torn down without a graceful close (its owner stopped).
    Aborted(String),
}

impl fmt::Display for CloseCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseCause::Exited {
                code: Some(c),
                signal: _,
            } => write!(f, "the server exited with status {c}"),
            CloseCause::Exited {
                code: None,
                signal: Some(s),
            } => write!(f, "the server was killed by signal {s}"),
            CloseCause::Exited { .. } => f.write_str("the server exited"),
            CloseCause::Eof => f.write_str("the server closed its output"),
            CloseCause::ReadFailed(e) => write!(f, "reading from the server failed: {e}"),
            CloseCause::WriteFailed(e) => write!(f, "writing to the server failed: {e}"),
            CloseCause::Closed => f.write_str("the connection was closed"),
            CloseCause::Aborted(why) => write!(f, "the connection was aborted: {why}"),
        }
    }
}

impl CloseReason {
    /// A connection torn down by its owner for `why`, with no stderr to show.
    pub fn aborted(why: impl Into<String>) -> Self {
        CloseReason {
            cause: CloseCause::Aborted(why.into()),
            stderr_tail: Vec::new(),
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.cause)?;
        if !self.stderr_tail.is_empty() {
            write!(f, "; last stderr lines: {}", self.stderr_tail.join(" | "))?;
        }
        Ok(())
    }
}
