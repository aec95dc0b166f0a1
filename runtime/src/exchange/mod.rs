//! The data plane: one exchange for every request the client sends.
//!
//! A [`Request`] is one owned value — a caller's tool call, list, read or raw request, and
//! the server actor's own `server/discover`, `initialize`, listings and pings — and
//! [`exchange`] takes it through one sequence of stages, each a function of this module:
//!
//! 1. **admission** ([`crate::admission`]): a caller's request takes an in-flight slot, waiting
//!    for one within its deadline (past it: `Overloaded`); the actor's own take none;
//! 2. **readiness** ([`ready`]): the connection to use — for a caller the server's
//!    [`Connected`] snapshot, read once from its [`Gate`], waiting while the server starts
//!    (within the deadline) and failing at once while it cannot start, unless it could not
//!    be reached: then the call has the actor try again and waits for that attempt; for the
//!    actor, its own connection;
//! 3. **framing** ([`crate::framer`]): a new id, and the frame in the server's era, `_meta` built
//!    one way, with what the transport must know of it ([`Outbound`](switchboard_transports::Outbound)'s facts);
//! 4. **register and write** ([`send`]): the waiter goes into the connection's call
//!    [`Table`] with its deadline, and the frame to the connection's writer; a table
//!    that closed before anything was written hands the request back (with its slot), and
//!    it goes to the server's next connection;
//! 5. **the answer**: the task that reads the connection settles the waiter in place
//!    ([`crate::call_table::settle`]), the connection's deadline task times it out (and tells the server with
//!    `notifications/cancelled`), the connection's close fails it with the cause; a
//!    request whose future is dropped takes its waiter back and cancels;
//! 6. **follow-ups**: a response that broke before the answer is sent again where that is
//!    safe ([`reissue`]), and a stateless server's answer may need one more round: a
//!    version it refused, input it requires, a result type to check ([`follow_up`]). Each
//!    is the same request once more through stages 1 to 5, within the same deadline.
//!
//! Metrics start and finish here, once per caller's request, whatever its rounds. No answer
//! passes through an actor's mailbox: the actors (the control plane) only see what is not
//! an answer — notifications other than progress, requests from the server, session loss
//! and the close.

pub(crate) mod follow_up;
pub(crate) mod reissue;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_codecs::mcp::methods;
use switchboard_transports::CloseReason;
use tokio::sync::oneshot;

use crate::admission::{Refused, Slot};
use crate::call_scope::Scope;
use crate::call_table::{ProgressFn, Table, Track, Unsent, Waiter};
use crate::core::{Connected, Gate, ServerCore};
use crate::deadline::DeadlinePolicy;
use crate::era::{Dialect, Modern};
use crate::error::{Error, ErrorContext, ErrorKind, Result, Unavailability};
use crate::framer::{self, Round, TaskParams};
pub(crate) use crate::framer::{Params, Retry};
use crate::metrics::{CancelReason, Recording};
use crate::status::{ServerState, ServerStatus};

/// Who sends a request, which decides its first two stages.
#[derive(Clone)]
pub(crate) enum Origin {
    /// A caller: it takes an in-flight slot, waits at the gate, and is measured.
    Caller,
    /// The server's actor, on its own connection, framed as `framing` says, its first round
    /// under `id` when given (the listen's, which its acknowledgement names).
    Actor {
        table: Arc<Table>,
        framing: Framing,
        id: Option<i64>,
    },
}

/// The era an actor's own request is written in.
#[derive(Clone)]
pub(crate) enum Framing {
    /// The connection's: its [`Dialect`] once the server is known to be stateless, `None`
    /// in the handshake era (and before the era is known).
    Connection(Option<Arc<Dialect>>),
    /// The era probe's own (`server/discover` before there is a verdict): a refused
    /// version is the probe's to handle, and changes nothing else.
    Probe(Arc<Modern>),
}

/// One request, from the moment it is made to its answer.
pub(crate) struct Request {
    pub(crate) method: Arc<str>,
    /// For `tools/call`, the tool (in errors and metrics).
    pub(crate) tool: Option<Arc<str>>,
    pub(crate) params: Params,
    /// Set by a follow-up round of an input-required answer.
    pub(crate) retry: Option<Box<Retry>>,
    /// When the caller made it: what it waited (metrics, `Timeout::elapsed`).
    pub(crate) started: Instant,
    /// The deadline rules and the instant they count from; `None`: no deadline of its own
    /// (`initialize`, which the startup timeout bounds by closing the connection).
    pub(crate) deadline: Option<(Instant, DeadlinePolicy)>,
    pub(crate) progress: Option<ProgressFn>,
    /// The call's own handlers and log receiver, if it has them.
    pub(crate) scope: Option<Arc<Scope>>,
    /// Whether each round carries its id as `_meta.progressToken` (as `tools/call` does).
    pub(crate) progress_token: bool,
    pub(crate) origin: Origin,
}

impl Request {
    /// A caller's request of `method`, under `policy` from `started`.
    pub(crate) fn new(
        method: Arc<str>,
        params: Params,
        started: Instant,
        policy: DeadlinePolicy,
    ) -> Request {
        Request {
            method,
            tool: None,
            params,
            retry: None,
            started,
            deadline: Some((started, policy)),
            progress: None,
            scope: None,
            progress_token: false,
            origin: Origin::Caller,
        }
    }

    /// The actor's own request on its connection `table`, written in the connection's
    /// `dialect` (`None`: the handshake era), with `timeout` (`None`: none).
    pub(crate) fn actor(
        method: &'static str,
        params: Value,
        timeout: Option<std::time::Duration>,
        table: Arc<Table>,
        dialect: Option<Arc<Dialect>>,
    ) -> Request {
        let started = Instant::now();
        let deadline = timeout.map(|t| (started, DeadlinePolicy::only(t)));
        Request {
            method: method.into(),
            tool: None,
            params: Params::from_value(params),
            retry: None,
            started,
            deadline,
            progress: None,
            scope: None,
            progress_token: false,
            origin: Origin::Actor {
                table,
                framing: Framing::Connection(dialect),
                id: None,
            },
        }
    }

    /// The deadline of the next round.
    pub(crate) fn first_deadline(&self) -> Option<Instant> {
        self.deadline.map(|(since, policy)| policy.first(since))
    }

    /// Whether a timeout or a drop tells the server with `notifications/cancelled`: never
    /// for `initialize`, which the specification forbids cancelling.
    pub(crate) fn cancellable(&self) -> bool {
        &*self.method != methods::INITIALIZE
    }
}

/// Takes `request` through every stage to its final answer (see the module docs).
///
/// # Cancel safety
///
/// Dropping the future cancels the request: its waiter is taken out of the table, its slot
/// freed, and the server sent `notifications/cancelled` (or its stream closed, for a
/// stateless request over HTTP); a follow-up's handler is stopped.
pub(crate) fn exchange(
    core: &ServerCore,
    request: Request,
) -> impl std::future::Future<Output = Result<Box<RawValue>>> + '_ {
    // Not an `async fn`: that would hold the request beside the future that owns it.
    futures_util::FutureExt::map(answer(core, request), |answer| answer.map(|a| a.raw))
}

/// A final answer, with what the round that brought it went through.
pub(crate) struct Answer {
    pub(crate) raw: Box<RawValue>,
    /// Whether it was written in the stateless era.
    pub(crate) modern: bool,
    /// Whether a tool call ran as a task (2025-11-25: it asked with `params.task`).
    pub(crate) task: bool,
    /// For a caller's request, the snapshot it went by.
    pub(crate) connected: Option<Arc<Connected>>,
}

/// As [`exchange`], with what the answer's round went through (a tool call reads its
/// result by it).
///
/// # Cancel safety
///
/// As [`exchange`].
pub(crate) async fn answer(core: &ServerCore, mut request: Request) -> Result<Answer> {
    match request.origin {
        Origin::Caller => {
            let series = core
                .metrics
                .series(&request.method, request.tool.as_deref());
            let recording = Recording::start(series, request.started);
            let result = rounds(core, &mut request).await;
            recording.finish(&request.method, result.as_ref().map(|a| &*a.raw));
            result
        }
        Origin::Actor { .. } => {
            // Counted while in flight: liveness tells the actor's work from callers'.
            core.own_in_flight.fetch_add(1, Ordering::Relaxed);
            let _counted = OwnInFlight(core);
            rounds(core, &mut request).await
        }
    }
}

/// Counts one of the actor's own requests out when it ends.
struct OwnInFlight<'a>(&'a ServerCore);

impl Drop for OwnInFlight<'_> {
    fn drop(&mut self) {
        self.0.own_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Rounds of `request` until one answer is final: stages 1 to 5, then the follow-ups.
async fn rounds(core: &ServerCore, request: &mut Request) -> Result<Answer> {
    let mut follow = follow_up::Count::default();
    loop {
        let (answer, via) = round(core, request).await;
        // A chosen id is the first round's only.
        if let Origin::Actor { id, .. } = &mut request.origin {
            *id = None;
        }
        match answer {
            Err(e)
                if matches!(e.kind(), ErrorKind::StreamBroken { .. })
                    && follow.may_reissue(core, request) =>
            {
                // A new id: the lost request may still be running under the old one.
                tracing::debug!(server = %core.name, method = %request.method, tool = request.tool.as_deref(), reason = %e, "the response broke; sending the request again");
            }
            answer if !via.modern => return via.answered(answer),
            // Boxed: only a stateless server's answers get here, and the work is rare.
            answer => {
                let dialect = via.dialect(request);
                let next = follow_up::next(core, request, dialect.as_deref(), answer, &mut follow);
                match Box::pin(next).await {
                    follow_up::Next::Done(answer) => return via.answered(answer),
                    follow_up::Next::Again => {}
                }
            }
        }
    }
}

/// What a round went through: what follows its answer reads it.
#[derive(Default)]
struct Via {
    /// A caller's round: the snapshot it was sent by.
    connected: Option<Arc<Connected>>,
    /// Written in the stateless era.
    modern: bool,
    /// A tool call that ran as a task.
    task: bool,
}

impl Via {
    /// The dialect a refused version changes: the snapshot's for a caller, the
    /// connection's for the actor, none for the era probe.
    fn dialect(&self, request: &Request) -> Option<Arc<Dialect>> {
        match (&request.origin, &self.connected) {
            (Origin::Caller, Some(connected)) => connected.dialect.clone(),
            (
                Origin::Actor {
                    framing: Framing::Connection(dialect),
                    ..
                },
                _,
            ) => dialect.clone(),
            _ => None,
        }
    }

    fn answered(self, answer: Result<Box<RawValue>>) -> Result<Answer> {
        answer.map(|raw| Answer {
            raw,
            modern: self.modern,
            task: self.task,
            connected: self.connected,
        })
    }
}

/// The connection a round goes to, and how it is written there.
enum Route<'r> {
    /// A caller's: the server's snapshot.
    Snapshot(Arc<Connected>),
    /// The actor's own connection.
    Own(&'r Arc<Table>, &'r Framing),
}

/// One round: admission, readiness, framing, register and write, the answer; and what it
/// went through.
async fn round(core: &ServerCore, request: &Request) -> (Result<Box<RawValue>>, Via) {
    let deadline = request.first_deadline();
    let mut slot = match request.origin {
        Origin::Caller => match core.admission.admit(deadline).await {
            Ok(slot) => Some(slot),
            Err(refused) => return (Err(refused_error(core, request, refused)), Via::default()),
        },
        Origin::Actor { .. } => None,
    };
    loop {
        let route = match ready(core, request, deadline).await {
            Ok(route) => route,
            Err(error) => return (Err(error), Via::default()),
        };
        let task = match task_params(core, request, &route) {
            Ok(task) => task,
            Err(error) => return (Err(error), Via::default()),
        };
        let id = match request.origin {
            Origin::Actor { id: Some(id), .. } => id,
            _ => core.next_id(),
        };
        tracing::Span::current().record("id", id);
        let (outbound, modern) = frame(core, request, id, &route, task);
        let task = task.is_some();
        let table = match &route {
            Route::Snapshot(connected) => &connected.table,
            Route::Own(table, _) => table,
        };
        match send(table, id, outbound, request, deadline, slot).await {
            Ok(answer) => {
                let connected = match route {
                    Route::Snapshot(connected) => Some(connected),
                    Route::Own(..) => None,
                };
                let via = Via {
                    connected,
                    modern,
                    task,
                };
                return (answer, via);
            }
            // The table closed before the request was written: the server is going down,
            // and a caller's request waits for its next connection like any other.
            Err(Unsent { slot: returned }) => match request.origin {
                Origin::Caller => slot = returned,
                Origin::Actor { .. } => {
                    return (Err(connection_gone(core, request)), Via::default())
                }
            },
        }
    }
}

/// Stage 2: the connection to send on: for a caller, the server's snapshot, waiting for
/// one while the server starts, until `deadline`, and failing at once while the server
/// cannot start; for the actor, its own connection.
async fn ready<'r>(
    core: &ServerCore,
    request: &'r Request,
    deadline: Option<Instant>,
) -> Result<Route<'r>> {
    match &request.origin {
        Origin::Actor { table, framing, .. } => Ok(Route::Own(table, framing)),
        Origin::Caller => match gate(core, &request.tool, request.started)? {
            Some(connected) => Ok(Route::Snapshot(connected)),
            // Boxed: waiting is rare, and would otherwise enlarge every call's future.
            None => Box::pin(wait_ready(core, deadline, request))
                .await
                .map(Route::Snapshot),
        },
    }
}

/// A caller's tool call's `params.task` on the connection of `route`.
fn task_params(
    core: &ServerCore,
    request: &Request,
    route: &Route<'_>,
) -> Result<Option<TaskParams>> {
    match (&request.params, route) {
        (Params::ToolCall { name, task, .. }, Route::Snapshot(connected)) => {
            connected.task_params(core, name, *task)
        }
        _ => Ok(None),
    }
}

/// Waits for a ready connection until `deadline`.
async fn wait_ready(
    core: &ServerCore,
    deadline: Option<Instant>,
    request: &Request,
) -> Result<Arc<Connected>> {
    let tool = &request.tool;
    loop {
        let mut changes = core.gate.changes();
        if let Some(connected) = gate(core, tool, request.started)? {
            return Ok(connected);
        }
        match until(deadline, changes.changed()).await {
            Some(Ok(())) => continue,
            Some(Err(_)) => return Err(gone(core, tool)),
            None => {
                // Only to say why: the status is what embedders see of the server.
                let status = core.status();
                let because = match status.state {
                    ServerState::Restarting { .. } => Unavailability::Restarting,
                    ServerState::Starting if status.restarts > 0 => Unavailability::Restarting,
                    _ => Unavailability::NotReady,
                };
                let why = not_ready(&status);
                return Err(ErrorContext::of_server(core.name.clone())
                    .with_tool(tool.clone())
                    .error(ErrorKind::Unavailable {
                        because,
                        reason: format!("not ready within the call's deadline: {why}").into(),
                        cause: None,
                    }));
            }
        }
    }
}

/// The snapshot to go by now, `None` to wait, or why the server takes no calls, for a call
/// made at `started`.
fn gate(
    core: &ServerCore,
    tool: &Option<Arc<str>>,
    started: Instant,
) -> Result<Option<Arc<Connected>>> {
    match &**core.gate.load() {
        Gate::Ready(connected) if !connected.table.is_closed() => Ok(Some(connected.clone())),
        Gate::Ready(_) | Gate::Starting => Ok(None),
        // The transport lost the server, which may be back by now: no need to wait for the
        // backoff's retry.
        Gate::Backoff => {
            core.knocks.notify_one();
            Ok(None)
        }
        // An attempt begun before this call could not reach the server: it may be back by
        // now, and only an attempt begun after the call may fail it.
        Gate::Unavailable {
            knock: Some(tried), ..
        } if *tried < started => {
            core.knocks.notify_one();
            Ok(None)
        }
        Gate::Unavailable {
            because,
            reason,
            cause,
            ..
        } => Err(ErrorContext::of_server(core.name.clone())
            .with_tool(tool.clone())
            .error(ErrorKind::Unavailable {
                because: *because,
                reason: reason.clone(),
                cause: cause.as_deref().cloned(),
            })),
    }
}

/// Stage 3: frames round `id` of `request` for the connection of `route`, in its era, with
/// `task` as the call's `params.task`; and whether that is the stateless era (its answer
/// may need a follow-up).
fn frame(
    core: &ServerCore,
    request: &Request,
    id: i64,
    route: &Route<'_>,
    task: Option<TaskParams>,
) -> (switchboard_transports::Outbound, bool) {
    let (table, speaks, fixed, rules) = match route {
        Route::Snapshot(c) => (&*c.table, c.dialect.as_deref(), None, Some(&c.tool_rules)),
        Route::Own(table, Framing::Connection(dialect)) => {
            (&***table, dialect.as_deref(), None, None)
        }
        Route::Own(table, Framing::Probe(probe)) => (&***table, None, Some(&**probe), None),
    };
    // The version now, for this frame: a refused one changes it for the next.
    let now = speaks.map(Dialect::now);
    let dialect: Option<&Modern> = fixed.or(now.as_deref().map(|modern| &**modern));
    let sends_headers = dialect.is_some() && table.kind().sends_request_headers();
    let param_headers = match (&request.params, sends_headers, rules) {
        (Params::ToolCall { name, .. }, true, Some(rules)) => rules.param_headers(name),
        _ => &[],
    };
    let scope = request.scope.as_deref();
    // A call with handlers of its own declares their capabilities (a stateless request
    // declares them in every `_meta`; a handshake-era connection declared its own).
    let capabilities = scope
        .zip(dialect)
        .and_then(|(s, m)| s.capabilities(&m.capabilities));
    let outbound = framer::request(Round {
        id,
        method: &request.method,
        params: &request.params,
        retry: request.retry.as_deref(),
        progress_token: request.progress_token,
        dialect,
        capabilities: capabilities.as_ref(),
        level: scope
            .and_then(Scope::log_level)
            .or_else(|| core.logging.level()),
        sends_headers,
        param_headers,
        task,
    });
    (outbound, dialect.is_some())
}

/// Stages 4 and 5: registers the waiter and writes the frame, then waits for the answer
/// under `deadline` (which the connection's deadline task enforces, and progress may move).
///
/// Hands the slot back when the table was already closed (nothing was written).
///
/// # Cancel safety
///
/// Dropping the future takes the request out of the table, frees its slot, and sends
/// `notifications/cancelled` when the request is cancellable.
async fn send(
    table: &Table,
    id: i64,
    outbound: switchboard_transports::Outbound,
    request: &Request,
    deadline: Option<Instant>,
    slot: Option<Slot>,
) -> std::result::Result<Result<Box<RawValue>>, Unsent> {
    let (tx, rx) = oneshot::channel();
    let waiter = Waiter::new(
        table.server().clone(),
        id,
        request.method.clone(),
        request.tool.clone(),
        request.started,
        deadline,
        Track::new(
            request.deadline,
            request.progress.clone(),
            request.scope.clone(),
        ),
        request.cancellable(),
        slot,
        tx,
    );
    table.register(waiter, outbound)?;
    let guard = CancelOnDrop {
        table,
        id,
        cancellable: request.cancellable(),
    };
    let answer = rx.await;
    std::mem::forget(guard);
    Ok(answer.unwrap_or_else(|_| {
        // Unreachable in practice: a waiter settles its caller even when dropped.
        Err(ErrorContext::of_request(
            table.server().clone(),
            request.method.clone(),
            request.tool.clone(),
        )
        .error(ErrorKind::Disconnected {
            reason: Arc::new(CloseReason::aborted("the answer was lost")),
        }))
    }))
}

/// Takes back a request whose caller stopped waiting, and tells the server.
struct CancelOnDrop<'a> {
    table: &'a Table,
    id: i64,
    cancellable: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        // Only if still waiting: an answered or failed request needs no cancel.
        if let Some(waiter) = self.table.take(self.id) {
            waiter.discard();
            if self.cancellable {
                self.table.cancel(
                    self.id,
                    CancelReason::Caller,
                    "the caller cancelled the request",
                );
            }
        }
    }
}

/// Runs `future` until `deadline` (`None`: no deadline); `None` when the deadline passed.
pub(crate) async fn until<F: std::future::Future>(
    deadline: Option<Instant>,
    future: F,
) -> Option<F::Output> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at.into(), future).await.ok(),
        None => Some(future.await),
    }
}

/// Why a server is not ready, for an error.
fn not_ready(status: &ServerStatus) -> String {
    match &status.state {
        ServerState::Restarting { last_error, .. } => {
            format!("it is restarting (last error: {last_error})")
        }
        ServerState::Starting if status.restarts > 0 => {
            "it is restarting (an attempt is under way)".to_owned()
        }
        ServerState::Starting => "it is starting".to_owned(),
        other => format!("it is {}", other.as_str()),
    }
}

fn refused_error(core: &ServerCore, request: &Request, refused: Refused) -> Error {
    match refused {
        Refused::Full => ErrorContext::of_request(
            core.name.clone(),
            request.method.clone(),
            request.tool.clone(),
        )
        .error(ErrorKind::Overloaded {
            max_in_flight: core.admission.max(),
        }),
        Refused::Closed => gone(core, &request.tool),
    }
}

fn gone(core: &ServerCore, tool: &Option<Arc<str>>) -> Error {
    ErrorContext::of_server(core.name.clone())
        .with_tool(tool.clone())
        .error(ErrorKind::Unavailable {
            because: Unavailability::Stopped,
            reason: "its actor is not running (the runtime stopped it)".into(),
            cause: None,
        })
}

/// The actor's connection closed before its request was written: the close is handled
/// where it arrives, and this answer is ignored with the connection.
fn connection_gone(core: &ServerCore, request: &Request) -> Error {
    ErrorContext::of_request(core.name.clone(), request.method.clone(), None).error(
        ErrorKind::Disconnected {
            reason: Arc::new(CloseReason::aborted(
                "the connection closed before the request was written",
            )),
        },
    )
}
