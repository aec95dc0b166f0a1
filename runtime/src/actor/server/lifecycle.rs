//! Connecting, the handshake, going down, restarts with backoff, and liveness.

use std::sync::Arc;
use std::time::Instant;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context};
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{Id, Outcome};
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::connection::Event;
use switchboard_transports::{CloseReason, Connection};
use tokio_stream::StreamExt as _;

use super::{
    open, random_unit, Inbound, Link, Phase, ServerActor, MAX_TOOL_PAGES, RELIST_DEBOUNCE,
};
use crate::actor::lane::{disconnected, route, Lane};
use crate::actor::pending::{Reply, Timer};
use crate::client::ClientHandlers;
use crate::error::Error;
use crate::restart::Decision;
use crate::status::ServerState;
use futures_util::future::Either;

/// Events the router passes on to the actor, queued: as many as the transport queues, so
/// backpressure reaches the reader unchanged.
const ROUTED_CAPACITY: usize = 256;

impl ServerActor {
    pub(super) fn connect(&mut self, ctx: &mut Context<Self>) {
        self.restart_timer = None;
        self.phase = Phase::Connecting;
        self.generation += 1;
        self.connect_started = Instant::now();
        self.init = None;
        let at = Instant::now() + self.config.startup_timeout_value();
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        self.startup = Some(self.pending.start_timer(Timer::Startup, at));
        if self.restarts > 0 {
            self.publish(ServerState::Starting);
        }
        let name = self.name.clone();
        let transport = self.config.transport.clone();
        let generation = self.generation;
        let span = tracing::info_span!("connect", server = %name, attempt = self.restarts);
        let opening = tracing::Instrument::instrument(open(name, transport), span);
        // Opening on the I/O runtime registers the connection's pipes and tasks there.
        let opening = match self.ties.io.clone() {
            Some(io) => Either::Left(async move {
                io.spawn(opening).await.unwrap_or_else(|e| {
                    Err(format!("the I/O runtime could not open the connection: {e}").into())
                })
            }),
            None => Either::Right(opening),
        };
        ctx.spawn(
            opening
                .into_actor(self)
                .map(move |result, act, ctx| act.on_connected(generation, result, ctx)),
        );
    }

    fn on_connected(
        &mut self,
        generation: u64,
        result: Result<Connection, Arc<str>>,
        ctx: &mut Context<Self>,
    ) {
        if self.phase != Phase::Connecting || generation != self.generation {
            // Stopped or timed out meanwhile: dropping the connection kills it.
            return;
        }
        let conn = match result {
            Ok(conn) => conn,
            Err(detail) => {
                let error = Error::Spawn {
                    server: self.name.clone(),
                    detail,
                };
                self.fail_start(error, ctx);
                return;
            }
        };
        if let Some(kill) = conn.control.kill_handle() {
            if let Ok(mut kills) = self.ties.kills.lock() {
                kills.insert(self.name.clone(), kill);
            }
        }
        let events = if matches!(conn.control.transport(), "stdio" | "memory") {
            // Line-framed connections get a direct lane; its router runs beside the
            // connection's reader and passes on what is not an answer to a lane call.
            let lane = Arc::new(Lane::new(
                self.name.clone(),
                conn.sender.clone(),
                self.ties.metrics.clone(),
            ));
            let (tx, rx) = tokio::sync::mpsc::channel(ROUTED_CAPACITY);
            let routing = route(lane.clone(), conn.events, tx);
            match &self.ties.io {
                Some(io) => drop(io.spawn(routing)),
                None => drop(tokio::spawn(routing)),
            }
            self.lane_heard = 0;
            self.lane = Some(lane);
            rx
        } else {
            conn.events
        };
        // A stream that ends without `Closed` lost its tasks (their runtime shut down): that
        // is a disconnect too. After a real `Closed` the extra one is ignored.
        let ended = Event::Closed(CloseReason::aborted(
            "the connection's tasks stopped (did its I/O runtime shut down?)",
        ));
        ctx.add_stream(
            tokio_stream::wrappers::ReceiverStream::new(events)
                .chain(tokio_stream::once(ended))
                .map(move |event| Inbound(generation, event)),
        );
        self.link = Some(Link {
            generation,
            sender: conn.sender,
            control: conn.control,
        });
        self.send_initialize();
    }

    fn send_initialize(&mut self) {
        self.phase = Phase::Initializing;
        let params = serde_json::json!({
            "protocolVersion": mcp::LATEST_PROTOCOL_VERSION,
            "capabilities": ClientHandlers::capabilities(self.config.handlers.as_ref()),
            "clientInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")},
        });
        // `initialize` is never cancelled: the startup timer closes the connection instead.
        self.send_internal(methods::INITIALIZE, &params, Reply::Initialize, None);
    }

    /// The HTTP server forgot our session. Run the handshake again, once, on the same
    /// connection, and resend only the request it rejected (it was never processed, so this
    /// is no replay); everything else pending on the old session fails as disconnected.
    pub(super) fn on_session_expired(&mut self, id: Option<Id>, ctx: &mut Context<Self>) {
        if self.phase != Phase::Ready || self.session_recovering {
            let why = "the server's session expired again before a new one was ready".to_owned();
            self.abandon(why, ctx);
            return;
        }
        tracing::warn!(server = %self.name, ?id, "the server's session expired; initializing a new one");
        self.session_recovering = true;
        if let Some(Id::Number(rejected)) = id {
            if let Some(entry) = self.pending.get_mut(rejected) {
                entry.unsent = entry.frame.clone();
            }
        }
        self.fail_written_disconnected(Arc::new(CloseReason::aborted(
            "the server's session expired",
        )));
        self.relist_running = false;
        self.ping_outstanding = false;
        self.connect_started = Instant::now();
        let at = Instant::now() + self.config.startup_timeout_value();
        self.startup = Some(self.pending.start_timer(Timer::Startup, at));
        self.down_reason = Some("its session expired and a new one is being initialized".into());
        self.send_initialize();
    }

    pub(super) fn on_internal(&mut self, reply: Reply, outcome: Outcome, ctx: &mut Context<Self>) {
        match (reply, outcome) {
            (Reply::Initialize, Outcome::Result(raw)) => self.on_initialized(&raw, ctx),
            (Reply::Initialize, Outcome::Error(e)) => {
                let error = self.handshake_error(format!("initialize was refused: {e}"));
                self.fail_start(error, ctx)
            }
            (Reply::ToolsPage(page), Outcome::Result(raw)) => self.on_tools_page(page, &raw, ctx),
            (Reply::ToolsPage(_), Outcome::Error(e)) => {
                self.listing_failed(format!("tools/list failed: {e}"), ctx)
            }
            (Reply::Ping, _) => self.ping_outstanding = false,
            (Reply::Caller(_), _) => {}
        }
    }

    pub(super) fn handshake_error(&self, detail: String) -> Error {
        Error::Handshake {
            server: self.name.clone(),
            detail: detail.into(),
        }
    }

    fn on_initialized(&mut self, raw: &RawValue, ctx: &mut Context<Self>) {
        let init: mcp::InitializeResult = match serde_json::from_str(raw.get()) {
            Ok(init) => init,
            Err(e) => {
                let error = self.handshake_error(format!("invalid initialize result: {e}"));
                self.fail_start(error, ctx);
                return;
            }
        };
        if !mcp::SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            let error = Error::UnsupportedVersion {
                server: self.name.clone(),
                offered: mcp::LATEST_PROTOCOL_VERSION.into(),
                received: init.protocol_version.as_str().into(),
            };
            self.fail_start(error, ctx);
            return;
        }
        if let Some(link) = &mut self.link {
            link.control.set_protocol_version(&init.protocol_version);
        }
        tracing::info!(
            server = %self.name,
            version = %init.protocol_version,
            peer = %init.server_info.name,
            transport = self.link.as_ref().map(|l| l.control.transport()).unwrap_or(""),
            "server initialized"
        );
        let has_tools = init.capabilities.tools.is_some();
        self.init = Some(init);
        self.notify(methods::INITIALIZED, &serde_json::json!({}));
        if has_tools {
            self.phase = Phase::ListingTools;
            self.start_listing();
        } else {
            self.tools = Arc::from(Vec::new());
            self.become_ready();
        }
    }

    fn start_listing(&mut self) {
        self.listing.clear();
        let timeout = self.config.timeout;
        self.send_internal(
            methods::TOOLS_LIST,
            &serde_json::json!({}),
            Reply::ToolsPage(1),
            timeout,
        );
    }

    fn on_tools_page(&mut self, page: u32, raw: &RawValue, ctx: &mut Context<Self>) {
        let list: mcp::ListToolsResult = match serde_json::from_str(raw.get()) {
            Ok(list) => list,
            Err(e) => {
                self.listing_failed(format!("invalid tools/list result: {e}"), ctx);
                return;
            }
        };
        self.listing.extend(list.tools);
        match list.next_cursor {
            Some(cursor) if page < MAX_TOOL_PAGES => {
                let params = serde_json::json!({ "cursor": cursor });
                let timeout = self.config.timeout;
                self.send_internal(
                    methods::TOOLS_LIST,
                    &params,
                    Reply::ToolsPage(page + 1),
                    timeout,
                );
                return;
            }
            Some(_) => tracing::warn!(
                server = %self.name,
                pages = MAX_TOOL_PAGES,
                "tools/list still had more pages; the rest were not fetched"
            ),
            None => {}
        }
        self.tools = Arc::from(std::mem::take(&mut self.listing));
        match self.phase {
            Phase::ListingTools => self.become_ready(),
            Phase::Ready => {
                self.relist_running = false;
                self.publish(ServerState::Ready);
                if std::mem::take(&mut self.relist_again) {
                    self.relist(ctx);
                }
            }
            _ => {}
        }
    }

    fn listing_failed(&mut self, detail: String, ctx: &mut Context<Self>) {
        if self.phase == Phase::ListingTools {
            let error = self.handshake_error(detail);
            self.fail_start(error, ctx);
        } else {
            self.relist_running = false;
            tracing::warn!(server = %self.name, "refreshing the tool list failed: {detail}");
        }
    }

    /// `notifications/tools/list_changed`: re-list once per burst.
    pub(super) fn on_tools_changed(&mut self, ctx: &mut Context<Self>) {
        if self.phase != Phase::Ready || self.relist_scheduled {
            return;
        }
        self.relist_scheduled = true;
        ctx.run_later(RELIST_DEBOUNCE, |act, ctx| {
            act.relist_scheduled = false;
            act.relist(ctx);
        });
    }

    fn relist(&mut self, _ctx: &mut Context<Self>) {
        if self.phase != Phase::Ready {
            return;
        }
        if self.relist_running {
            self.relist_again = true;
            return;
        }
        self.relist_running = true;
        self.start_listing();
    }

    fn become_ready(&mut self) {
        self.phase = Phase::Ready;
        self.session_recovering = false;
        self.down_reason = None;
        self.strikes = 0;
        self.last_heard = Instant::now();
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        let now = Instant::now();
        self.handshake_time = Some(now.duration_since(self.connect_started));
        self.ready_since = Some(now);
        self.backoff.on_ready(now);
        self.ties.lane.store(self.lane.clone());
        self.publish(ServerState::Ready);
        // Requests submitted while starting go out now, unless their callers left.
        for id in self.pending.unsent_ids() {
            let Some(entry) = self.pending.get_mut(id) else {
                continue;
            };
            if entry.caller_gone() {
                self.pending.take(id);
                continue;
            }
            let frame = entry.unsent.take();
            entry.dropped_at_start = self.dropped_frames;
            if let Some(frame) = frame {
                self.write(Some(id), frame);
            }
        }
    }

    /// The server could not be started: close what there is, then retry or give up.
    pub(super) fn fail_start(&mut self, error: Error, ctx: &mut Context<Self>) {
        tracing::warn!(server = %self.name, %error, "server failed to start");
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        if let Some(link) = self.link.take() {
            self.unregister_kill();
            actix::spawn(link.control.close());
        }
        let reason: Arc<str> = error.to_string().into();
        self.retire_lane(|_, _, waiter| waiter.settle(Err(error.clone())));
        self.fail_written(|_| error.clone());
        self.went_down(reason, ServerState::Failed { error }, ctx);
    }

    /// The connection ended by itself.
    pub(super) fn on_closed(&mut self, reason: CloseReason, ctx: &mut Context<Self>) {
        self.unregister_kill();
        self.link = None;
        if self.phase == Phase::Stopping {
            return;
        }
        self.connection_lost(reason, ctx);
    }

    /// The server is gone: fail what it was working on, then retry or give up.
    fn connection_lost(&mut self, reason: CloseReason, ctx: &mut Context<Self>) {
        tracing::warn!(server = %self.name, %reason, pending = self.pending.len(), "server disconnected");
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        let reason = Arc::new(reason);
        let text: Arc<str> = format!("it disconnected: {reason}").into();
        let state = if self.phase.in_handshake() {
            ServerState::Failed {
                error: self.handshake_error(format!(
                    "the server disconnected during the handshake: {reason}"
                )),
            }
        } else {
            ServerState::Down {
                reason: reason.clone(),
            }
        };
        // The status first: a caller told "disconnected" then finds the server down.
        self.ties.lane.store(None);
        let lane = self.lane.take();
        self.went_down(text, state, ctx);
        if let Some(lane) = lane {
            lane.close_with(|waiter| disconnected(&self.name, waiter, reason.clone()));
        }
        self.fail_written_disconnected(reason);
    }

    /// Kills an unresponsive server and treats it as crashed.
    pub(super) fn abandon(&mut self, why: String, ctx: &mut Context<Self>) {
        tracing::warn!(server = %self.name, "{why}; restarting it");
        if let Some(link) = self.link.take() {
            self.unregister_kill();
            if let Some(kill) = link.control.kill_handle() {
                kill.kill();
            }
            actix::spawn(link.control.close());
        }
        self.connection_lost(CloseReason::aborted(why), ctx);
    }

    /// Schedules a restart with backoff, or gives up for good.
    fn went_down(&mut self, reason: Arc<str>, final_state: ServerState, ctx: &mut Context<Self>) {
        self.last_error = Some(reason.clone());
        self.ready_since = None;
        self.ping_outstanding = false;
        self.strikes = 0;
        let now = Instant::now();
        match self.backoff.on_failure(now, random_unit()) {
            Decision::RetryAfter(delay) => {
                self.phase = Phase::Restarting;
                self.down_reason = Some(format!("it is restarting (last error: {reason})").into());
                self.publish(ServerState::Restarting {
                    attempt: self.backoff.attempt(),
                    next_retry_at: now + delay,
                    last_error: reason,
                });
                self.restart_timer = Some(ctx.run_later(delay, |act, ctx| {
                    act.restarts += 1;
                    act.connect(ctx);
                }));
            }
            Decision::GiveUp => {
                self.phase = Phase::Down;
                let state = if self.backoff.policy().is_enabled() {
                    let policy = self.backoff.policy();
                    ServerState::Failed {
                        error: Error::CrashLoop {
                            server: self.name.clone(),
                            failures: policy.max_failures,
                            window: policy.window,
                            last_error: reason.clone(),
                        },
                    }
                } else {
                    final_state
                };
                let why: Arc<str> = match &state {
                    ServerState::Failed { error } => error.to_string().into(),
                    _ => reason,
                };
                self.down_reason = Some(why.clone());
                self.fail_unsent(why);
                self.publish(state);
            }
        }
    }

    /// Called often; pings an idle server every `liveness.interval`.
    pub(super) fn liveness_tick(&mut self, _ctx: &mut Context<Self>) {
        self.catch_up_lane();
        let lane_busy = self.lane.as_ref().is_some_and(|l| l.len() > 0);
        if self.phase != Phase::Ready
            || self.ping_outstanding
            || self.pending.callers() > 0
            || lane_busy
        {
            return;
        }
        if self.last_heard.elapsed() < self.liveness.interval {
            return;
        }
        self.ping_outstanding = true;
        let timeout = self.liveness.timeout;
        self.send_internal(
            methods::PING,
            &serde_json::json!({}),
            Reply::Ping,
            Some(timeout),
        );
    }

    /// A ping or a request timed out: three in a row and the server counts as crashed.
    pub(super) fn strike(&mut self, ctx: &mut Context<Self>) {
        if !self.liveness.is_enabled() || self.phase != Phase::Ready {
            return;
        }
        self.catch_up_lane();
        self.strikes += 1;
        if self.strikes >= self.liveness.max_failures {
            let why = format!(
                "the server stopped responding ({} consecutive pings or requests timed out)",
                self.strikes
            );
            self.abandon(why, ctx);
        }
    }
}
