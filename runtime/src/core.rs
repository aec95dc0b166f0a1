//! [`ServerCore`]: the one value per server that its handles and its actor share.
//!
//! Everything both sides of a server need lives here once: its name and resolved
//! configuration, the numbering of its requests, the in-flight slots, the gate that says
//! whether (and through which connection) it takes calls, its status, metrics, logging,
//! subscriptions, the checks of its last tool listing, the `_meta` dialect of its era and
//! the freshness of its lists. The supervisor makes a core when a server is added; every
//! handle and every incarnation of the server's actor hold the same `Arc<ServerCore>`,
//! and each adds only what is its own (the actor: its connection and its state machines;
//! a handle: nothing).

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::sync::Mutex;

use arc_swap::{ArcSwap, ArcSwapOption};
use switchboard_transports::connection::KillHandle;
use tokio::sync::{mpsc, watch, Notify};

use crate::admission::Admission;
use crate::call_table::Table;
use crate::config::ServerConfig;
use crate::deadline::{DeadlinePolicy, ToolPolicy};
use crate::era::Modern;
use crate::era_memory::EraMemory;
use crate::error::Error;
use crate::freshness::ListFreshness;
use crate::logging::Logging;
use crate::metrics::ServerMetrics;
use crate::status::ServerStatus;
use crate::subscriptions::Subscriptions;
use crate::tool_rules::ToolRules;
use crate::transport::Transport;

/// Whether a server takes calls now, as the server actor publishes it for handles.
pub(crate) enum Gate {
    /// Connecting or running the handshake (a first start, a restart, a retry after a
    /// failed start): calls wait for readiness within their own deadline.
    Starting,
    /// Ready: calls go through this connection's table.
    Ready(Arc<Table>),
    /// Down after the transport lost the server (an HTTP connection refused, an event
    /// stream the server ended), the backoff's retry pending: calls wait for a restart as
    /// they do while `Starting`, and knock first ([`ServerCore::knocks`]), so that a server
    /// that may be back already is tried at once.
    Backoff,
    /// Not starting, or failing to start (a spawn failure, a refused handshake, a crash
    /// loop, a shutdown): calls fail at once with this reason, and the error behind it.
    Unavailable {
        because: crate::error::Unavailability,
        reason: Arc<str>,
        cause: Option<Arc<Error>>,
        /// When the failed attempt began, if the transport could not reach the server at
        /// all: a call made after that may find it back, so it knocks
        /// ([`ServerCore::knocks`]) and waits for an attempt of its own instead of failing.
        knock: Option<Instant>,
    },
}

/// Live kill handles of every server of a runtime, for the synchronous kill on drop.
/// Every running server's kill, by its core ([`ServerCore::kill_key`]): a server being
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

/// One server, as its handles and its actor both see it.
pub(crate) struct ServerCore {
    pub(crate) name: Arc<str>,
    /// The server's configuration, with the runtime's defaults filled in.
    pub(crate) config: ServerConfig,
    /// The runtime's request timeout (the last fallback of every deadline).
    pub(crate) default_timeout: Duration,
    /// The next request id: ids start at 1 and are never reused during the server's life,
    /// across restarts.
    ids: AtomicI64,
    /// The in-flight slots callers take.
    pub(crate) admission: Admission,
    /// Whether the server takes calls now, and through which connection.
    pub(crate) gate: ArcSwap<Gate>,
    /// Calls that found the server unreachable ask its actor for a new attempt here: one
    /// stored wake-up however many knock, and no lock.
    pub(crate) knocks: Notify,
    /// The server's status, published by its actor.
    pub(crate) status: watch::Sender<ServerStatus>,
    pub(crate) metrics: Arc<ServerMetrics>,
    pub(crate) logging: Logging,
    pub(crate) subscriptions: Subscriptions,
    /// The checks of the last tool listing, read on every call.
    pub(crate) tool_rules: ArcSwap<ToolRules>,
    /// What requests carry in the stateless era: `Some` while the server is spoken to in it,
    /// published by the actor before it opens the gate.
    pub(crate) dialect: ArcSwapOption<Modern>,
    /// How fresh a stateless server's lists are.
    pub(crate) freshness: ListFreshness,
    /// The tasks the server's handles watch now.
    pub(crate) tasks: crate::task_state::Watched,
    /// Where the runtime keeps the tasks it starts (the runtime's store).
    pub(crate) task_store: Arc<dyn crate::task_store::TaskStore>,
    /// The tasks the server asked this client to run (2025-11-25).
    pub(crate) received: Arc<crate::client::tasks::Received>,
    /// The actor's own requests in flight, which liveness does not count as callers' work.
    pub(crate) own_in_flight: AtomicUsize,
    /// The runtime's: where connections do their I/O, the servers' kill handles, the era
    /// verdicts, and the supervisor's inbox.
    pub(crate) io: IoPlaces,
    pub(crate) kills: Kills,
    pub(crate) eras: Arc<EraMemory>,
    pub(crate) events: mpsc::UnboundedSender<ServerEvent>,
}

impl ServerCore {
    /// The core of a server named `name`, configured with `config` (already resolved).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        name: Arc<str>,
        config: ServerConfig,
        default_timeout: Duration,
        metrics: Arc<ServerMetrics>,
        io: IoPlaces,
        kills: Kills,
        eras: Arc<EraMemory>,
        events: mpsc::UnboundedSender<ServerEvent>,
    ) -> Self {
        let status = watch::channel(ServerStatus::starting(config.transport.kind())).0;
        let freshness = ListFreshness::new(config.min_list_freshness_value());
        ServerCore {
            admission: Admission::new(config.max_in_flight_value(), metrics.in_flight.clone()),
            logging: Logging::new(name.clone()),
            subscriptions: Subscriptions::new(name.clone()),
            name,
            config,
            default_timeout,
            ids: AtomicI64::new(1),
            gate: ArcSwap::from_pointee(Gate::Starting),
            knocks: Notify::new(),
            status,
            metrics,
            tool_rules: ArcSwap::from_pointee(ToolRules::default()),
            dialect: ArcSwapOption::empty(),
            freshness,
            tasks: crate::task_state::Watched::default(),
            received: Arc::default(),
            task_store: Arc::new(crate::task_store::MemoryTaskStore::new()),
            own_in_flight: AtomicUsize::new(0),
            io,
            kills,
            eras,
            events,
        }
    }

    /// The same, keeping its tasks in `store` (the runtime's).
    pub(crate) fn with_task_store(mut self, store: Arc<dyn crate::task_store::TaskStore>) -> Self {
        self.task_store = store;
        self
    }

    /// A new request id.
    pub(crate) fn next_id(&self) -> i64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// The deadline rules of a request: the call's, else the tool's (`tool`), else the
    /// server's, else the runtime's.
    pub(crate) fn policy(&self, tool: Option<&str>, call: &ToolPolicy) -> DeadlinePolicy {
        DeadlinePolicy::resolve(
            call,
            tool.and_then(|t| self.config.tools.get(t)),
            self.config.timeout,
            self.default_timeout,
        )
    }

    /// The key of this server's kill in [`Kills`].
    pub(crate) fn kill_key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// How long the server's calls may take at most under its own settings and its tools'
    /// (a call's own longer timeout aside): how long a server being removed waits for them.
    pub(crate) fn longest_deadline(&self) -> Duration {
        let none = ToolPolicy::default();
        let longest = |p: DeadlinePolicy| match p.reset_on_progress {
            true => p.max_total.max(p.timeout),
            false => p.timeout,
        };
        self.config
            .tools
            .keys()
            .map(|tool| longest(self.policy(Some(tool), &none)))
            .fold(longest(self.policy(None, &none)), std::cmp::max)
    }

    /// Waits until none of the server's callers' requests are in flight, for at most
    /// `limit`.
    pub(crate) async fn drain(&self, limit: Duration) {
        let until = Instant::now() + limit;
        while self.admission.taken() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The deadline of a request of `tool` (or of any other method, with `None`) made at
    /// `started` with the call's own settings `call`.
    pub(crate) fn deadline(
        &self,
        tool: Option<&str>,
        call: &ToolPolicy,
        started: Instant,
    ) -> Instant {
        self.policy(tool, call).first(started)
    }

    /// The server's status now.
    pub(crate) fn status(&self) -> ServerStatus {
        self.status.borrow().clone()
    }
}

impl std::fmt::Debug for ServerCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
