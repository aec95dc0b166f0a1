//! Connecting, becoming ready, going down, and restarts with backoff.

use std::sync::Arc;
use std::time::Instant;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context};
use futures_util::future::Either;
use switchboard_transports::connection::Event;
use switchboard_transports::{CloseReason, Connection};
use tokio_stream::StreamExt as _;

use super::{open, random_unit, Inbound, Link, Phase, ServerActor};
use crate::call_table::settle::route;
use crate::call_table::Table;
use crate::core::Gate;
use crate::error::{Error, ErrorContext, ErrorKind, Unavailability};
use crate::restart::Decision;
use crate::status::ServerState;
use crate::transport::Transport;

/// Events the router passes on to the actor, queued: as many as the transport queues, so
/// backpressure reaches the reader unchanged.
const ROUTED_CAPACITY: usize = 256;

impl ServerActor {
    pub(super) fn connect(&mut self, ctx: &mut Context<Self>) {
        self.phase = Phase::Connecting;
        self.generation += 1;
        self.connect_started = Instant::now();
        self.half_open.attempted(self.connect_started);
        self.learnt.init = None;
        self.relist.reset();
        self.session.reset();
        self.reset_listen(ctx);
        self.start_startup_timer(ctx);
        // Calls made while this attempt runs wait for it (within their deadline), even after
        // a failed start: its outcome, not the last one's, is theirs.
        self.set_gate(Gate::Starting);
        if self.restarts > 0 {
            self.publish(ServerState::Starting);
        }
        let name = self.name.clone();
        // A server that takes per-client values opens with those it lists with; with none,
        // it is not started (a client's own instance is).
        let transport = self.core.config.opening_transport();
        let generation = self.generation;
        let span = tracing::info_span!("connect", server = %name, attempt = self.restarts);
        let opening = async move {
            match transport {
                Ok(transport) => open(name, transport).await,
                Err(e) => Err(Arc::new(e) as super::OpenError),
            }
        };
        let opening = tracing::Instrument::instrument(opening, span);
        // Opening on the I/O runtime registers the connection's pipes and tasks there.
        let opening = match self.wiring.io.of(&self.core.config.transport).cloned() {
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

    /// The start (connection, era probe, handshake, tools listed) must be done within the
    /// startup timeout, or the connection is closed (`initialize` itself is never cancelled).
    pub(super) fn start_startup_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.startup.take() {
            ctx.cancel_future(timer);
        }
        let generation = self.generation;
        let limit = self.core.config.startup_timeout_value();
        self.startup = Some(ctx.run_later(limit, move |act, ctx| {
            act.startup = None;
            if act.generation == generation && act.phase.in_handshake() {
                // What the server left unanswered says where it stalled.
                let waiting = match act.phase {
                    Phase::Connecting => "the connection to open".to_owned(),
                    ref phase => format!("the answer to {}", phase.handshake_method()),
                };
                let mut detail = format!(
                    "no complete handshake within the startup timeout of {} ms, waiting for \
                     {waiting}",
                    limit.as_millis()
                );
                // A server that printed its own text where messages go (a banner on stdout)
                // is the usual cause: what it wrote says more than the timeout.
                let skipped = act.link.as_ref().and_then(|l| l.table.first_dropped());
                if let Some(skipped) = skipped {
                    detail.push_str("; it wrote what is not an MCP message: ");
                    detail.push_str(skipped);
                }
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
        if !matches!(self.phase, Phase::Connecting) || generation != self.generation {
            // Stopped or timed out meanwhile: dropping the connection kills it.
            return;
        }
        let conn = match result {
            Ok(conn) => conn,
            Err(source) => {
                let error =
                    ErrorContext::of_server(self.name.clone()).error(ErrorKind::Spawn { source });
                self.fail_start(error, ctx);
                return;
            }
        };
        if let Some(kill) = conn.control.kill_handle() {
            if let Ok(mut kills) = self.wiring.kills.lock() {
                kills.insert(self.core.kill_key(), kill);
            }
        }
        let table = Arc::new(Table::new(
            self.name.clone(),
            conn.sender,
            conn.control.kind(),
            self.silences.clone(),
            self.core.metrics.clone(),
        ));
        // Where the connection allows it, its reader settles answers on its own task.
        let settling = table.clone();
        // Weak: the reader must not keep the server's core alive.
        let announcing = Arc::downgrade(&self.core);
        let announced = move || {
            if let Some(core) = announcing.upgrade() {
                core.freshness.tools.announce();
            }
        };
        let noting = announced.clone();
        conn.inline.set(Box::new(move |event| {
            if crate::call_table::settle::announces_tools(&event) {
                noting();
            }
            crate::call_table::settle::settle_inline(&settling, event)
        }));
        let (tx, rx) = tokio::sync::mpsc::channel(ROUTED_CAPACITY);
        let routing = route(table.clone(), conn.events, tx, announced);
        let deadlines = crate::call_table::run_deadlines(&table);
        match self.wiring.io.of(&self.core.config.transport) {
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
        self.strikes = super::strikes::Strikes::new(table.heard(), Instant::now());
        self.link = Some(Link {
            generation,
            table,
            control: conn.control,
        });
        self.start_handshake(ctx);
    }

    pub(super) fn handshake_error(&self, detail: String) -> Error {
        ErrorContext::of_server(self.name.clone()).error(ErrorKind::Handshake {
            detail: detail.into(),
            cause: None,
        })
    }

    /// A failed handshake, with the error of the request that failed it (which tells a
    /// server that could not be reached from one that refused).
    pub(super) fn handshake_failure(&self, detail: String, cause: Error) -> Error {
        ErrorContext::of_server(self.name.clone()).error(ErrorKind::Handshake {
            detail: detail.into(),
            cause: Some(cause),
        })
    }

    /// The handshake is done and the tools listed: the server takes calls.
    pub(super) fn become_ready(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        self.phase = Phase::Ready { since: now };
        self.early = None;
        self.stop_startup_timer(ctx);
        let handshake = now.duration_since(self.connect_started);
        self.handshake_time = Some(handshake);
        self.core.metrics.handshake.record(handshake.as_secs_f64());
        self.backoff.on_ready(now);
        let Some(link) = &self.link else { return };
        let table = link.table.clone();
        self.strikes = super::strikes::Strikes::new(table.heard(), now);
        // The request a lost session rejected goes out again, once, on the new session.
        if let Some(id) = self.session.recovered() {
            if let Some(frame) = table.frame_of(id) {
                table.write(frame);
            }
        }
        // Its resources and prompts are listed next: a caller that routes by a URI or a
        // prompt name its status does not list yet waits for those first listings (announced
        // before the status says ready, so that no caller sees it ready without them).
        self.core.freshness.resources.announce();
        self.core.freshness.prompts.announce();
        self.open_gate();
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
        self.list_features(super::lists::Lists::Resources, ctx);
        self.list_features(super::lists::Lists::Prompts, ctx);
    }

    /// Every resource a caller subscribed to is subscribed to again on a new session.
    fn resubscribe(&mut self, ctx: &mut Context<Self>) {
        let timeout = self.core.config.timeout;
        for uri in self.core.subscriptions.uris() {
            let params = serde_json::json!({ "uri": uri });
            self.request(ctx, switchboard_codecs::mcp::methods::RESOURCES_SUBSCRIBE, params, timeout, move |act, answer, _| {
                if let Err(error) = answer {
                    tracing::warn!(server = %act.name, %uri, %error, "could not subscribe to the resource again");
                }
            });
        }
    }

    /// The log level a caller chose goes to every new session of the server.
    fn reapply_log_level(&mut self, ctx: &mut Context<Self>) {
        let Some(level) = self.core.logging.level() else {
            return;
        };
        let params = serde_json::json!({ "level": level });
        let timeout = self.core.config.timeout;
        self.request(ctx, switchboard_codecs::mcp::methods::LOGGING_SET_LEVEL, params, timeout, |act, answer, _| {
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
        let reason: Arc<str> = error.to_string().into();
        let table = self.link.as_ref().map(|link| &*link.table);
        let knock = self.knock_after(&error, table);
        self.set_gate(Gate::Unavailable {
            because: Unavailability::StartFailed,
            reason: reason.clone(),
            cause: Some(Arc::new(error.clone())),
            knock,
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
            None,
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
        if self.stopped_on_request() {
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
        let failed_start = self.phase.in_handshake();
        let state = if failed_start {
            // A process that starts and then exits (a bad flag, a missing module, an `npx`
            // of a package that does not exist) failed to start: calls fail at once, with
            // the exit status and the stderr tail, until an attempt succeeds.
            let error = ErrorContext::of_server(self.name.clone()).error(ErrorKind::Handshake {
                detail: format!("the server disconnected during the handshake: {reason}").into(),
                cause: Some(
                    ErrorContext::of_request(
                        self.name.clone(),
                        self.phase.handshake_method().into(),
                        None,
                    )
                    .error(ErrorKind::Disconnected {
                        reason: reason.clone(),
                    }),
                ),
            });
            self.set_gate(Gate::Unavailable {
                because: Unavailability::StartFailed,
                reason: error.to_string().into(),
                cause: Some(Arc::new(error.clone())),
                knock: self.knock_after(&error, table.as_deref()),
            });
            ServerState::Failed { error }
        } else {
            ServerState::Down {
                reason: reason.clone(),
            }
        };
        // Calls wait for the restart; when the transport lost the server (it may be back
        // before the backoff's retry), they knock.
        let waiting = (!failed_start).then(|| {
            let over_http = matches!(self.core.config.transport, Transport::Http(_));
            let unreachable = table.as_deref().is_some_and(Table::found_unreachable);
            match super::half_open::lost_the_server(&reason.cause, over_http, unreachable) {
                true => Gate::Backoff,
                false => Gate::Starting,
            }
        });
        // The status first: a caller told "disconnected" then finds the server down.
        self.went_down(text, state, waiting, ctx);
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
        self.keep_verdict(crate::era_memory::Verdict::Legacy);
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

    /// When a start that failed with `error` (on the connection of `table`, if it had one)
    /// began, if the transport could not reach the server: calls made after it knock.
    fn knock_after(&self, error: &Error, table: Option<&Table>) -> Option<Instant> {
        let over_http = matches!(self.core.config.transport, Transport::Http(_));
        let unreachable = table.is_some_and(Table::found_unreachable);
        super::half_open::could_not_reach(error, over_http, unreachable)
            .then_some(self.connect_started)
    }

    /// A call found the server lost by the transport, or unreachable by an attempt begun
    /// before it was made: during the backoff, an attempt starts at once, or when
    /// [`HalfOpen`](super::half_open::HalfOpen) allows, unless the backoff's retry comes
    /// first. The call waits for it at the gate.
    pub(super) fn on_knock(&mut self, ctx: &mut Context<Self>) {
        let Phase::Restarting {
            timer,
            due,
            early: false,
        } = self.phase
        else {
            // An attempt is under way (its outcome is the caller's), one is already
            // brought forward, or the server is ready, stopped or given up.
            return;
        };
        let knockable = matches!(
            &**self.core.gate.load(),
            Gate::Backoff | Gate::Unavailable { knock: Some(_), .. }
        );
        let now = Instant::now();
        let Some(at) = self.half_open.early_at(now, due).filter(|_| knockable) else {
            return;
        };
        ctx.cancel_future(timer);
        if at <= now {
            tracing::debug!(server = %self.name, "a call found the server unreachable: trying again ahead of the backoff");
            self.retry(Some(due), ctx);
        } else {
            let timer = ctx.run_later(at - now, move |act, ctx| act.retry(Some(due), ctx));
            self.phase = Phase::Restarting {
                timer,
                due,
                early: true,
            };
        }
    }

    /// Starts the next attempt: the backoff's, or an early one (`early`: when the retry it
    /// runs ahead of is due).
    fn retry(&mut self, early: Option<Instant>, ctx: &mut Context<Self>) {
        self.early = early;
        self.restarts += 1;
        self.connect(ctx);
    }

    /// Schedules a restart with backoff, or gives up for good; publishes the gate and the
    /// status. After a crash, calls wait for the restart within their deadline (`waiting`
    /// is the gate they find meanwhile); after a failed start (`waiting` is `None`) they fail
    /// at once (the gate already says why), unless it could not reach the server (then they
    /// knock).
    fn went_down(
        &mut self,
        reason: Arc<str>,
        final_state: ServerState,
        mut waiting: Option<Gate>,
        ctx: &mut Context<Self>,
    ) {
        // Nothing is listed until the next connection: callers waiting for a re-list go on
        // (and wait for readiness instead).
        self.core.freshness.forget();
        self.last_error = Some(reason.clone());
        self.session.reset();
        let now = Instant::now();
        // An early attempt that failed before the retry it ran ahead of was due leaves the
        // backoff as it was (see `half_open`): the retry is made when it was due.
        let ahead = self
            .early
            .take()
            .filter(|&due| !super::half_open::HalfOpen::counts(now, due));
        if let Some(due) = ahead {
            if let Some(gate) = waiting.take() {
                self.set_gate(gate);
            }
            let timer = ctx.run_later(due.saturating_duration_since(now), |act, ctx| {
                act.retry(None, ctx)
            });
            self.phase = Phase::Restarting {
                timer,
                due,
                early: false,
            };
            self.publish(ServerState::Restarting {
                attempt: self.backoff.attempt(),
                next_retry_at: due,
                last_error: reason,
            });
            return;
        }
        match self.backoff.on_failure(now, random_unit()) {
            Decision::RetryAfter(delay) => {
                if let Some(gate) = waiting {
                    self.set_gate(gate);
                }
                let timer = ctx.run_later(delay, |act, ctx| act.retry(None, ctx));
                self.phase = Phase::Restarting {
                    timer,
                    due: now + delay,
                    early: false,
                };
                self.publish(ServerState::Restarting {
                    attempt: self.backoff.attempt(),
                    next_retry_at: now + delay,
                    last_error: reason,
                });
            }
            Decision::GiveUp => {
                self.phase = Phase::Down;
                let state = if self.backoff.policy().is_enabled() {
                    let policy = self.backoff.policy();
                    ServerState::Failed {
                        error: ErrorContext::of_server(self.name.clone()).error(
                            ErrorKind::CrashLoop {
                                failures: policy.max_failures,
                                window: policy.window,
                                last_error: reason.clone(),
                            },
                        ),
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
                self.set_gate(Gate::Unavailable {
                    because: Unavailability::GaveUp,
                    reason: why,
                    cause,
                    knock: None,
                });
                self.publish(state);
            }
        }
    }
}
