//! Requests servers send to the client, answered by the embedding application.
//!
//! MCP servers may ask the client for things: `roots/list` (which directories they may work
//! on), `sampling/createMessage` (a completion from the application's model) and
//! `elicitation/create` (ask the user to fill in a form, or to open a URL). The application
//! provides a handler per kind in [`ClientHandlers`], for the whole runtime
//! ([`RuntimeBuilder::client_handlers`](crate::RuntimeBuilder::client_handlers)) or per server
//! ([`ServerConfig::client_handlers`](crate::ServerConfig::client_handlers)). Only what is
//! provided is declared in the `initialize` capabilities: no handler, no capability, and the
//! server's request is answered with JSON-RPC -32601.
//!
//! A call may bring handlers of its own ([`Call::client_handlers`](crate::Call::client_handlers)),
//! which answer what the server asks because of that call; a [`ForwardHandler`] hands the
//! requests on as they came (a gateway asking its own client).
//!
//! Each request is served in a task of its own, off the server's actor, so a slow handler
//! never delays other answers or calls. Handlers get plain values (the server's name and the
//! typed request), never wire ids. A handler that fails, panics, returns a malformed result or
//! takes longer than the handler deadline ([`HANDLER_TIMEOUT`] unless
//! [`RuntimeBuilder::handler_timeout`](crate::RuntimeBuilder::handler_timeout) or
//! [`ServerConfig::handler_timeout`](crate::ServerConfig::handler_timeout) says otherwise) is
//! answered with a JSON-RPC error; a request whose params do not fit its method with -32602.
//!
//! ```
//! use switchboard::client::{BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse, Root, RootsHandler};
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
//! /// One project directory.
//! #[derive(Debug)]
//! struct Project;
//!
//! impl RootsHandler for Project {
//!     fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
//!         Box::pin(async { Ok(vec![Root::new("file:///home/me/project").name("project")]) })
//!     }
//! }
//!
//! let handlers = ClientHandlers::new().elicitation(Defaults).roots(Project);
//! # let _ = handlers;
//! ```

pub(crate) mod elicitation;
pub(crate) mod roots;
pub(crate) mod sampling;
pub(crate) mod serve;
pub mod tasks;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

pub use elicitation::{
    ElicitationHandler, ElicitationRequest, ElicitationResponse, UrlElicitation,
};
pub use roots::{Root, RootsHandler};
pub use sampling::{
    IncludeContext, ModelHint, ModelPreferences, SamplingHandler, SamplingMessage, SamplingRequest,
    SamplingResponse, ToolChoice, ToolChoiceMode,
};

/// A boxed, sendable future returned by handlers.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How long a handler may take before the server gets an error answer, unless the runtime or
/// the server sets its own deadline.
pub const HANDLER_TIMEOUT: Duration = Duration::from_secs(300);

/// Hands the requests a server sends the client (`roots/list`, `sampling/createMessage`,
/// `elicitation/create`) on as they came, and their answers back as they come: a gateway's
/// bridge to its own client, which does the asking.
pub trait ForwardHandler: Send + Sync + fmt::Debug + 'static {
    /// The result of the server's request of `method`, or why there is none (the server is
    /// answered with a JSON-RPC error).
    fn forward(
        &self,
        server: &str,
        method: &str,
        params: Value,
    ) -> BoxFuture<Result<Value, String>>;

    /// The results of a stateless server's input requests of one round, all at once and by
    /// the server's own keys: `requests` maps each key to its `{method, params}`, the answer
    /// maps each key to its result.
    fn forward_inputs(
        &self,
        server: &str,
        requests: Map<String, Value>,
    ) -> BoxFuture<Result<Map<String, Value>, String>>;

    /// What to declare for the requests it forwards: the `roots`, `sampling` and
    /// `elicitation` entries of the client's capabilities (others are ignored).
    fn capabilities(&self) -> Value;
}

/// The client features a [`ForwardHandler`] answers.
const FORWARDED: [&str; 3] = ["roots", "sampling", "elicitation"];

/// The handlers an application provides; each one adds its capability.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ClientHandlers {
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) roots: Option<Arc<dyn RootsHandler>>,
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(crate) forward: Option<Arc<dyn ForwardHandler>>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("elicitation", &self.elicitation.is_some())
            .field("roots", &self.roots.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("forward", &self.forward.is_some())
            .finish()
    }
}

impl ClientHandlers {
    /// No handlers.
    pub fn new() -> Self {
        ClientHandlers::default()
    }

    /// Answers `elicitation/create`: declares the `elicitation` capability, in form mode, and
    /// in URL mode too when [`ElicitationHandler::handles_url`] says so.
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answers `roots/list`: declares the `roots` capability with `listChanged` (see
    /// [`Runtime::roots_changed`](crate::Runtime::roots_changed)).
    pub fn roots(mut self, handler: impl RootsHandler) -> Self {
        self.roots = Some(Arc::new(handler));
        self
    }

    /// Answers `sampling/createMessage`: declares the `sampling` capability, with `tools`
    /// when [`SamplingHandler::handles_tools`] says so.
    pub fn sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Hands every `roots/list`, `sampling/createMessage` and `elicitation/create` to
    /// `handler` as it came, instead of the typed handlers, and declares what it says.
    pub fn forward(mut self, handler: impl ForwardHandler) -> Self {
        self.forward = Some(Arc::new(handler));
        self
    }

    /// The `capabilities` object of `initialize`.
    pub(crate) fn capabilities(handlers: Option<&ClientHandlers>) -> Value {
        let mut caps = Map::new();
        let Some(handlers) = handlers else {
            return Value::Object(caps);
        };
        if handlers.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": true}));
        }
        if let Some(sampling) = &handlers.sampling {
            let declared = if sampling.handles_tools() {
                json!({"tools": {}})
            } else {
                json!({})
            };
            caps.insert("sampling".into(), declared);
        }
        if let Some(elicitation) = &handlers.elicitation {
            // The modes are named even for form only: 2025-11-25 reads `{}` as form only,
            // and servers of older versions take any object as "elicitation supported". The
            // version is not known yet when `initialize` is written, so one shape fits all.
            let declared = if elicitation.handles_url() {
                json!({"form": {}, "url": {}})
            } else {
                json!({"form": {}})
            };
            caps.insert("elicitation".into(), declared);
        }
        if let Some(forward) = &handlers.forward {
            let declared = forward.capabilities();
            for feature in FORWARDED {
                caps.remove(feature);
                if let Some(entry) = declared.get(feature) {
                    caps.insert(feature.into(), entry.clone());
                }
            }
        }
        Value::Object(caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::elicitation::tests::{FormOnly, WithUrl};
    use crate::client::sampling::tests::{Plain, WithTools};

    #[test]
    fn capabilities_follow_the_handlers() {
        assert_eq!(ClientHandlers::capabilities(None), json!({}));
        assert_eq!(
            ClientHandlers::capabilities(Some(&ClientHandlers::new())),
            json!({})
        );
        let form = ClientHandlers::new().elicitation(FormOnly);
        assert_eq!(
            ClientHandlers::capabilities(Some(&form)),
            json!({"elicitation": {"form": {}}})
        );
        let all = ClientHandlers::new()
            .elicitation(WithUrl)
            .sampling(WithTools)
            .roots(crate::client::roots::tests::Fixed);
        assert_eq!(
            ClientHandlers::capabilities(Some(&all)),
            json!({
                "elicitation": {"form": {}, "url": {}},
                "sampling": {"tools": {}},
                "roots": {"listChanged": true}
            })
        );
        let plain = ClientHandlers::new().sampling(Plain);
        assert_eq!(
            ClientHandlers::capabilities(Some(&plain)),
            json!({"sampling": {}})
        );
    }
}
