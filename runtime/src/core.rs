//! [`ServerCore`]: the one value per server that its handles and its actor share.
//!
//! Everything both sides of a server need lives here once: its name and resolved
//! configuration, the numbering of its requests, the in-flight slots, the [`Gate`] that says
//! whether it takes calls (and when it does, the [`Connected`] snapshot a call goes
//! through), its status, metrics, logging, subscriptions and the freshness of its lists. The
//! supervisor makes a core when a server is added; every handle and every incarnation of the
//! server's actor hold the same `Arc<ServerCore>`, and each adds only what is its own (the
//! actor: its connection and its state machines; a handle: nothing).
//!
//! What a call needs of its server is one value: the actor publishes a new [`Connected`]
//! when the server becomes ready or lists its tools again, and a call reads the gate once
//! and goes on with that snapshot. The [`ServerStatus`] is what embedders observe; no call
//! reads it to decide anything.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::{watch, Notify};

use crate::admission::Admission;
use crate::call_table::Table;
use crate::config::ServerConfig;
use crate::deadline::{DeadlinePolicy, ToolPolicy};
use crate::era::Dialect;
use crate::error::{Error, ErrorContext, ErrorKind};
use crate::framer::{TaskAsk, TaskParams};
use crate::freshness::ListFreshness;
use crate::logging::Logging;
use crate::metrics::ServerMetrics;
use crate::status::ServerStatus;
use crate::subscriptions::Subscriptions;
use crate::tool_rules::ToolRules;

/// Whether a server takes calls now, as the server actor publishes it for handles.
pub(crate) enum Gate {
    /// Connecting or running the handshake (a first start, a restart, a retry after a
    /// failed start): calls wait for readiness within their own deadline.
    Starting,
    /// Ready: calls go through this connection, as this snapshot says.
    Ready(Arc<Connected>),
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

/// What a call needs of its server, for one connection: published whole by the server's
/// actor when the server becomes ready and whenever it lists its tools again, read once per
/// round of a request (one load of the gate). What must be seen together is one value here:
/// the table a frame goes to and the era the frame is written in, the checks of the listing
/// the call was routed by.
pub(crate) struct Connected {
    /// The connection's call table; its writer is the connection's.
    pub(crate) table: Arc<Table>,
    /// How the connection's requests are written in the stateless era; `None` in the
    /// handshake era.
    pub(crate) dialect: Option<Arc<Dialect>>,
    /// The checks of the server's last tool listing on this connection.
    pub(crate) tool_rules: Arc<ToolRules>,
    /// Whether a handshake-era server takes tool calls as tasks (it declared
    /// `tasks.requests.tools.call`).
    pub(crate) takes_tasks: bool,
}

impl Connected {
    /// The `params.task` of a call of `tool` asking `ask` through this connection: when the
    /// tool requires a task, or the caller asks for one where the tool and the server allow
    /// it. `None` for a stateless server, which decides itself (the tasks extension).
    pub(crate) fn task_params(
        &self,
        core: &ServerCore,
        tool: &Arc<str>,
        ask: TaskAsk,
    ) -> Result<Option<TaskParams>, Error> {
        let rules = &self.tool_rules;
        let required = rules.requires_task(tool);
        if !(required || ask.asked) || self.dialect.is_some() {
            return Ok(None);
        }
        let cx = || ErrorContext::of_tool(core.name.clone(), tool.clone());
        if !self.takes_tasks {
            return Err(match required {
                true => cx().error(ErrorKind::TaskRequired),
                false => cx().error(ErrorKind::TaskNotAllowed {
                    reason: "the server declares no tasks.requests.tools.call capability",
                }),
            });
        }
        if !rules.allows_task(tool) {
            return Err(cx().error(ErrorKind::TaskNotAllowed {
                reason: "its execution.taskSupport is absent or \"forbidden\"",
            }));
        }
        Ok(Some(TaskParams {
            ttl_ms: Some(ask.ttl_ms),
        }))
    }
}

/// The gate, and a signal for the calls that wait for it to change: raised when the actor
/// has published what goes with the change (see [`GateCell::wake`]).
pub(crate) struct GateCell {
    now: ArcSwap<Gate>,
    changes: watch::Sender<()>,
}

impl GateCell {
    fn new(gate: Gate) -> Self {
        GateCell {
            now: ArcSwap::from_pointee(gate),
            changes: watch::channel(()).0,
        }
    }

    /// The gate now.
    pub(crate) fn load(&self) -> arc_swap::Guard<Arc<Gate>> {
        self.now.load()
    }

    /// Replaces the gate: calls made from now on go by it.
    pub(crate) fn store(&self, gate: Gate) {
        self.now.store(Arc::new(gate));
    }

    /// Wakes the calls that wait: they read the gate again. The actor wakes them once it has
    /// published the whole of a change (the gate, then the status), so that a call failed by
    /// the gate finds the status saying why.
    pub(crate) fn wake(&self) {
        self.changes.send_replace(());
    }

    /// The wake-ups from now on: subscribe, then read the gate, then wait, and no change
    /// slips between the read and the wait.
    pub(crate) fn changes(&self) -> watch::Receiver<()> {
        self.changes.subscribe()
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
    /// Whether the server takes calls now, and what they go through.
    pub(crate) gate: GateCell,
    /// Calls that found the server unreachable ask its actor for a new attempt here: one
    /// stored wake-up however many knock, and no lock.
    pub(crate) knocks: Notify,
    /// The server's status, published by its actor.
    pub(crate) status: watch::Sender<ServerStatus>,
    pub(crate) metrics: Arc<ServerMetrics>,
    pub(crate) logging: Logging,
    pub(crate) subscriptions: Subscriptions,
    /// How fresh a stateless server's lists are.
    pub(crate) freshness: ListFreshness,
    /// The tasks the server's handles watch now.
    pub(crate) tasks: crate::task_state::Watched,
    /// Where the runtime keeps the tasks it starts (the runtime's store).
    pub(crate) task_store: Arc<dyn crate::task_store::TaskStore>,
    /// The tasks the server asked this client to run (2025-11-25).
    pub(crate) received: Arc<crate::client::tasks::Received>,
    /// The actor's own requests in flight, which liveness does not count as callers' work
    /// (the exchange, which every request goes through, counts them).
    pub(crate) own_in_flight: AtomicUsize,
}

impl ServerCore {
    /// The core of a server named `name`, configured with `config` (already resolved).
    pub(crate) fn new(
        name: Arc<str>,
        config: ServerConfig,
        default_timeout: Duration,
        metrics: Arc<ServerMetrics>,
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
            gate: GateCell::new(Gate::Starting),
            knocks: Notify::new(),
            status,
            metrics,
            freshness,
            tasks: crate::task_state::Watched::default(),
            received: Arc::default(),
            task_store: Arc::new(crate::task_store::MemoryTaskStore::new()),
            own_in_flight: AtomicUsize::new(0),
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

    /// The key of this server's kill in the runtime's registry of kill handles.
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

    /// The checks of the tool listing calls go by now (none while the server is not
    /// ready), for what is read after a call: a task's result.
    pub(crate) fn tool_rules_now(&self) -> Arc<ToolRules> {
        match &**self.gate.load() {
            Gate::Ready(connected) => connected.tool_rules.clone(),
            _ => Arc::default(),
        }
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
