//! What is known of tasks without talking to a server: their shapes, states and outcomes,
//! which shape a server speaks, and the tasks a server's handles watch. Public through
//! [`crate::task`]; a leaf, so that the server's core, status and metrics can name them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_codecs::mcp::tasks::TaskStatus;
use tokio::sync::watch;

/// Which of the protocol's two shapes of tasks a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskShape {
    /// The experimental tasks of 2025-11-25 (`tasks.requests.tools.call`, `params.task`,
    /// `tasks/result`).
    Experimental,
    /// The 2026-07-28 extension `io.modelcontextprotocol/tasks` (SEP-2663).
    Extension,
}

impl TaskShape {
    /// `2025-11-25` or `extension`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskShape::Experimental => "2025-11-25",
            TaskShape::Extension => "extension",
        }
    }
}

impl fmt::Display for TaskShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is known of a task, as of its last poll.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskState {
    /// The server's id of the task.
    pub id: Arc<str>,
    /// Where it is.
    pub status: TaskStatus,
    /// The server's words about it.
    pub message: Option<String>,
    /// The polling interval the server suggests.
    pub poll_interval: Option<Duration>,
    /// How long the server keeps the task from its creation (`None`: no limit given).
    pub ttl: Option<Duration>,
}

/// How the runtime stopped watching a task (the `outcome` of
/// `switchboard_tasks_finished_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskOutcome {
    /// It completed and its result was delivered.
    Completed,
    /// It failed (its error, or a result with `isError`, was delivered).
    Failed,
    /// It was cancelled: by the caller, by dropping its handle, or by the server.
    Cancelled,
    /// The server lost it (an unknown id, or past its ttl).
    Lost,
    /// The call's deadline passed first.
    Timeout,
    /// The caller detached it: the task runs on, unwatched.
    Detached,
    /// Polling failed otherwise (the server went away, broke the protocol).
    Error,
}

impl TaskOutcome {
    /// Every outcome, in the order of their metric series.
    pub(crate) const ALL: [TaskOutcome; 7] = [
        TaskOutcome::Completed,
        TaskOutcome::Failed,
        TaskOutcome::Cancelled,
        TaskOutcome::Lost,
        TaskOutcome::Timeout,
        TaskOutcome::Detached,
        TaskOutcome::Error,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskOutcome::Completed => "completed",
            TaskOutcome::Failed => "failed",
            TaskOutcome::Cancelled => "cancelled",
            TaskOutcome::Lost => "lost",
            TaskOutcome::Timeout => "timeout",
            TaskOutcome::Detached => "detached",
            TaskOutcome::Error => "error",
        }
    }
}

/// The shape a server of `era` with `capabilities` speaks.
pub(crate) fn shape_of(
    era: crate::Era,
    capabilities: &crate::model::ServerCapabilities,
) -> Option<TaskShape> {
    match era {
        crate::Era::Legacy => {
            let calls = capabilities
                .tasks
                .as_ref()?
                .get("requests")?
                .get("tools")?
                .get("call")?;
            (!calls.is_null()).then_some(TaskShape::Experimental)
        }
        crate::Era::Modern => {
            let extension = capabilities
                .extra
                .get("extensions")?
                .get(switchboard_codecs::mcp::tasks::EXTENSION)?;
            (!extension.is_null()).then_some(TaskShape::Extension)
        }
    }
}

/// The tasks a server's handles watch now, by id: for [`ServerHandle::tasks`].
#[derive(Debug, Default)]
pub(crate) struct Watched {
    tasks: std::sync::Mutex<Vec<watch::Receiver<TaskState>>>,
}

impl Watched {
    pub(crate) fn add(&self, state: watch::Receiver<TaskState>) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        // Watchers that ended leave their receivers behind: drop them as new ones come.
        tasks.retain(|t| t.has_changed().is_ok());
        tasks.push(state);
    }

    pub(crate) fn states(&self) -> Vec<TaskState> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks.retain(|t| t.has_changed().is_ok());
        tasks.iter().map(|t| t.borrow().clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ServerCapabilities;

    #[test]
    fn the_shape_follows_the_era_and_the_capability() {
        let caps =
            |v: serde_json::Value| -> ServerCapabilities { serde_json::from_value(v).unwrap() };
        let core = caps(serde_json::json!({"tasks": {"requests": {"tools": {"call": {}}}}}));
        assert_eq!(
            shape_of(crate::Era::Legacy, &core),
            Some(TaskShape::Experimental)
        );
        assert_eq!(shape_of(crate::Era::Modern, &core), None);
        let listed = caps(serde_json::json!({"tasks": {"list": {}}}));
        assert_eq!(shape_of(crate::Era::Legacy, &listed), None);
        let extension =
            caps(serde_json::json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
        assert_eq!(
            shape_of(crate::Era::Modern, &extension),
            Some(TaskShape::Extension)
        );
        assert_eq!(shape_of(crate::Era::Legacy, &extension), None);
    }
}
