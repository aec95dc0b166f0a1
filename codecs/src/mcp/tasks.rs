//! Tasks: a request that answers with a handle at once and its result later, in the two
//! shapes the protocol has.
//!
//! - **2025-11-25** (experimental, in the core protocol): the requestor asks with
//!   `params.task: {ttl?}` and gets `{task: Task}`; it polls `tasks/get`, fetches the result
//!   with `tasks/result` (which blocks until the task ends, and carries the receiver's own
//!   requests while the task is `input_required`), lists with `tasks/list` and cancels with
//!   `tasks/cancel`. `Task` spells its times `ttl` and `pollInterval`.
//! - **2026-07-28**, the extension [`EXTENSION`] (SEP-2663): declared in the client
//!   capabilities' `extensions`; the server answers any `tools/call` with a task when it
//!   chooses (`resultType: "task"`, the task's fields inline); `tasks/get` carries the result,
//!   the error or the input requests inline, `tasks/update` answers input requests, and
//!   `tasks/cancel` is acknowledged with an empty result. `Task` spells its times `ttlMs` and
//!   `pollIntervalMs`.
//!
//! [`Task`] reads either spelling, so one type serves both shapes.
//!
//! ```
//! use switchboard_codecs::mcp::tasks::{CreateTaskResult, TaskStatus};
//!
//! let created: CreateTaskResult = serde_json::from_str(
//!     r#"{"task":{"taskId":"t1","status":"working","createdAt":"2025-11-25T10:30:00Z",
//!         "lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":60000,"pollInterval":500}}"#,
//! )?;
//! assert_eq!(created.task.status, TaskStatus::Working);
//! assert_eq!(created.task.poll_interval_ms(), Some(500));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The identifier of the 2026-07-28 tasks extension.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Request: a task's state (`{taskId}` → [`Task`]; in the extension a [`DetailedTask`]).
pub const TASKS_GET: &str = "tasks/get";
/// Request (2025-11-25): a task's result, once it ends (`{taskId}` → the original result).
pub const TASKS_RESULT: &str = "tasks/result";
/// Request (2025-11-25): the receiver's tasks (`{cursor?}` → `{tasks, nextCursor?}`).
pub const TASKS_LIST: &str = "tasks/list";
/// Request: cancels a task (2025-11-25: → [`Task`]; the extension: → `{}`).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Request (extension): answers a task's input requests (`{taskId, inputResponses}` → `{}`).
pub const TASKS_UPDATE: &str = "tasks/update";
/// Notification (2025-11-25): a task's status changed (the whole [`Task`]).
pub const STATUS_NOTIFICATION: &str = "notifications/tasks/status";

/// The `_meta` key that ties a message to a task (2025-11-25): `{taskId}`.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for input from the requestor.
    InputRequired,
    /// Done; the result is there.
    Completed,
    /// Done, unsuccessfully.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task can change no more (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire name: `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// A task's state, in either shape's spelling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The receiver's identifier of the task.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// Words about the state, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// 2025-11-25: how long the receiver keeps it from creation, in ms (`null`: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Value>,
    /// The extension's spelling of `ttl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<Value>,
    /// 2025-11-25: the polling interval the receiver suggests, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<Value>,
    /// The extension's spelling of `pollInterval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<Value>,
}

impl Task {
    /// The time to live in ms, in either spelling; `None` for none or unlimited.
    pub fn ttl_ms(&self) -> Option<u64> {
        millis(self.ttl_ms.as_ref().or(self.ttl.as_ref()))
    }

    /// The suggested polling interval in ms, in either spelling.
    pub fn poll_interval_ms(&self) -> Option<u64> {
        millis(
            self.poll_interval_ms
                .as_ref()
                .or(self.poll_interval.as_ref()),
        )
    }
}

/// A non-negative number of milliseconds (fractions rounded down, negatives as 0).
fn millis(value: Option<&Value>) -> Option<u64> {
    let value = value?;
    value
        .as_u64()
        .or_else(|| value.as_f64().map(|f| if f > 0.0 { f as u64 } else { 0 }))
}

/// 2025-11-25: the answer to a task-augmented request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CreateTaskResult {
    /// The new task.
    pub task: Task,
}

/// The extension's `tasks/get` result (and its `CreateTaskResult`, which is a [`Task`] with
/// `resultType: "task"`): the task, and inline what its status carries.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task's state.
    #[serde(flatten)]
    pub task: Task,
    /// `completed`: what the original request would have returned.
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    /// `failed`: the JSON-RPC error.
    #[serde(default)]
    pub error: Option<Value>,
    /// `input_required`: the server's requests, by key (as in an input-required result).
    #[serde(default)]
    pub input_requests: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_of_the_times_are_read() {
        let core: Task = serde_json::from_str(
            r#"{"taskId":"a","status":"input_required","ttl":null,"pollInterval":0}"#,
        )
        .unwrap();
        assert_eq!(core.ttl_ms(), None);
        assert_eq!(core.poll_interval_ms(), Some(0));
        assert!(!core.status.is_terminal());
        let extension: Task = serde_json::from_str(
            r#"{"taskId":"b","status":"cancelled","ttlMs":1500,"pollIntervalMs":250.7}"#,
        )
        .unwrap();
        assert_eq!(extension.ttl_ms(), Some(1500));
        assert_eq!(extension.poll_interval_ms(), Some(250));
        assert!(extension.status.is_terminal());
    }

    #[test]
    fn an_unknown_status_is_refused() {
        assert!(serde_json::from_str::<Task>(r#"{"taskId":"a","status":"paused"}"#).is_err());
    }

    #[test]
    fn a_detailed_task_carries_its_result_inline() {
        let got: DetailedTask = serde_json::from_str(
            r#"{"resultType":"complete","taskId":"c","status":"completed","ttlMs":null,
                "result":{"content":[{"type":"text","text":"done"}]}}"#,
        )
        .unwrap();
        assert_eq!(got.task.status, TaskStatus::Completed);
        assert!(got.result.unwrap().get().contains("done"));
        let asking: DetailedTask = serde_json::from_str(
            r#"{"taskId":"c","status":"input_required",
                "inputRequests":{"k1":{"method":"elicitation/create","params":{}}}}"#,
        )
        .unwrap();
        assert!(asking.input_requests.unwrap().contains_key("k1"));
    }
}
