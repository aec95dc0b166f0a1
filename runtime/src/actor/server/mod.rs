//! The server actor: owns one connection, numbers and correlates requests, enforces their
//! deadlines, runs the MCP handshake, and fails everything pending at once on disconnect.
//!
//! Lifecycle: connect → `initialize` → `notifications/initialized` → `tools/list` (every
//! page) → ready. Requests submitted before ready wait, with their deadlines running, and are
//! written once the server is ready.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use actix::fut::{ActorFuture, ActorFutureExt, WrapFuture};
use actix::{
    Actor, ActorContext, AsyncContext, Context, Handler, Message as ActixMessage,
    ResponseActFuture, StreamHandler,
};
use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{
    ErrorObject, Id, Message, Notification, Outcome, Request, Response,
};
use switchboard_codecs::lines::Skipped;
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::connection::{Control, Event, KillHandle, Outbound, Sender};
use switchboard_transports::{CloseReason, Connection};
use tokio::sync::watch;
use tokio_stream::StreamExt as _;
use tokio_util::time::delay_queue;

use super::pending::{Entry, Pending, Reply, Timer};
use super::{Cancel, Submit};
use crate::call::Progress;
use crate::config::{ServerConfig, Transport};
use crate::error::Error;
use crate::status::{ServerState, ServerStatus};

/// Most `tools/list` pages followed during a handshake.
const MAX_TOOL_PAGES: u32 = 100;

/// Live kill handles of every server of a runtime, for the synchronous kill on drop.
pub(crate) type Kills = Arc<Mutex<HashMap<Arc<str>, KillHandle>>>;

/// An event from connection number `.0` (older connections' stragglers are ignored).
pub(crate) struct Inbound(u64, Event);

/// Where the actor is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Initializing,
    ListingTools,
    Ready,
    Down,
    Stopping,
}

/// The live connection.
struct Link {
    generation: u64,
    sender: Sender,
    control: Box<dyn Control>,
}

/// One server's actor.
pub(crate) struct ServerActor {
    name: Arc<str>,
    config: ServerConfig,
    ids: Arc<AtomicI64>,
    kills: Kills,
    status: watch::Sender<ServerStatus>,
    phase: Phase,
    link: Option<Link>,
    generation: u64,
    pending: Pending,
    startup: Option<delay_queue::Key>,
    /// Why the server is unavailable, when it is.
    down_reason: Option<Arc<str>>,
    init: Option<mcp::InitializeResult>,
    tools: Vec<mcp::Tool>,
    /// Unreadable frames dropped so far.
    dropped_frames: u64,
    unknown_answers: u64,
}

impl ServerActor {
    pub(crate) fn new(
        name: Arc<str>,
        config: ServerConfig,
        ids: Arc<AtomicI64>,
        kills: Kills,
        status: watch::Sender<ServerStatus>,
    ) -> Self {
        ServerActor {
            name,
            config,
            ids,
            kills,
            status,
            phase: Phase::Connecting,
            link: None,
            generation: 0,
            pending: Pending::default(),
            startup: None,
            down_reason: None,
            init: None,
            tools: Vec::new(),
            dropped_frames: 0,
            unknown_answers: 0,
        }
    }

    fn next_id(&self) -> i64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn publish(&self, state: ServerState) {
        let pid = self.link.as_ref().and_then(|l| l.control.pid());
        let init = self.init.as_ref();
        self.status.send_replace(ServerStatus {
            state,
            protocol_version: init.map(|i| Arc::from(i.protocol_version.as_str())),
            server_info: init.map(|i| Arc::new(i.server_info.clone())),
            instructions: init.and_then(|i| i.instructions.as_deref().map(Arc::from)),
            tools: Arc::from(self.tools.clone()),
            pid,
            since: Instant::now(),
        });
    }

    // ----- connecting and the handshake -------------------------------------------------

    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.phase = Phase::Connecting;
        self.generation += 1;
        let at = Instant::now() + self.config.startup_timeout;
        self.startup = Some(self.pending.start_timer(Timer::Startup, at));
        let name = self.name.clone();
        let transport = self.config.transport.clone();
        ctx.spawn(
            open(name, transport)
                .into_actor(self)
                .map(|result, act, ctx| act.on_connected(result, ctx)),
        );
    }

    fn on_connected(&mut self, result: Result<Connection, Arc<str>>, ctx: &mut Context<Self>) {
        if self.phase != Phase::Connecting {
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
                self.fail_start(error);
                return;
            }
        };
        let generation = self.generation;
        if let Some(kill) = conn.control.kill_handle() {
            if let Ok(mut kills) = self.kills.lock() {
                kills.insert(self.name.clone(), kill);
            }
        }
        ctx.add_stream(
            tokio_stream::wrappers::ReceiverStream::new(conn.events)
                .map(move |event| Inbound(generation, event)),
        );
        self.link = Some(Link {
            generation,
            sender: conn.sender,
            control: conn.control,
        });
        self.phase = Phase::Initializing;
        let params = serde_json::json!({
            "protocolVersion": mcp::LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")},
        });
        self.send_internal(methods::INITIALIZE, &params, Reply::Initialize);
    }

    /// Sends one of the actor's own requests.
    fn send_internal(&mut self, method: &str, params: &impl Serialize, reply: Reply) {
        let id = self.next_id();
        let frame = request_frame(id, method, params);
        self.pending
            .insert(id, Entry::internal(reply, method), None);
        self.write(Some(id), frame);
    }

    fn notify(&self, method: &str, params: &impl Serialize) {
        let mut out = Vec::with_capacity(96);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        push_json(&mut out, &method);
        out.extend_from_slice(br#","params":"#);
        push_json(&mut out, params);
        out.push(b'}');
        self.write(None, Bytes::from(out));
    }

    fn write(&self, id: Option<i64>, payload: Bytes) {
        if let Some(link) = &self.link {
            // A failed send means the writer is gone; the connection's Closed event follows
            // and fails what is pending.
            let _ = link.sender.send(Outbound {
                id: id.map(Id::Number),
                payload,
            });
        }
    }

    fn on_internal(&mut self, reply: Reply, outcome: Outcome, ctx: &mut Context<Self>) {
        match (reply, outcome) {
            (Reply::Initialize, Outcome::Result(raw)) => self.on_initialized(&raw, ctx),
            (Reply::Initialize, Outcome::Error(e)) => {
                self.fail_start(self.handshake_error(format!("initialize was refused: {e}")))
            }
            (Reply::ToolsPage(page), Outcome::Result(raw)) => self.on_tools_page(page, &raw),
            (Reply::ToolsPage(_), Outcome::Error(e)) => {
                if self.phase == Phase::ListingTools {
                    self.fail_start(self.handshake_error(format!("tools/list failed: {e}")))
                } else {
                    tracing::warn!(server = %self.name, error = %e, "refreshing the tool list failed");
                }
            }
            (Reply::Caller(_), _) => {}
        }
    }

    fn handshake_error(&self, detail: String) -> Error {
        Error::Handshake {
            server: self.name.clone(),
            detail: detail.into(),
        }
    }

    fn on_initialized(&mut self, raw: &RawValue, _ctx: &mut Context<Self>) {
        let init: mcp::InitializeResult = match serde_json::from_str(raw.get()) {
            Ok(init) => init,
            Err(e) => {
                self.fail_start(self.handshake_error(format!("invalid initialize result: {e}")));
                return;
            }
        };
        if !mcp::SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            let error = Error::UnsupportedVersion {
                server: self.name.clone(),
                offered: mcp::LATEST_PROTOCOL_VERSION.into(),
                received: init.protocol_version.as_str().into(),
            };
            self.fail_start(error);
            return;
        }
        if let Some(link) = &mut self.link {
            link.control.set_protocol_version(&init.protocol_version);
        }
        tracing::info!(
            server = %self.name,
            version = %init.protocol_version,
            peer = %init.server_info.name,
            "server initialized"
        );
        let has_tools = init.capabilities.tools.is_some();
        self.init = Some(init);
        self.notify(methods::INITIALIZED, &serde_json::json!({}));
        self.tools.clear();
        if has_tools {
            self.phase = Phase::ListingTools;
            self.send_internal(
                methods::TOOLS_LIST,
                &serde_json::json!({}),
                Reply::ToolsPage(1),
            );
        } else {
            self.become_ready();
        }
    }

    fn on_tools_page(&mut self, page: u32, raw: &RawValue) {
        let list: mcp::ListToolsResult = match serde_json::from_str(raw.get()) {
            Ok(list) => list,
            Err(e) => {
                let detail = format!("invalid tools/list result: {e}");
                if self.phase == Phase::ListingTools {
                    self.fail_start(self.handshake_error(detail));
                } else {
                    tracing::warn!(server = %self.name, "{detail}");
                }
                return;
            }
        };
        if page == 1 {
            self.tools.clear();
        }
        self.tools.extend(list.tools);
        match list.next_cursor {
            Some(cursor) if page < MAX_TOOL_PAGES => {
                let params = serde_json::json!({ "cursor": cursor });
                self.send_internal(methods::TOOLS_LIST, &params, Reply::ToolsPage(page + 1));
            }
            next => {
                if next.is_some() {
                    tracing::warn!(server = %self.name, pages = MAX_TOOL_PAGES, "tools/list still had more pages; the rest were not fetched");
                }
                if self.phase == Phase::ListingTools {
                    self.become_ready();
                } else if self.phase == Phase::Ready {
                    self.publish(ServerState::Ready);
                }
            }
        }
    }

    fn become_ready(&mut self) {
        self.phase = Phase::Ready;
        self.down_reason = None;
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        self.publish(ServerState::Ready);
        // Requests submitted while starting go out now, unless their callers left.
        for id in self.pending.unsent_ids() {
            let Some(entry) = self.pending.get_mut(id) else {
                continue;
            };
            let gone = matches!(&entry.reply, Reply::Caller(tx) if tx.is_closed());
            if gone {
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

    /// The server could not be started: report it, close what there is, fail the waiting.
    fn fail_start(&mut self, error: Error) {
        tracing::warn!(server = %self.name, %error, "server failed to start");
        self.phase = Phase::Down;
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        self.down_reason = Some(error.to_string().into());
        self.close_link();
        self.fail_all(|_| error.clone());
        self.publish(ServerState::Failed { error });
    }

    fn close_link(&mut self) {
        if let Some(link) = self.link.take() {
            if let Ok(mut kills) = self.kills.lock() {
                kills.remove(&self.name);
            }
            actix::spawn(link.control.close());
        }
    }

    /// Fails every pending request; written ones get `written(entry)`, the rest Unavailable.
    fn fail_all(&mut self, written: impl Fn(&Entry) -> Error) {
        let reason = self
            .down_reason
            .clone()
            .unwrap_or_else(|| Arc::from("the server is not running"));
        for (_, entry) in self.pending.drain() {
            let Reply::Caller(tx) = &entry.reply else {
                continue;
            };
            let error = if entry.unsent.is_some() {
                Error::Unavailable {
                    server: self.name.clone(),
                    tool: entry.tool.clone(),
                    reason: reason.clone(),
                }
            } else {
                written(&entry)
            };
            if let Reply::Caller(tx) = entry.reply {
                let _ = tx.send(Err(error));
            } else {
                let _ = tx;
            }
        }
    }

    // ----- requests from handles ---------------------------------------------------------

    fn on_submit(&mut self, submit: Submit) {
        if submit.reply.is_closed() {
            return;
        }
        let Submit {
            id,
            method,
            tool,
            payload,
            policy,
            started,
            progress,
            reply,
            permit,
        } = submit;
        let ready = self.phase == Phase::Ready;
        let waiting = matches!(
            self.phase,
            Phase::Connecting | Phase::Initializing | Phase::ListingTools
        );
        if !ready && !waiting {
            let reason = self
                .down_reason
                .clone()
                .unwrap_or_else(|| Arc::from("the server is stopping"));
            let _ = reply.send(Err(Error::Unavailable {
                server: self.name.clone(),
                tool,
                reason,
            }));
            return;
        }
        let entry = Entry {
            reply: Reply::Caller(reply),
            method,
            tool,
            started,
            policy: Some(policy),
            progress,
            unsent: if ready { None } else { Some(payload.clone()) },
            dropped_at_start: self.dropped_frames,
            key: None,
            permit: Some(permit),
        };
        self.pending.insert(id, entry, Some(policy.first(started)));
        if ready {
            self.write(Some(id), payload);
        }
    }

    fn on_cancel(&mut self, id: i64) {
        let Some(entry) = self.pending.take(id) else {
            return;
        };
        if entry.unsent.is_none() {
            self.send_cancelled(id, "the caller cancelled the request");
        }
    }

    fn send_cancelled(&self, id: i64, reason: &str) {
        self.notify(
            methods::CANCELLED,
            &serde_json::json!({ "requestId": id, "reason": reason }),
        );
    }

    fn on_timer(&mut self, timer: Timer) {
        match timer {
            Timer::Startup => {
                self.startup = None;
                if matches!(
                    self.phase,
                    Phase::Connecting | Phase::Initializing | Phase::ListingTools
                ) {
                    let detail = format!(
                        "no complete handshake within the startup timeout of {} ms",
                        self.config.startup_timeout.as_millis()
                    );
                    self.fail_start(self.handshake_error(detail));
                }
            }
            Timer::Request(id) => {
                let Some(entry) = self.pending.take_expired(id) else {
                    return;
                };
                let Reply::Caller(tx) = entry.reply else {
                    return;
                };
                let error = if entry.unsent.is_some() {
                    Error::Unavailable {
                        server: self.name.clone(),
                        tool: entry.tool,
                        reason: "the server did not become ready within the call's deadline".into(),
                    }
                } else {
                    let elapsed = entry.started.elapsed();
                    self.send_cancelled(id, &format!("timed out after {} ms", elapsed.as_millis()));
                    Error::Timeout {
                        server: self.name.clone(),
                        method: entry.method,
                        tool: entry.tool,
                        request_id: id,
                        elapsed,
                        dropped_frames: self.dropped_frames - entry.dropped_at_start,
                    }
                };
                let _ = tx.send(Err(error));
            }
        }
    }

    // ----- what the server sends ---------------------------------------------------------

    fn on_event(&mut self, event: Event, ctx: &mut Context<Self>) {
        match event {
            Event::Message(Message::Response(response)) => self.on_response(response, ctx),
            Event::Message(Message::Notification(n)) => self.on_notification(n),
            Event::Message(Message::Request(r)) => self.on_server_request(r),
            Event::Skipped(skipped) => self.on_skipped(skipped),
            Event::SendFailed {
                id: Id::Number(n),
                reason,
            } => {
                self.fail_one(n, |server, e| Error::Unavailable {
                    server,
                    tool: e.tool.clone(),
                    reason: reason.clone(),
                });
            }
            Event::SessionExpired { id } => {
                tracing::warn!(server = %self.name, ?id, "the server's session expired");
            }
            Event::Closed(reason) => self.on_closed(reason),
            _ => {}
        }
    }

    fn on_response(&mut self, response: Response, ctx: &mut Context<Self>) {
        let Some(Id::Number(id)) = response.id else {
            self.on_unknown_answer(response.id.as_ref(), &response.outcome);
            return;
        };
        let Some(entry) = self.pending.take(id) else {
            self.on_unknown_answer(Some(&Id::Number(id)), &response.outcome);
            return;
        };
        match entry.reply {
            Reply::Caller(tx) => {
                let result = match response.outcome {
                    Outcome::Result(raw) => Ok(raw),
                    Outcome::Error(e) => Err(Error::Rpc {
                        server: self.name.clone(),
                        method: entry.method,
                        tool: entry.tool,
                        code: e.code,
                        message: e.message,
                        data: e
                            .data
                            .and_then(|d| serde_json::from_str(d.get()).ok())
                            .map(Arc::new),
                    }),
                };
                let _ = tx.send(result);
            }
            internal => self.on_internal(internal, response.outcome, ctx),
        }
    }

    fn on_unknown_answer(&mut self, id: Option<&Id>, outcome: &Outcome) {
        self.unknown_answers += 1;
        match (id, outcome) {
            (None, Outcome::Error(e)) => {
                tracing::warn!(server = %self.name, error = %e, "the server reported an error about a message it could not read")
            }
            _ => tracing::warn!(
                server = %self.name,
                id = %id.map(ToString::to_string).unwrap_or_default(),
                total = self.unknown_answers,
                "ignored an answer to an unknown request id"
            ),
        }
    }

    fn on_skipped(&mut self, skipped: Skipped) {
        if let Some(Id::Number(id)) = skipped.id {
            let detail = format!("malformed answer: {}", skipped.reason());
            if self.fail_one(id, |server, e| Error::Protocol {
                server,
                method: e.method.clone(),
                tool: e.tool.clone(),
                detail: detail.clone(),
            }) {
                return;
            }
        }
        self.dropped_frames += 1;
    }

    /// Fails one pending caller; true when there was one.
    fn fail_one(&mut self, id: i64, error: impl FnOnce(Arc<str>, &Entry) -> Error) -> bool {
        let Some(entry) = self.pending.take(id) else {
            return false;
        };
        let e = error(self.name.clone(), &entry);
        match entry.reply {
            Reply::Caller(tx) => {
                let _ = tx.send(Err(e));
            }
            _ => {
                if self.phase != Phase::Ready {
                    self.fail_start(self.handshake_error(e.to_string()));
                }
            }
        }
        true
    }

    fn on_notification(&mut self, n: Notification) {
        match n.method.as_str() {
            methods::PROGRESS => self.on_progress(n.params.as_deref()),
            methods::MESSAGE => {
                if let Some(params) = n.params {
                    match serde_json::from_str::<mcp::LoggingMessageParams>(params.get()) {
                        Ok(log) => tracing::info!(
                            target: "switchboard::server_log",
                            server = %self.name,
                            level = ?log.level,
                            logger = log.logger.as_deref().unwrap_or(""),
                            data = %log.data,
                        ),
                        Err(_) => {
                            tracing::debug!(server = %self.name, "malformed notifications/message")
                        }
                    }
                }
            }
            methods::TOOLS_LIST_CHANGED => {
                if self.phase == Phase::Ready {
                    self.send_internal(
                        methods::TOOLS_LIST,
                        &serde_json::json!({}),
                        Reply::ToolsPage(1),
                    );
                }
            }
            other => tracing::debug!(server = %self.name, method = other, "notification ignored"),
        }
    }

    fn on_progress(&mut self, params: Option<&RawValue>) {
        let Some(params) = params else { return };
        let Ok(p) = serde_json::from_str::<mcp::ProgressNotificationParams>(params.get()) else {
            tracing::debug!(server = %self.name, "malformed notifications/progress");
            return;
        };
        let mcp::ProgressToken::Number(id) = p.progress_token else {
            return;
        };
        let Some(entry) = self.pending.get_mut(id) else {
            return;
        };
        if let Some(callback) = &entry.progress {
            callback(Progress {
                progress: p.progress,
                total: p.total,
                message: p.message.clone(),
            });
        }
        let next = entry
            .policy
            .and_then(|policy| policy.on_progress(entry.started, Instant::now()));
        if let Some(at) = next {
            self.pending.reset(id, at);
        }
    }

    fn on_server_request(&mut self, request: Request) {
        let outcome = if request.method == methods::PING {
            Outcome::Result(empty_object())
        } else {
            Outcome::Error(ErrorObject::new(
                ErrorObject::METHOD_NOT_FOUND,
                format!("method not found: {}", request.method),
            ))
        };
        let answer = Message::Response(Response {
            id: Some(request.id),
            outcome,
        });
        self.write(None, Bytes::from(answer.to_vec()));
    }

    fn on_closed(&mut self, reason: CloseReason) {
        if let Ok(mut kills) = self.kills.lock() {
            kills.remove(&self.name);
        }
        self.link = None;
        if self.phase == Phase::Stopping {
            return;
        }
        tracing::warn!(server = %self.name, %reason, pending = self.pending.len(), "server disconnected");
        let reason = Arc::new(reason);
        let was_ready = self.phase == Phase::Ready;
        self.phase = Phase::Down;
        if let Some(key) = self.startup.take() {
            self.pending.stop_timer(&key);
        }
        self.down_reason = Some(format!("it disconnected: {reason}").into());
        let name = self.name.clone();
        self.fail_all(|entry| Error::Disconnected {
            server: name.clone(),
            method: entry.method.clone(),
            tool: entry.tool.clone(),
            reason: reason.clone(),
        });
        if was_ready {
            self.publish(ServerState::Down { reason });
        } else {
            let error = self.handshake_error(format!(
                "the server disconnected during the handshake: {reason}"
            ));
            self.publish(ServerState::Failed { error });
        }
    }
}

impl Actor for ServerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.spawn(DeadlineDriver);
        self.connect(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        // Any connection still held is killed by its drop; waiting callers learn it here.
        self.down_reason
            .get_or_insert_with(|| Arc::from("the server was stopped"));
        let name = self.name.clone();
        self.fail_all(|entry| Error::Unavailable {
            server: name.clone(),
            tool: entry.tool.clone(),
            reason: "the server was stopped".into(),
        });
    }
}

impl StreamHandler<Submit> for ServerActor {
    fn handle(&mut self, submit: Submit, _ctx: &mut Context<Self>) {
        self.on_submit(submit);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl StreamHandler<Cancel> for ServerActor {
    fn handle(&mut self, cancel: Cancel, _ctx: &mut Context<Self>) {
        self.on_cancel(cancel.0);
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

    fn handle(&mut self, _: Shutdown, _ctx: &mut Context<Self>) -> Self::Result {
        self.phase = Phase::Stopping;
        self.down_reason = Some("the runtime is shutting down".into());
        // Requests the server is working on are abandoned: say so before closing.
        for id in self.pending.written_ids() {
            self.send_cancelled(id, "the client is shutting down");
        }
        let name = self.name.clone();
        self.fail_all(|entry| Error::Unavailable {
            server: name.clone(),
            tool: entry.tool.clone(),
            reason: "the runtime is shutting down".into(),
        });
        let link = self.link.take();
        if let Ok(mut kills) = self.kills.lock() {
            kills.remove(&self.name);
        }
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

/// Polls the actor's `DelayQueue` inside its context: one timer wheel for every deadline.
struct DeadlineDriver;

impl ActorFuture<ServerActor> for DeadlineDriver {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut ServerActor,
        _ctx: &mut Context<ServerActor>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        // An empty queue keeps the waker and wakes us on the next insert.
        while let Poll::Ready(Some(expired)) = act.pending.deadlines.poll_expired(task) {
            act.on_timer(expired.into_inner());
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
            actix::spawn(serve(io));
            Ok(conn)
        }
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

fn push_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Serializing into a Vec fails only for maps with non-string keys, which we never build.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("`{}` is valid JSON")
}
