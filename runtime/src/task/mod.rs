//! Tasks: tool calls a server runs in the background, polled to their result.
//!
//! A server may run a `tools/call` as a *task*: it answers at once with a task id, and the
//! client polls the task's status, answers the input the task needs, and fetches its
//! result. The runtime speaks both shapes the protocol has ([`TaskShape`]): the
//! experimental tasks of 2025-11-25 (the client asks with `params.task`; `tasks/get`,
//! `tasks/result`, `tasks/cancel`) and the 2026-07-28 extension `io.modelcontextprotocol/tasks`
//! (the runtime declares it on every request; the server decides; `tasks/get` carries the
//! result or the input requests inline, `tasks/update` answers them).
//!
//! - **Plain calls drive tasks.** `call_tool(..).await` on a tool whose
//!   `execution.taskSupport` is `required` (2025-11-25), or a call a stateless server answers
//!   with a task, runs the task to its final result: the caller sees a [`CallToolResult`]
//!   as from any call. The call's deadline (per call, else per tool, else per server)
//!   bounds the whole task; past it the task is cancelled (`tasks/cancel`) and the call
//!   fails with [`ErrorKind::Timeout`].
//! - **Handles.** [`Call::as_task`](crate::Call::as_task) asks for a task where the tool
//!   allows it and gives a [`TaskHandle`]: its [`state`](TaskHandle::state), a stream of
//!   [`updates`](TaskHandle::updates), its [`result`](TaskHandle::result), and
//!   [`cancel`](TaskHandle::cancel).
//! - **Input.** What a task asks for (elicitation, sampling, roots) is answered by the
//!   runtime's [`ClientHandlers`](crate::client::ClientHandlers), as for any request: in
//!   2025-11-25 the server sends its requests while `tasks/result` is pending, in the
//!   extension they come inline in `tasks/get` and go back by `tasks/update`.
//! - **Pacing.** Polls follow the server's `pollInterval`, never closer than
//!   [`MIN_POLL_INTERVAL`] (a server that says 0 is not flooded) and
//!   [`DEFAULT_POLL_INTERVAL`] apart when it says nothing; never past the call's deadline
//!   or the task's time to live.
//! - **Ends.** A task the server no longer knows (an unknown id, or one past its `ttl`) is
//!   [`ErrorKind::TaskLost`]; one cancelled is
//!   [`ErrorKind::TaskCancelled`]; one that failed gives what the
//!   call would have given (its JSON-RPC error, or a result with `isError`).
//!
//! ```no_run
//! # async fn f(server: switchboard::ServerHandle) -> switchboard::Result<()> {
//! use switchboard::task::TaskOrResult;
//! match server.call_tool("research", serde_json::json!({"topic": "tides"})).as_task().await? {
//!     TaskOrResult::Task(task) => {
//!         println!("task {} is {}", task.id(), task.state().status.as_str());
//!         let result = task.result().await?;
//!         println!("{}", result.text());
//!     }
//!     TaskOrResult::Result(result) => println!("answered at once: {}", result.text()),
//! }
//! # Ok(()) }
//! ```

mod driver;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::sync::{oneshot, watch};

pub use crate::task_state::{TaskOutcome, TaskShape, TaskState};
pub use crate::task_store::{FileTaskStore, MemoryTaskStore, StoreError, TaskRecord, TaskStore};
pub use switchboard_codecs::mcp::tasks::TaskStatus;

use crate::error::{ErrorContext, ErrorKind, Result};
use crate::handle::ServerHandle;
use crate::model::CallToolResult;

pub(crate) use driver::start;

/// The shortest time between two polls of a task, whatever the server suggests.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The time between two polls when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What [`Call::as_task`](crate::Call::as_task) gives: the task, or the result when the
/// server answered at once (a stateless server decides per call).
#[derive(Debug)]
pub enum TaskOrResult {
    /// The server runs the call as a task.
    Task(TaskHandle),
    /// The server answered the call at once.
    Result(CallToolResult),
}

/// Why a task's watcher stops before the task ends.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Leave the task running, unwatched.
    Detach,
}

/// A task a server runs for a call: its state, its updates, its result, its cancellation.
///
/// The runtime watches the task on a tokio task of its own (spawned where the call was
/// made), polling it until it ends, answering its input requests, and keeping its state.
///
/// # Drop behavior
///
/// Dropping the handle before the task ends cancels the task (`tasks/cancel`), as dropping
/// a call cancels it; [`detach`](Self::detach) leaves it running instead.
pub struct TaskHandle {
    server: ServerHandle,
    tool: Arc<str>,
    state: watch::Receiver<TaskState>,
    outcome: oneshot::Receiver<Result<Box<RawValue>>>,
    /// Dropped unused: the watcher cancels the task.
    stop: Option<oneshot::Sender<Stop>>,
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.borrow();
        f.debug_struct("TaskHandle")
            .field("server", &self.server.name())
            .field("tool", &self.tool)
            .field("id", &state.id)
            .field("status", &state.status)
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// The task's id on its server.
    pub fn id(&self) -> Arc<str> {
        self.state.borrow().id.clone()
    }

    /// The server that runs it.
    pub fn server(&self) -> &ServerHandle {
        &self.server
    }

    /// The tool it runs.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Its state as of the last poll.
    pub fn state(&self) -> TaskState {
        self.state.borrow().clone()
    }

    /// Its states from now on: the current one, then each change (of status or message)
    /// as polls see it; the stream ends when the runtime stops watching the task.
    pub fn updates(&self) -> impl futures_core::Stream<Item = TaskState> + Send + Unpin + 'static {
        tokio_stream::wrappers::WatchStream::new(self.state.clone())
    }

    /// Waits for the task's next change of state (of status or message) and returns it;
    /// `None` once the runtime stopped watching the task (it ended, or was detached).
    pub async fn changed(&mut self) -> Option<TaskState> {
        self.state.changed().await.ok()?;
        Some(self.state.borrow_and_update().clone())
    }

    /// Waits for the task's result: what the call would have returned.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the task, as dropping the handle does.
    pub async fn result(self) -> Result<CallToolResult> {
        let server = self.server.clone();
        let tool = self.tool.clone();
        let raw = self.raw().await?;
        crate::tool_result::typed(crate::tool_result::Sent {
            raw,
            server,
            tool,
            via: None,
        })
    }

    /// Waits for the task's result as raw JSON, untouched.
    pub async fn raw(mut self) -> Result<Box<RawValue>> {
        let outcome = (&mut self.outcome).await;
        // The watcher is done: nothing is left to cancel.
        self.stop = None;
        outcome.unwrap_or_else(|_| {
            let id = self.state.borrow().id.clone();
            Err(ErrorContext::of_server(self.server.core.name.clone())
                .with_tool(Some(self.tool.clone()))
                .error(ErrorKind::TaskLost {
                    task: id,
                    reason: "the runtime stopped watching the task (its tokio runtime shut down?)"
                        .into(),
                }))
        })
    }

    /// Asks the server to cancel the task (`tasks/cancel`). The task may still end
    /// otherwise, if it finished first: [`result`](Self::result) says how it ended.
    pub async fn cancel(&self) -> Result<()> {
        let id = self.id();
        driver::cancel(&self.server, &id, &self.tool).await
    }

    /// Stops watching the task and leaves it running on the server; its id, to look it up
    /// again with [`ServerHandle::resume_task`].
    pub fn detach(mut self) -> Arc<str> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Detach);
        }
        self.id()
    }
}

impl ServerHandle {
    /// Which shape of tasks the server speaks, if any: a handshake-era server that declares
    /// `tasks.requests.tools.call`, or a stateless one that declares the extension.
    pub fn task_shape(&self) -> Option<TaskShape> {
        self.core.status.borrow().task_shape()
    }

    /// Watches a task of this server again (one [detached](TaskHandle::detach), or started
    /// before the runtime was), as a call of `tool` under the tool's timeout from now.
    pub async fn resume_task(&self, id: &str, tool: &str) -> Result<TaskHandle> {
        let shape = self.task_shape().unwrap_or(match self.status().era {
            Some(crate::Era::Modern) => TaskShape::Extension,
            _ => TaskShape::Experimental,
        });
        let started = Instant::now();
        let policy = self
            .core
            .policy(Some(tool), &crate::deadline::ToolPolicy::default());
        driver::resume(self.clone(), shape, id.into(), tool.into(), started, policy).await
    }

    /// The tasks the runtime watches on this server now.
    pub fn tasks(&self) -> Vec<TaskState> {
        self.core.tasks.states()
    }
}

impl crate::Runtime {
    /// The tasks this runtime (or one before it, with the same [`TaskStore`]) started and
    /// did not see end: those it watches, and those detached.
    pub fn stored_tasks(&self) -> std::result::Result<Vec<TaskRecord>, StoreError> {
        self.inner.task_store.load()
    }

    /// Watches a stored task again, under its tool's timeout from now.
    pub async fn resume_task(&self, record: &TaskRecord) -> Result<TaskHandle> {
        self.server(&record.server)?
            .resume_task(&record.id, &record.tool)
            .await
    }
}
