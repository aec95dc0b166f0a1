//! One tool call in the making: options, progress, and the future that sends it.
//!
//! ```no_run
//! # async fn f(server: switchboard::ServerHandle) -> switchboard::Result<()> {
//! use std::time::Duration;
//! let result = server
//!     .call_tool("long_job", serde_json::json!({"size": 3}))
//!     .timeout(Duration::from_secs(5))
//!     .reset_on_progress(true)
//!     .on_progress(|p| eprintln!("{}/{:?}", p.progress, p.total))
//!     .await?;
//! println!("{}", result.text());
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::value::RawValue;

use crate::call_scope::Scope;
use crate::call_table::{Progress, ProgressFn};
use crate::catalogue::tool_allowed;
use crate::client::ClientHandlers;
use crate::deadline::ToolPolicy;
use crate::error::{Error, ErrorContext, ErrorKind, Result};
use crate::exchange::{answer, Answer, Params, Request};
use crate::framer::{Arguments, TaskAsk};
use crate::handle::ServerHandle;
use crate::logging::ServerLog;
use crate::model::CallToolResult;
use crate::routing::Registry;
use crate::task::{TaskHandle, TaskOrResult, TaskShape};
use crate::tool_result::Sent;
use switchboard_codecs::mcp::tasks::{CreateTaskResult, Task};
use switchboard_codecs::mcp::LoggingLevel;

/// A `tools/call` request being built; `.await` it to send it.
///
/// `Call` is a [`Future`]: it can be awaited, spawned (`tokio::spawn(call)`), or bounded with
/// `tokio::time::timeout(d, call)` as it is. Its setters configure it before it is first
/// polled; the request is sent on the first poll.
///
/// # Cancel safety
///
/// Dropping the future before it completes cancels the call: its in-flight slot is freed
/// and the server is sent `notifications/cancelled`.
#[must_use = "a call does nothing until awaited"]
pub struct Call {
    /// What to send, until the first poll.
    spec: Option<CallSpec>,
    /// The request on its way; the result is parsed when it completes. Only the sending is
    /// boxed: the box is allocated for every call, and a smaller one is a cheaper one.
    running: Option<Pin<Box<dyn Future<Output = Result<Sent>> + Send>>>,
}

/// A call's settings, before it is sent: what becomes its [`Request`].
pub(crate) struct CallSpec {
    /// Where the call goes.
    pub(crate) route: Route,
    /// The tool's name: the server's name for it, or with [`Route::Catalogue`] its
    /// catalogue name.
    pub(crate) tool: Arc<str>,
    pub(crate) arguments: Arguments,
    pub(crate) options: ToolPolicy,
    pub(crate) meta: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
    /// The time to live to ask for when the call runs as a task (2025-11-25).
    pub(crate) task_ttl: Option<Duration>,
    /// The call's progress callback, handlers and log receiver (boxed: most calls have
    /// none, and every call's future carries this).
    pub(crate) listeners: Option<Box<Listeners>>,
}

/// What listens to a call besides its caller.
#[derive(Default)]
pub(crate) struct Listeners {
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) scope: Scope,
}

/// Where a call goes.
pub(crate) enum Route {
    /// To this server.
    Server(ServerHandle),
    /// To the owner of a catalogue name, resolved when the call is sent (after any stale
    /// listing of a stateless server is fetched again). Weak: a call not sent yet does not
    /// keep a dropped runtime's servers alive.
    Catalogue(std::sync::Weak<Registry>),
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Call");
        if let Some(spec) = &self.spec {
            let server = match &spec.route {
                Route::Server(handle) => Some(handle.name()),
                Route::Catalogue(_) => None,
            };
            d.field("server", &server)
                .field("tool", &spec.tool)
                .field("options", &spec.options);
        }
        d.field("sent", &self.running.is_some())
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// Starts a `tools/call`; configure it, then `.await` it.
    pub fn call_tool(&self, tool: impl Into<Arc<str>>, arguments: serde_json::Value) -> Call {
        Call::new(
            Route::Server(self.clone()),
            tool.into(),
            Arguments::Tree(arguments),
        )
    }
}

impl Call {
    /// A call of `tool` by `route`.
    pub(crate) fn new(route: Route, tool: Arc<str>, arguments: Arguments) -> Call {
        Call {
            spec: Some(CallSpec {
                route,
                tool,
                arguments,
                options: ToolPolicy::default(),
                meta: None,
                task_ttl: None,
                listeners: None,
            }),
            running: None,
        }
    }

    fn configure(mut self, f: impl FnOnce(&mut CallSpec)) -> Self {
        // After the first poll the settings are spent; changing them then has no effect.
        if let Some(spec) = &mut self.spec {
            f(spec);
        }
        self
    }

    /// This call's timeout (beats the tool's, the server's and the runtime's).
    pub fn timeout(self, timeout: Duration) -> Self {
        self.configure(|s| s.options.timeout = Some(timeout))
    }

    /// Restart the timeout on each progress notification, up to [`max_total`](Self::max_total).
    pub fn reset_on_progress(self, reset: bool) -> Self {
        self.configure(|s| s.options.reset_on_progress = Some(reset))
    }

    /// The hard cap on the call's total time when progress restarts its timeout
    /// (default 10 × the timeout).
    pub fn max_total(self, max_total: Duration) -> Self {
        self.configure(|s| s.options.max_total = Some(max_total))
    }

    /// Receives the call's progress notifications. The callback runs on the task that reads
    /// the server's connection: keep it short and never block in it (send to a channel for
    /// real work).
    pub fn on_progress(self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.configure(|s| s.listeners().progress = Some(Arc::new(callback)))
    }

    /// `_meta` entries for the request, written beside the progress token and (for a
    /// stateless server) the era's own entries: give none of theirs.
    pub fn meta(self, meta: serde_json::Map<String, serde_json::Value>) -> Self {
        self.configure(|s| s.meta = Some(Arc::new(meta)))
    }

    /// Answers the requests the server sends the client because of this call (sampling,
    /// elicitation, roots) with `handlers` instead of the server's, and (in 2026-07-28)
    /// declares their capabilities in the call's `_meta`.
    ///
    /// A stateless server's requests come in the call's own answer, so they always reach
    /// these handlers. A handshake-era server's requests carry no link to the call that
    /// caused them: they reach these handlers only while this call is the server's one call
    /// in flight with handlers of its own, and the server's handlers otherwise (one client's
    /// request is never guessed onto another's call); its `roots/list` always goes to the
    /// server's handlers (servers ask for roots by themselves, not for a call). The capabilities a handshake-era server
    /// sees are the ones its connection declared.
    pub fn client_handlers(self, handlers: ClientHandlers) -> Self {
        self.configure(|s| s.listeners().scope.handlers = Some(handlers))
    }

    /// Receives the server's log messages about this call at `level` or above; a stateless
    /// server is asked for them at that level in the call's `_meta`. The callback runs on the
    /// server's actor: keep it short and never block in it.
    ///
    /// A log message carries no link to the call that caused it: it reaches this callback
    /// only while the call is the server's one call in flight with a log callback (it always
    /// reaches [`ServerHandle::logs`] and `tracing`).
    pub fn on_log(
        self,
        level: LoggingLevel,
        callback: impl Fn(ServerLog) + Send + Sync + 'static,
    ) -> Self {
        self.configure(|s| s.listeners().scope.logs = Some((level, Arc::new(callback))))
    }

    /// When the call runs as a task (2025-11-25), the time to live to ask the server for
    /// (default: the call's timeout, as long as the caller waits). The server may keep the
    /// task for less; the runtime stops waiting when it says it did.
    pub fn task_ttl(self, ttl: Duration) -> Self {
        self.configure(|s| s.task_ttl = Some(ttl))
    }

    /// Sends the call asking to run it as a task, and returns the task's handle, or the
    /// result when the server answered at once.
    ///
    /// A handshake-era server is asked with `params.task` (2025-11-25), which needs its
    /// `tasks.requests.tools.call` capability and a tool whose `execution.taskSupport` is
    /// `optional` or `required` (else [`ErrorKind::TaskNotAllowed`]). A stateless server
    /// decides for itself whether a call becomes a task (the tasks extension).
    ///
    /// # Panics
    ///
    /// When the call was already polled (as a future), which sent it.
    pub async fn as_task(mut self) -> Result<TaskOrResult> {
        let spec = self.spec.take().expect("a Call is sent once");
        match spec.start(true).await? {
            Started::Task(task) => Ok(TaskOrResult::Task(task)),
            Started::Done(sent) => crate::tool_result::typed(sent).map(TaskOrResult::Result),
        }
    }

    /// Sends the call and returns the result as raw JSON, untouched.
    ///
    /// # Panics
    ///
    /// When the call was already polled (as a future), which sent it.
    pub async fn raw(mut self) -> Result<Box<RawValue>> {
        let spec = self.spec.take().expect("a Call is sent once");
        Ok(spec.send().await?.raw)
    }
}

/// What a sent call gave: its answer, or the task the server runs it as.
enum Started {
    Done(Sent),
    Task(TaskHandle),
}

impl CallSpec {
    fn listeners(&mut self) -> &mut Listeners {
        self.listeners.get_or_insert_with(Box::default)
    }

    /// Routes and sends the call; the answer, with the server and tool it went to. A task
    /// the server runs the call as is watched to its end, and its result is the answer.
    async fn send(self) -> Result<Sent> {
        match self.start(false).await? {
            Started::Done(sent) => Ok(sent),
            Started::Task(task) => {
                let (server, tool) = (task.server().clone(), Arc::from(task.tool()));
                // Boxed: tasks are rare, and would otherwise enlarge every call's future.
                let raw = Box::pin(task.raw()).await?;
                Ok(Sent {
                    raw,
                    server,
                    tool,
                    via: None,
                })
            }
        }
    }

    /// Routes and sends the call, as a task when the tool requires one or `as_task` asks
    /// for one; the answer, or the task.
    async fn start(self, as_task: bool) -> Result<Started> {
        let CallSpec {
            route,
            tool,
            arguments,
            options,
            meta,
            task_ttl,
            listeners,
        } = self;
        let started = std::time::Instant::now();
        let (handle, tool) = match route {
            Route::Server(handle) => (handle, tool),
            Route::Catalogue(registry) => {
                let registry = registry.upgrade().ok_or(Error::shutdown())?;
                registry.route_tool(&tool, &options, started).await?
            }
        };
        let core = &handle.core;
        if let Some(got) = arguments.not_an_object() {
            return Err(ErrorContext::of_tool(core.name.clone(), tool)
                .error(ErrorKind::InvalidArguments { got }));
        }
        if !tool_allowed(&core.config.allow_tools, &core.config.deny_tools, &tool) {
            return Err(ErrorContext::of_tool(core.name.clone(), tool).error(ErrorKind::ToolDenied));
        }
        let policy = core.policy(Some(&tool), &options);
        // A stateless server's tool listing past its `ttlMs` is listed again first: the
        // call is checked (and its headers built) by the listing the server has now.
        let tools = &core.freshness.tools;
        // Boxed: the wait is rare, and would otherwise enlarge every call's future.
        if tools.needs_relist(started)
            && !Box::pin(tools.relisted(Some(policy.first(started)))).await
        {
            let reason = "its tool list was still being fetched again (past its ttlMs) at the call's deadline";
            return Err(ErrorContext::of_server(core.name.clone())
                .with_tool(Some(tool))
                .error(ErrorKind::Unavailable {
                    because: crate::error::Unavailability::ListNotFresh,
                    reason: reason.into(),
                    cause: None,
                }));
        }
        let task = task_ask(as_task, task_ttl, &policy);
        let mut request = Request::new(
            TOOLS_CALL.clone(),
            Params::ToolCall {
                name: tool.clone(),
                arguments,
                meta,
                task,
            },
            started,
            policy,
        );
        request.tool = Some(tool.clone());
        if let Some(listeners) = listeners {
            let Listeners { progress, scope } = *listeners;
            request.progress = progress;
            request.scope = (!scope.is_empty()).then(|| Arc::new(scope));
        }
        request.progress_token = true;
        let span = tracing::debug_span!(
            "request",
            server = %core.name,
            method = "tools/call",
            tool = &*tool,
            id = tracing::field::Empty,
        );
        // Boxed on its own: two boxes that fit the allocator's per-thread cache cost less
        // than one too big for it (see `benches/HISTORY.md`).
        let answered =
            tracing::Instrument::instrument(Box::pin(answer(core, request)), span).await?;
        match created_task(core, &answered)? {
            Some((shape, created)) => Ok(Started::Task(crate::task::start(
                handle, shape, tool, &created, started, policy,
            ))),
            None => Ok(Started::Done(Sent {
                raw: answered.raw,
                server: handle,
                tool,
                via: answered.connected,
            })),
        }
    }
}

/// What a call asks of tasks: a task when `as_task`, kept as long as the caller waits
/// unless `ttl` says otherwise. The connection the call goes to decides whether it runs as
/// one (see [`Connected::task_params`](crate::core::Connected::task_params)).
fn task_ask(
    as_task: bool,
    ttl: Option<Duration>,
    policy: &crate::deadline::DeadlinePolicy,
) -> TaskAsk {
    // Kept as long as the caller waits, unless the caller asked otherwise.
    let ttl = ttl.unwrap_or(if policy.reset_on_progress {
        policy.max_total
    } else {
        policy.timeout
    });
    TaskAsk {
        asked: as_task,
        ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
    }
}

/// The task a call's answer creates, if it is one: a `CreateTaskResult` for a call that
/// ran as a task (it asked; a server that ignored the ask answered plainly), or a stateless
/// server's result of type `task`.
fn created_task(
    core: &crate::core::ServerCore,
    answer: &Answer,
) -> Result<Option<(TaskShape, Task)>> {
    use switchboard_codecs::mcp::modern::ResultType;
    let raw = &answer.raw;
    if answer.task {
        return Ok(serde_json::from_str::<CreateTaskResult>(raw.get())
            .ok()
            .map(|created| (TaskShape::Experimental, created.task)));
    }
    if !answer.modern || ResultType::of(raw.get()) != Ok(ResultType::Task) {
        return Ok(None);
    }
    match serde_json::from_str::<Task>(raw.get()) {
        Ok(task) => Ok(Some((TaskShape::Extension, task))),
        Err(e) => Err(
            ErrorContext::of_request(core.name.clone(), "tools/call".into(), None).error(
                ErrorKind::Protocol {
                    detail: format!("the result of type `task` is not a task: {e}"),
                },
            ),
        ),
    }
}

/// The method of every tool call, allocated once (it is in every call's waiter and errors).
static TOOLS_CALL: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| Arc::from("tools/call"));

impl Future for Call {
    type Output = Result<CallToolResult>;

    /// # Panics
    ///
    /// When polled again after it completed, as futures may.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let spec = &mut this.spec;
        let running = this.running.get_or_insert_with(|| {
            let spec = spec.take().expect("a Call is polled after it completed");
            Box::pin(spec.send())
        });
        running
            .as_mut()
            .poll(cx)
            .map(|sent| sent.and_then(crate::tool_result::typed))
    }
}
