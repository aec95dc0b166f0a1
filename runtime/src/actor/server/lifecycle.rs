//! Connecting, the handshake, going down, and restarts with backoff.

use std::sync::Arc;
use std::time::Instant;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context};
use futures_util::future::Either;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::Id;
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::connection::Event;
use switchboard_transports::{CloseReason, Connection};
use tokio_stream::StreamExt as _;

use super::{open, random_unit, Inbound, Link, Phase, ServerActor, RELIST_DEBOUNCE};
use crate::calls::router::route;
use crate::calls::table::Table;
use crate::calls::Gate;
use crate::client::ClientHandlers;
use crate::error::Error;
use crate::paging::collect_pages;
use crate::restart::Decision;
use crate::status::ServerState;

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
        self.relist_running = false;
        self.reset_listen(ctx);
        self.start_startup_timer(ctx);
        // Calls made while this attempt runs wait for it (within their deadline), even after
        // a failed start: its outcome, not the last one's, is theirs.
        self.set_gate(Gate::Starting);
        if self.restarts > 0 {
            self.publish(ServerState::Starting);
        }
        let name = self.name.clone();
        let transport = self.config.transport.clone();
        let generation = self.generation;
        let span = tracing::info_span!("connect", server = %name, attempt = self.restarts);
        let opening = tracing::Instrument::instrument(open(name, transport), span);
        // Opening on the I/O runtime registers the connection's pipes and tasks there.
        let opening = match self.ties.io.of(&self.config.transport).cloned() {
            Some(io) => Either::Left(async move {
                io.spawn(opening).await.unwrap_or_else(|e| {
                    Err(Arc::from(Box::<dyn std::error::Error + Send + Sync>::from(
                        format!("the I/O runtime could not open the connection: {e}"),
                    )))
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

    /// The handshake must be done within the startup timeout, or the connection is closed
    /// (`initialize` itself is never cancelled).
    fn start_startup_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.startup.take() {
            ctx.cancel_future(timer);
        }
        let generation = self.generation;
        let limit = self.config.startup_timeout_value();
        self.startup = Some(ctx.run_later(limit, move |act, ctx| {
            act.startup = None;
            if act.generation == generation && act.phase.in_handshake() {
                let detail = format!(
                    "no complete handshake within the startup timeout of {} ms",
                    limit.as_millis()
                );
                let error = act.handshake_error(detail);
                act.fail_start(error, ctx);
            }
        }));
    }

    fn stop_startup_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.startup.take() {
            ctx.cancel_future(timer);
        }
    }

    fn on_connected(
        &mut self,
        generation: u64,
        result: Result<Connection, super::OpenError>,
        ctx: &mut Context<Self>,
    ) {
        if self.phase != Phase::Connecting || generation != self.generation {
            // Stopped or timed out meanwhile: dropping the connection kills it.
            return;
        }
        let conn = match result {
            Ok(conn) => conn,
            Err(source) => {
                let error = Error::Spawn {
                    server: self.name.clone(),
                    source,
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
        // HTTP requests rejected with a lost session are resent once: their tables keep frames.
        let keeps_frames = matches!(conn.control.transport(), "http" | "sse");
        let table = Arc::new(Table::new(
            self.name.clone(),
            conn.sender,
            keeps_frames,
            self.silences.clone(),
            self.ties.metrics.clone(),
        ));
        // Where the connection allows it, its reader settles answers on its own task.
        let settling = table.clone();
        conn.inline.set(Box::new(move |event| {
            crate::calls::router::settle_inline(&settling, event)
        }));
        let (tx, rx) = tokio::sync::mpsc::channel(ROUTED_CAPACITY);
        let routing = route(table.clone(), conn.events, tx);
        let deadlines = crate::calls::table::run_deadlines(&table);
        match self.ties.io.of(&self.config.transport) {
            Some(io) => {
                drop(io.spawn(routing));
                drop(io.spawn(deadlines));
            }
            None => {
                drop(tokio::spawn(routing));
                drop(tokio::spawn(deadlines));
            }
        }
        // A stream that ends without `Closed` lost its tasks (their runtime shut down): that
        // is a disconnect too. After a real `Closed` the extra one is ignored.
        let ended = Event::Closed(CloseReason::aborted(
            "the connection's tasks stopped (did its I/O runtime shut down?)",
        ));
        ctx.add_stream(
            tokio_stream::wrappers::ReceiverStream::new(rx)
                .chain(tokio_stream::once(ended))
                .map(move |event| Inbound(generation, event)),
        );
        self.heard_seen = 0;
        self.link = Some(Link {
            generation,
            table,
            control: conn.control,
        });
        self.start_handshake(ctx);
    }

    pub(super) fn send_initialize(&mut self, ctx: &mut Context<Self>) {
        self.phase = Phase::Initializing;
        let params = serde_json::json!({
            "protocolVersion": mcp::LATEST_PROTOCOL_VERSION,
            "capabilities": ClientHandlers::capabilities(self.config.handlers.as_ref()),
            "clientInfo": crate::era::client_info(),
        });
        self.request(
            ctx,
            methods::INITIALIZE,
            params,
            None,
            |act, answer, ctx| {
                match answer {
                    Ok(raw) => act.on_initialized(&raw, ctx),
                    // Keep a typed 401 as it is: the application can start OAuth from it.
                    Err(e @ Error::Unauthorized { .. }) => act.fail_start(e, ctx),
                    Err(e) => {
                        let error = act.handshake_error(format!("initialize was refused: {e}"));
                        act.fail_start(error, ctx)
                    }
                }
            },
        );
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
        let Some(link) = &self.link else { return };
        let keep = match id {
            Some(Id::Number(n)) => Some(n),
            _ => None,
        };
        // New calls wait for the new session instead of being rejected by the server.
        self.set_gate(Gate::Starting);
        let reason = Arc::new(CloseReason::aborted("the server's session expired"));
        link.table
            .fail_all_except(keep, |waiter| waiter.disconnected(reason.clone()));
        self.resend = keep;
        self.ping_outstanding = false;
        self.connect_started = Instant::now();
        self.start_startup_timer(ctx);
        self.send_initialize(ctx);
    }

    pub(super) fn handshake_error(&self, detail: String) -> Error {
        Error::Handshake {
            server: self.name.clone(),
            detail: detail.into(),
            cause: None,
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
        self.era = Some(crate::era::Era::Legacy);
        self.keep_verdict(crate::verdicts::Verdict::Legacy);
        self.notify(methods::INITIALIZED, &serde_json::json!({}));
        self.after_handshake(has_tools, ctx);
    }

    /// The server said what it offers (either era): list its tools, then it is ready.
    pub(super) fn after_handshake(&mut self, has_tools: bool, ctx: &mut Context<Self>) {
        if has_tools {
            self.phase = Phase::ListingTools;
            self.start_listing(ctx);
        } else {
            self.tools = Arc::from(Vec::new());
            self.become_ready(ctx);
        }
    }

    /// Lists every page of tools (see [`collect_pages`]), one request at a time.
    fn start_listing(&mut self, ctx: &mut Context<Self>) {
        let Some(link) = &self.link else { return };
        let own = self.own_requests(link);
        let name = self.name.clone();
        let timeout = self.config.timeout;
        // A stateless server may say who it is in a result's `_meta` only, and says how long
        // the listing is fresh (the shortest `ttlMs` of its pages).
        let facts = Arc::new(std::sync::Mutex::new(PageFacts::default()));
        let facts_seen = facts.clone();
        let listing = async move {
            collect_pages(&name, methods::TOOLS_LIST, |cursor| {
                let own = own.clone();
                let facts = facts_seen.clone();
                async move {
                    let params = match cursor {
                        Some(cursor) => serde_json::json!({ "cursor": cursor }),
                        None => serde_json::json!({}),
                    };
                    // `None`: the connection is gone, and its close is handled elsewhere.
                    let raw = match own.send(methods::TOOLS_LIST, params, timeout).await {
                        None => return Err(None),
                        Some(answer) => {
                            answer.map_err(|e| Some(format!("tools/list failed: {e}")))?
                        }
                    };
                    let list: mcp::ListToolsResult = serde_json::from_str(raw.get())
                        .map_err(|e| Some(format!("invalid tools/list result: {e}")))?;
                    let info = list.extra.get("_meta").and_then(|m| m.as_object());
                    let ttl = list.extra.get("ttlMs").and_then(|t| t.as_i64());
                    if let Ok(mut facts) = facts.lock() {
                        if let Some(info) = info.and_then(mcp::modern::server_info) {
                            facts.identity = Some(info);
                        }
                        // Negative means 0; the shortest page's counts for the listing.
                        let ttl = ttl.map(|t| t.max(0));
                        facts.ttl_ms = match (facts.ttl_ms, ttl) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                    Ok((list.tools, list.next_cursor))
                }
            })
            .await
        };
        self.when_same_link(ctx, listing, move |act, listed, ctx| match listed {
            Ok(tools) => {
                let facts = facts
                    .lock()
                    .map(|mut f| std::mem::take(&mut *f))
                    .unwrap_or_default();
                act.learn_identity(facts.identity);
                let modern = act.is_modern();
                act.on_tools_listed(tools, ctx);
                // After the status is published: callers that waited for this listing
                // route by it.
                if modern {
                    let ttl = facts
                        .ttl_ms
                        .map(|t| std::time::Duration::from_millis(t as u64));
                    act.ties.freshness.tools.listed(ttl);
                }
            }
            Err(Some(detail)) => act.listing_failed(detail, ctx),
            Err(None) => {}
        });
    }

    fn on_tools_listed(&mut self, listing: Vec<mcp::Tool>, ctx: &mut Context<Self>) {
        let listing = self.screen_header_tools(listing);
        // Compiled once per listing, before the listing is published.
        let rules = crate::tool_rules::ToolRules::compile(&self.name, &listing);
        self.ties.tool_rules.store(Arc::new(rules));
        self.tools = Arc::from(listing);
        match self.phase {
            Phase::ListingTools => self.become_ready(ctx),
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
        if self.is_modern() {
            // Callers waiting for a re-list go on with the last list.
            self.ties.freshness.tools.failed();
        }
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

    pub(super) fn relist(&mut self, ctx: &mut Context<Self>) {
        if self.phase != Phase::Ready {
            return;
        }
        if self.relist_running {
            self.relist_again = true;
            return;
        }
        self.relist_running = true;
        self.start_listing(ctx);
    }

    fn become_ready(&mut self, ctx: &mut Context<Self>) {
        self.phase = Phase::Ready;
        self.session_recovering = false;
        self.start_failed = false;
        self.strikes = 0;
        self.last_strike = None;
        self.last_heard = Instant::now();
        self.stop_startup_timer(ctx);
        let now = Instant::now();
        self.handshake_time = Some(now.duration_since(self.connect_started));
        self.ready_since = Some(now);
        self.backoff.on_ready(now);
        let Some(link) = &self.link else { return };
        let table = link.table.clone();
        // The request a lost session rejected goes out again, once, on the new session.
        if let Some(id) = self.resend.take() {
            if let Some(frame) = table.frame_of(id) {
                table.write(Some(id), frame);
            }
        }
        self.set_gate(Gate::Ready(table));
        self.publish(ServerState::Ready);
        // The stateless era has neither: the log level travels in every request's `_meta`,
        // and `resources/subscribe` is gone: `subscriptions/listen` asks for the resources
        // and the list changes.
        if !self.is_modern() {
            self.reapply_log_level(ctx);
            self.resubscribe(ctx);
        } else {
            self.open_listen(ctx);
        }
        self.list_features(super::features::Lists::Resources, ctx);
        self.list_features(super::features::Lists::Prompts, ctx);
    }

    /// Every resource a caller subscribed to is subscribed to again on a new session.
    fn resubscribe(&mut self, ctx: &mut Context<Self>) {
        let timeout = self.config.timeout;
        for uri in self.ties.subscriptions.uris() {
            let params = serde_json::json!({ "uri": uri });
            self.request(ctx, methods::RESOURCES_SUBSCRIBE, params, timeout, move |act, answer, _| {
                if let Err(error) = answer {
                    tracing::warn!(server = %act.name, %uri, %error, "could not subscribe to the resource again");
                }
            });
        }
    }

    /// The log level a caller chose goes to every new session of the server.
    fn reapply_log_level(&mut self, ctx: &mut Context<Self>) {
        let Some(level) = self.ties.logging.level() else {
            return;
        };
        let params = serde_json::json!({ "level": level });
        let timeout = self.config.timeout;
        self.request(ctx, methods::LOGGING_SET_LEVEL, params, timeout, |act, answer, _| {
            if let Err(error) = answer {
                tracing::warn!(server = %act.name, %error, "could not set the server's log level again");
            }
        });
    }

    /// The server could not be started: close what there is, then retry or give up. Calls
    /// fail at once with this error until a start succeeds.
    pub(super) fn fail_start(&mut self, error: Error, ctx: &mut Context<Self>) {
        tracing::warn!(server = %self.name, %error, "server failed to start");
        // A start that failed may have failed for the verdict: the next one probes.
        self.forget_verdict();
        self.stop_startup_timer(ctx);
        self.start_failed = true;
        let reason: Arc<str> = error.to_string().into();
        self.set_gate(Gate::Unavailable {
            reason: reason.clone(),
            cause: Some(Arc::new(error.clone())),
        });
        let link = self.link.take();
        if link.is_some() {
            self.unregister_kill();
        }
        self.went_down(
            reason,
            ServerState::Failed {
                error: error.clone(),
            },
            ctx,
        );
        if let Some(link) = link {
            link.table.close(|_| error.clone());
            actix::spawn(link.control.close());
        }
    }

    /// The connection ended by itself.
    pub(super) fn on_closed(&mut self, reason: CloseReason, ctx: &mut Context<Self>) {
        self.unregister_kill();
        let table = self.link.take().map(|link| link.table);
        if self.phase == Phase::Stopping {
            return;
        }
        self.connection_lost(reason, table, ctx);
    }

    /// The server is gone: mark it down, fail what it was working on, then retry or give up.
    fn connection_lost(
        &mut self,
        reason: CloseReason,
        table: Option<Arc<Table>>,
        ctx: &mut Context<Self>,
    ) {
        let pending = table.as_ref().map_or(0, |t| t.len());
        if self.probe_ended_the_process() {
            return self.restart_in_handshake_era(reason, table, ctx);
        }
        tracing::warn!(server = %self.name, %reason, pending, "server disconnected");
        // An origin that could not be reached may come back as another deployment.
        if matches!(
            reason.cause,
            switchboard_transports::CloseCause::WriteFailed(_)
        ) {
            self.forget_verdict();
        }
        self.stop_startup_timer(ctx);
        let reason = Arc::new(reason);
        let text: Arc<str> = format!("it disconnected: {reason}").into();
        let state = if self.phase.in_handshake() {
            // A process that starts and then exits (a bad flag, a missing module, an `npx`
            // of a package that does not exist) failed to start: calls fail at once, with
            // the exit status and the stderr tail, until an attempt succeeds.
            self.start_failed = true;
            let error = Error::Handshake {
                server: self.name.clone(),
                detail: format!("the server disconnected during the handshake: {reason}").into(),
                cause: Some(Arc::new(Error::Disconnected {
                    server: self.name.clone(),
                    method: self.phase.handshake_method().into(),
                    tool: None,
                    reason: reason.clone(),
                })),
            };
            self.set_gate(Gate::Unavailable {
                reason: error.to_string().into(),
                cause: Some(Arc::new(error.clone())),
            });
            ServerState::Failed { error }
        } else {
            ServerState::Down {
                reason: reason.clone(),
            }
        };
        // The status first: a caller told "disconnected" then finds the server down.
        self.went_down(text, state, ctx);
        if let Some(table) = table {
            table.close(|waiter| waiter.disconnected(reason.clone()));
        }
    }

    /// The server process ended in answer to the era probe: it is legacy (and says so the
    /// only way some servers can). A new process is started at once and spoken to in the
    /// handshake era: no backoff, no restart counted, no call failed (they wait at the gate,
    /// which stays `Starting`), and the verdict is kept for the command, so later starts do
    /// not probe it again.
    fn restart_in_handshake_era(
        &mut self,
        reason: CloseReason,
        table: Option<Arc<Table>>,
        ctx: &mut Context<Self>,
    ) {
        tracing::info!(server = %self.name, %reason, "the server ended its connection in answer to the era probe (server/discover): starting it again in the handshake era");
        self.keep_verdict(crate::verdicts::Verdict::Legacy);
        if let Some(table) = table {
            let reason = Arc::new(reason);
            table.close(|waiter| waiter.disconnected(reason.clone()));
        }
        self.connect(ctx);
    }

    /// Kills an unresponsive server and treats it as crashed.
    pub(super) fn abandon(&mut self, why: String, ctx: &mut Context<Self>) {
        tracing::warn!(server = %self.name, "{why}; restarting it");
        let table = self.link.take().map(|link| {
            self.unregister_kill();
            if let Some(kill) = link.control.kill_handle() {
                kill.kill();
            }
            actix::spawn(link.control.close());
            link.table
        });
        self.connection_lost(CloseReason::aborted(why), table, ctx);
    }

    /// Schedules a restart with backoff, or gives up for good; publishes the gate and the
    /// status.
    fn went_down(&mut self, reason: Arc<str>, final_state: ServerState, ctx: &mut Context<Self>) {
        // Nothing is listed until the next connection: callers waiting for a re-list go on
        // (and wait for readiness instead).
        self.ties.freshness.forget();
        self.last_error = Some(reason.clone());
        self.ready_since = None;
        self.ping_outstanding = false;
        self.strikes = 0;
        self.last_strike = None;
        self.resend = None;
        self.session_recovering = false;
        let now = Instant::now();
        match self.backoff.on_failure(now, random_unit()) {
            Decision::RetryAfter(delay) => {
                self.phase = Phase::Restarting;
                // After a crash, calls wait for the restart within their deadline; after a
                // failed start they fail at once (the gate says why).
                if !self.start_failed {
                    self.set_gate(Gate::Starting);
                }
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
                let (why, cause): (Arc<str>, _) = match &state {
                    ServerState::Failed { error } => {
                        (error.to_string().into(), Some(Arc::new(error.clone())))
                    }
                    _ => (reason, None),
                };
                self.set_gate(Gate::Unavailable { reason: why, cause });
                self.publish(state);
            }
        }
    }
}

/// What a listing's pages said besides their tools.
#[derive(Debug, Default)]
struct PageFacts {
    identity: Option<mcp::Implementation>,
    ttl_ms: Option<i64>,
}
