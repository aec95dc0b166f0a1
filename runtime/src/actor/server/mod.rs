//! The server actor: owns one connection at a time and its lifecycle. It runs the MCP
//! handshake, publishes when the server takes calls, closes the connection's call table
//! once when the connection ends (every pending call fails at once with the cause), restarts
//! the server with backoff, watches liveness, re-lists tools on `list_changed`, and answers
//! the requests the server sends.
//!
//! Lifecycle: connect → `initialize` → `notifications/initialized` → `tools/list` (every
//! page) → ready → (disconnect → close the table → backoff → connect …). The actor's own
//! requests go through the connection's table like every caller's (see [`crate::calls`]);
//! their answers come back to the actor as the results of futures it spawned.
//!
//! The work is split by concern: [`lifecycle`] (connecting, handshake, going down,
//! restarts), [`liveness`] (pings and silence), [`inbound`] (what the server sends that is
//! not an answer), [`handlers`] (the server's requests, answered by the application),
//! [`features`] (resources and prompts listed into the status), [`listen`] (a stateless
//! server's `subscriptions/listen` stream), [`own`] (the actor's own requests).

mod era;
mod features;
pub(crate) mod handlers;
mod inbound;
mod lifecycle;
mod listen;
mod liveness;
mod own;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{
    Actor, ActorContext, AsyncContext, Context, Handler, Message as ActixMessage,
    ResponseActFuture, SpawnHandle, StreamHandler,
};
use arc_swap::ArcSwap;
use serde::Serialize;
use serde_json::value::RawValue;
use switchboard_codecs::{frame, mcp};
use switchboard_transports::connection::{Control, Event, KillHandle};
use switchboard_transports::{CloseReason, Connection};
use tokio::sync::{mpsc, watch};

use crate::calls::table::{Silence, Table};
use crate::calls::Gate;
use crate::config::ServerConfig;
use crate::error::Error;
use crate::metrics::CancelReason;
use crate::restart::{Backoff, Liveness};
use crate::status::{ServerState, ServerStatus};
use crate::transport::{Transport, TransportKind};
use own::OwnRequests;

/// How long a burst of `notifications/tools/list_changed` is gathered into one re-list.
const RELIST_DEBOUNCE: Duration = Duration::from_millis(100);

/// Live kill handles of every server of a runtime, for the synchronous kill on drop.
pub(crate) type Kills = Arc<Mutex<HashMap<Arc<str>, KillHandle>>>;

/// What server actors tell the supervisor.
#[derive(Debug)]
pub(crate) enum ServerEvent {
    /// A server's status (and maybe its tools) changed.
    StatusChanged,
    /// The actor stopped without being asked (it panicked): incarnation number.
    Died(Arc<str>, u64),
}

/// What an actor shares with its handles and its supervisor; outlives any one actor.
#[derive(Clone)]
pub(crate) struct Ties {
    pub(crate) name: Arc<str>,
    pub(crate) ids: Arc<AtomicI64>,
    pub(crate) kills: Kills,
    pub(crate) status: Arc<watch::Sender<ServerStatus>>,
    pub(crate) events: mpsc::UnboundedSender<ServerEvent>,
    pub(crate) metrics: Arc<crate::metrics::ServerMetrics>,
    pub(crate) incarnation: u64,
    /// Restarts before this incarnation (a panic restart keeps counting).
    pub(crate) restarts: u32,
    /// The server's log level and log broadcast.
    pub(crate) logging: Arc<crate::logging::Logging>,
    /// The checks of the last tool listing, read by handles on every call.
    pub(crate) tool_rules: Arc<ArcSwap<crate::tool_rules::ToolRules>>,
    /// The server's resource subscriptions.
    pub(crate) subscriptions: Arc<crate::subscriptions::Subscriptions>,
    /// Whether the server takes calls, read by handles on every call.
    pub(crate) gate: Arc<ArcSwap<Gate>>,
    /// Where connections' I/O runs; `None`: on the actor thread.
    pub(crate) io: IoPlaces,
    /// What requests carry in the modern era, published for handles before the gate opens.
    pub(crate) dialect: crate::era::Dialect,
    /// How fresh a modern server's lists are.
    pub(crate) freshness: Arc<crate::era::ListFreshness>,
    /// The era verdicts of auto servers, by origin or command (the runtime's).
    pub(crate) verdicts: Arc<crate::verdicts::Verdicts>,
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

/// An event from connection number `.0` (older connections' stragglers are ignored).
pub(crate) struct Inbound(pub(crate) u64, pub(crate) Event);

/// Where the actor is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    /// The era probe (`server/discover`) is out.
    Discovering,
    Initializing,
    ListingTools,
    Ready,
    /// Down, with a restart scheduled.
    Restarting,
    /// Down for good (restarts off, or a crash loop).
    Down,
    Stopping,
}

impl Phase {
    /// The request a connection in this phase waits for.
    fn handshake_method(self) -> &'static str {
        match self {
            Phase::Discovering => mcp::modern::SERVER_DISCOVER,
            Phase::ListingTools => mcp::methods::TOOLS_LIST,
            _ => mcp::methods::INITIALIZE,
        }
    }

    fn in_handshake(self) -> bool {
        matches!(
            self,
            Phase::Connecting | Phase::Discovering | Phase::Initializing | Phase::ListingTools
        )
    }
}

/// The live connection.
struct Link {
    generation: u64,
    /// The connection's call table; its writer is the connection's.
    table: Arc<Table>,
    control: Box<dyn Control>,
}

/// One server's actor.
pub(crate) struct ServerActor {
    ties: Ties,
    name: Arc<str>,
    config: ServerConfig,
    liveness: Liveness,
    backoff: Backoff,
    phase: Phase,
    link: Option<Link>,
    generation: u64,
    /// The startup window of the connection being set up.
    startup: Option<SpawnHandle>,
    connect_started: Instant,
    handshake_time: Option<Duration>,
    ready_since: Option<Instant>,
    restarts: u32,
    restart_timer: Option<SpawnHandle>,
    /// The last attempt failed to start (spawn, handshake): calls fail at once until the
    /// server is ready again, instead of waiting for a restart that may fail the same way.
    start_failed: bool,
    last_error: Option<Arc<str>>,
    init: Option<mcp::InitializeResult>,
    /// The era of the current connection's server, once known.
    era: Option<crate::era::Era>,
    tools: Arc<[mcp::Tool]>,
    resources: Arc<[mcp::Resource]>,
    resource_templates: Arc<[mcp::ResourceTemplate]>,
    prompts: Arc<[mcp::Prompt]>,
    relist_scheduled: bool,
    relist_running: bool,
    relist_again: bool,
    /// Consecutive silences: requests that timed out with nothing heard from the server.
    strikes: u32,
    /// When the last strike's request timed out: one written before is the same silence.
    last_strike: Option<Instant>,
    ping_outstanding: bool,
    last_heard: Instant,
    /// The table's count of heard events when the actor last looked.
    heard_seen: u64,
    /// Set when the actor stops in an orderly way; otherwise its drop reports a death.
    stopped_cleanly: bool,
    /// The `ready_since` whose handshake was measured.
    measured_ready: Option<Instant>,
    /// After a lost HTTP session: the rejected request, resent once the new one is ready.
    resend: Option<i64>,
    session_recovering: bool,
    /// Where tables report silences to this actor.
    silences: mpsc::UnboundedSender<Silence>,
    /// The actor's own requests in flight (handshake, lists, pings).
    own_outstanding: Arc<AtomicUsize>,
    /// A stateless server's `subscriptions/listen`.
    listening: listen::Listening,
}

impl ServerActor {
    pub(crate) fn new(
        ties: Ties,
        config: ServerConfig,
        silences: mpsc::UnboundedSender<Silence>,
    ) -> Self {
        let restart = config.restart.clone().unwrap_or_default();
        let liveness = config.liveness.clone().unwrap_or_default();
        ServerActor {
            name: ties.name.clone(),
            restarts: ties.restarts,
            ties,
            config,
            liveness,
            backoff: Backoff::new(restart),
            phase: Phase::Connecting,
            link: None,
            generation: 0,
            startup: None,
            connect_started: Instant::now(),
            handshake_time: None,
            ready_since: None,
            restart_timer: None,
            start_failed: false,
            last_error: None,
            init: None,
            era: None,
            tools: Arc::from(Vec::new()),
            resources: Arc::from(Vec::new()),
            resource_templates: Arc::from(Vec::new()),
            prompts: Arc::from(Vec::new()),
            relist_scheduled: false,
            relist_running: false,
            relist_again: false,
            strikes: 0,
            last_strike: None,
            ping_outstanding: false,
            last_heard: Instant::now(),
            heard_seen: 0,
            stopped_cleanly: false,
            measured_ready: None,
            resend: None,
            session_recovering: false,
            silences,
            own_outstanding: Arc::new(AtomicUsize::new(0)),
            listening: listen::Listening::default(),
        }
    }

    /// What the actor's own requests on `link` need.
    fn own_requests(&self, link: &Link) -> OwnRequests {
        OwnRequests {
            table: link.table.clone(),
            ids: self.ties.ids.clone(),
            outstanding: self.own_outstanding.clone(),
            dialect: self.ties.dialect.clone(),
            logging: self.ties.logging.clone(),
        }
    }

    /// Tells handles whether (and through which table) the server takes calls. Stored
    /// before the status is published, so a caller woken by the status sees it.
    fn set_gate(&self, gate: Gate) {
        self.ties.gate.store(Arc::new(gate));
    }

    /// Publishes a new status (and its metrics) and tells the supervisor.
    fn publish(&mut self, state: ServerState) {
        let metrics = &self.ties.metrics;
        let ready = matches!(state, ServerState::Ready);
        metrics.up.set(if ready { 1.0 } else { 0.0 });
        metrics.tools.set(self.tools.len() as f64);
        metrics.restarts_now(self.restarts);
        if ready && self.measured_ready != self.ready_since {
            self.measured_ready = self.ready_since;
            if let Some(handshake) = self.handshake_time {
                metrics.handshake.record(handshake.as_secs_f64());
            }
        }
        let pid = self.link.as_ref().and_then(|l| l.control.pid());
        let transport = self
            .link
            .as_ref()
            .map(|l| TransportKind::of_connection(l.control.transport()))
            .unwrap_or_else(|| self.config.transport.kind());
        let init = self.init.as_ref();
        self.ties.status.send_replace(ServerStatus {
            state,
            protocol_version: init.map(|i| Arc::from(i.protocol_version.as_str())),
            era: self.era,
            // A modern server that did not say who it is has no identity to show.
            server_info: init
                .filter(|i| !i.server_info.name.is_empty() || !self.is_modern())
                .map(|i| Arc::new(i.server_info.clone())),
            capabilities: init.map(|i| Arc::new(i.capabilities.clone())),
            instructions: init.and_then(|i| i.instructions.as_deref().map(Arc::from)),
            tools: self.tools.clone(),
            resources: self.resources.clone(),
            resource_templates: self.resource_templates.clone(),
            prompts: self.prompts.clone(),
            pid,
            transport,
            restarts: self.restarts,
            ready_since: self.ready_since,
            handshake: self.handshake_time,
            since: Instant::now(),
        });
        let _ = self.ties.events.send(ServerEvent::StatusChanged);
    }

    /// Sends one of the actor's own requests through the connection's table, like any
    /// caller's, and hands its answer to `then` if the connection is still the same.
    fn request(
        &mut self,
        ctx: &mut Context<Self>,
        method: &'static str,
        params: serde_json::Value,
        timeout: Option<Duration>,
        then: impl FnOnce(&mut Self, Result<Box<RawValue>, Error>, &mut Context<Self>) + 'static,
    ) {
        let Some(link) = &self.link else { return };
        let own = self.own_requests(link);
        let sending = async move { own.send(method, params, timeout).await };
        self.when_same_link(ctx, sending, |act, answer, ctx| {
            // A closed table means the connection is gone; its close was handled already.
            if let Some(answer) = answer {
                then(act, answer, ctx);
            }
        });
    }

    /// Runs `work` and hands its output to `then`, if the connection is still the same one
    /// when it is done. The handle cancels the work (dropping it).
    fn when_same_link<T: 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        work: impl std::future::Future<Output = T> + 'static,
        then: impl FnOnce(&mut Self, T, &mut Context<Self>) + 'static,
    ) -> SpawnHandle {
        let generation = self.link.as_ref().map(|l| l.generation);
        ctx.spawn(work.into_actor(self).map(move |output, act, ctx| {
            if act.link.as_ref().map(|l| l.generation) == generation {
                then(act, output, ctx);
            }
        }))
    }

    fn notify(&self, method: &str, params: &impl Serialize) {
        if let Some(link) = &self.link {
            link.table.write(None, frame::notification(method, params));
        }
    }

    fn unregister_kill(&self) {
        if let Ok(mut kills) = self.ties.kills.lock() {
            kills.remove(&self.name);
        }
    }
}

impl Drop for ServerActor {
    fn drop(&mut self) {
        if let Some(link) = self.link.take() {
            let reason = Arc::new(actor_stopped());
            link.table
                .close(|waiter| waiter.disconnected(reason.clone()));
        }
        if !self.stopped_cleanly {
            // Dropped without stopping: the actor panicked (or its thread is going away).
            let _ = self
                .ties
                .events
                .send(ServerEvent::Died(self.name.clone(), self.ties.incarnation));
        }
    }
}

impl Actor for ServerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let freshness = self.ties.freshness.clone();
        let stale = futures_util::stream::unfold(freshness, |freshness| async move {
            freshness.tools.stale().await;
            Some((StaleTools, freshness))
        });
        ctx.add_stream(stale);
        for which in [features::Lists::Resources, features::Lists::Prompts] {
            let freshness = self.ties.freshness.clone();
            let stale = futures_util::stream::unfold(freshness, move |freshness| async move {
                match which {
                    features::Lists::Resources => freshness.resources.stale().await,
                    features::Lists::Prompts => freshness.prompts.stale().await,
                }
                Some((StaleList(which), freshness))
            });
            ctx.add_stream(stale);
        }
        // Changes of the subscribed URIs, which a stateless server's listen asks for.
        let uris =
            tokio_stream::wrappers::WatchStream::from_changes(self.ties.subscriptions.revisions());
        ctx.add_stream(tokio_stream::StreamExt::map(uris, |_| listen::UrisChanged));
        if self.liveness.is_enabled() {
            let tick = (self.liveness.interval / 4).max(Duration::from_millis(10));
            ctx.run_interval(tick, |act, ctx| act.liveness_tick(ctx));
        }
        self.connect(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        if !self.stopped_cleanly {
            // Nobody asked us to stop: actix is dropping a context whose actor panicked (the
            // task harness caught the panic), or the whole actor thread is going away. For
            // callers that is a crash: calls wait for the supervisor's new actor, and those
            // on this connection fail now (the drop reports the death).
            self.set_gate(Gate::Starting);
            if let Some(link) = self.link.take() {
                self.unregister_kill();
                let reason = Arc::new(actor_stopped());
                link.table
                    .close(|waiter| waiter.disconnected(reason.clone()));
            }
        }
    }
}

/// A caller found a modern server's tool listing past its `ttlMs`.
pub(crate) struct StaleTools;

impl StreamHandler<StaleTools> for ServerActor {
    fn handle(&mut self, _: StaleTools, ctx: &mut Context<Self>) {
        // Callers wait for this listing: no debounce (the burst already shares it).
        match self.phase {
            Phase::Ready => self.relist(ctx),
            // The listing under way ends the callers' wait.
            Phase::ListingTools => {}
            // No connection to list on: the callers go on, and wait for readiness instead.
            _ => self.ties.freshness.tools.forget(),
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

/// A caller used a modern server's resources or prompts past their `ttlMs`.
pub(crate) struct StaleList(features::Lists);

impl StreamHandler<StaleList> for ServerActor {
    fn handle(&mut self, StaleList(which): StaleList, ctx: &mut Context<Self>) {
        self.list_features(which, ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl StreamHandler<Silence> for ServerActor {
    fn handle(&mut self, silence: Silence, ctx: &mut Context<Self>) {
        self.on_silence(silence, ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl StreamHandler<Inbound> for ServerActor {
    fn handle(&mut self, Inbound(generation, event): Inbound, ctx: &mut Context<Self>) {
        let current = self.link.as_ref().map(|l| l.generation);
        if current == Some(generation) {
            self.on_event(event, ctx);
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

/// Close the connection gracefully and stop the actor.
pub(crate) struct Shutdown;

impl ActixMessage for Shutdown {
    type Result = ();
}

impl Handler<Shutdown> for ServerActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) -> Self::Result {
        self.phase = Phase::Stopping;
        self.stopped_cleanly = true;
        if let Some(timer) = self.restart_timer.take() {
            ctx.cancel_future(timer);
        }
        let reason: Arc<str> = "the runtime is shutting down".into();
        self.set_gate(Gate::Unavailable {
            reason: reason.clone(),
            cause: None,
        });
        let link = self.link.take();
        if let Some(link) = &link {
            // Requests the server is working on are abandoned: say so before closing.
            let table = &link.table;
            table.close(|waiter| {
                if &*waiter.method != mcp::methods::INITIALIZE {
                    table.cancel(
                        waiter.id(),
                        CancelReason::Shutdown,
                        "the client is shutting down",
                    );
                }
                Error::Unavailable {
                    server: table.server().clone(),
                    tool: waiter.tool.clone(),
                    reason: reason.clone(),
                    cause: None,
                }
            });
        }
        self.unregister_kill();
        Box::pin(
            async move {
                if let Some(link) = link {
                    link.control.close().await;
                }
            }
            .into_actor(self)
            .map(|(), act, ctx| {
                act.publish(ServerState::Stopped);
                ctx.stop();
            }),
        )
    }
}

/// Start a server that is down or failed again, forgetting its crash loop.
pub(crate) struct Restart;

impl ActixMessage for Restart {
    type Result = ();
}

impl Handler<Restart> for ServerActor {
    type Result = ();

    fn handle(&mut self, _: Restart, ctx: &mut Context<Self>) {
        if !matches!(self.phase, Phase::Down | Phase::Restarting) {
            return;
        }
        if let Some(timer) = self.restart_timer.take() {
            ctx.cancel_future(timer);
        }
        self.backoff.reset();
        self.restarts += 1;
        // Asked to start over: the server may have been redeployed in another era.
        self.forget_verdict();
        self.connect(ctx);
    }
}

/// The application's roots changed: tell the server, if it is ready and was offered roots.
pub(crate) struct NotifyRootsChanged;

impl ActixMessage for NotifyRootsChanged {
    type Result = ();
}

impl Handler<NotifyRootsChanged> for ServerActor {
    type Result = ();

    fn handle(&mut self, _: NotifyRootsChanged, _ctx: &mut Context<Self>) {
        let offered = self
            .config
            .handlers
            .as_ref()
            .is_some_and(|h| h.roots.is_some());
        // A server not ready yet asks for the roots after its handshake anyway; a modern one
        // asks in each input-required result (the era has no roots notification).
        if offered && self.phase == Phase::Ready && !self.is_modern() {
            self.notify(mcp::methods::ROOTS_LIST_CHANGED, &serde_json::json!({}));
        }
    }
}

/// Make the actor panic (tests prove that a panicking actor counts as a crash).
pub(crate) struct InjectPanic;

impl ActixMessage for InjectPanic {
    type Result = ();
}

impl Handler<InjectPanic> for ServerActor {
    type Result = ();

    fn handle(&mut self, _: InjectPanic, _ctx: &mut Context<Self>) {
        panic!("panic injected into the actor of server `{}`", self.name);
    }
}

/// Why a transport could not be opened.
pub(super) type OpenError = Arc<dyn std::error::Error + Send + Sync>;

/// Opens the configured transport.
async fn open(name: Arc<str>, transport: Transport) -> Result<Connection, OpenError> {
    match transport {
        #[cfg(all(unix, feature = "stdio"))]
        Transport::Stdio(stdio) => switchboard_transports::stdio::connect(&name, &stdio.config)
            .await
            .map_err(|e| Arc::new(e) as OpenError),
        Transport::Memory(memory) => {
            let (conn, io) = switchboard_transports::memory::connect(&name);
            // Where the connection's I/O runs, so an in-process server shares its thread.
            tokio::spawn((memory.serve)(io));
            Ok(conn)
        }
        #[cfg(feature = "http")]
        Transport::Http(target) => {
            use crate::transport::HttpKind;
            use switchboard_transports::http;
            let kind = match target.kind {
                HttpKind::Sse => http::Kind::Sse,
                HttpKind::StreamableHttp => http::Kind::StreamableHttp,
                HttpKind::Auto => http::Kind::Auto,
            };
            let config = http::Config::new(target.url)
                .headers(target.headers)
                .bearer_token(target.bearer)
                .auth(target.auth);
            http::connect(&name, &config, kind)
                .await
                .map_err(|e| Arc::new(e) as OpenError)
        }
        #[cfg(not(feature = "http"))]
        Transport::Http(target) => Err(Arc::from(
            Box::<dyn std::error::Error + Send + Sync>::from(format!(
                "HTTP transports are not compiled in (feature `http`); cannot reach {}",
                target.url
            )),
        )),
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("`{}` is valid JSON")
}

/// A uniform random number in 0..1 for backoff jitter, from std's per-instance random keys.
fn random_unit() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Why callers of an actor that stopped without being asked lost their requests.
fn actor_stopped() -> CloseReason {
    CloseReason::aborted("the server's actor stopped unexpectedly")
}
