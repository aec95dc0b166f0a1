//! Requests servers send to the client, answered by the embedding application.
//!
//! MCP servers may ask the client for things: `elicitation/create` (ask the user to fill in
//! a form), and in later versions of this crate roots and sampling. The application provides
//! a handler per kind in [`ClientHandlers`], for the whole runtime
//! ([`RuntimeBuilder::client_handlers`](crate::RuntimeBuilder::client_handlers)) or per server
//! ([`ServerConfig::client_handlers`](crate::ServerConfig::client_handlers)). Only what is
//! provided is declared in the `initialize` capabilities: no handler, no capability, and the
//! server's request is answered with JSON-RPC -32601.
//!
//! Handlers run concurrently with normal traffic, off the server's actor. One that fails is
//! answered with a JSON-RPC error; one that takes longer than [`HANDLER_TIMEOUT`] too.
//!
//! ```
//! use switchboard::client::{ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse};
//! use switchboard::client::BoxFuture;
//!
//! /// Accepts every form with the defaults its schema gives.
//! #[derive(Debug)]
//! struct Defaults;
//!
//! impl ElicitationHandler for Defaults {
//!     fn elicit(&self, _server: &str, request: ElicitationRequest) -> BoxFuture<Result<ElicitationResponse, String>> {
//!         Box::pin(async move { Ok(ElicitationResponse::accept(request.defaults())) })
//!     }
//! }
//!
//! let handlers = ClientHandlers::new().elicitation(Defaults);
//! # let _ = handlers;
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

/// A boxed, sendable future returned by handlers.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How long a handler may take before the server gets an error answer.
pub const HANDLER_TIMEOUT: Duration = Duration::from_secs(300);

/// Answers `elicitation/create`.
pub trait ElicitationHandler: Send + Sync + fmt::Debug + 'static {
    /// Asks the user (or decides for them). `Err` answers the server with a JSON-RPC error.
    fn elicit(
        &self,
        server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>>;
}

/// The handlers an application provides; each one adds its capability.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ClientHandlers {
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("elicitation", &self.elicitation.is_some())
            .finish()
    }
}

impl ClientHandlers {
    /// No handlers.
    pub fn new() -> Self {
        ClientHandlers::default()
    }

    /// Answers `elicitation/create` (declares the `elicitation` capability, form mode).
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// The `capabilities` object of `initialize`.
    pub(crate) fn capabilities(handlers: Option<&ClientHandlers>) -> Value {
        let mut caps = Map::new();
        if handlers.is_some_and(|h| h.elicitation.is_some()) {
            caps.insert("elicitation".into(), Value::Object(Map::new()));
        }
        Value::Object(caps)
    }
}

/// An `elicitation/create` request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// What to ask the user.
    pub message: String,
    /// The JSON Schema of the form (a flat object of primitive properties).
    pub requested_schema: Value,
    /// The params as received.
    pub raw: Value,
}

impl ElicitationRequest {
    pub(crate) fn from_params(params: Value) -> Result<Self, String> {
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .ok_or("elicitation/create needs a string `message`")?
            .to_owned();
        let requested_schema = params
            .get("requestedSchema")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        Ok(ElicitationRequest {
            message,
            requested_schema,
            raw: params,
        })
    }

    /// The `default` of every property of the requested schema that has one.
    pub fn defaults(&self) -> Map<String, Value> {
        self.requested_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter_map(|(name, schema)| {
                        schema.get("default").map(|d| (name.clone(), d.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationResponse {
    action: &'static str,
    content: Option<Map<String, Value>>,
}

impl ElicitationResponse {
    /// The user submitted the form.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitationResponse {
            action: "accept",
            content: Some(content),
        }
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitationResponse {
            action: "decline",
            content: None,
        }
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        ElicitationResponse {
            action: "cancel",
            content: None,
        }
    }

    pub(crate) fn into_result(self) -> Value {
        let mut result = Map::new();
        result.insert("action".into(), Value::from(self.action));
        if let Some(content) = self.content {
            result.insert("content".into(), Value::Object(content));
        }
        Value::Object(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_schema() {
        let request = ElicitationRequest::from_params(serde_json::json!({
            "message": "who?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "nick": {"type": "string"}
            }}
        }))
        .unwrap();
        let d = request.defaults();
        assert_eq!(d.len(), 2);
        assert_eq!(d["name"], "John Doe");
        assert_eq!(d["age"], 30);
        let result = ElicitationResponse::accept(d).into_result();
        assert_eq!(result["action"], "accept");
        assert_eq!(result["content"]["age"], 30);
        assert_eq!(
            ElicitationResponse::decline().into_result(),
            serde_json::json!({"action": "decline"})
        );
    }

    #[test]
    fn capabilities_follow_the_handlers() {
        assert_eq!(ClientHandlers::capabilities(None), serde_json::json!({}));
        assert_eq!(
            ClientHandlers::capabilities(Some(&ClientHandlers::new())),
            serde_json::json!({})
        );
    }
}
