//! The one error type of the runtime.
//!
//! An [`Error`] is a [kind](ErrorKind) and a [context](ErrorContext): the kind says what went
//! wrong and carries only what is particular to that failure (the elapsed time of a timeout,
//! the code of a JSON-RPC error answer); the context says, once for every kind, which
//! server, method, tool and request id it concerns. From the kind follow the error's message
//! (with its context), its [`category`](Error::category) (the questions a caller asks of any
//! error, hyper's style: did it time out, may the request have run, is the server
//! unavailable) and [the JSON-RPC error](Error::to_jsonrpc) a server relaying the call answers
//! its own client with. A new failure is one variant of [`ErrorKind`] with its arm in the
//! kind's message and category (the compiler asks for both); its JSON-RPC mapping follows
//! from its category. `Error` is `Clone` and one pointer wide (an `Arc` inside): a
//! disconnect fails every pending call with the same shared error.
//!
//! ```
//! # fn f(error: switchboard::Error) {
//! use switchboard::{ErrorCategory, ErrorKind};
//! match error.kind() {
//!     ErrorKind::Timeout { elapsed, .. } => {
//!         eprintln!("{:?} timed out after {elapsed:?}", error.tool());
//!     }
//!     ErrorKind::Rpc { code: -32602, .. } => { /* the server found the arguments invalid */ }
//!     _ if error.category() == ErrorCategory::Unavailable => { /* starting, failed, stopped */ }
//!     _ if !error.may_have_run() => { /* nothing ran: safe to try again */ }
//!     _ => {}
//! }
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::CloseReason;

use switchboard_codecs::jsonrpc::ErrorObject;
use switchboard_codecs::mcp::modern;

use crate::client::UrlElicitation;

/// A result with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between a caller and an MCP server: what went wrong
/// ([`kind`](Self::kind)) and which server, method, tool and request it concerns
/// ([`context`](Self::context)).
///
/// Match on [`kind`](Self::kind) for a particular failure, or ask
/// [`category`](Self::category) and the `is_*` predicates for the usual questions:
///
/// ```
/// # fn f(result: switchboard::Result<()>) {
/// use switchboard::ErrorKind;
/// match result {
///     Err(e) if matches!(e.kind(), ErrorKind::Timeout { .. }) => {
///         eprintln!("{} timed out (request {:?})", e.tool().unwrap_or("?"), e.request_id());
///     }
///     Err(e) => eprintln!("{e}"),
///     Ok(()) => {}
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct Error {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    context: ErrorContext,
}

/// Which server, method, tool and request an [`Error`] concerns, each where known: carried
/// once for every [`ErrorKind`].
///
/// A call's errors name its server, method and tool (for `tools/call`), and the request id
/// once the request had one on the wire; a catalogue lookup may name only the tool; the
/// runtime's own failures (it shut down, its actor thread) name nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorContext {
    server: Option<Arc<str>>,
    method: Option<Arc<str>>,
    tool: Option<Arc<str>>,
    request_id: Option<i64>,
}

impl ErrorContext {
    /// A context that names nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// A failure of `server` as a whole (its start, its handshake, its state).
    pub fn of_server(server: Arc<str>) -> Self {
        Self {
            server: Some(server),
            ..Self::default()
        }
    }

    /// A failure of a request `method` to `server`, calling `tool` for `tools/call`.
    pub fn of_request(server: Arc<str>, method: Arc<str>, tool: Option<Arc<str>>) -> Self {
        Self {
            server: Some(server),
            method: Some(method),
            tool,
            request_id: None,
        }
    }

    /// A failure of a call to `tool` of `server`, refused or failed before it had a request
    /// id.
    pub fn of_tool(server: Arc<str>, tool: Arc<str>) -> Self {
        Self {
            server: Some(server),
            method: Some(Arc::from("tools/call")),
            tool: Some(tool),
            request_id: None,
        }
    }

    /// The same context naming `server`.
    pub fn with_server(mut self, server: Option<Arc<str>>) -> Self {
        self.server = server;
        self
    }

    /// The same context naming the JSON-RPC `method`.
    pub fn with_method(mut self, method: Arc<str>) -> Self {
        self.method = Some(method);
        self
    }

    /// The same context naming `tool`.
    pub fn with_tool(mut self, tool: Option<Arc<str>>) -> Self {
        self.tool = tool;
        self
    }

    /// The same context with the request's id on the wire.
    pub fn with_request_id(mut self, request_id: i64) -> Self {
        self.request_id = Some(request_id);
        self
    }

    /// The server, if any.
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// The JSON-RPC method, if any.
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The tool, if any.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The request id on the wire, if the request had one.
    pub fn request_id(&self) -> Option<i64> {
        self.request_id
    }

    /// The error of `kind` in this context.
    pub fn error(self, kind: ErrorKind) -> Error {
        Error::new(kind, self)
    }

    /// The server's name in a message (every kind that says "server" has one).
    fn server_name(&self) -> &str {
        self.server.as_deref().unwrap_or("(unknown)")
    }

    /// The tool's name in a message (every kind that says "tool" has one).
    fn tool_name(&self) -> &str {
        self.tool.as_deref().unwrap_or("(unknown)")
    }

    /// "call to tool `x` on server `s`" or "request `m` to server `s`".
    fn target(&self) -> String {
        match &self.tool {
            Some(tool) => format!("call to tool `{tool}` on server `{}`", self.server_name()),
            None => format!(
                "request `{}` to server `{}`",
                self.method.as_deref().unwrap_or("(unknown)"),
                self.server_name()
            ),
        }
    }

    /// " (tool `t`)" when there is a tool.
    fn tool_note(&self) -> String {
        self.tool
            .as_ref()
            .map(|t| format!(" (tool `{t}`)"))
            .unwrap_or_default()
    }
}

/// What went wrong, with what is particular to that failure; the server, method, tool and
/// request id it concerns are the error's [`ErrorContext`].
///
/// Each kind has its message, its [`ErrorCategory`] ([`ErrorKind::category`]) and the
/// JSON-RPC error it becomes for a relaying server's client ([`ErrorKind::jsonrpc`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request's deadline passed; the server was sent `notifications/cancelled`. The
    /// context has the request id.
    Timeout {
        /// Time from the call to its expiry.
        elapsed: Duration,
        /// Unreadable frames the server sent while this request was pending (its answer may
        /// have been one of them).
        dropped_frames: u64,
    },
    /// The connection ended while the request was pending.
    Disconnected {
        /// Why the connection ended (exit status or signal, last stderr lines).
        reason: Arc<CloseReason>,
    },
    /// The server takes no calls now; [`because`](Unavailability) says which case it is.
    Unavailable {
        /// Which case it is.
        because: Unavailability,
        /// Why, in words.
        reason: Arc<str>,
        /// The error that made it so, when there is one (a failed start, a crash loop): the
        /// error's [`source`](std::error::Error::source).
        cause: Option<Error>,
    },
    /// The transport could not deliver the request or read its answer, which the server
    /// refused or garbled at the transport level (an HTTP error status, an answer that is
    /// not the response, longer than the limit): a failure of this request, not of the
    /// connection.
    Transport {
        /// What the transport saw.
        reason: Arc<str>,
    },
    /// `max_in_flight` requests were pending for the whole of the call's deadline.
    Overloaded {
        /// The limit that was reached.
        max_in_flight: usize,
    },
    /// The server answered with a JSON-RPC error.
    Rpc {
        /// The JSON-RPC error code.
        code: i64,
        /// The error message.
        message: String,
        /// The error data, if any.
        data: Option<Arc<serde_json::Value>>,
    },
    /// The server answered that the user must first complete URL-mode elicitations
    /// (JSON-RPC -32042, 2025-11-25): open each URL (with the user's consent), then retry.
    /// [`ElicitationHandler::elicitation_complete`](crate::client::ElicitationHandler::elicitation_complete)
    /// hears when the server sees one done.
    UrlElicitationRequired {
        /// The error message.
        message: String,
        /// The elicitations to complete (at least one).
        elicitations: Arc<[UrlElicitation]>,
    },
    /// The server needs a client capability Switchboard did not declare (JSON-RPC -32021,
    /// 2026-07-28): give the runtime a handler that provides it.
    MissingClientCapability {
        /// The names of the capabilities the server requires (`data.requiredCapabilities`).
        missing: Arc<[String]>,
        /// The error message.
        message: String,
    },
    /// The server found that a request's HTTP headers do not match its body (JSON-RPC
    /// -32020, 2026-07-28).
    HeaderMismatch {
        /// The error message.
        message: String,
    },
    /// The server does not speak the request's protocol version (JSON-RPC -32022,
    /// 2026-07-28), and no version both sides speak was found.
    VersionRejected {
        /// The version the request named.
        requested: Option<String>,
        /// The versions the server named.
        supported: Arc<[String]>,
    },
    /// A server's input-required retries did not end: it asked again after the last round
    /// the runtime allows (2026-07-28).
    InputLoop {
        /// The rounds answered.
        rounds: u32,
    },
    /// A request's response broke before its answer (over HTTP: a reset or a truncated body
    /// after the request went out, or an event stream that ended and could not be resumed):
    /// the server may or may not have run the request. Lists, reads, prompt gets,
    /// completions and pings are sent again instead, within the call's deadline; tool calls
    /// only when the tool or server opted in
    /// ([`ToolPolicy::reissue_on_broken_stream`](crate::ToolPolicy::reissue_on_broken_stream)).
    StreamBroken {
        /// How the stream ended.
        reason: Arc<str>,
    },
    /// A stateless (2026-07-28) server did not acknowledge, within the server's timeout, a
    /// `subscriptions/listen` asking for the resource a caller subscribed to.
    SubscriptionNotAcknowledged {
        /// The resource.
        uri: String,
        /// How long the runtime waited.
        after: Duration,
    },
    /// A server's input-required result asked for something Switchboard cannot answer: a
    /// capability it did not declare (no handler), or a request it does not know.
    InputUnsupported {
        /// The embedded request's method, when it had one.
        request: Option<String>,
        /// What is missing.
        detail: String,
    },
    /// The server broke the protocol (a malformed answer, a result of the wrong shape).
    Protocol {
        /// What was wrong.
        detail: String,
    },
    /// The server answered `initialize` with a protocol version we do not speak.
    UnsupportedVersion {
        /// What we offered.
        offered: Arc<str>,
        /// What the server answered.
        received: Arc<str>,
    },
    /// The handshake failed or did not finish within the startup timeout.
    Handshake {
        /// What happened.
        detail: Arc<str>,
        /// The error behind it, when there is one (the server's answer to `initialize`): the
        /// error's [`source`](std::error::Error::source).
        cause: Option<Error>,
    },
    /// The server could not be started (the program could not be spawned, the URL not
    /// reached).
    Spawn {
        /// The transport's error: the error's [`source`](std::error::Error::source).
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// No such tool (the context's): the server did not list it, or (with no server in the
    /// context) no catalogue entry has that name.
    UnknownTool,
    /// The server did not declare the capability the request's method (the context's)
    /// needs (checked from protocol 2025-06-18 on; nothing was sent).
    NotSupported {
        /// The capability it needs.
        capability: &'static str,
    },
    /// No resource at that URI: the server said so, or (with no server in the context) no
    /// server lists it or a template that matches it.
    ResourceNotFound {
        /// The URI asked for.
        uri: Arc<str>,
        /// What the server said.
        message: String,
    },
    /// The tool can only be run as a task (`execution.taskSupport: "required"`), but the
    /// server does not declare task-augmented `tools/call` (`tasks.requests.tools.call`);
    /// nothing was sent.
    TaskRequired,
    /// A call asked to run as a task where the tool or the server does not allow it (a
    /// tool's `execution.taskSupport` absent or `"forbidden"`, or no task capability);
    /// nothing was sent.
    TaskNotAllowed {
        /// Why not.
        reason: &'static str,
    },
    /// The server no longer knows the task: it answered that the id is unknown, or the
    /// task outlived the time to live the server gave it. The task may have run.
    TaskLost {
        /// The task's id.
        task: Arc<str>,
        /// What happened.
        reason: Arc<str>,
    },
    /// The task was cancelled before it finished (by this client or by the server).
    TaskCancelled {
        /// The task's id.
        task: Arc<str>,
        /// The server's status message, if any.
        message: Option<String>,
    },
    /// Several servers list that URI (or a template matching it).
    AmbiguousResource {
        /// The URI.
        uri: Arc<str>,
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// No prompt of the runtime's prompt catalogue has that name.
    UnknownPrompt {
        /// The name asked for.
        name: Arc<str>,
    },
    /// Several servers offer a prompt of that name; call it by a prefixed name.
    AmbiguousPrompt {
        /// The name asked for.
        name: Arc<str>,
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// The tool is filtered out by the server's allow/deny lists.
    ToolDenied,
    /// Several servers offer a tool of that name (the context's tool) and the naming mode
    /// keeps names unprefixed.
    AmbiguousTool {
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// The server kept crashing and is no longer restarted.
    CrashLoop {
        /// Failures that tripped the guard.
        failures: u32,
        /// The guard's window.
        window: Duration,
        /// The last failure.
        last_error: Arc<str>,
    },
    /// The HTTP server refused our credentials (401), and no auth hook could fix it.
    Unauthorized {
        /// The Protected Resource Metadata URL from `WWW-Authenticate`.
        resource_metadata: Option<String>,
    },
    /// A server of that name (the context's) already exists.
    DuplicateServer,
    /// No server of that name (the context's) is configured.
    UnknownServer,
    /// Tool arguments must be a JSON object.
    InvalidArguments {
        /// The JSON type that was given.
        got: &'static str,
    },
    /// The runtime has been shut down.
    Shutdown,
    /// The runtime's actor thread could not be started.
    ActorThread {
        /// The operating system's error: the error's [`source`](std::error::Error::source).
        source: Arc<std::io::Error>,
    },
    /// The Prometheus endpoint could not listen where it was asked to.
    MetricsListener {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The operating system's error: the error's [`source`](std::error::Error::source).
        source: Arc<std::io::Error>,
    },
}

/// Which case an [`ErrorKind::Unavailable`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unavailability {
    /// The server failed to start (its command, its handshake) and is retried with backoff;
    /// the error's `cause` is the start error.
    StartFailed,
    /// The server kept failing and is no longer restarted (a crash loop, or restarts off);
    /// [`Runtime::restart_server`](crate::Runtime::restart_server) tries again.
    GaveUp,
    /// The server did not become ready within the call's deadline while it started.
    NotReady,
    /// The server was being restarted at the call's deadline: it went down (a crash, a
    /// lost connection, a liveness kill), or a start that could not reach it is being
    /// tried again. A server that went down keeps its tools, resources and prompts in the
    /// catalogue meanwhile: a call for one waits for the restart within its deadline, and
    /// is told this past it, never that the name is unknown.
    Restarting,
    /// A stateless server's list that decides the call was still being fetched again (past
    /// its `ttlMs`) at the call's deadline.
    ListNotFresh,
    /// The runtime stopped the server (it shut down, or removed the server).
    Stopped,
}

/// What category of failure an [`Error`] is, whatever its kind's details and context: see
/// [`Error::category`]. (Before the error had a context and a kind, this was `ErrorKind`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCategory {
    /// The request's deadline passed ([`ErrorKind::Timeout`]), or a stateless server did
    /// not acknowledge a subscription in time.
    Timeout,
    /// The connection ended while the request was pending ([`ErrorKind::Disconnected`]).
    Disconnected,
    /// The request's response broke before its answer ([`ErrorKind::StreamBroken`]).
    StreamBroken,
    /// The server takes no calls now ([`ErrorKind::Unavailable`]).
    Unavailable,
    /// Too many requests were in flight for the whole deadline ([`ErrorKind::Overloaded`]).
    Overloaded,
    /// The server answered with a JSON-RPC error ([`ErrorKind::Rpc`] and the typed errors
    /// of known codes: URL elicitation required, missing capability, header mismatch,
    /// refused version).
    Rpc,
    /// The server broke the protocol, or its input-required rounds could not be answered
    /// ([`ErrorKind::Protocol`], [`ErrorKind::InputLoop`], [`ErrorKind::InputUnsupported`]).
    Protocol,
    /// The transport could not deliver the request or read its answer
    /// ([`ErrorKind::Transport`]).
    Transport,
    /// The server refused our credentials ([`ErrorKind::Unauthorized`]).
    Unauthorized,
    /// The server could not be started ([`ErrorKind::Spawn`], [`ErrorKind::Handshake`],
    /// [`ErrorKind::UnsupportedVersion`], [`ErrorKind::CrashLoop`]): a server's state, and
    /// the cause of a call's [`ErrorKind::Unavailable`].
    Start,
    /// No such tool, prompt, resource or server.
    NotFound,
    /// A name or URI that several servers offer.
    Ambiguous,
    /// The request was refused before it was sent: a denied tool, an undeclared capability,
    /// a task-only tool, arguments that are not an object.
    Refused,
    /// The runtime's own set-up failed (a duplicate server, its actor thread, its metrics
    /// endpoint).
    Setup,
    /// The runtime was shut down.
    Shutdown,
    /// A task ended without its result: the server lost it ([`ErrorKind::TaskLost`]) or it
    /// was cancelled ([`ErrorKind::TaskCancelled`]).
    TaskEnded,
}

/// How a server that relays a call (the gateway) answers its own client for a failure: see
/// [`ErrorKind::jsonrpc`] and [`Error::to_jsonrpc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonRpcMapping {
    /// The upstream's own JSON-RPC error, passed on as it said it: its code, message and
    /// data (a missing client capability as -32021 with `data.requiredCapabilities`).
    Relayed,
    /// The spec's resource-not-found (-32002) with the URI in `data`.
    ResourceNotFound,
    /// The client's mistake (a name nobody or several offer, a request refused before it
    /// was sent): -32602 with the error's message, `data` naming the server and category.
    InvalidParams,
    /// Anything else (a timeout, a server down or restarting, an unreadable answer): -32603
    /// with the error's message, `data` naming the server and category.
    InternalError,
}

/// A JSON-RPC error object for a relaying server's client: [`Error::to_jsonrpc`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JsonRpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The error message.
    pub message: String,
    /// The error data, if any.
    pub data: Option<serde_json::Value>,
}

/// The spec's resource-not-found code (MCP, JSON-RPC -32002).
const RESOURCE_NOT_FOUND: i64 = -32002;

impl ErrorKind {
    /// What category of failure this kind is.
    pub fn category(&self) -> ErrorCategory {
        use ErrorCategory as C;
        match self {
            ErrorKind::Timeout { .. } | ErrorKind::SubscriptionNotAcknowledged { .. } => C::Timeout,
            ErrorKind::Disconnected { .. } => C::Disconnected,
            ErrorKind::StreamBroken { .. } => C::StreamBroken,
            ErrorKind::Unavailable { .. } => C::Unavailable,
            ErrorKind::Overloaded { .. } => C::Overloaded,
            ErrorKind::Rpc { .. }
            | ErrorKind::UrlElicitationRequired { .. }
            | ErrorKind::MissingClientCapability { .. }
            | ErrorKind::HeaderMismatch { .. }
            | ErrorKind::VersionRejected { .. } => C::Rpc,
            ErrorKind::Protocol { .. }
            | ErrorKind::InputLoop { .. }
            | ErrorKind::InputUnsupported { .. } => C::Protocol,
            ErrorKind::Transport { .. } => C::Transport,
            ErrorKind::Unauthorized { .. } => C::Unauthorized,
            ErrorKind::Spawn { .. }
            | ErrorKind::Handshake { .. }
            | ErrorKind::UnsupportedVersion { .. }
            | ErrorKind::CrashLoop { .. } => C::Start,
            ErrorKind::UnknownTool
            | ErrorKind::UnknownServer
            | ErrorKind::UnknownPrompt { .. }
            | ErrorKind::ResourceNotFound { .. } => C::NotFound,
            ErrorKind::AmbiguousTool { .. }
            | ErrorKind::AmbiguousPrompt { .. }
            | ErrorKind::AmbiguousResource { .. } => C::Ambiguous,
            ErrorKind::ToolDenied
            | ErrorKind::NotSupported { .. }
            | ErrorKind::TaskRequired
            | ErrorKind::TaskNotAllowed { .. }
            | ErrorKind::InvalidArguments { .. } => C::Refused,
            ErrorKind::TaskLost { .. } | ErrorKind::TaskCancelled { .. } => C::TaskEnded,
            ErrorKind::DuplicateServer
            | ErrorKind::ActorThread { .. }
            | ErrorKind::MetricsListener { .. } => C::Setup,
            ErrorKind::Shutdown => C::Shutdown,
        }
    }

    /// How a relaying server answers its client for this kind: the upstream's own errors
    /// pass on, a resource nobody has is resource-not-found, and otherwise the category
    /// decides (a caller's mistake is invalid params, the rest an internal error).
    pub fn jsonrpc(&self) -> JsonRpcMapping {
        match self {
            ErrorKind::Rpc { .. } | ErrorKind::MissingClientCapability { .. } => {
                JsonRpcMapping::Relayed
            }
            ErrorKind::ResourceNotFound { .. } => JsonRpcMapping::ResourceNotFound,
            _ => match self.category() {
                ErrorCategory::NotFound | ErrorCategory::Ambiguous | ErrorCategory::Refused => {
                    JsonRpcMapping::InvalidParams
                }
                _ => JsonRpcMapping::InternalError,
            },
        }
    }

    /// The message of this kind in `cx`: lower-case, no trailing period.
    fn describe(&self, cx: &ErrorContext, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let server = cx.server_name();
        match self {
            ErrorKind::Timeout {
                elapsed,
                dropped_frames,
            } => {
                write!(f, "{} timed out after {} ms", cx.target(), elapsed.as_millis())?;
                // A deadline that passed between requests (a task's, an input round's) had
                // no request on the wire.
                if let Some(id) = cx.request_id {
                    write!(f, " (request id {id})")?;
                }
                f.write_str(&dropped_note(*dropped_frames))
            }
            ErrorKind::Disconnected { reason } => write!(
                f,
                "{} failed: the server disconnected: {reason}",
                cx.target()
            ),
            ErrorKind::Unavailable { reason, .. } => {
                write!(f, "server `{server}` is unavailable: {reason}")
            }
            ErrorKind::Transport { reason } => write!(f, "{} failed: {reason}", cx.target()),
            ErrorKind::Overloaded { max_in_flight } => write!(
                f,
                "{} failed: server overloaded ({max_in_flight} requests in flight)",
                cx.target()
            ),
            ErrorKind::Rpc { code, message, .. } => write!(
                f,
                "{} failed: the server answered error {code}: {message}",
                cx.target()
            ),
            ErrorKind::UrlElicitationRequired {
                message,
                elicitations,
            } => write!(
                f,
                "{} needs the user to open {}: {message}",
                cx.target(),
                elicitations
                    .iter()
                    .map(|e| e.url.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ErrorKind::MissingClientCapability { missing, message } => write!(
                f,
                "{} needs client capabilities Switchboard did not declare ({}): {message}",
                cx.target(),
                missing.join(", ")
            ),
            ErrorKind::HeaderMismatch { message } => write!(
                f,
                "{} failed: the server found the request's headers do not match its body: {message}",
                cx.target()
            ),
            ErrorKind::VersionRejected {
                requested,
                supported,
            } => write!(
                f,
                "{} failed: the server does not speak protocol version {}; it supports {}",
                cx.target(),
                requested.as_deref().unwrap_or("(unknown)"),
                supported.join(", ")
            ),
            ErrorKind::InputLoop { rounds } => write!(
                f,
                "{} still required input after {rounds} rounds; giving up",
                cx.target()
            ),
            ErrorKind::StreamBroken { reason } => write!(
                f,
                "{} may or may not have run: its response broke before the answer ({reason})",
                cx.target()
            ),
            ErrorKind::SubscriptionNotAcknowledged { uri, after } => write!(
                f,
                "server `{server}` did not acknowledge a subscription to `{uri}` within {} ms",
                after.as_millis()
            ),
            ErrorKind::InputUnsupported { detail, .. } => write!(
                f,
                "{} required input Switchboard cannot give: {detail}",
                cx.target()
            ),
            ErrorKind::Protocol { detail } => {
                write!(f, "{} failed: protocol error: {detail}", cx.target())
            }
            ErrorKind::UnsupportedVersion { offered, received } => write!(
                f,
                "server `{server}` answered protocol version {received}, but Switchboard offered {offered} and supports {}",
                crate::model::SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            ),
            ErrorKind::Handshake { detail, .. } => {
                write!(f, "server `{server}` failed its handshake: {detail}")
            }
            ErrorKind::Spawn { source } => {
                write!(f, "server `{server}` could not be started: {source}")
            }
            ErrorKind::UnknownTool => match &cx.server {
                Some(server) => write!(f, "server `{server}` has no tool `{}`", cx.tool_name()),
                None => write!(f, "no tool named `{}` in the catalogue", cx.tool_name()),
            },
            ErrorKind::NotSupported { capability } => write!(
                f,
                "server `{server}` does not support `{}`: it declared no `{capability}` capability",
                cx.method.as_deref().unwrap_or("(unknown)")
            ),
            ErrorKind::ResourceNotFound { uri, message } => match &cx.server {
                Some(s) => write!(f, "server `{s}` has no resource `{uri}`: {message}"),
                None => write!(f, "no server has no resource `{uri}`: {message}"),
            },
            ErrorKind::TaskRequired => write!(
                f,
                "tool `{}` of server `{server}` can only be run as a task, but the server declares no tasks.requests.tools.call capability",
                cx.tool_name()
            ),
            ErrorKind::TaskNotAllowed { reason } => write!(
                f,
                "tool `{}` of server `{server}` cannot run as a task: {reason}",
                cx.tool_name()
            ),
            ErrorKind::TaskLost { task, reason } => write!(
                f,
                "task `{task}`{} on server `{server}` is lost: {reason}",
                cx.tool_note()
            ),
            ErrorKind::TaskCancelled { task, message } => write!(
                f,
                "task `{task}`{} on server `{server}` was cancelled{}",
                cx.tool_note(),
                message
                    .as_ref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
            ErrorKind::AmbiguousResource { uri, servers } => write!(
                f,
                "resource `{uri}` is offered by several servers ({}); read it from one of them",
                servers.join(", ")
            ),
            ErrorKind::UnknownPrompt { name } => write!(f, "no prompt named `{name}`"),
            ErrorKind::AmbiguousPrompt { name, servers } => write!(
                f,
                "prompt `{name}` is offered by several servers ({}); use a prefixed name",
                servers.join(", ")
            ),
            ErrorKind::ToolDenied => write!(
                f,
                "tool `{}` of server `{server}` is not allowed by the configuration",
                cx.tool_name()
            ),
            ErrorKind::AmbiguousTool { servers } => write!(
                f,
                "tool `{}` is offered by several servers ({}); call it by a prefixed name",
                cx.tool_name(),
                servers.join(", ")
            ),
            ErrorKind::CrashLoop {
                failures,
                window,
                last_error,
            } => write!(
                f,
                "server `{server}` failed {failures} times within {} s and is no longer restarted; last error: {last_error}",
                window.as_secs()
            ),
            ErrorKind::Unauthorized { resource_metadata } => write!(
                f,
                "server `{server}` refused the request as unauthorized{}",
                resource_metadata
                    .as_ref()
                    .map(|r| format!("; OAuth starts at its resource metadata {r}"))
                    .unwrap_or_default()
            ),
            ErrorKind::DuplicateServer => write!(f, "a server named `{server}` already exists"),
            ErrorKind::UnknownServer => write!(f, "no server named `{server}`"),
            ErrorKind::InvalidArguments { got } => write!(
                f,
                "{} failed: arguments must be a JSON object, got {got}",
                cx.target()
            ),
            ErrorKind::Shutdown => write!(f, "the runtime has been shut down"),
            ErrorKind::ActorThread { source } => {
                write!(f, "cannot start the runtime's actor thread: {source}")
            }
            ErrorKind::MetricsListener { addr, source } => {
                write!(f, "cannot serve metrics at {addr}: {source}")
            }
        }
    }

    /// The error behind this one, for [`std::error::Error::source`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ErrorKind::Unavailable { cause, .. } | ErrorKind::Handshake { cause, .. } => cause
                .as_ref()
                .map(|c| c as &(dyn std::error::Error + 'static)),
            ErrorKind::Spawn { source } => Some(&**source),
            ErrorKind::ActorThread { source } | ErrorKind::MetricsListener { source, .. } => {
                Some(&**source)
            }
            _ => None,
        }
    }
}

impl Error {
    /// An error of `kind` in `context`.
    pub fn new(kind: ErrorKind, context: ErrorContext) -> Self {
        Self {
            inner: Arc::new(Inner { kind, context }),
        }
    }

    /// The runtime has been shut down ([`ErrorKind::Shutdown`]).
    pub fn shutdown() -> Self {
        Self::new(ErrorKind::Shutdown, ErrorContext::new())
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// Which server, method, tool and request it concerns.
    pub fn context(&self) -> &ErrorContext {
        &self.inner.context
    }

    /// The server this error concerns, if any.
    pub fn server(&self) -> Option<&str> {
        self.inner.context.server()
    }

    /// The JSON-RPC method of the request this error concerns, if any.
    pub fn method(&self) -> Option<&str> {
        self.inner.context.method()
    }

    /// The tool this error concerns, if any.
    pub fn tool(&self) -> Option<&str> {
        self.inner.context.tool()
    }

    /// The id on the wire of the request this error concerns, if it had one.
    pub fn request_id(&self) -> Option<i64> {
        self.inner.context.request_id()
    }

    /// What category of failure this is.
    pub fn category(&self) -> ErrorCategory {
        self.inner.kind.category()
    }

    /// Whether the request's deadline passed.
    pub fn is_timeout(&self) -> bool {
        self.category() == ErrorCategory::Timeout
    }

    /// Whether the connection ended while the request was pending.
    pub fn is_disconnected(&self) -> bool {
        self.category() == ErrorCategory::Disconnected
    }

    /// Whether the server takes no calls now (starting too long, failed, stopped).
    pub fn is_unavailable(&self) -> bool {
        self.category() == ErrorCategory::Unavailable
    }

    /// Whether too many requests were in flight.
    pub fn is_overloaded(&self) -> bool {
        self.category() == ErrorCategory::Overloaded
    }

    /// Whether the server answered with a JSON-RPC error.
    pub fn is_rpc(&self) -> bool {
        self.category() == ErrorCategory::Rpc
    }

    /// Whether no tool, prompt, resource or server has that name.
    pub fn is_not_found(&self) -> bool {
        self.category() == ErrorCategory::NotFound
    }

    /// Whether the server may have run the request although the caller got no answer: it
    /// was written and then timed out, the connection ended, or its response broke. (A
    /// request refused before it was sent, or answered with an error, did not run.)
    pub fn may_have_run(&self) -> bool {
        matches!(
            self.category(),
            ErrorCategory::Timeout
                | ErrorCategory::Disconnected
                | ErrorCategory::StreamBroken
                | ErrorCategory::TaskEnded
        )
    }

    /// The JSON-RPC error a server relaying the call (the gateway) answers its own client
    /// with, as [`ErrorKind::jsonrpc`] says: the upstream's error as it was, the spec's
    /// resource-not-found, or -32602 / -32603 with this error's message and `data` naming
    /// the server (`server`) and the category (`kind`: `"Timeout"`, `"Unavailable"`, …).
    pub fn to_jsonrpc(&self) -> JsonRpcError {
        let (code, message, data) = match (self.kind().jsonrpc(), self.kind()) {
            (
                JsonRpcMapping::Relayed,
                ErrorKind::Rpc {
                    code,
                    message,
                    data,
                },
            ) => (*code, message.clone(), data.as_deref().cloned()),
            (JsonRpcMapping::Relayed, ErrorKind::MissingClientCapability { missing, message }) => {
                let required: serde_json::Map<String, serde_json::Value> = missing
                    .iter()
                    .map(|c| (c.clone(), serde_json::json!({})))
                    .collect();
                (
                    modern::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message.clone(),
                    Some(serde_json::json!({ "requiredCapabilities": required })),
                )
            }
            (JsonRpcMapping::ResourceNotFound, ErrorKind::ResourceNotFound { uri, .. }) => (
                RESOURCE_NOT_FOUND,
                "Resource not found".to_owned(),
                Some(serde_json::json!({ "uri": &**uri })),
            ),
            (mapping, _) => {
                let code = match mapping {
                    JsonRpcMapping::InvalidParams => ErrorObject::INVALID_PARAMS,
                    _ => ErrorObject::INTERNAL_ERROR,
                };
                let data = serde_json::json!({
                    "server": self.server(),
                    "kind": format!("{:?}", self.category()),
                });
                (code, self.to_string(), Some(data))
            }
        };
        JsonRpcError {
            code,
            message,
            data,
        }
    }
}

impl From<ErrorKind> for Error {
    /// An error of `kind` that names no server, method, tool or request.
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind, ErrorContext::new())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("context", &self.inner.context)
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.kind.describe(&self.inner.context, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.kind.source()
    }
}

/// A JSON-RPC error answer, as the caller's error: -32042 with its elicitations becomes
/// [`ErrorKind::UrlElicitationRequired`], the 2026-07-28 codes their typed kinds, anything
/// else [`ErrorKind::Rpc`].
pub(crate) fn rpc_error(
    server: Arc<str>,
    method: Arc<str>,
    tool: Option<Arc<str>>,
    e: ErrorObject,
) -> Error {
    let cx = ErrorContext::of_request(server, method, tool);
    let data: Option<serde_json::Value> = e.data.and_then(|d| serde_json::from_str(d.get()).ok());
    if e.code == switchboard_codecs::mcp::URL_ELICITATION_REQUIRED {
        if let Some(elicitations) = data.as_ref().and_then(url_elicitations) {
            return cx.error(ErrorKind::UrlElicitationRequired {
                message: e.message,
                elicitations,
            });
        }
    }
    let kind = match e.code {
        modern::MISSING_REQUIRED_CLIENT_CAPABILITY => ErrorKind::MissingClientCapability {
            missing: required_capabilities(data.as_ref()),
            message: e.message,
        },
        modern::HEADER_MISMATCH => ErrorKind::HeaderMismatch { message: e.message },
        modern::UNSUPPORTED_PROTOCOL_VERSION => {
            let parsed: modern::UnsupportedVersionData = data
                .and_then(|d| serde_json::from_value(d).ok())
                .unwrap_or_default();
            ErrorKind::VersionRejected {
                requested: parsed.requested,
                supported: parsed.supported.into(),
            }
        }
        code => ErrorKind::Rpc {
            code,
            message: e.message,
            data: data.map(Arc::new),
        },
    };
    cx.error(kind)
}

/// The names of the capabilities in `data.requiredCapabilities` of a -32021 error (its
/// keys: `elicitation`, `sampling`, …), or `unknown` when the server named none.
fn required_capabilities(data: Option<&serde_json::Value>) -> Arc<[String]> {
    let names: Vec<String> = data
        .and_then(|d| d.get("requiredCapabilities"))
        .and_then(|c| c.as_object())
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default();
    if names.is_empty() {
        Arc::from(vec!["unknown".to_owned()])
    } else {
        names.into()
    }
}

/// The `data.elicitations` of a -32042 error, when there are some and each is a URL-mode
/// elicitation; otherwise the error stays an [`ErrorKind::Rpc`] with its data as sent.
fn url_elicitations(data: &serde_json::Value) -> Option<Arc<[UrlElicitation]>> {
    let list = data.get("elicitations")?.as_array()?;
    let parsed: Option<Vec<UrlElicitation>> = list
        .iter()
        .map(|e| {
            // Only URL-mode elicitations may come with this error; the mode must say so.
            (e.get("mode")?.as_str()? == "url")
                .then(|| UrlElicitation::from_params(e.clone()).ok())
                .flatten()
        })
        .collect();
    parsed.filter(|p| !p.is_empty()).map(Arc::from)
}

fn dropped_note(dropped: u64) -> String {
    if dropped == 0 {
        String::new()
    } else {
        format!("; {dropped} unreadable frame(s) from the server were dropped meanwhile, the answer may have been one of them")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    fn error(code: i64, data: serde_json::Value) -> Error {
        let mut e = ErrorObject::new(code, "needs more");
        e.data = Some(serde_json::value::to_raw_value(&data).unwrap());
        rpc_error("s".into(), "tools/call".into(), Some("t".into()), e)
    }

    #[test]
    fn the_stateless_error_codes_become_typed_errors_naming_server_and_tool() {
        let e = error(
            -32021,
            serde_json::json!({"requiredCapabilities": {"elicitation": {}, "sampling": {}}}),
        );
        let ErrorKind::MissingClientCapability { missing, .. } = e.kind() else {
            panic!("{e:?}")
        };
        assert_eq!(&missing[..], ["elicitation", "sampling"]);
        assert_eq!(e.tool(), Some("t"));
        let text = e.to_string();
        assert!(
            text.contains("`s`") && text.contains("elicitation, sampling"),
            "{text}"
        );

        let e = error(-32020, serde_json::json!(null));
        assert!(
            matches!(e.kind(), ErrorKind::HeaderMismatch { .. }),
            "{e:?}"
        );
        assert_eq!(e.server(), Some("s"));

        let e = error(
            -32022,
            serde_json::json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}),
        );
        let ErrorKind::VersionRejected {
            requested,
            supported,
        } = e.kind()
        else {
            panic!("{e:?}")
        };
        assert_eq!(requested.as_deref(), Some("2026-07-28"));
        assert_eq!(&supported[..], ["2099-01-01"]);
        assert!(e.to_string().contains("2099-01-01"));
    }

    #[test]
    fn url_elicitation_required_carries_the_urls() {
        let e = error(
            -32042,
            serde_json::json!({"elicitations": [
                {"mode": "url", "elicitationId": "e1", "url": "https://a.example/x", "message": "log in"},
                {"mode": "url", "elicitationId": "e2", "url": "https://b.example/y", "message": "pay"}
            ]}),
        );
        let ErrorKind::UrlElicitationRequired { elicitations, .. } = e.kind() else {
            panic!("{e:?}")
        };
        assert_eq!((e.server(), e.tool()), (Some("s"), Some("t")));
        let urls: Vec<&str> = elicitations.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(urls, ["https://a.example/x", "https://b.example/y"]);
        assert_eq!(elicitations[1].elicitation_id, "e2");
        assert!(e.to_string().contains("https://b.example/y"), "{e}");
    }

    #[test]
    fn a_malformed_url_elicitation_error_stays_rpc() {
        for data in [
            serde_json::json!({}),
            serde_json::json!({"elicitations": []}),
            serde_json::json!({"elicitations": [{"mode": "form", "message": "m"}]}),
            serde_json::json!({"elicitations": [{"mode": "url", "message": "m"}]}),
        ] {
            let e = error(-32042, data.clone());
            assert!(
                matches!(e.kind(), ErrorKind::Rpc { code: -32042, data: Some(d), .. } if **d == data),
                "{e:?}"
            );
        }
        assert!(matches!(
            error(-32000, serde_json::json!({})).kind(),
            ErrorKind::Rpc { .. }
        ));
    }

    fn timeout() -> Error {
        ErrorContext::of_request("files".into(), "tools/call".into(), Some("read".into()))
            .with_request_id(7)
            .error(ErrorKind::Timeout {
                elapsed: Duration::from_millis(200),
                dropped_frames: 0,
            })
    }

    #[test]
    fn the_context_is_carried_once_and_read_from_the_error() {
        let e = timeout();
        assert_eq!(e.server(), Some("files"));
        assert_eq!(e.method(), Some("tools/call"));
        assert_eq!(e.tool(), Some("read"));
        assert_eq!(e.request_id(), Some(7));
        assert_eq!(
            e.to_string(),
            "call to tool `read` on server `files` timed out after 200 ms (request id 7)"
        );
        // A clone is the same error, not a copy of it.
        let clone = e.clone();
        assert!(Arc::ptr_eq(&e.inner, &clone.inner));
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());

        let e = ErrorContext::of_request("files".into(), "resources/list".into(), None).error(
            ErrorKind::Transport {
                reason: "HTTP 502".into(),
            },
        );
        assert_eq!((e.tool(), e.request_id()), (None, None));
        assert_eq!(
            e.to_string(),
            "request `resources/list` to server `files` failed: HTTP 502"
        );

        let e = ErrorContext::new()
            .with_tool(Some("nope".into()))
            .error(ErrorKind::UnknownTool);
        assert_eq!((e.server(), e.tool()), (None, Some("nope")));
        assert_eq!(e.to_string(), "no tool named `nope` in the catalogue");
        let e = ErrorContext::of_tool("files".into(), "nope".into()).error(ErrorKind::UnknownTool);
        assert_eq!(e.to_string(), "server `files` has no tool `nope`");

        let e = Error::shutdown();
        assert_eq!(e.context(), &ErrorContext::new());
        assert_eq!(e.to_string(), "the runtime has been shut down");
    }

    #[test]
    fn a_cause_is_the_source_and_keeps_its_own_context() {
        let start = ErrorContext::of_server("files".into()).error(ErrorKind::Handshake {
            detail: "no answer to initialize".into(),
            cause: None,
        });
        let e = ErrorContext::of_server("files".into())
            .with_tool(Some("read".into()))
            .error(ErrorKind::Unavailable {
                because: Unavailability::StartFailed,
                reason: "it failed to start".into(),
                cause: Some(start),
            });
        assert_eq!(e.category(), ErrorCategory::Unavailable);
        assert!(e.is_unavailable() && !e.may_have_run());
        let source = e.source().expect("the start error");
        assert_eq!(
            source.to_string(),
            "server `files` failed its handshake: no answer to initialize"
        );
        assert_eq!(
            e.to_string(),
            "server `files` is unavailable: it failed to start"
        );
    }

    #[test]
    fn the_jsonrpc_mapping_follows_from_the_kind() {
        let rpc = error(-32001, serde_json::json!({"why": "busy"}));
        assert_eq!(rpc.kind().jsonrpc(), JsonRpcMapping::Relayed);
        assert_eq!(
            rpc.to_jsonrpc(),
            JsonRpcError {
                code: -32001,
                message: "needs more".into(),
                data: Some(serde_json::json!({"why": "busy"})),
            }
        );

        let missing = error(
            -32021,
            serde_json::json!({"requiredCapabilities": {"sampling": {}}}),
        );
        let answer = missing.to_jsonrpc();
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (-32021, "needs more")
        );
        assert_eq!(
            answer.data,
            Some(serde_json::json!({"requiredCapabilities": {"sampling": {}}}))
        );

        let nowhere = ErrorContext::new().error(ErrorKind::ResourceNotFound {
            uri: "file:///x".into(),
            message: "no server lists it".into(),
        });
        assert_eq!(nowhere.kind().jsonrpc(), JsonRpcMapping::ResourceNotFound);
        let answer = nowhere.to_jsonrpc();
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (-32002, "Resource not found")
        );
        assert_eq!(answer.data, Some(serde_json::json!({"uri": "file:///x"})));

        // A caller's mistake is invalid params, naming the server and the category.
        let denied =
            ErrorContext::of_tool("files".into(), "rm".into()).error(ErrorKind::ToolDenied);
        assert_eq!(denied.kind().jsonrpc(), JsonRpcMapping::InvalidParams);
        let answer = denied.to_jsonrpc();
        assert_eq!(answer.code, -32602);
        assert_eq!(
            answer.message,
            "tool `rm` of server `files` is not allowed by the configuration"
        );
        assert_eq!(
            answer.data,
            Some(serde_json::json!({"server": "files", "kind": "Refused"}))
        );
        let unknown = ErrorContext::new()
            .with_tool(Some("nope".into()))
            .error(ErrorKind::UnknownTool);
        assert_eq!(unknown.to_jsonrpc().code, -32602);
        assert_eq!(
            unknown.to_jsonrpc().data,
            Some(serde_json::json!({"server": null, "kind": "NotFound"}))
        );

        // The rest is an internal error with the runtime's message; a typed error of a
        // known code is described, not relayed.
        let answer = timeout().to_jsonrpc();
        assert_eq!(answer.code, -32603);
        assert_eq!(answer.message, timeout().to_string());
        assert_eq!(
            answer.data,
            Some(serde_json::json!({"server": "files", "kind": "Timeout"}))
        );
        let mismatch = error(-32020, serde_json::json!(null));
        assert_eq!(mismatch.kind().jsonrpc(), JsonRpcMapping::InternalError);
        assert_eq!(mismatch.to_jsonrpc().code, -32603);
        assert_eq!(
            Error::shutdown().kind().jsonrpc(),
            JsonRpcMapping::InternalError
        );
    }
}
