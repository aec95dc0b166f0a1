//! What the runtime gives every server actor besides the server's core: where connections
//! do their I/O, the registry of kill handles, the era verdicts every server shares and the
//! supervisor's inbox. Only actors use these; the server's handles never do, so they are
//! not in [`ServerCore`](crate::core::ServerCore).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use switchboard_transports::connection::KillHandle;
use tokio::sync::mpsc;

use crate::era_memory::EraMemory;
use crate::transport::Transport;

/// Live kill handles of every server of a runtime, for the synchronous kill on drop.
/// Every running server's kill, by its core (`ServerCore::kill_key`): a server being
/// replaced and its successor share a name, never a core.
pub(crate) type Kills = Arc<Mutex<HashMap<usize, KillHandle>>>;

/// What server actors tell the supervisor.
#[derive(Debug)]
pub(crate) enum ServerEvent {
    /// A server's status (and maybe its tools) changed.
    StatusChanged,
    /// The actor stopped without being asked (it panicked): incarnation number.
    Died(Arc<str>, u64),
}

/// Where connections do their I/O: on a tokio runtime, or (`None`) on the actor thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct IoPlaces {
    /// Line-framed connections (stdio, in-process servers).
    pub(crate) lines: Option<tokio::runtime::Handle>,
    /// HTTP connections.
    pub(crate) http: Option<tokio::runtime::Handle>,
}

impl IoPlaces {
    /// The place for `transport`'s connections.
    pub(crate) fn of(&self, transport: &Transport) -> Option<&tokio::runtime::Handle> {
        match transport {
            Transport::Http(_) => self.http.as_ref(),
            _ => self.lines.as_ref(),
        }
    }
}

/// The runtime's, as every server actor has it.
#[derive(Debug, Clone)]
pub(crate) struct Wiring {
    /// Where connections do their I/O.
    pub(crate) io: IoPlaces,
    /// The servers' kill handles.
    pub(crate) kills: Kills,
    /// The era verdicts of auto servers, by origin or command.
    pub(crate) eras: Arc<EraMemory>,
    /// The supervisor's inbox.
    pub(crate) events: mpsc::UnboundedSender<ServerEvent>,
}
