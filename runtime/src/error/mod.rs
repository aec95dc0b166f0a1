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

use switchboard_codecs::jsonrpc::ErrorObject;
use switchboard_codecs::mcp::modern;

mod kind;
mod rpc;

pub use kind::{ErrorCategory, ErrorKind, JsonRpcError, JsonRpcMapping, Unavailability};
pub(crate) use rpc::rpc_error;

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

/// The spec's resource-not-found code (MCP, JSON-RPC -32002).
const RESOURCE_NOT_FOUND: i64 = -32002;

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
            (
                JsonRpcMapping::Relayed,
                ErrorKind::UrlElicitationRequired {
                    message,
                    elicitations,
                },
            ) => {
                let elicitations: Vec<&serde_json::Value> =
                    elicitations.iter().map(|e| &e.raw).collect();
                (
                    switchboard_codecs::mcp::URL_ELICITATION_REQUIRED,
                    message.clone(),
                    Some(serde_json::json!({ "elicitations": elicitations })),
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::time::Duration;

    use super::*;

    use super::rpc::tests::error;

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
        // URL elicitations are the far user's to complete: relayed as they came.
        let elicitation = serde_json::json!({"mode": "url", "message": "sign in",
            "url": "https://auth.example/login", "elicitationId": "e1"});
        let required = error(-32042, serde_json::json!({"elicitations": [elicitation]}));
        assert!(matches!(
            required.kind(),
            ErrorKind::UrlElicitationRequired { .. }
        ));
        assert_eq!(required.kind().jsonrpc(), JsonRpcMapping::Relayed);
        let answer = required.to_jsonrpc();
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (-32042, "needs more")
        );
        assert_eq!(
            answer.data,
            Some(serde_json::json!({"elicitations": [elicitation]}))
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
