//! What a server is doing now, as seen by handles.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_transports::CloseReason;

use crate::error::Error;
use crate::model::{Implementation, Prompt, Resource, ResourceTemplate, ServerCapabilities, Tool};
use crate::transport::TransportKind;

/// A snapshot of one server's state, published by its actor.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The lifecycle state.
    pub state: ServerState,
    /// The negotiated protocol version, once initialized.
    pub protocol_version: Option<Arc<str>>,
    /// The era the server is spoken to in, once known (see [`Protocol`](crate::Protocol)).
    pub era: Option<crate::era::Era>,
    /// The server's `serverInfo`, once initialized.
    pub server_info: Option<Arc<Implementation>>,
    /// What the server declared it offers, once initialized.
    pub capabilities: Option<Arc<ServerCapabilities>>,
    /// The server's `instructions`, if it gave any.
    pub instructions: Option<Arc<str>>,
    /// The server's tools, as listed during the handshake.
    pub tools: Arc<[Tool]>,
    /// The server's resources, as last listed (empty without the capability).
    pub resources: Arc<[Resource]>,
    /// The server's resource templates, as last listed.
    pub resource_templates: Arc<[ResourceTemplate]>,
    /// The server's prompts, as last listed (empty without the capability).
    pub prompts: Arc<[Prompt]>,
    /// The server's process id, for process transports.
    pub pid: Option<u32>,
    /// The transport in use (as configured until the first connection).
    pub transport: TransportKind,
    /// How many times the server was restarted.
    pub restarts: u32,
    /// Since when the server has been ready (its uptime), if it is.
    pub ready_since: Option<Instant>,
    /// How long the last successful handshake took.
    pub handshake: Option<Duration>,
    /// When the state last changed.
    pub since: Instant,
}

impl ServerStatus {
    pub(crate) fn starting(transport: TransportKind) -> Self {
        ServerStatus {
            state: ServerState::Starting,
            protocol_version: None,
            era: None,
            server_info: None,
            capabilities: None,
            instructions: None,
            tools: Arc::from(Vec::new()),
            resources: Arc::from(Vec::new()),
            resource_templates: Arc::from(Vec::new()),
            prompts: Arc::from(Vec::new()),
            pid: None,
            transport,
            restarts: 0,
            ready_since: None,
            handshake: None,
            since: Instant::now(),
        }
    }

    /// How long the server has been ready, if it is.
    pub fn uptime(&self) -> Option<Duration> {
        self.ready_since.map(|t| t.elapsed())
    }

    /// Whether the server is ready for calls.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, ServerState::Ready)
    }

    /// Whether the server's tools, resources and prompts (as last listed) are offered: in
    /// the runtime's catalogues, to [`Runtime::read_resource`](crate::Runtime::read_resource)'s
    /// routing, and through a gateway. They are while the server is ready, and while it
    /// starts or restarts after going down (a call for one waits for the restart within its
    /// deadline, or fails with [`Unavailability::Restarting`](crate::Unavailability::Restarting));
    /// not once it gave up (`failed`, `down`) or stopped. A server removed from the runtime,
    /// or restarted with [`Runtime::restart_server`](crate::Runtime::restart_server), offers
    /// nothing until it lists again.
    pub fn offers_entries(&self) -> bool {
        matches!(
            self.state,
            ServerState::Ready | ServerState::Starting | ServerState::Restarting { .. }
        )
    }

    /// Which shape of tasks the server speaks, if any (see [`crate::task`]): a
    /// handshake-era server that declares `tasks.requests.tools.call`, or a stateless one
    /// that declares the extension `io.modelcontextprotocol/tasks`.
    pub fn task_shape(&self) -> Option<crate::task_state::TaskShape> {
        crate::task_state::shape_of(self.era?, self.capabilities.as_deref()?)
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
    /// The connection ended after the handshake, and the server is not restarted.
    Down {
        /// Why.
        reason: Arc<CloseReason>,
    },
    /// Down, with a restart scheduled.
    Restarting {
        /// Restart attempts since the server was last stable.
        attempt: u32,
        /// When the next attempt starts.
        next_retry_at: Instant,
        /// Why it went down.
        last_error: Arc<str>,
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
    /// Whether this is [`ServerState::Ready`].
    pub fn is_ready_state(&self) -> bool {
        matches!(self, ServerState::Ready)
    }

    /// A short name: `starting`, `ready`, `restarting`, `down`, `failed` or `stopped`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Down { .. } => "down",
            ServerState::Restarting { .. } => "restarting",
            ServerState::Failed { .. } => "failed",
            ServerState::Stopped => "stopped",
        }
    }
}
