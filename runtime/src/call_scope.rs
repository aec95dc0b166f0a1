//! What one call brings for the server's messages about it: its own handlers for the
//! requests the server sends the client, and its own receiver of the server's log messages.
//!
//! A gateway needs both: the upstream's sampling request, or its log line, belongs to the
//! front client whose call caused it, not to every client. A stateless server's requests are
//! embedded in the call's own answer, so they always reach the call's handlers. Everything
//! else travels on the connection with no link to the call that caused it (stdio has no
//! per-request streams, and the specification gives such messages no request id), so the
//! runtime gives a message to a call only when that call is the one call in flight on the
//! connection that asked for such messages; otherwise nobody's call gets it (the server's
//! own handlers answer, the log goes to the server's log stream only). Guessing wrong would
//! hand one client's data to another.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_codecs::mcp::LoggingLevel;

use crate::client::ClientHandlers;
use crate::logging::ServerLog;

/// Receives a call's log messages.
pub(crate) type LogFn = Arc<dyn Fn(ServerLog) + Send + Sync>;

/// A call's own side channel.
#[derive(Default)]
pub(crate) struct Scope {
    /// Answers the requests the server sends the client for this call.
    pub(crate) handlers: Option<ClientHandlers>,
    /// The least severe level the call wants, and where its log messages go.
    pub(crate) logs: Option<(LoggingLevel, LogFn)>,
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("handlers", &self.handlers)
            .field("log_level", &self.logs.as_ref().map(|(level, _)| *level))
            .finish()
    }
}

impl Scope {
    /// Whether the scope has nothing of its own.
    pub(crate) fn is_empty(&self) -> bool {
        self.handlers.is_none() && self.logs.is_none()
    }

    /// The log level a stateless request of this call asks for.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        self.logs.as_ref().map(|(level, _)| *level)
    }

    /// Hands `log` to the call when it is at the call's level or above; whether it was taken.
    pub(crate) fn deliver_log(&self, log: &ServerLog) -> bool {
        match &self.logs {
            Some((level, callback)) if log.level >= *level => {
                callback(log.clone());
                true
            }
            _ => false,
        }
    }

    /// The `clientCapabilities` a stateless request of this call declares: the connection's,
    /// with the client features (`roots`, `sampling`, `elicitation`) those of the call's
    /// handlers instead.
    pub(crate) fn capabilities(&self, connection: &Value) -> Option<Value> {
        let handlers = self.handlers.as_ref()?;
        let mut capabilities = connection.as_object().cloned().unwrap_or_else(Map::new);
        for feature in ["roots", "sampling", "elicitation"] {
            capabilities.remove(feature);
        }
        if let Value::Object(own) = ClientHandlers::capabilities(Some(handlers)) {
            capabilities.extend(own);
        }
        Some(Value::Object(capabilities))
    }
}
