//! The one error type of the runtime.
//!
//! Every variant names the server (and the tool, for tool calls) it concerns, and carries the
//! context of its case; [`Error::kind`] and the `is_*` predicates answer the questions a
//! caller asks of any error (hyper's style): did it time out, may the request have run, is
//! the server unavailable. `Error` is `Clone`: a disconnect fails every pending call with the
//! same shared cause.
//!
//! ```
//! # fn f(error: switchboard::Error) {
//! use switchboard::ErrorKind;
//! match error.kind() {
//!     ErrorKind::Timeout | ErrorKind::Disconnected if !error.may_have_run() => { /* retry */ }
//!     ErrorKind::Unavailable => { /* the server is starting, failed, or stopped */ }
//!     _ => {}
//! }
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::CloseReason;

use switchboard_codecs::mcp::modern;

use crate::client::UrlElicitation;

/// A result with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between a caller and an MCP server.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request's deadline passed; the server was sent `notifications/cancelled`.
    #[error("{} timed out after {} ms (request id {request_id}){}", target(server, method, tool), elapsed.as_millis(), dropped_note(*dropped_frames))]
    Timeout {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The request id on the wire.
        request_id: i64,
        /// Time from the call to its expiry.
        elapsed: Duration,
        /// Unreadable frames the server sent while this request was pending (its answer may
        /// have been one of them).
        dropped_frames: u64,
    },
    /// The connection ended while the request was pending.
    #[error(
        "{} failed: the server disconnected: {reason}",
        target(server, method, tool)
    )]
    Disconnected {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// Why the connection ended (exit status or signal, last stderr lines).
        reason: Arc<CloseReason>,
    },
    /// The server takes no calls now; [`because`](Unavailability) says which case it is.
    #[error("server `{server}` is unavailable: {reason}")]
    Unavailable {
        /// The server.
        server: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// Which case it is.
        because: Unavailability,
        /// Why, in words.
        reason: Arc<str>,
        /// The error that made it so, when there is one (a failed start, a crash loop).
        #[source]
        cause: Option<Arc<Error>>,
    },
    /// The transport could not deliver the request or read its answer, which the server
    /// refused or garbled at the transport level (an HTTP error status, an answer that is
    /// not the response, longer than the limit): a failure of this request, not of the
    /// connection.
    #[error("{} failed: {reason}", target(server, method, tool))]
    Transport {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// What the transport saw.
        reason: Arc<str>,
    },
    /// `max_in_flight` requests were pending for the whole of the call's deadline.
    #[error(
        "{} failed: server overloaded ({max_in_flight} requests in flight)",
        target(server, method, tool)
    )]
    Overloaded {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The limit that was reached.
        max_in_flight: usize,
    },
    /// The server answered with a JSON-RPC error.
    #[error(
        "{} failed: the server answered error {code}: {message}",
        target(server, method, tool)
    )]
    Rpc {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
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
    #[error(
        "{} needs the user to open {}: {message}",
        target(server, method, tool),
        elicitations.iter().map(|e| e.url.as_str()).collect::<Vec<_>>().join(", ")
    )]
    UrlElicitationRequired {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The error message.
        message: String,
        /// The elicitations to complete (at least one).
        elicitations: Arc<[UrlElicitation]>,
    },
    /// The server needs a client capability Switchboard did not declare (JSON-RPC -32021,
    /// 2026-07-28): give the runtime a handler that provides it.
    #[error(
        "{} needs client capabilities Switchboard did not declare ({}): {message}",
        target(server, method, tool),
        missing.join(", ")
    )]
    MissingClientCapability {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The names of the capabilities the server requires (`data.requiredCapabilities`).
        missing: Arc<[String]>,
        /// The error message.
        message: String,
    },
    /// The server found that a request's HTTP headers do not match its body (JSON-RPC
    /// -32020, 2026-07-28).
    #[error(
        "{} failed: the server found the request's headers do not match its body: {message}",
        target(server, method, tool)
    )]
    HeaderMismatch {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The error message.
        message: String,
    },
    /// The server does not speak the request's protocol version (JSON-RPC -32022,
    /// 2026-07-28), and no version both sides speak was found.
    #[error(
        "{} failed: the server does not speak protocol version {}; it supports {}",
        target(server, method, tool),
        requested.as_deref().unwrap_or("(unknown)"),
        supported.join(", ")
    )]
    VersionRejected {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The version the request named.
        requested: Option<String>,
        /// The versions the server named.
        supported: Arc<[String]>,
    },
    /// A server's input-required retries did not end: it asked again after the last round
    /// the runtime allows (2026-07-28).
    #[error(
        "{} still required input after {rounds} rounds; giving up",
        target(server, method, tool)
    )]
    InputLoop {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The rounds answered.
        rounds: u32,
    },
    /// A request's response broke before its answer (over HTTP: a reset or a truncated body
    /// after the request went out, or an event stream that ended and could not be resumed):
    /// the server may or may not have run the request. Lists, reads, prompt gets,
    /// completions and pings are sent again instead, within the call's deadline; tool calls
    /// only when the tool or server opted in
    /// ([`ToolPolicy::reissue_on_broken_stream`](crate::ToolPolicy::reissue_on_broken_stream)).
    #[error(
        "{} may or may not have run: its response broke before the answer ({reason})",
        target(server, method, tool)
    )]
    StreamBroken {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// How the stream ended.
        reason: Arc<str>,
    },
    /// A stateless (2026-07-28) server did not acknowledge, within the server's timeout, a
    /// `subscriptions/listen` asking for the resource a caller subscribed to.
    #[error(
        "server `{server}` did not acknowledge a subscription to `{uri}` within {} ms",
        after.as_millis()
    )]
    SubscriptionNotAcknowledged {
        /// The server.
        server: Arc<str>,
        /// The resource.
        uri: String,
        /// How long the runtime waited.
        after: std::time::Duration,
    },
    /// A server's input-required result asked for something Switchboard cannot answer: a
    /// capability it did not declare (no handler), or a request it does not know.
    #[error(
        "{} required input Switchboard cannot give: {detail}",
        target(server, method, tool)
    )]
    InputUnsupported {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The embedded request's method, when it had one.
        request: Option<String>,
        /// What is missing.
        detail: String,
    },
    /// The server broke the protocol (a malformed answer, a result of the wrong shape).
    #[error("{} failed: protocol error: {detail}", target(server, method, tool))]
    Protocol {
        /// The server.
        server: Arc<str>,
        /// The JSON-RPC method.
        method: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// What was wrong.
        detail: String,
    },
    /// The server answered `initialize` with a protocol version we do not speak.
    #[error("server `{server}` answered protocol version {received}, but Switchboard offered {offered} and supports {}", crate::model::SUPPORTED_PROTOCOL_VERSIONS.join(", "))]
    UnsupportedVersion {
        /// The server.
        server: Arc<str>,
        /// What we offered.
        offered: Arc<str>,
        /// What the server answered.
        received: Arc<str>,
    },
    /// The handshake failed or did not finish within the startup timeout.
    #[error("server `{server}` failed its handshake: {detail}")]
    Handshake {
        /// The server.
        server: Arc<str>,
        /// What happened.
        detail: Arc<str>,
        /// The error behind it, when there is one (the server's answer to `initialize`).
        #[source]
        cause: Option<Arc<Error>>,
    },
    /// The server could not be started (the program could not be spawned, the URL not
    /// reached).
    #[error("server `{server}` could not be started: {source}")]
    Spawn {
        /// The server.
        server: Arc<str>,
        /// The transport's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// No such tool: the server did not list it, or (with no server) no catalogue entry has
    /// that name.
    #[error("{}", match server { Some(server) => format!("server `{server}` has no tool `{tool}`"), None => format!("no tool named `{tool}` in the catalogue") })]
    UnknownTool {
        /// The server asked, or `None` for a catalogue lookup.
        server: Option<Arc<str>>,
        /// The tool asked for.
        tool: Arc<str>,
    },
    /// The server did not declare the capability the request needs (checked from protocol
    /// 2025-06-18 on; nothing was sent).
    #[error(
        "server `{server}` does not support `{method}`: it declared no `{capability}` capability"
    )]
    NotSupported {
        /// The server.
        server: Arc<str>,
        /// The method asked for.
        method: Arc<str>,
        /// The capability it needs.
        capability: &'static str,
    },
    /// No resource at that URI: the server said so, or (with no server) no server lists it
    /// or a template that matches it.
    #[error("{} has no resource `{uri}`: {message}", match server { Some(s) => format!("server `{s}`"), None => "no server".to_owned() })]
    ResourceNotFound {
        /// The server asked, or `None` when no server lists the URI.
        server: Option<Arc<str>>,
        /// The URI asked for.
        uri: Arc<str>,
        /// What the server said.
        message: String,
    },
    /// The tool can only be run as a task (`execution.taskSupport: "required"`), but the
    /// server does not declare task-augmented `tools/call` (`tasks.requests.tools.call`);
    /// nothing was sent.
    #[error("tool `{tool}` of server `{server}` can only be run as a task, but the server declares no tasks.requests.tools.call capability")]
    TaskRequired {
        /// The server.
        server: Arc<str>,
        /// The tool.
        tool: Arc<str>,
    },
    /// A call asked to run as a task where the tool or the server does not allow it (a
    /// tool's `execution.taskSupport` absent or `"forbidden"`, or no task capability);
    /// nothing was sent.
    #[error("tool `{tool}` of server `{server}` cannot run as a task: {reason}")]
    TaskNotAllowed {
        /// The server.
        server: Arc<str>,
        /// The tool.
        tool: Arc<str>,
        /// Why not.
        reason: &'static str,
    },
    /// The server no longer knows the task: it answered that the id is unknown, or the
    /// task outlived the time to live the server gave it. The task may have run.
    #[error(
        "task `{task}`{} on server `{server}` is lost: {reason}",
        tool_note(tool)
    )]
    TaskLost {
        /// The server.
        server: Arc<str>,
        /// The tool the task runs, when known.
        tool: Option<Arc<str>>,
        /// The task's id.
        task: Arc<str>,
        /// What happened.
        reason: Arc<str>,
    },
    /// The task was cancelled before it finished (by this client or by the server).
    #[error("task `{task}`{} on server `{server}` was cancelled{}", tool_note(tool), message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    TaskCancelled {
        /// The server.
        server: Arc<str>,
        /// The tool the task runs, when known.
        tool: Option<Arc<str>>,
        /// The task's id.
        task: Arc<str>,
        /// The server's status message, if any.
        message: Option<String>,
    },
    /// Several servers list that URI (or a template matching it).
    #[error("resource `{uri}` is offered by several servers ({}); read it from one of them", servers.join(", "))]
    AmbiguousResource {
        /// The URI.
        uri: Arc<str>,
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// No prompt of the runtime's prompt catalogue has that name.
    #[error("no prompt named `{name}`")]
    UnknownPrompt {
        /// The name asked for.
        name: Arc<str>,
    },
    /// Several servers offer a prompt of that name; call it by a prefixed name.
    #[error("prompt `{name}` is offered by several servers ({}); use a prefixed name", servers.join(", "))]
    AmbiguousPrompt {
        /// The name asked for.
        name: Arc<str>,
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// The tool is filtered out by the server's allow/deny lists.
    #[error("tool `{tool}` of server `{server}` is not allowed by the configuration")]
    ToolDenied {
        /// The server.
        server: Arc<str>,
        /// The tool.
        tool: Arc<str>,
    },
    /// Several servers offer a tool of that name and the naming mode keeps names unprefixed.
    #[error("tool `{name}` is offered by several servers ({}); call it by a prefixed name", servers.join(", "))]
    AmbiguousTool {
        /// The name asked for.
        name: Arc<str>,
        /// The servers offering it.
        servers: Vec<Arc<str>>,
    },
    /// The server kept crashing and is no longer restarted.
    #[error("server `{server}` failed {failures} times within {} s and is no longer restarted; last error: {last_error}", window.as_secs())]
    CrashLoop {
        /// The server.
        server: Arc<str>,
        /// Failures that tripped the guard.
        failures: u32,
        /// The guard's window.
        window: Duration,
        /// The last failure.
        last_error: Arc<str>,
    },
    /// The HTTP server refused our credentials (401), and no auth hook could fix it.
    #[error("server `{server}` refused the request as unauthorized{}", resource_metadata.as_ref().map(|r| format!("; OAuth starts at its resource metadata {r}")).unwrap_or_default())]
    Unauthorized {
        /// The server.
        server: Arc<str>,
        /// The tool, for `tools/call`.
        tool: Option<Arc<str>>,
        /// The Protected Resource Metadata URL from `WWW-Authenticate`.
        resource_metadata: Option<String>,
    },
    /// A server of that name already exists.
    #[error("a server named `{name}` already exists")]
    DuplicateServer {
        /// The name.
        name: Arc<str>,
    },
    /// No server of that name is configured.
    #[error("no server named `{name}`")]
    UnknownServer {
        /// The name asked for.
        name: Arc<str>,
    },
    /// Tool arguments must be a JSON object.
    #[error("{} failed: arguments must be a JSON object, got {got}", target(server, "tools/call", &Some(tool.clone())))]
    InvalidArguments {
        /// The server.
        server: Arc<str>,
        /// The tool.
        tool: Arc<str>,
        /// The JSON type that was given.
        got: &'static str,
    },
    /// The runtime has been shut down.
    #[error("the runtime has been shut down")]
    Shutdown,
    /// The runtime's actor thread could not be started.
    #[error("cannot start the runtime's actor thread: {source}")]
    ActorThread {
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The Prometheus endpoint could not listen where it was asked to.
    #[error("cannot serve metrics at {addr}: {source}")]
    MetricsListener {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// Which case an [`Error::Unavailable`] is.
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

/// What kind of failure an [`Error`] is, whatever its context: see [`Error::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request's deadline passed ([`Error::Timeout`]), or a stateless server did not
    /// acknowledge a subscription in time.
    Timeout,
    /// The connection ended while the request was pending ([`Error::Disconnected`]).
    Disconnected,
    /// The request's response broke before its answer ([`Error::StreamBroken`]).
    StreamBroken,
    /// The server takes no calls now ([`Error::Unavailable`]).
    Unavailable,
    /// Too many requests were in flight for the whole deadline ([`Error::Overloaded`]).
    Overloaded,
    /// The server answered with a JSON-RPC error ([`Error::Rpc`] and the typed errors of
    /// known codes: URL elicitation required, missing capability, header mismatch,
    /// refused version).
    Rpc,
    /// The server broke the protocol, or its input-required rounds could not be answered
    /// ([`Error::Protocol`], [`Error::InputLoop`], [`Error::InputUnsupported`]).
    Protocol,
    /// The transport could not deliver the request or read its answer
    /// ([`Error::Transport`]).
    Transport,
    /// The server refused our credentials ([`Error::Unauthorized`]).
    Unauthorized,
    /// The server could not be started ([`Error::Spawn`], [`Error::Handshake`],
    /// [`Error::UnsupportedVersion`], [`Error::CrashLoop`]): a server's state, and the cause
    /// of a call's [`Error::Unavailable`].
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
    /// A task ended without its result: the server lost it ([`Error::TaskLost`]) or it was
    /// cancelled ([`Error::TaskCancelled`]).
    TaskEnded,
}

impl Error {
    /// The server this error concerns, if any.
    pub fn server(&self) -> Option<&str> {
        match self {
            Error::Timeout { server, .. }
            | Error::Disconnected { server, .. }
            | Error::Unavailable { server, .. }
            | Error::Transport { server, .. }
            | Error::Overloaded { server, .. }
            | Error::Rpc { server, .. }
            | Error::MissingClientCapability { server, .. }
            | Error::HeaderMismatch { server, .. }
            | Error::VersionRejected { server, .. }
            | Error::InputLoop { server, .. }
            | Error::SubscriptionNotAcknowledged { server, .. }
            | Error::StreamBroken { server, .. }
            | Error::InputUnsupported { server, .. }
            | Error::UrlElicitationRequired { server, .. }
            | Error::Protocol { server, .. }
            | Error::UnsupportedVersion { server, .. }
            | Error::Handshake { server, .. }
            | Error::Spawn { server, .. }
            | Error::ToolDenied { server, .. }
            | Error::CrashLoop { server, .. }
            | Error::Unauthorized { server, .. }
            | Error::InvalidArguments { server, .. }
            | Error::NotSupported { server, .. }
            | Error::TaskRequired { server, .. }
            | Error::TaskNotAllowed { server, .. }
            | Error::TaskLost { server, .. }
            | Error::TaskCancelled { server, .. } => Some(server),
            Error::ResourceNotFound { server, .. } => server.as_deref(),
            Error::AmbiguousResource { .. }
            | Error::UnknownPrompt { .. }
            | Error::AmbiguousPrompt { .. } => None,
            Error::UnknownServer { name } | Error::DuplicateServer { name } => Some(name),
            Error::UnknownTool { server, .. } => server.as_deref(),
            Error::Shutdown
            | Error::ActorThread { .. }
            | Error::MetricsListener { .. }
            | Error::AmbiguousTool { .. } => None,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Timeout { .. } | Error::SubscriptionNotAcknowledged { .. } => ErrorKind::Timeout,
            Error::Disconnected { .. } => ErrorKind::Disconnected,
            Error::StreamBroken { .. } => ErrorKind::StreamBroken,
            Error::Unavailable { .. } => ErrorKind::Unavailable,
            Error::Overloaded { .. } => ErrorKind::Overloaded,
            Error::Rpc { .. }
            | Error::UrlElicitationRequired { .. }
            | Error::MissingClientCapability { .. }
            | Error::HeaderMismatch { .. }
            | Error::VersionRejected { .. } => ErrorKind::Rpc,
            Error::Protocol { .. } | Error::InputLoop { .. } | Error::InputUnsupported { .. } => {
                ErrorKind::Protocol
            }
            Error::Transport { .. } => ErrorKind::Transport,
            Error::Unauthorized { .. } => ErrorKind::Unauthorized,
            Error::Spawn { .. }
            | Error::Handshake { .. }
            | Error::UnsupportedVersion { .. }
            | Error::CrashLoop { .. } => ErrorKind::Start,
            Error::UnknownTool { .. }
            | Error::UnknownServer { .. }
            | Error::UnknownPrompt { .. }
            | Error::ResourceNotFound { .. } => ErrorKind::NotFound,
            Error::AmbiguousTool { .. }
            | Error::AmbiguousPrompt { .. }
            | Error::AmbiguousResource { .. } => ErrorKind::Ambiguous,
            Error::ToolDenied { .. }
            | Error::NotSupported { .. }
            | Error::TaskRequired { .. }
            | Error::TaskNotAllowed { .. }
            | Error::InvalidArguments { .. } => ErrorKind::Refused,
            Error::TaskLost { .. } | Error::TaskCancelled { .. } => ErrorKind::TaskEnded,
            Error::DuplicateServer { .. }
            | Error::ActorThread { .. }
            | Error::MetricsListener { .. } => ErrorKind::Setup,
            Error::Shutdown => ErrorKind::Shutdown,
        }
    }

    /// Whether the request's deadline passed.
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::Timeout
    }

    /// Whether the connection ended while the request was pending.
    pub fn is_disconnected(&self) -> bool {
        self.kind() == ErrorKind::Disconnected
    }

    /// Whether the server takes no calls now (starting too long, failed, stopped).
    pub fn is_unavailable(&self) -> bool {
        self.kind() == ErrorKind::Unavailable
    }

    /// Whether too many requests were in flight.
    pub fn is_overloaded(&self) -> bool {
        self.kind() == ErrorKind::Overloaded
    }

    /// Whether the server answered with a JSON-RPC error.
    pub fn is_rpc(&self) -> bool {
        self.kind() == ErrorKind::Rpc
    }

    /// Whether no tool, prompt, resource or server has that name.
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// Whether the server may have run the request although the caller got no answer: it
    /// was written and then timed out, the connection ended, or its response broke. (A
    /// request refused before it was sent, or answered with an error, did not run.)
    pub fn may_have_run(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Timeout
                | ErrorKind::Disconnected
                | ErrorKind::StreamBroken
                | ErrorKind::TaskEnded
        )
    }
}

/// A JSON-RPC error answer, as the caller's error: -32042 with its elicitations becomes
/// [`Error::UrlElicitationRequired`], anything else [`Error::Rpc`].
pub(crate) fn rpc_error(
    server: Arc<str>,
    method: Arc<str>,
    tool: Option<Arc<str>>,
    e: switchboard_codecs::jsonrpc::ErrorObject,
) -> Error {
    let data: Option<serde_json::Value> = e.data.and_then(|d| serde_json::from_str(d.get()).ok());
    if e.code == switchboard_codecs::mcp::URL_ELICITATION_REQUIRED {
        if let Some(elicitations) = data.as_ref().and_then(url_elicitations) {
            return Error::UrlElicitationRequired {
                server,
                method,
                tool,
                message: e.message,
                elicitations,
            };
        }
    }
    match e.code {
        modern::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            return Error::MissingClientCapability {
                server,
                method,
                tool,
                missing: required_capabilities(data.as_ref()),
                message: e.message,
            }
        }
        modern::HEADER_MISMATCH => {
            return Error::HeaderMismatch {
                server,
                method,
                tool,
                message: e.message,
            }
        }
        modern::UNSUPPORTED_PROTOCOL_VERSION => {
            let parsed: modern::UnsupportedVersionData = data
                .clone()
                .and_then(|d| serde_json::from_value(d).ok())
                .unwrap_or_default();
            return Error::VersionRejected {
                server,
                method,
                tool,
                requested: parsed.requested,
                supported: parsed.supported.into(),
            };
        }
        _ => {}
    }
    Error::Rpc {
        server,
        method,
        tool,
        code: e.code,
        message: e.message,
        data: data.map(Arc::new),
    }
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
/// elicitation; otherwise the error stays an [`Error::Rpc`] with its data as sent.
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

/// "call to tool `x` on server `s`" or "request `m` to server `s`".
fn target(server: &str, method: &str, tool: &Option<Arc<str>>) -> impl fmt::Display {
    let server = server.to_owned();
    let what = match tool {
        Some(tool) => format!("call to tool `{tool}` on server `{server}`"),
        None => format!("request `{method}` to server `{server}`"),
    };
    what
}

fn tool_note(tool: &Option<Arc<str>>) -> String {
    tool.as_ref()
        .map(|t| format!(" (tool `{t}`)"))
        .unwrap_or_default()
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
    use switchboard_codecs::jsonrpc::ErrorObject;

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
        let Error::MissingClientCapability { missing, tool, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(&missing[..], ["elicitation", "sampling"]);
        assert_eq!(tool.as_deref(), Some("t"));
        let text = e.to_string();
        assert!(
            text.contains("`s`") && text.contains("elicitation, sampling"),
            "{text}"
        );

        let e = error(-32020, serde_json::json!(null));
        assert!(matches!(e, Error::HeaderMismatch { .. }), "{e:?}");
        assert_eq!(e.server(), Some("s"));

        let e = error(
            -32022,
            serde_json::json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}),
        );
        let Error::VersionRejected {
            requested,
            supported,
            ..
        } = &e
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
        let Error::UrlElicitationRequired {
            elicitations,
            server,
            tool,
            ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!((&**server, tool.as_deref()), ("s", Some("t")));
        let urls: Vec<&str> = elicitations.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(urls, ["https://a.example/x", "https://b.example/y"]);
        assert_eq!(elicitations[1].elicitation_id, "e2");
        assert!(e.to_string().contains("https://b.example/y"), "{e}");
        assert_eq!(e.server(), Some("s"));
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
                matches!(&e, Error::Rpc { code: -32042, data: Some(d), .. } if **d == data),
                "{e:?}"
            );
        }
        assert!(matches!(
            error(-32000, serde_json::json!({})),
            Error::Rpc { .. }
        ));
    }
}
