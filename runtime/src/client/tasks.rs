//! The client as a task receiver (2025-11-25): a handshake-era server may ask for a
//! sampling or elicitation request to run as a task (`params.task`), then poll it.
//!
//! Where the application provides a sampling or an elicitation handler, `initialize`
//! declares `tasks.requests.sampling.createMessage` or `tasks.requests.elicitation.create`
//! (and `tasks.list`, `tasks.cancel`). A task-augmented request is then answered at once
//! with a `CreateTaskResult`, its handler runs on as for any request (under the handler
//! deadline), and the server's `tasks/get`, `tasks/result` (which waits for the handler),
//! `tasks/list` and `tasks/cancel` are answered from the tasks kept for that server.
//!
//! Task ids are 128 random bits. A task is kept for the `ttl` the server asked for (at most
//! [`MAX_TTL`], [`DEFAULT_TTL`] when it asked none), then forgotten (a running one is
//! stopped); at most [`MAX_TASKS`] are kept, and a request past that runs as a plain
//! request. The stateless era has no client tasks (SEP-2663), so none of this is declared
//! there.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::{ErrorObject, Outcome};
use switchboard_codecs::mcp::tasks::{
    TaskStatus, RELATED_TASK, TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT,
};
use tokio::sync::watch;

use super::ClientHandlers;
use crate::timestamp::rfc3339;

/// The longest a received task is kept.
pub const MAX_TTL: Duration = Duration::from_secs(60 * 60);
/// How long a received task is kept when the server asks for no `ttl`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(5 * 60);
/// The most received tasks kept per server.
pub const MAX_TASKS: usize = 64;
/// The polling interval suggested to servers, in ms.
const POLL_INTERVAL_MS: u64 = 500;

/// Adds the `tasks` capability of the handshake era to `capabilities` (the handlers' own),
/// for the handlers there are.
pub(crate) fn declare(capabilities: &mut Value, handlers: Option<&ClientHandlers>) {
    let Some(handlers) = handlers else { return };
    let mut requests = serde_json::Map::new();
    if handlers.sampling.is_some() {
        requests.insert("sampling".into(), json!({"createMessage": {}}));
    }
    if handlers.elicitation.is_some() {
        requests.insert("elicitation".into(), json!({"create": {}}));
    }
    if requests.is_empty() {
        return;
    }
    if let Some(caps) = capabilities.as_object_mut() {
        caps.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": requests}),
        );
    }
}

/// Whether `method` is one of the requests a server sends about the client's tasks.
pub(crate) fn is_task_method(method: &str) -> bool {
    matches!(method, TASKS_GET | TASKS_RESULT | TASKS_LIST | TASKS_CANCEL)
}

/// The time to live a task-augmented request asks for, when it asks for a task.
pub(crate) fn asked(params: &Value) -> Option<Duration> {
    let task = params.get("task")?;
    let ttl = task
        .get("ttl")
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TTL);
    Some(ttl.min(MAX_TTL))
}

/// An answer to a server's `tasks/*` request: now, or once the task ends.
pub(crate) enum Reply {
    Now(Outcome),
    Later(Pin<Box<dyn Future<Output = Outcome> + Send>>),
}

/// How a received task ended.
#[derive(Debug, Clone)]
enum Ended {
    Result(Value),
    Error(ErrorObject),
}

struct Entry {
    status: TaskStatus,
    message: Option<String>,
    created_at: String,
    updated_at: String,
    created: Instant,
    ttl: Duration,
    ended: watch::Sender<Option<Ended>>,
    /// Stops the handler (a cancel, or the end of its time to live).
    abort: Option<tokio::task::AbortHandle>,
}

impl Entry {
    fn task(&self, id: &str) -> Value {
        let mut task = json!({
            "taskId": id, "status": self.status.as_str(),
            "createdAt": self.created_at, "lastUpdatedAt": self.updated_at,
            "ttl": u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            "pollInterval": POLL_INTERVAL_MS,
        });
        if let Some(message) = &self.message {
            task["statusMessage"] = json!(message);
        }
        task
    }

    fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.created) > self.ttl
    }
}

/// The tasks one server asked this client to run.
#[derive(Default)]
pub(crate) struct Received {
    tasks: Mutex<HashMap<Arc<str>, Entry>>,
}

impl std::fmt::Debug for Received {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.tasks.lock().map(|t| t.len()).unwrap_or(0);
        f.debug_struct("Received").field("tasks", &count).finish()
    }
}

impl Received {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Entry>> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        tasks.retain(|_, entry| {
            let keep = !entry.expired(now);
            if !keep {
                if let Some(abort) = entry.abort.take() {
                    abort.abort();
                }
            }
            keep
        });
        tasks
    }

    /// Accepts a request as a task kept for `ttl`: runs `work` (the handler's outcome) with
    /// `spawn`, records how it ends, and gives the `CreateTaskResult`; `work` back when
    /// [`MAX_TASKS`] are kept already.
    pub(crate) fn accept<F>(
        self: &Arc<Self>,
        ttl: Duration,
        work: F,
        spawn: impl FnOnce(Pin<Box<dyn Future<Output = ()> + Send>>) -> tokio::task::AbortHandle,
    ) -> Result<Value, F>
    where
        F: Future<Output = Outcome> + Send + 'static,
    {
        let mut tasks = self.lock();
        if tasks.len() >= MAX_TASKS {
            return Err(work);
        }
        let id: Arc<str> = random_id().into();
        let now = rfc3339(SystemTime::now(), false);
        let entry = Entry {
            status: TaskStatus::Working,
            message: None,
            created_at: now.clone(),
            updated_at: now,
            created: Instant::now(),
            ttl,
            ended: watch::channel(None).0,
            abort: None,
        };
        let created = json!({"task": entry.task(&id)});
        tasks.insert(id.clone(), entry);
        let me = Arc::downgrade(self);
        let task_id = id.clone();
        let abort = spawn(Box::pin(async move {
            let outcome = work.await;
            if let Some(me) = me.upgrade() {
                me.finish(&task_id, outcome);
            }
        }));
        if let Some(entry) = tasks.get_mut(&id) {
            entry.abort = Some(abort);
        }
        Ok(created)
    }

    /// Records how task `id` ended (unless it was cancelled meanwhile).
    fn finish(&self, id: &str, outcome: Outcome) {
        let mut tasks = self.lock();
        let Some(entry) = tasks.get_mut(id) else {
            return;
        };
        if entry.status.is_terminal() {
            return;
        }
        let ended = match outcome {
            Outcome::Result(raw) => match serde_json::from_str::<Value>(raw.get()) {
                Ok(value) => Ended::Result(value),
                Err(e) => Ended::Error(ErrorObject::new(
                    ErrorObject::INTERNAL_ERROR,
                    format!("an unreadable result: {e}"),
                )),
            },
            Outcome::Error(error) => Ended::Error(error),
        };
        entry.status = match ended {
            Ended::Result(_) => TaskStatus::Completed,
            Ended::Error(ref e) => {
                entry.message = Some(e.message.clone());
                TaskStatus::Failed
            }
        };
        entry.updated_at = rfc3339(SystemTime::now(), false);
        entry.abort = None;
        entry.ended.send_replace(Some(ended));
    }

    /// Answers the server's `tasks/get`, `tasks/result`, `tasks/list` or `tasks/cancel`.
    pub(crate) fn request(&self, method: &str, params: &Value) -> Reply {
        let unknown = |id: &str| {
            Reply::Now(Outcome::Error(ErrorObject::new(
                ErrorObject::INVALID_PARAMS,
                format!("no task `{id}` (unknown, or past its ttl)"),
            )))
        };
        let mut tasks = self.lock();
        if method == TASKS_LIST {
            let listed: Vec<Value> = tasks.iter().map(|(id, e)| e.task(id)).collect();
            return now(json!({"tasks": listed}));
        }
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        let Some(entry) = tasks.get_mut(id) else {
            return unknown(id);
        };
        match method {
            TASKS_GET => now(entry.task(id)),
            TASKS_CANCEL if entry.status.is_terminal() => {
                Reply::Now(Outcome::Error(ErrorObject::new(
                    ErrorObject::INVALID_PARAMS,
                    format!(
                        "cannot cancel task `{id}`: already in terminal status '{}'",
                        entry.status.as_str()
                    ),
                )))
            }
            TASKS_CANCEL => {
                if let Some(abort) = entry.abort.take() {
                    abort.abort();
                }
                entry.status = TaskStatus::Cancelled;
                entry.message = Some("cancelled by the server".into());
                entry.updated_at = rfc3339(SystemTime::now(), false);
                entry.ended.send_replace(Some(Ended::Error(ErrorObject::new(
                    ErrorObject::INTERNAL_ERROR,
                    "the task was cancelled",
                ))));
                now(entry.task(id))
            }
            _ => {
                let mut ended = entry.ended.subscribe();
                let id = id.to_owned();
                Reply::Later(Box::pin(async move {
                    let got = ended.wait_for(Option::is_some).await.map(|e| e.clone());
                    match got {
                        Ok(Some(Ended::Result(mut result))) => {
                            if let Some(fields) = result.as_object_mut() {
                                let meta = fields.entry("_meta").or_insert_with(|| json!({}));
                                if let Some(meta) = meta.as_object_mut() {
                                    meta.insert(RELATED_TASK.into(), json!({"taskId": id}));
                                }
                            }
                            outcome(result)
                        }
                        Ok(Some(Ended::Error(error))) => Outcome::Error(error),
                        // Forgotten (past its ttl) while the server waited.
                        _ => Outcome::Error(ErrorObject::new(
                            ErrorObject::INVALID_PARAMS,
                            format!("task `{id}` is past its ttl"),
                        )),
                    }
                }))
            }
        }
    }
}

fn outcome(value: Value) -> Outcome {
    match serde_json::value::to_raw_value(&value) {
        Ok(raw) => Outcome::Result(raw),
        Err(e) => Outcome::Error(ErrorObject::new(ErrorObject::INTERNAL_ERROR, e.to_string())),
    }
}

fn now(value: Value) -> Reply {
    Reply::Now(outcome(value))
}

/// 128 random bits in hex, from the standard library's per-process random keys.
fn random_id() -> String {
    let state = std::collections::hash_map::RandomState::new();
    let mut a = state.build_hasher();
    a.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let mut b = std::collections::hash_map::RandomState::new().build_hasher();
    b.write_u64(a.finish());
    format!("{:016x}{:016x}", a.finish(), b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_long_and_differ() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn the_ttl_asked_is_capped_and_defaulted() {
        assert_eq!(asked(&json!({})), None);
        assert_eq!(asked(&json!({"task": {}})), Some(DEFAULT_TTL));
        assert_eq!(
            asked(&json!({"task": {"ttl": 1000}})),
            Some(Duration::from_secs(1))
        );
        assert_eq!(asked(&json!({"task": {"ttl": u64::MAX}})), Some(MAX_TTL));
    }

    #[tokio::test]
    async fn a_received_task_is_polled_fetched_and_refuses_a_late_cancel() {
        let received = Arc::new(Received::default());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let created = received
            .accept(
                Duration::from_secs(60),
                async move {
                    let _ = wait.await;
                    outcome(json!({"role": "assistant", "model": "m"}))
                },
                |f| tokio::spawn(f).abort_handle(),
            )
            .unwrap_or_else(|_| panic!("room for a task"));
        let id = created["task"]["taskId"].as_str().unwrap().to_owned();
        assert_eq!(created["task"]["status"], "working");
        let got = |reply: Reply| match reply {
            Reply::Now(Outcome::Result(raw)) => serde_json::from_str::<Value>(raw.get()).unwrap(),
            Reply::Now(Outcome::Error(e)) => json!({"error": e.code}),
            Reply::Later(_) => json!("later"),
        };
        assert_eq!(
            got(received.request(TASKS_GET, &json!({"taskId": id})))["status"],
            "working"
        );
        let Reply::Later(result) = received.request(TASKS_RESULT, &json!({"taskId": id})) else {
            panic!("tasks/result waits for a running task")
        };
        go.send(()).unwrap();
        let Outcome::Result(raw) = result.await else {
            panic!("a result")
        };
        let result: Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(result["model"], "m");
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], json!(id));
        assert_eq!(
            got(received.request(TASKS_GET, &json!({"taskId": id})))["status"],
            "completed"
        );
        assert_eq!(
            got(received.request(TASKS_CANCEL, &json!({"taskId": id}))),
            json!({"error": -32602})
        );
        assert_eq!(
            got(received.request(TASKS_LIST, &json!({})))["tasks"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        assert_eq!(
            got(received.request(TASKS_GET, &json!({"taskId": "nope"}))),
            json!({"error": -32602})
        );
    }
}
