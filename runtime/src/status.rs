//! What a server is doing now, as seen by handles.

use std::sync::Arc;
use std::time::Instant;

use switchboard_transports::CloseReason;

use crate::error::Error;
use crate::model::{Implementation, Tool};

/// A snapshot of one server's state, published by its actor.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The lifecycle state.
    pub state: ServerState,
    /// The negotiated protocol version, once initialized.
    pub protocol_version: Option<Arc<str>>,
    /// The server's `serverInfo`, once initialized.
    pub server_info: Option<Arc<Implementation>>,
    /// The server's `instructions`, if it gave any.
    pub instructions: Option<Arc<str>>,
    /// The server's tools, as listed during the handshake.
    pub tools: Arc<[Tool]>,
    /// The server's process id, for process transports.
    pub pid: Option<u32>,
    /// When the state last changed.
    pub since: Instant,
}

impl ServerStatus {
    pub(crate) fn starting() -> Self {
        ServerStatus {
            state: ServerState::Starting,
            protocol_version: None,
            server_info: None,
            instructions: None,
            tools: Arc::from(Vec::new()),
            pid: None,
            since: Instant::now(),
        }
    }

    /// Whether the server is ready for calls.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, ServerState::Ready)
    }
}

/// A server's lifecycle state.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerState {
    /// Connecting or running the handshake.
    Starting,
    /// Handshake done; calls are served.
    Ready,
    /// The connection ended after the handshake.
    Down {
        /// Why.
        reason: Arc<CloseReason>,
    },
    /// The server could not be started or failed its handshake.
    Failed {
        /// Why.
        error: Error,
    },
    /// Shut down on request.
    Stopped,
}

impl ServerState {
    /// A short name: `starting`, `ready`, `down`, `failed` or `stopped`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Down { .. } => "down",
            ServerState::Failed { .. } => "failed",
            ServerState::Stopped => "stopped",
        }
    }
}
