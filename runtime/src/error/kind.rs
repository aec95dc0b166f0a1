//! What went wrong: the kinds of [`Error`], with what each carries, its message in a
//! context, its [`ErrorCategory`] and its [`JsonRpcMapping`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::CloseReason;

use super::{Error, ErrorContext};
use crate::client::UrlElicitation;

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
    /// The server serves no skill at that URI (`skills/get` answered -32602).
    UnknownSkill {
        /// The `SKILL.md` URI asked for.
        uri: Arc<str>,
        /// What the server said.
        message: String,
    },
    /// A skill file is not what the skill's entry describes: its size or SHA-256 digest
    /// differs, it is not in the entry's manifest, or the entry has no valid manifest. The
    /// content must not be used; the skill may have changed since its entry was fetched
    /// (get it again with [`ServerHandle::get_skill`](crate::ServerHandle::get_skill)).
    SkillMismatch {
        /// The file's URI.
        uri: Arc<str>,
        /// What differs.
        detail: String,
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
    /// data (a missing client capability as -32021 with `data.requiredCapabilities`, URL
    /// elicitations required as -32042 with `data.elicitations`).
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
            | ErrorKind::InputUnsupported { .. }
            | ErrorKind::SkillMismatch { .. } => C::Protocol,
            ErrorKind::Transport { .. } => C::Transport,
            ErrorKind::Unauthorized { .. } => C::Unauthorized,
            ErrorKind::Spawn { .. }
            | ErrorKind::Handshake { .. }
            | ErrorKind::UnsupportedVersion { .. }
            | ErrorKind::CrashLoop { .. } => C::Start,
            ErrorKind::UnknownTool
            | ErrorKind::UnknownServer
            | ErrorKind::UnknownPrompt { .. }
            | ErrorKind::UnknownSkill { .. }
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
            // A -32042 is for the user at the far end: only the client can show the URLs.
            // (A header mismatch or a version refused is between the relay and the
            // upstream: the relay's own failure.)
            ErrorKind::Rpc { .. }
            | ErrorKind::MissingClientCapability { .. }
            | ErrorKind::UrlElicitationRequired { .. } => JsonRpcMapping::Relayed,
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
    pub(super) fn describe(&self, cx: &ErrorContext, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
            ErrorKind::UnknownSkill { uri, message } => {
                write!(f, "server `{server}` serves no skill `{uri}`: {message}")
            }
            ErrorKind::SkillMismatch { uri, detail } => write!(
                f,
                "skill file `{uri}` of server `{server}` is not what its skill entry describes: {detail}"
            ),
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
    pub(super) fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
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

fn dropped_note(dropped: u64) -> String {
    if dropped == 0 {
        String::new()
    } else {
        format!("; {dropped} unreadable frame(s) from the server were dropped meanwhile, the answer may have been one of them")
    }
}
