//! The server actor: owns one connection at a time and its lifecycle. It runs the MCP
//! handshake, publishes when the server takes calls, closes the connection's call table
//! once when the connection ends (every pending call fails at once with the cause), restarts
//! the server with backoff, watches liveness, re-lists tools on `list_changed`, and answers
//! the requests the server sends.
//!
//! Lifecycle: connect → era ([`handshake`]: `server/discover`, or `initialize` and
//! `notifications/initialized`) → `tools/list` (every page) → ready → (disconnect → close
//! the table → backoff → connect …). The actor's own requests go through the same exchange
//! as every caller's, on its own connection (see [`crate::exchange`]); their answers come
//! back to the actor as the results of futures it spawned.
//!
//! The actor's state is the server's [`ServerCore`] (shared with its handles), the
//! runtime's [`Wiring`], its
//! [`Phase`] (which carries the phase's data), its connection, and small owned machines,
//! each a pure type tested on its own: [`Backoff`] (restarts), [`relist::Relist`] (tool
//! relisting), [`strikes::Strikes`] (liveness), [`session::Session`] (a lost HTTP
//! session), [`half_open::HalfOpen`] (attempts callers ask for when the server could not be
//! reached). The work is split by concern: [`lifecycle`] (connecting, going down,
//! restarts), [`handshake`] (the era and the handshake), [`tools`] (listing tools),
//! [`lists`] (resources and prompts listed into the status), [`liveness`] (pings and
//! silence), [`listen`] (a stateless server's `subscriptions/listen` stream), [`inbound`]
//! (what the server sends that is not an answer) and [`server_requests`] (the server's
//! requests, answered by the application).

mod half_open;
mod handshake;
mod inbound;
mod lifecycle;
mod listen;
mod lists;
mod liveness;
mod relist;
mod server_requests;
mod session;
mod strikes;
mod tools;
mod wiring;

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{
    Actor, ActorContext, AsyncContext, Context, Handler, Message as ActixMessage,
    ResponseActFuture, SpawnHandle, StreamHandler,
};
use serde::Serialize;
use serde_json::value::RawValue;
use switchboard_codecs::mcp;
use switchboard_transports::connection::{Control, Event};
use switchboard_transports::{CloseReason, Connection};
use tokio::sync::mpsc;

use crate::call_table::{Silence, Table};
use crate::core::{Connected, Gate, ServerCore};
use crate::era::Dialect;
use crate::error::{Error, ErrorContext, ErrorKind, Unavailability};
use crate::exchange::{exchange, Request};
use crate::framer;
use crate::metrics::CancelReason;
use crate::restart::{Backoff, Liveness};
use crate::status::{ServerState, ServerStatus};
use crate::transport::{Transport, TransportKind};
pub(crate) use wiring::{IoPlaces, Kills, ServerEvent, Wiring};

/// An event from connection number `.0` (older connections' stragglers are ignored).
pub(crate) struct Inbound(pub(crate) u64, pub(crate) Event);

/// Where the actor is in its lifecycle, with what that phase needs.
#[derive(Debug)]
enum Phase {
    Connecting,
    /// The era probe (`server/discover`) is out.
    Discovering,
    Initializing,
    ListingTools,
    /// Ready since then.
    Ready {
        since: Instant,
    },
    /// Down, with a restart scheduled: `timer` starts the next attempt, at `due` (the
    /// backoff's retry) or, when `early`, sooner for a call that knocked.
    Restarting {
        timer: SpawnHandle,
        due: Instant,
        early: bool,
    },
    /// Down for good (restarts off, or a crash loop).
    Down,
    /// Stopping on request (nothing else is done any more).
    Stopping,
}

impl Phase {
    fn in_handshake(&self) -> bool {
        matches!(
            self,
            Phase::Connecting | Phase::Discovering | Phase::Initializing | Phase::ListingTools
        )
    }

    fn is_ready(&self) -> bool {
        matches!(self, Phase::Ready { .. })
    }

    /// The request a connection in this phase waits for.
    fn handshake_method(&self) -> &'static str {
        match self {
            Phase::Discovering => mcp::modern::SERVER_DISCOVER,
            Phase::ListingTools => mcp::methods::TOOLS_LIST,
            _ => mcp::methods::INITIALIZE,
        }
    }
}

/// The live connection.
struct Link {
    generation: u64,
    /// The connection's call table; its writer is the connection's.
    table: Arc<Table>,
    control: Box<dyn Control>,
}

/// What the handshake learnt: what the server said of itself, in either era.
#[derive(Debug, Default)]
struct Learnt {
    init: Option<mcp::InitializeResult>,
    /// The era of the current connection's server, once known.
    era: Option<crate::era::Era>,
    /// How the current connection's requests are written, once it is known to speak the
    /// stateless era.
    dialect: Option<Arc<Dialect>>,
    tools: Arc<[mcp::Tool]>,
    /// The checks `tools` imply, compiled once per listing.
    tool_rules: Arc<crate::tool_rules::ToolRules>,
    resources: Arc<[mcp::Resource]>,
    resource_templates: Arc<[mcp::ResourceTemplate]>,
    prompts: Arc<[mcp::Prompt]>,
}

/// One server's actor.
pub(crate) struct ServerActor {
    core: Arc<ServerCore>,
    /// The runtime's, that handles never use.
    wiring: Wiring,
    name: Arc<str>,
    /// Which incarnation of the server's actor this is (a panicked actor is replaced).
    incarnation: u64,
    liveness: Liveness,
    backoff: Backoff,
    phase: Phase,
    link: Option<Link>,
    generation: u64,
    /// The startup window of the connection being set up.
    startup: Option<SpawnHandle>,
    connect_started: Instant,
    handshake_time: Option<Duration>,
    restarts: u32,
    last_error: Option<Arc<str>>,
    learnt: Learnt,
    relist: relist::Relist,
    strikes: strikes::Strikes,
    session: session::Session,
    /// Where tables report silences to this actor.
    silences: mpsc::UnboundedSender<Silence>,
    /// A stateless server's `subscriptions/listen`.
    listening: listen::Listening,
    /// When attempts began, which bounds the early ones calls ask for.
    half_open: half_open::HalfOpen,
    /// While an early attempt runs: when the retry it ran ahead of was due.
    early: Option<Instant>,
}

impl ServerActor {
    pub(crate) fn new(
        core: Arc<ServerCore>,
        wiring: Wiring,
        incarnation: u64,
        restarts: u32,
        silences: mpsc::UnboundedSender<Silence>,
    ) -> Self {
        let config = &core.config;
        let restart = config.restart.clone().unwrap_or_default();
        let liveness = config.liveness.clone().unwrap_or_default();
        // A new incarnation (the last one's actor panicked) goes on offering what the server
        // last listed while it starts again, as any restart does.
        let learnt = {
            let last = core.status.borrow();
            Learnt {
                tools: last.tools.clone(),
                resources: last.resources.clone(),
                resource_templates: last.resource_templates.clone(),
                prompts: last.prompts.clone(),
                ..Learnt::default()
            }
        };
        ServerActor {
            name: core.name.clone(),
            core,
            wiring,
            incarnation,
            restarts,
            liveness,
            backoff: Backoff::new(restart),
            phase: Phase::Connecting,
            link: None,
            generation: 0,
            startup: None,
            connect_started: Instant::now(),
            handshake_time: None,
            last_error: None,
            learnt,
            relist: relist::Relist::default(),
            strikes: strikes::Strikes::new(0, Instant::now()),
            session: session::Session::default(),
            silences,
            listening: listen::Listening::default(),
            half_open: half_open::HalfOpen::default(),
            early: None,
        }
    }

    /// Tells handles whether the server takes calls; the calls that wait see it when the
    /// status is published ([`publish`](Self::publish)).
    fn set_gate(&self, gate: Gate) {
        self.core.gate.store(gate);
    }

    /// Lets calls through the current connection, as it is now: its table, its era and the
    /// checks of the last tool listing, one snapshot (see [`Connected`]).
    fn open_gate(&self) {
        let Some(link) = &self.link else { return };
        let takes_tasks = self.learnt.init.as_ref().is_some_and(|init| {
            crate::task_state::shape_of(crate::Era::Legacy, &init.capabilities).is_some()
        });
        self.set_gate(Gate::Ready(Arc::new(Connected {
            table: link.table.clone(),
            dialect: self.learnt.dialect.clone(),
            tool_rules: self.learnt.tool_rules.clone(),
            takes_tasks,
        })));
    }

    /// Publishes a new status (and its metrics) and tells the supervisor.
    fn publish(&mut self, state: ServerState) {
        let metrics = &self.core.metrics;
        let ready = matches!(state, ServerState::Ready);
        let learnt = &self.learnt;
        metrics.up.set(if ready { 1.0 } else { 0.0 });
        metrics.tools.set(learnt.tools.len() as f64);
        metrics.restarts_now(self.restarts);
        let pid = self.link.as_ref().and_then(|l| l.control.pid());
        let transport = self
            .link
            .as_ref()
            .map(|l| TransportKind::from(l.control.kind()))
            .unwrap_or_else(|| self.core.config.transport.kind());
        let init = learnt.init.as_ref();
        let modern = learnt.era == Some(crate::era::Era::Modern);
        let ready_since = match self.phase {
            Phase::Ready { since } => Some(since),
            _ => None,
        };
        self.core.status.send_replace(ServerStatus {
            state,
            protocol_version: init.map(|i| Arc::from(i.protocol_version.as_str())),
            era: learnt.era,
            // A modern server that did not say who it is has no identity to show.
            server_info: init
                .filter(|i| !i.server_info.name.is_empty() || !modern)
                .map(|i| Arc::new(i.server_info.clone())),
            capabilities: init.map(|i| Arc::new(i.capabilities.clone())),
            instructions: init.and_then(|i| i.instructions.as_deref().map(Arc::from)),
            tools: learnt.tools.clone(),
            resources: learnt.resources.clone(),
            resource_templates: learnt.resource_templates.clone(),
            prompts: learnt.prompts.clone(),
            pid,
            transport,
            restarts: self.restarts,
            ready_since,
            handshake: self.handshake_time,
            since: Instant::now(),
        });
        self.core.gate.wake();
        let _ = self.wiring.events.send(ServerEvent::StatusChanged);
    }

    /// Sends one of the actor's own requests through the exchange, on the current
    /// connection, and hands its answer to `then` if the connection is still the same.
    fn request(
        &mut self,
        ctx: &mut Context<Self>,
        method: &'static str,
        params: serde_json::Value,
        timeout: Option<Duration>,
        then: impl FnOnce(&mut Self, Result<Box<RawValue>, Error>, &mut Context<Self>) + 'static,
    ) {
        let Some(request) = self.own_request(method, params, timeout) else {
            return;
        };
        let core = self.core.clone();
        let sending = async move { exchange(&core, request).await };
        self.when_same_link(ctx, sending, then);
    }

    /// One of the actor's own requests on the current connection, if there is one.
    fn own_request(
        &self,
        method: &'static str,
        params: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Option<Request> {
        let link = self.link.as_ref()?;
        Some(Request::actor(
            method,
            params,
            timeout,
            link.table.clone(),
            self.learnt.dialect.clone(),
        ))
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

    fn notify(&self, method: &'static str, params: &impl Serialize) {
        if let Some(link) = &self.link {
            link.table.write(framer::notification(method, params));
        }
    }

    fn unregister_kill(&self) {
        if let Ok(mut kills) = self.wiring.kills.lock() {
            kills.remove(&self.core.kill_key());
        }
    }

    /// Whether the actor was stopped on request (otherwise its end is a death).
    fn stopped_on_request(&self) -> bool {
        matches!(self.phase, Phase::Stopping)
    }
}

impl Drop for ServerActor {
    fn drop(&mut self) {
        if let Some(link) = self.link.take() {
            let reason = Arc::new(actor_stopped());
            link.table
                .close(|waiter| waiter.disconnected(reason.clone()));
        }
        if !self.stopped_on_request() {
            // Dropped without stopping: the actor panicked (or its thread is going away).
            let _ = self
                .wiring
                .events
                .send(ServerEvent::Died(self.name.clone(), self.incarnation));
        }
    }
}

impl Actor for ServerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let core = self.core.clone();
        let stale = futures_util::stream::unfold(core, |core| async move {
            core.freshness.tools.stale().await;
            Some((StaleTools, core))
        });
        ctx.add_stream(stale);
        for which in [lists::Lists::Resources, lists::Lists::Prompts] {
            let core = self.core.clone();
            let stale = futures_util::stream::unfold(core, move |core| async move {
                match which {
                    lists::Lists::Resources => core.freshness.resources.stale().await,
                    lists::Lists::Prompts => core.freshness.prompts.stale().await,
                }
                Some((StaleList(which), core))
            });
            ctx.add_stream(stale);
        }
        // Changes of the subscribed URIs, which a stateless server's listen asks for.
        let uris =
            tokio_stream::wrappers::WatchStream::from_changes(self.core.subscriptions.revisions());
        ctx.add_stream(tokio_stream::StreamExt::map(uris, |_| listen::UrisChanged));
        let core = self.core.clone();
        let knocks = futures_util::stream::unfold(core, |core| async move {
            core.knocks.notified().await;
            Some((Knocked, core))
        });
        ctx.add_stream(knocks);
        if self.liveness.is_enabled() {
            let tick = (self.liveness.interval / 4).max(Duration::from_millis(10));
            ctx.run_interval(tick, |act, ctx| act.liveness_tick(ctx));
        }
        self.connect(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        if !self.stopped_on_request() {
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
        if self.phase.is_ready() {
            self.tools_stale(ctx);
        } else if !matches!(self.phase, Phase::ListingTools) {
            // No connection to list on: the callers go on, and wait for readiness instead.
            // (During the handshake's listing, that listing ends the callers' wait.)
            self.core.freshness.tools.forget();
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

/// A caller found the server unreachable by an attempt made before its call.
pub(crate) struct Knocked;

impl StreamHandler<Knocked> for ServerActor {
    fn handle(&mut self, _: Knocked, ctx: &mut Context<Self>) {
        self.on_knock(ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

/// A caller used a modern server's resources or prompts past their `ttlMs`.
pub(crate) struct StaleList(lists::Lists);

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

/// Close the connection gracefully and stop the actor; `within`, when given, caps the close
/// (`Control::close_within`).
pub(crate) struct Shutdown {
    pub(crate) within: Option<Duration>,
}

impl Shutdown {
    /// The close with the server's own waits.
    pub(crate) const GRACEFUL: Shutdown = Shutdown { within: None };
}

impl ActixMessage for Shutdown {
    type Result = ();
}

impl Handler<Shutdown> for ServerActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: Shutdown, ctx: &mut Context<Self>) -> Self::Result {
        if let Phase::Restarting { timer, .. } = std::mem::replace(&mut self.phase, Phase::Stopping)
        {
            ctx.cancel_future(timer);
        }
        let reason: Arc<str> = "the runtime is shutting down".into();
        self.set_gate(Gate::Unavailable {
            because: Unavailability::Stopped,
            reason: reason.clone(),
            cause: None,
            knock: None,
        });
        self.core.admission.close();
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
                ErrorContext::of_server(table.server().clone())
                    .with_tool(waiter.tool.clone())
                    .error(ErrorKind::Unavailable {
                        because: Unavailability::Stopped,
                        reason: reason.clone(),
                        cause: None,
                    })
            });
        }
        // The kill stays registered until the close is done: `Runtime::kill` during a
        // graceful shutdown (a second Ctrl-C) must still cut it short.
        Box::pin(
            async move {
                if let Some(link) = link {
                    match msg.within {
                        Some(grace) => link.control.close_within(grace).await,
                        None => link.control.close().await,
                    }
                }
            }
            .into_actor(self)
            .map(|(), act, ctx| {
                act.unregister_kill();
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
        match std::mem::replace(&mut self.phase, Phase::Connecting) {
            Phase::Restarting { timer, .. } => {
                ctx.cancel_future(timer);
            }
            Phase::Down => {}
            other => {
                self.phase = other;
                return;
            }
        }
        self.backoff.reset();
        self.early = None;
        // A fresh start: what the server listed before is not offered until it lists again.
        self.learnt.tools = Arc::from(Vec::new());
        self.learnt.tool_rules = Arc::default();
        self.learnt.resources = Arc::from(Vec::new());
        self.learnt.resource_templates = Arc::from(Vec::new());
        self.learnt.prompts = Arc::from(Vec::new());
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
            .core
            .config
            .handlers
            .as_ref()
            .is_some_and(|h| h.roots.is_some());
        // A server not ready yet asks for the roots after its handshake anyway; a modern one
        // asks in each input-required result (the era has no roots notification).
        if offered && self.phase.is_ready() && !self.is_modern() {
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

/// `{}`, as a raw result.
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
