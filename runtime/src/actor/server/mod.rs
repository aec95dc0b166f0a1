//! The server actor: owns one connection at a time, numbers and correlates requests, enforces
//! their deadlines, runs the MCP handshake, fails everything pending at once on disconnect,
//! and restarts the server with backoff.
//!
//! Lifecycle: connect → `initialize` → `notifications/initialized` → `tools/list` (every
//! page) → ready → (disconnect → fail what is pending → backoff → connect …). Requests
//! submitted while the server is starting or restarting wait, with their deadlines running,
//! and are written once it is ready.
//!
//! The work is split by direction: [`lifecycle`] (connecting, handshake, restarts, liveness),
//! [`requests`] (what callers submit, deadlines), [`inbound`] (what the server sends).
//!
//! While a stdio or memory server is ready, most calls bypass the actor on the connection's
//! direct lane ([`super::lane`]); the actor publishes the lane when the server becomes ready,
//! takes it back when it leaves that state, and fails whoever still waits on it.

mod inbound;
mod lifecycle;
mod requests;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use actix::fut::{ActorFuture, ActorFutureExt, WrapFuture};
use actix::{
    Actor, ActorContext, AsyncContext, Context, Handler, Message as ActixMessage,
    ResponseActFuture, SpawnHandle, StreamHandler,
};
use arc_swap::ArcSwapOption;
use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::Id;
use switchboard_codecs::mcp;
use switchboard_transports::connection::{Control, Event, KillHandle, Outbound, Sender};
use switchboard_transports::{CloseReason, Connection};
use tokio::sync::{mpsc, watch};

use super::lane::{Lane, Waiter};
use super::pending::{Entry, Pending};
use super::{Notice, Submit};
use crate::config::{ServerConfig, Transport};
use crate::error::Error;
use crate::metrics::CancelReason;
use crate::restart::{Backoff, Liveness};
use crate::status::{ServerState, ServerStatus};

/// Most `tools/list` pages followed in one listing.
const MAX_TOOL_PAGES: u32 = 100;

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
    /// The direct lane of the ready connection, read by handles on every call.
    pub(crate) lane: Arc<ArcSwapOption<Lane>>,
    /// Where connections' I/O runs; `None`: on the actor thread.
    pub(crate) io: Option<tokio::runtime::Handle>,
}

/// An event from connection number `.0` (older connections' stragglers are ignored).
pub(crate) struct Inbound(pub(crate) u64, pub(crate) Event);

/// Where the actor is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
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
    /// Calls submitted now wait for the server instead of failing fast.
    fn queues_calls(self) -> bool {
        matches!(
            self,
            Phase::Connecting | Phase::Initializing | Phase::ListingTools | Phase::Restarting
        )
    }

    fn in_handshake(self) -> bool {
        matches!(
            self,
            Phase::Connecting | Phase::Initializing | Phase::ListingTools
        )
    }
}

/// The live connection.
struct Link {
    generation: u64,
    sender: Sender,
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
    pending: Pending,
    startup: Option<tokio_util::time::delay_queue::Key>,
    connect_started: Instant,
    handshake_time: Option<Duration>,
    ready_since: Option<Instant>,
    restarts: u32,
    restart_timer: Option<SpawnHandle>,
    /// Why the server is unavailable, when it is.
    down_reason: Option<Arc<str>>,
    last_error: Option<Arc<str>>,
    init: Option<mcp::InitializeResult>,
    tools: Arc<[mcp::Tool]>,
    /// Pages gathered by the listing in progress.
    listing: Vec<mcp::Tool>,
    relist_scheduled: bool,
    relist_running: bool,
    relist_again: bool,
    /// Consecutive failed pings or timed-out requests.
    strikes: u32,
    ping_outstanding: bool,
    last_heard: Instant,
    /// Unreadable frames dropped so far.
    dropped_frames: u64,
    unknown_answers: u64,
    /// Set when the actor stops in an orderly way; otherwise its drop reports a death.
    stopped_cleanly: bool,
    /// The `ready_since` whose handshake was measured.
    measured_ready: Option<Instant>,
    /// A new session is being initialized after the old one expired.
    session_recovering: bool,
    /// The current connection's direct lane (line-framed transports only).
    lane: Option<Arc<Lane>>,
    /// The lane's answer count when the actor last looked.
    lane_heard: u64,
}

impl ServerActor {
    pub(crate) fn new(ties: Ties, config: ServerConfig) -> Self {
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
            pending: Pending::default(),
            startup: None,
            connect_started: Instant::now(),
            handshake_time: None,
            ready_since: None,
            restart_timer: None,
            down_reason: None,
            last_error: None,
            init: None,
            tools: Arc::from(Vec::new()),
            listing: Vec::new(),
            relist_scheduled: false,
            relist_running: false,
            relist_again: false,
            strikes: 0,
            ping_outstanding: false,
            last_heard: Instant::now(),
            dropped_frames: 0,
            unknown_answers: 0,
            stopped_cleanly: false,
            measured_ready: None,
            session_recovering: false,
            lane: None,
            lane_heard: 0,
        }
    }

    /// Takes the lane off the hot path and fails whoever still waits on it.
    fn retire_lane(&mut self, mut fail: impl FnMut(&Lane, i64, Waiter)) {
        self.ties.lane.store(None);
        if let Some(lane) = self.lane.take() {
            lane.close(|id, waiter| fail(&lane, id, waiter));
        }
    }

    /// Retires the lane, failing its waiters as disconnected for `reason`.
    fn retire_lane_disconnected(&mut self, reason: &Arc<CloseReason>) {
        let name = self.name.clone();
        self.retire_lane(|_, _, waiter| {
            let error = super::lane::disconnected(&name, &waiter, reason.clone());
            waiter.settle(Err(error));
        });
    }

    /// Answers that came through the lane count as hearing from the server.
    fn catch_up_lane(&mut self) {
        let heard = self.lane.as_ref().map_or(self.lane_heard, |l| l.heard());
        if heard != self.lane_heard {
            self.lane_heard = heard;
            self.strikes = 0;
            self.last_heard = Instant::now();
        }
    }

    fn next_id(&self) -> i64 {
        self.ties.ids.fetch_add(1, Ordering::Relaxed)
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
            .map(|l| l.control.transport())
            .unwrap_or_else(|| self.config.transport_kind());
        let init = self.init.as_ref();
        self.ties.status.send_replace(ServerStatus {
            state,
            protocol_version: init.map(|i| Arc::from(i.protocol_version.as_str())),
            server_info: init.map(|i| Arc::new(i.server_info.clone())),
            instructions: init.and_then(|i| i.instructions.as_deref().map(Arc::from)),
            tools: self.tools.clone(),
            pid,
            transport,
            restarts: self.restarts,
            ready_since: self.ready_since,
            handshake: self.handshake_time,
            since: Instant::now(),
        });
        let _ = self.ties.events.send(ServerEvent::StatusChanged);
    }

    /// Sends one of the actor's own requests.
    fn send_internal(
        &mut self,
        method: &str,
        params: &impl Serialize,
        reply: super::pending::Reply,
        timeout: Option<Duration>,
    ) {
        let id = self.next_id();
        let frame = request_frame(id, method, params);
        let deadline = timeout.map(|t| Instant::now() + t);
        self.pending
            .insert(id, Entry::internal(reply, method), deadline);
        self.write(Some(id), frame);
    }

    fn notify(&self, method: &str, params: &impl Serialize) {
        self.write(None, notification_frame(method, params));
    }

    fn write(&self, id: Option<i64>, payload: Bytes) {
        if let Some(link) = &self.link {
            // A failed send means the writer is gone; the connection's Closed event follows
            // and fails what is pending.
            let len = payload.len() as u64;
            let sent = link.sender.send(Outbound {
                id: id.map(Id::Number),
                payload,
            });
            if sent.is_ok() {
                self.ties.metrics.messages_out.increment(1);
                self.ties.metrics.bytes_out.increment(len);
            }
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
        if self.lane.is_some() {
            self.retire_lane_disconnected(&Arc::new(actor_stopped()));
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
        ctx.spawn(DeadlineDriver);
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
            // callers that is a crash; the drop below reports it to the supervisor.
            let reason = Arc::new(actor_stopped());
            self.retire_lane_disconnected(&reason);
            self.fail_written_disconnected(reason);
            self.fail_unsent("its actor stopped unexpectedly and is being restarted".into());
        }
    }
}

impl StreamHandler<Submit> for ServerActor {
    fn handle(&mut self, submit: Submit, _ctx: &mut Context<Self>) {
        self.on_submit(submit);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl StreamHandler<Notice> for ServerActor {
    fn handle(&mut self, notice: Notice, ctx: &mut Context<Self>) {
        match notice {
            Notice::Cancel(id) => self.on_cancel(id),
            Notice::TimedOut => self.strike(ctx),
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl StreamHandler<Inbound> for ServerActor {
    fn handle(&mut self, Inbound(generation, event): Inbound, ctx: &mut Context<Self>) {
        let current = self.link.as_ref().map(|l| l.generation);
        if current == Some(generation) {
            match &event {
                Event::Message(_) => self.ties.metrics.messages_in.increment(1),
                Event::Skipped(skipped) => self.ties.metrics.skipped(skipped.kind.as_str()),
                _ => {}
            }
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
        // Requests the server is working on are abandoned: say so before closing.
        for id in self.pending.written_ids() {
            self.send_cancelled(id, CancelReason::Shutdown, "the client is shutting down");
        }
        let reason: Arc<str> = "the runtime is shutting down".into();
        let name = self.name.clone();
        self.retire_lane(|lane, id, waiter| {
            lane.cancel(id, CancelReason::Shutdown, "the client is shutting down");
            let error = unavailable(&name, waiter.tool.clone(), reason.clone());
            waiter.settle(Err(error));
        });
        self.down_reason = Some(reason.clone());
        self.fail_everything(reason);
        let link = self.link.take();
        self.unregister_kill();
        Box::pin(
            async move {
                if let Some(link) = link {
                    drop(link.sender);
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
        self.connect(ctx);
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

/// Polls the actor's `DelayQueue` inside its context: one timer wheel for every deadline.
struct DeadlineDriver;

impl ActorFuture<ServerActor> for DeadlineDriver {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut ServerActor,
        ctx: &mut Context<ServerActor>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        // An empty queue keeps the waker and wakes us on the next insert.
        while let Poll::Ready(Some(expired)) = act.pending.deadlines.poll_expired(task) {
            act.on_timer(expired.into_inner(), ctx);
        }
        Poll::Pending
    }
}

/// Opens the configured transport.
async fn open(name: Arc<str>, transport: Transport) -> Result<Connection, Arc<str>> {
    match transport {
        #[cfg(all(unix, feature = "stdio"))]
        Transport::Stdio(config) => switchboard_transports::stdio::connect(&name, &config)
            .await
            .map_err(|e| Arc::from(e.to_string())),
        Transport::Memory(serve) => {
            let (conn, io) = switchboard_transports::memory::connect(&name);
            // Where the connection's I/O runs, so an in-process server shares its thread.
            tokio::spawn(serve(io));
            Ok(conn)
        }
        #[cfg(feature = "http")]
        Transport::Http(target) => {
            use switchboard_transports::http;
            let kind = match target.kind {
                crate::config::HttpKind::Sse => http::Kind::Sse,
                crate::config::HttpKind::StreamableHttp => http::Kind::StreamableHttp,
                crate::config::HttpKind::Auto => http::Kind::Auto,
            };
            let config = http::Config::new(target.url)
                .headers(target.headers)
                .bearer_token(target.bearer)
                .auth(target.auth);
            http::connect(&name, &config, kind)
                .await
                .map_err(|e| Arc::from(e.to_string()))
        }
        #[cfg(not(feature = "http"))]
        Transport::Http(target) => Err(Arc::from(format!(
            "HTTP transports are not compiled in (feature `http`); cannot reach {}",
            target.url
        ))),
    }
}

/// `{"jsonrpc":"2.0","id":N,"method":M,"params":P}` without an intermediate value.
pub(crate) fn request_frame(id: i64, method: &str, params: &impl Serialize) -> Bytes {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(br#","method":"#);
    push_json(&mut out, &method);
    out.extend_from_slice(br#","params":"#);
    push_json(&mut out, params);
    out.push(b'}');
    Bytes::from(out)
}

/// `{"jsonrpc":"2.0","method":M,"params":P}` without an intermediate value.
pub(crate) fn notification_frame(method: &str, params: &impl Serialize) -> Bytes {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    push_json(&mut out, &method);
    out.extend_from_slice(br#","params":"#);
    push_json(&mut out, params);
    out.push(b'}');
    Bytes::from(out)
}

/// A JSON-RPC error answer, as the caller's error.
pub(crate) fn rpc_error(
    server: Arc<str>,
    method: Arc<str>,
    tool: Option<Arc<str>>,
    e: switchboard_codecs::jsonrpc::ErrorObject,
) -> Error {
    Error::Rpc {
        server,
        method,
        tool,
        code: e.code,
        message: e.message,
        data: e
            .data
            .and_then(|d| serde_json::from_str(d.get()).ok())
            .map(Arc::new),
    }
}

fn push_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Serializing into a Vec fails only for maps with non-string keys, which we never build.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
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

/// Errors handed to a caller: a shorthand for the actor's name.
fn unavailable(server: &Arc<str>, tool: Option<Arc<str>>, reason: Arc<str>) -> Error {
    Error::Unavailable {
        server: server.clone(),
        tool,
        reason,
    }
}
