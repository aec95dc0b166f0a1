//! [`ServerHandle`]: a cheap, cloneable way to call one server from any thread.
//!
//! The handle does the per-call work on the caller's task: resolving the deadline, numbering
//! and serializing the request, then sending it through the ready connection's call table
//! (see `calls`). The actor is not on a call's path; while the server starts, a call waits
//! for readiness within its own deadline, and it fails at once when the server cannot start.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use serde::Serialize;
use serde_json::value::RawValue;
use switchboard_codecs::frame::request as request_frame;
use tokio::sync::{watch, Semaphore, TryAcquireError};
use tracing::Instrument as _;

use crate::calls::request::{self, Spec};
use crate::calls::table::Table;
use crate::calls::{Gate, ProgressFn};
use crate::catalogue::tool_allowed;
use crate::deadline::{DeadlinePolicy, ToolPolicy};
use crate::error::{Error, Result};
use crate::metrics::{Recording, ServerMetrics};
use crate::model::Tool;
use crate::status::{ServerState, ServerStatus};

/// What every clone of a server's handle shares; outlives any one actor.
pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) ids: Arc<AtomicI64>,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) max_in_flight: usize,
    /// Whether the server takes calls now, and through which connection.
    pub(crate) gate: Arc<ArcSwap<Gate>>,
    pub(crate) status: watch::Receiver<ServerStatus>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) tools: HashMap<String, ToolPolicy>,
    pub(crate) default_timeout: Duration,
    pub(crate) allow: Vec<String>,
    pub(crate) deny: Vec<String>,
    pub(crate) metrics: Arc<ServerMetrics>,
    pub(crate) logging: Arc<crate::logging::Logging>,
    pub(crate) subscriptions: Arc<crate::subscriptions::Subscriptions>,
    /// The checks of the last tool listing.
    pub(crate) tool_rules: Arc<ArcSwap<crate::tool_rules::ToolRules>>,
    /// What requests to the server carry in the modern era (`None`: legacy or unknown yet).
    pub(crate) dialect: crate::era::Dialect,
    /// How fresh a modern server's lists are.
    pub(crate) freshness: Arc<crate::era::ListFreshness>,
    /// The application's handlers, for input-required results.
    pub(crate) handlers: Option<crate::client::ClientHandlers>,
    /// How long a handler may take.
    pub(crate) handler_timeout: Duration,
    /// Input-required rounds allowed per request.
    pub(crate) max_input_rounds: u32,
    /// Whether tool calls whose response stream broke are sent again (the server's
    /// setting; a tool's or call's policy beats it).
    pub(crate) reissue_on_broken_stream: bool,
}

/// The method of every tool call, allocated once (it is in every call's waiter and errors).
static TOOLS_CALL: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| Arc::from("tools/call"));

/// A result, and the measurement of its request, which the caller finishes once it knows
/// whether the tool reported an error.
pub(crate) struct Answer {
    pub(crate) raw: Box<RawValue>,
    pub(crate) recording: Recording,
}

/// A handle to one server: `Clone + Send + Sync`, usable from any thread and any tokio
/// runtime (calls use tokio timers for capacity and deadlines, so poll them inside a tokio
/// runtime with its time driver enabled).
#[derive(Clone)]
pub struct ServerHandle {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("name", &self.shared.name)
            .field("state", &self.shared.status.borrow().state.as_str())
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The server's current status.
    pub fn status(&self) -> ServerStatus {
        self.shared.status.borrow().clone()
    }

    /// The server's tools, as listed by its last handshake (empty until it is ready).
    pub fn tools(&self) -> Arc<[Tool]> {
        self.shared.status.borrow().tools.clone()
    }

    /// Requests in flight now: submitted and not yet answered, timed out or cancelled.
    pub fn in_flight(&self) -> usize {
        self.shared.max_in_flight - self.shared.permits.available_permits()
    }

    /// Waits until the server has left the `starting` state, and returns its status.
    pub async fn wait_started(&self) -> ServerStatus {
        let mut rx = self.shared.status.clone();
        let result = rx
            .wait_for(|s| !matches!(s.state, ServerState::Starting))
            .await
            .map(|s| s.clone());
        match result {
            Ok(status) => status,
            // The actor is gone: its last word is the status.
            Err(_) => self.status(),
        }
    }

    /// Sends any request and returns its raw result, under the server's timeout.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    pub async fn request(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
    ) -> Result<Box<RawValue>> {
        let policy = self.policy(None, &ToolPolicy::default());
        let params = params.unwrap_or_else(|| serde_json::json!({}));
        let started = Instant::now();
        let answer = self
            .send(method.into(), None, started, policy, None, |id| {
                let modern = self.shared.dialect.load();
                let level = self.shared.logging.level();
                crate::era::frame_request(modern.as_deref(), level, id, method, &params)
            })
            .await;
        let original = crate::mrtr::Original {
            method,
            tool: None,
            params: &params,
            policy,
            started,
            progress: None,
            progress_token: false,
        };
        let answer = self.modern_follow_up(original, answer).await?;
        answer.recording.finish(false);
        Ok(answer.raw)
    }

    /// Calls `tool`; `started` is when the caller's call began (its deadline counts from
    /// there, routing included).
    pub(crate) async fn call_raw(
        &self,
        tool: Arc<str>,
        arguments: &serde_json::Value,
        options: &ToolPolicy,
        progress: Option<ProgressFn>,
        started: Instant,
    ) -> Result<Answer> {
        if !tool_allowed(&self.shared.allow, &self.shared.deny, &tool) {
            return Err(Error::ToolDenied {
                server: self.shared.name.clone(),
                tool,
            });
        }
        let policy = self.policy(Some(&tool), options);
        // A stateless server's tool listing past its `ttlMs` is listed again first: the
        // call is checked (and its headers built) by the listing the server has now.
        let tools = &self.shared.freshness.tools;
        // Boxed: the wait is rare, and would otherwise enlarge every call's future.
        if tools.needs_relist(started)
            && !Box::pin(tools.relisted(Some(policy.first(started)))).await
        {
            return Err(self.relist_too_slow(&tool));
        }
        if self.shared.tool_rules.load().requires_task(&tool) {
            return Err(Error::TaskRequired {
                server: self.shared.name.clone(),
                tool,
            });
        }
        let name: &str = &tool;
        let answer = self
            .send(
                TOOLS_CALL.clone(),
                Some(tool.clone()),
                started,
                policy,
                progress.clone(),
                |id| {
                    let modern = self.shared.dialect.load();
                    let level = self.shared.logging.level();
                    let meta = Meta {
                        progress_token: id,
                        modern: modern.as_deref().map(|m| m.meta(level)),
                    };
                    request_frame(
                        id,
                        "tools/call",
                        &CallParams {
                            name,
                            arguments,
                            meta,
                        },
                    )
                },
            )
            .await;
        if self.shared.dialect.load().is_none() {
            return answer;
        }
        // A modern server may refuse the version or need input first.
        let original = crate::mrtr::Original {
            method: "tools/call",
            tool: Some(tool.clone()),
            params: &CallArguments { name, arguments },
            policy,
            started,
            progress,
            progress_token: true,
        };
        Box::pin(self.modern_follow_up(original, answer)).await
    }

    pub(crate) fn policy(&self, tool: Option<&str>, call: &ToolPolicy) -> DeadlinePolicy {
        let shared = &self.shared;
        DeadlinePolicy::resolve(
            call,
            tool.and_then(|t| shared.tools.get(t)),
            shared.timeout,
            shared.default_timeout,
        )
    }

    /// The hot path: take a slot, number and serialize, send through the ready connection's
    /// table, await the answer; in a `debug` span `request` (free when nobody listens),
    /// measured from start to answer.
    ///
    /// `started` is when the caller's request began (its deadline counts from there).
    ///
    /// Not an `async fn`: the future it returns is stored inside every call's, and one
    /// level less of nesting keeps that smaller (see `BENCHMARKS.md`).
    pub(crate) fn send<'a>(
        &'a self,
        method: Arc<str>,
        tool: Option<Arc<str>>,
        started: Instant,
        policy: DeadlinePolicy,
        progress: Option<ProgressFn>,
        frame: impl Fn(i64) -> bytes::Bytes + 'a,
    ) -> impl std::future::Future<Output = Result<Answer>> + 'a {
        let span = tracing::debug_span!(
            "request",
            server = %self.shared.name,
            method = %method,
            tool = tool.as_deref(),
            id = tracing::field::Empty,
        );
        let recording = Recording::start(
            self.shared.metrics.series(&method, tool.as_deref()),
            started,
        );
        let spec = Spec {
            method,
            tool,
            started,
            policy: Some(policy),
            progress,
            cancellable: true,
            reports_silence: true,
        };
        // Boxed on its own: two boxes that fit the allocator's per-thread cache cost less
        // than one too big for it (see `BENCHMARKS.md`).
        Box::pin(self.send_measured(spec, frame, recording)).instrument(span)
    }

    async fn send_measured(
        &self,
        spec: Spec,
        frame: impl Fn(i64) -> bytes::Bytes,
        mut recording: Recording,
    ) -> Result<Answer> {
        let shared = &*self.shared;
        let deadline = spec.policy.map(|p| p.first(spec.started));
        let mut permit = match self.slot(&spec, deadline).await {
            Ok(permit) => Some(permit),
            Err(error) => return Err(recording.fail(error)),
        };
        recording.took_slot();
        let reissue = crate::calls::reissue::allowed(
            &spec.method,
            spec.policy.and_then(|p| p.reissue_on_broken_stream),
            shared.reissue_on_broken_stream,
        );
        let mut reissues = 0;
        let mut id = shared.ids.fetch_add(1, Ordering::Relaxed);
        tracing::Span::current().record("id", id);
        let mut payload: Option<bytes::Bytes> = None;
        loop {
            let table = match self.ready_table(deadline, &spec.tool).await {
                Ok(table) => table,
                Err(error) => return Err(recording.fail(error)),
            };
            // Built once a connection is ready, when the server's era (its `_meta`) is known.
            let bytes = payload.get_or_insert_with(|| frame(id)).clone();
            match request::send(&table, id, bytes, &spec, permit.take()).await {
                Ok(Ok(raw)) => {
                    return Ok(Answer {
                        raw,
                        recording: recording.answered(),
                    })
                }
                Ok(Err(Error::StreamBroken { reason, .. }))
                    if reissue && reissues < crate::calls::reissue::MAX_REISSUES =>
                {
                    reissues += 1;
                    // A new id: the lost request may still be running under the old one.
                    id = shared.ids.fetch_add(1, Ordering::Relaxed);
                    payload = None;
                    tracing::debug!(server = %shared.name, method = %spec.method, tool = spec.tool.as_deref(), %reason, id, "the response stream broke; sending the request again");
                    // The lost request's slot was freed with it; the new one takes its own.
                    match self.slot(&spec, deadline).await {
                        Ok(slot) => permit = Some(slot),
                        Err(error) => return Err(recording.fail(error)),
                    }
                }
                Ok(Err(error)) => return Err(recording.fail(error)),
                // The connection closed before the request was written: the server is going
                // down, and the call waits for its next connection like any other.
                Err(returned) => permit = returned,
            }
        }
    }

    /// An in-flight slot, waiting for one until `deadline`.
    async fn slot(
        &self,
        spec: &Spec,
        deadline: Option<Instant>,
    ) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let shared = &*self.shared;
        match shared.permits.clone().try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::Closed) => Err(self.gone(&spec.tool)),
            // Boxed: waiting is rare, and would otherwise enlarge every call's future.
            Err(TryAcquireError::NoPermits) => Box::pin(self.wait_slot(spec, deadline)).await,
        }
    }

    /// Waits for an in-flight slot until `deadline`.
    async fn wait_slot(
        &self,
        spec: &Spec,
        deadline: Option<Instant>,
    ) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let shared = &*self.shared;
        let acquire = shared.permits.clone().acquire_owned();
        match until(deadline, acquire).await {
            Some(Ok(permit)) => Ok(permit),
            Some(Err(_)) => Err(self.gone(&spec.tool)),
            None => Err(Error::Overloaded {
                server: shared.name.clone(),
                method: spec.method.clone(),
                tool: spec.tool.clone(),
                max_in_flight: shared.max_in_flight,
            }),
        }
    }

    /// The ready connection's table; waits for one while the server starts, until
    /// `deadline`; fails at once when the server is unavailable.
    async fn ready_table(
        &self,
        deadline: Option<Instant>,
        tool: &Option<Arc<str>>,
    ) -> Result<Arc<Table>> {
        match self.gate(tool)? {
            Some(table) => Ok(table),
            // Boxed: waiting is rare, and would otherwise enlarge every call's future.
            None => Box::pin(self.wait_ready(deadline, tool)).await,
        }
    }

    /// Waits for a ready connection until `deadline`.
    async fn wait_ready(
        &self,
        deadline: Option<Instant>,
        tool: &Option<Arc<str>>,
    ) -> Result<Arc<Table>> {
        loop {
            // Marked seen before the gate is read again: the actor stores the gate before it
            // publishes the status, so no change slips between the two.
            let mut changes = self.shared.status.clone();
            changes.borrow_and_update();
            if let Some(table) = self.gate(tool)? {
                return Ok(table);
            }
            match until(deadline, changes.changed()).await {
                Some(Ok(())) => continue,
                Some(Err(_)) => return Err(self.gone(tool)),
                None => {
                    let why = not_ready(&self.status());
                    return Err(Error::Unavailable {
                        server: self.shared.name.clone(),
                        tool: tool.clone(),
                        reason: format!("not ready within the call's deadline: {why}").into(),
                        cause: None,
                    });
                }
            }
        }
    }

    /// The table to use now, `None` to wait, or why the server takes no calls.
    fn gate(&self, tool: &Option<Arc<str>>) -> Result<Option<Arc<Table>>> {
        match &**self.shared.gate.load() {
            Gate::Ready(table) if !table.is_closed() => Ok(Some(table.clone())),
            Gate::Ready(_) | Gate::Starting => Ok(None),
            Gate::Unavailable { reason, cause } => Err(Error::Unavailable {
                server: self.shared.name.clone(),
                tool: tool.clone(),
                reason: reason.clone(),
                cause: cause.clone(),
            }),
        }
    }

    /// The server's tool list was being fetched again when the call's deadline passed.
    pub(crate) fn relist_too_slow(&self, tool: &Arc<str>) -> Error {
        Error::Unavailable {
            server: self.shared.name.clone(),
            tool: Some(tool.clone()),
            reason: "its tool list was still being fetched again (past its ttlMs) at the call's deadline".into(),
            cause: None,
        }
    }

    fn gone(&self, tool: &Option<Arc<str>>) -> Error {
        Error::Unavailable {
            server: self.shared.name.clone(),
            tool: tool.clone(),
            reason: "its actor is not running (the runtime stopped it)".into(),
            cause: None,
        }
    }
}

/// Runs `future` until `deadline` (`None`: no deadline); `None` when the deadline passed.
async fn until<F: std::future::Future>(deadline: Option<Instant>, future: F) -> Option<F::Output> {
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
        ServerState::Starting => "it is starting".to_owned(),
        other => format!("it is {}", other.as_str()),
    }
}

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a serde_json::Value,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

/// The params of a `tools/call` apart from `_meta`, for input-required retries.
#[derive(Serialize)]
struct CallArguments<'a> {
    name: &'a str,
    arguments: &'a serde_json::Value,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "progressToken")]
    progress_token: i64,
    /// A modern server's `_meta` entries.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    modern: Option<crate::era::ModernMeta<'a>>,
}
