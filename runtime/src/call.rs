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
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;

use crate::deadline::ToolPolicy;
use crate::error::{Error, Result};
use crate::handle::{Answer, ServerHandle};
use crate::model::CallToolResult;

/// A progress notification for one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far (increases with each notification).
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
}

/// A progress callback; runs on the runtime's actor thread, so it must be quick.
pub(crate) type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// A `tools/call` request being built; `.await` it to send it.
///
/// # Cancel safety
///
/// Dropping the future before it completes cancels the call: its in-flight slot is freed
/// and the server is sent `notifications/cancelled`.
#[must_use = "a call does nothing until awaited"]
pub struct Call {
    /// The server, or why the call cannot be routed (reported when awaited).
    pub(crate) handle: Result<ServerHandle, Error>,
    pub(crate) tool: Arc<str>,
    pub(crate) arguments: serde_json::Value,
    pub(crate) options: ToolPolicy,
    pub(crate) progress: Option<ProgressFn>,
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("server", &self.handle.as_ref().map(|h| h.name()).ok())
            .field("tool", &self.tool)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Call {
    /// This call's timeout (beats the tool's, the server's and the runtime's).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Restart the timeout on each progress notification, up to [`max_total`](Self::max_total).
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.options.reset_on_progress = Some(reset);
        self
    }

    /// The hard cap on the call's total time when progress restarts its timeout
    /// (default 10 × the timeout).
    pub fn max_total(mut self, max_total: Duration) -> Self {
        self.options.max_total = Some(max_total);
        self
    }

    /// Receives the call's progress notifications. The callback runs on the runtime's actor
    /// thread: keep it short (send to a channel for real work).
    pub fn on_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }

    /// Sends the call and returns the result as raw JSON, untouched.
    pub async fn raw(self) -> Result<Box<RawValue>> {
        let answer = self.send().await?;
        // Measured without parsing: see the `metrics` module.
        let tool_error = crate::metrics::says_is_error(answer.raw.get());
        answer.recording.finish(tool_error);
        Ok(answer.raw)
    }

    async fn send(self) -> Result<Answer> {
        let Call {
            handle,
            tool,
            arguments,
            options,
            progress,
        } = self;
        let handle = handle?;
        if !arguments.is_object() {
            return Err(Error::InvalidArguments {
                server: handle.shared.name.clone(),
                tool,
                got: json_type(&arguments),
            });
        }
        handle.call_raw(tool, &arguments, &options, progress).await
    }
}

impl IntoFuture for Call {
    type Output = Result<CallToolResult>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let server = match &self.handle {
                Ok(handle) => handle.shared.name.clone(),
                Err(e) => return Err(e.clone()),
            };
            let tool = self.tool.clone();
            let answer = self.send().await?;
            match serde_json::from_str::<CallToolResult>(answer.raw.get()) {
                Ok(result) => {
                    answer.recording.finish(result.is_error());
                    Ok(result)
                }
                Err(e) => Err(answer.recording.fail(Error::Protocol {
                    server,
                    method: "tools/call".into(),
                    tool: Some(tool),
                    detail: format!("the result is not a CallToolResult: {e}"),
                })),
            }
        })
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
