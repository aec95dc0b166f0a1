//! Why a handler did not answer with a result, and the error codes the protocol gives it.

use std::fmt;

use serde_json::json;
use switchboard_codecs::jsonrpc::ErrorObject;

/// The spec's "resource not found" code of the handshake era (-32002); in 2026-07-28 the
/// server answers -32602 for it.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// Why a handler did not answer with a result.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HandlerError {
    /// A JSON-RPC error for the client (unknown tool, invalid params, …).
    Rpc(ErrorObject),
    /// The handler needs input from the client first ([`Context::input`](crate::Context::input)): in 2026-07-28
    /// this becomes an input-required result, and the client's retry runs the handler again.
    InputRequired,
    /// The handler needs a capability the client did not declare (-32021).
    MissingCapability {
        /// The capability, e.g. `sampling`.
        capability: String,
    },
}

impl From<ErrorObject> for HandlerError {
    fn from(error: ErrorObject) -> Self {
        HandlerError::Rpc(error)
    }
}

impl HandlerError {
    /// -32602, invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        HandlerError::Rpc(ErrorObject::new(ErrorObject::INVALID_PARAMS, message))
    }

    /// -32602 for a tool the server does not have, or that the request's principal may not
    /// use (its existence is not that client's to learn).
    pub fn unknown_tool(name: &str) -> Self {
        HandlerError::invalid_params(format!("unknown tool: {name}"))
    }

    /// -32602 for a `skills/get` of a skill the server does not serve, as the Skills
    /// extension answers.
    pub fn unknown_skill(uri: &str) -> Self {
        HandlerError::invalid_params(format!("No skill is served at {uri}"))
    }

    /// -32602 for a `resources/directory/read` of what is no directory resource.
    pub fn not_a_directory(uri: &str) -> Self {
        HandlerError::invalid_params(format!("{uri} is not a directory resource"))
    }

    /// A resource that does not exist ([`RESOURCE_NOT_FOUND`], with the URI in `data`).
    pub fn resource_not_found(uri: &str) -> Self {
        let mut error = ErrorObject::new(RESOURCE_NOT_FOUND, "Resource not found");
        error.data = serde_json::value::to_raw_value(&json!({ "uri": uri })).ok();
        HandlerError::Rpc(error)
    }
}

/// Why a typed tool, resource or prompt ([`Server::builder`](crate::Server::builder)) did
/// not answer: the tool failed, or the request did.
///
/// Any error converts into one with `?` ([`Failed`](Self::Failed), with its message and
/// those of its sources), and so does a [`HandlerError`] ([`Handler`](Self::Handler), so
/// that [`Context::input`](crate::Context::input)`(…).await?` asks the client in either
/// era). To convert every error it does not implement [`std::error::Error`] itself, as
/// `anyhow::Error` does not.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed. A tool answers a result with `isError: true` and this text,
    /// for the model to read; a resource or a prompt, a JSON-RPC internal error (-32603).
    Failed {
        /// What went wrong.
        message: String,
    },
    /// The request failed, or waits for the client's input: passed on as the handler's
    /// error.
    Handler(HandlerError),
}

impl ToolError {
    /// The tool failed, saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError::Failed {
            message: message.into(),
        }
    }

    /// What a typed tool answers for it: a result with `isError: true`, or the error.
    pub(crate) fn into_tool_reply(self) -> Result<crate::Reply, HandlerError> {
        match self {
            ToolError::Failed { message } => Ok(crate::Reply::tool_error(message)),
            ToolError::Handler(error) => Err(error),
        }
    }

    /// What a typed resource or prompt answers for it.
    pub(crate) fn into_handler_error(self) -> HandlerError {
        match self {
            ToolError::Failed { message } => {
                HandlerError::Rpc(ErrorObject::new(ErrorObject::INTERNAL_ERROR, message))
            }
            ToolError::Handler(error) => error,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Failed { message } => f.write_str(message),
            ToolError::Handler(HandlerError::Rpc(error)) => {
                write!(f, "error {}: {}", error.code, error.message)
            }
            ToolError::Handler(HandlerError::InputRequired) => {
                f.write_str("input from the client is required")
            }
            ToolError::Handler(HandlerError::MissingCapability { capability }) => {
                write!(f, "the client did not declare {capability}")
            }
        }
    }
}

impl From<HandlerError> for ToolError {
    fn from(error: HandlerError) -> Self {
        ToolError::Handler(error)
    }
}

/// The error's message, followed by its sources' (`reading a.txt: permission denied`).
impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            // A wrapper that repeats its source's message says it once.
            if !message.ends_with(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        ToolError::new(message)
    }
}
