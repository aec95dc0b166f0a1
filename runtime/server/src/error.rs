//! Why a handler did not answer with a result, and the error codes the protocol gives it.

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

    /// A resource that does not exist ([`RESOURCE_NOT_FOUND`], with the URI in `data`).
    pub fn resource_not_found(uri: &str) -> Self {
        let mut error = ErrorObject::new(RESOURCE_NOT_FOUND, "Resource not found");
        error.data = serde_json::value::to_raw_value(&json!({ "uri": uri })).ok();
        HandlerError::Rpc(error)
    }
}
