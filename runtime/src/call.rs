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

use crate::call_table::{Progress, ProgressFn};
use crate::catalogue::tool_allowed;
use crate::deadline::ToolPolicy;
use crate::error::{Error, Result};
use crate::exchange::{exchange, Params, Request};
use crate::handle::ServerHandle;
use crate::model::CallToolResult;
use crate::routing::Registry;

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
    pub(crate) arguments: serde_json::Value,
    pub(crate) options: ToolPolicy,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) meta: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
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
        Call::new(Route::Server(self.clone()), tool.into(), arguments)
    }
}

impl Call {
    /// A call of `tool` by `route`.
    pub(crate) fn new(route: Route, tool: Arc<str>, arguments: serde_json::Value) -> Call {
        Call {
            spec: Some(CallSpec {
                route,
                tool,
                arguments,
                options: ToolPolicy::default(),
                progress: None,
                meta: None,
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
        self.configure(|s| s.progress = Some(Arc::new(callback)))
    }

    /// `_meta` entries for the request, written beside the progress token and (for a
    /// stateless server) the era's own entries: give none of theirs.
    pub fn meta(self, meta: serde_json::Map<String, serde_json::Value>) -> Self {
        self.configure(|s| s.meta = Some(Arc::new(meta)))
    }

    /// Sends the call and returns the result as raw JSON, untouched.
    ///
    /// # Panics
    ///
    /// When the call was already polled (as a future), which sent it.
    pub async fn raw(mut self) -> Result<Box<RawValue>> {
        let spec = self.spec.take().expect("a Call is sent once");
        let (raw, ..) = spec.send().await?;
        Ok(raw)
    }
}

/// A call's raw answer, with the server and tool it went to.
type Sent = (Box<RawValue>, ServerHandle, Arc<str>);

impl CallSpec {
    /// Routes and sends the call; the answer, with the server and tool it went to.
    async fn send(self) -> Result<Sent> {
        let CallSpec {
            route,
            tool,
            arguments,
            options,
            progress,
            meta,
        } = self;
        let started = std::time::Instant::now();
        let (handle, tool) = match route {
            Route::Server(handle) => (handle, tool),
            Route::Catalogue(registry) => {
                let registry = registry.upgrade().ok_or(Error::Shutdown)?;
                registry.route_tool(&tool, &options, started).await?
            }
        };
        let core = &handle.core;
        if !arguments.is_object() {
            return Err(Error::InvalidArguments {
                server: core.name.clone(),
                tool,
                got: json_type(&arguments),
            });
        }
        if !tool_allowed(&core.config.allow_tools, &core.config.deny_tools, &tool) {
            return Err(Error::ToolDenied {
                server: core.name.clone(),
                tool,
            });
        }
        let policy = core.policy(Some(&tool), &options);
        // A stateless server's tool listing past its `ttlMs` is listed again first: the
        // call is checked (and its headers built) by the listing the server has now.
        let tools = &core.freshness.tools;
        // Boxed: the wait is rare, and would otherwise enlarge every call's future.
        if tools.needs_relist(started)
            && !Box::pin(tools.relisted(Some(policy.first(started)))).await
        {
            return Err(Error::Unavailable {
                server: core.name.clone(),
                tool: Some(tool),
                because: crate::error::Unavailability::ListNotFresh,
                reason: "its tool list was still being fetched again (past its ttlMs) at the call's deadline".into(),
                cause: None,
            });
        }
        if core.tool_rules.load().requires_task(&tool) {
            return Err(Error::TaskRequired {
                server: core.name.clone(),
                tool,
            });
        }
        let mut request = Request::new(
            TOOLS_CALL.clone(),
            Params::ToolCall {
                name: tool.clone(),
                arguments,
                meta,
            },
            started,
            policy,
        );
        request.tool = Some(tool.clone());
        request.progress = progress;
        request.progress_token = true;
        let span = tracing::debug_span!(
            "request",
            server = %core.name,
            method = "tools/call",
            tool = &*tool,
            id = tracing::field::Empty,
        );
        // Boxed on its own: two boxes that fit the allocator's per-thread cache cost less
        // than one too big for it (see `BENCHMARKS.md`).
        let raw = tracing::Instrument::instrument(Box::pin(exchange(core, request)), span).await?;
        Ok((raw, handle, tool))
    }
}

/// The method of every tool call, allocated once (it is in every call's waiter and errors).
static TOOLS_CALL: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| Arc::from("tools/call"));

/// The typed result of a sent call, checked against the tool's output schema.
fn typed((raw, handle, tool): Sent) -> Result<CallToolResult> {
    let core = &handle.core;
    match serde_json::from_str::<CallToolResult>(raw.get()) {
        Ok(mut result) => {
            if let (Some(structured), false) = (&result.structured_content, result.is_error()) {
                result.output_schema_mismatch =
                    core.tool_rules.load().output_mismatch(&tool, structured);
                if result.output_schema_mismatch.is_some() {
                    core.metrics.output_mismatches.increment(1);
                }
            }
            Ok(result)
        }
        Err(e) => Err(Error::Protocol {
            server: core.name.clone(),
            method: "tools/call".into(),
            tool: Some(tool),
            detail: format!("the result is not a CallToolResult: {e}"),
        }),
    }
}

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
        running.as_mut().poll(cx).map(|sent| sent.and_then(typed))
    }
}

fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    fn future_size<A, F>(_: fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Every call allocates its sending future: past glibc's per-thread cache (1,032 bytes)
    /// that allocation takes the slow path and consolidates the heap, which cost about a
    /// tenth of a call's CPU at 64 in flight (see `BENCHMARKS.md`).
    #[test]
    fn a_calls_boxed_future_fits_the_allocators_per_thread_cache() {
        let size = future_size(super::CallSpec::send);
        assert!(size <= 1024, "the sending future of a call is {size} bytes");
    }
}
