//! The watcher of one task: polls it until it ends, answers its input, publishes its state,
//! and delivers its result; cancels it when its handle goes away or its deadline passes.
//!
//! Every request it sends (`tasks/get`, `tasks/result`, `tasks/update`, `tasks/cancel`) is
//! an ordinary request through the exchange, each under what is left of the task's
//! deadline (at most the server's timeout for one poll). The pacing is a pure function of
//! the instants involved ([`next_poll`]).

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::ErrorObject;
use switchboard_codecs::mcp::tasks::{
    DetailedTask, Task, TaskStatus, TASKS_CANCEL, TASKS_GET, TASKS_RESULT, TASKS_UPDATE,
};
use tokio::sync::{oneshot, watch};

use super::{
    Stop, TaskHandle, TaskOutcome, TaskShape, TaskState, DEFAULT_POLL_INTERVAL, MIN_POLL_INTERVAL,
};
use crate::deadline::{saturating_after, DeadlinePolicy, ToolPolicy};
use crate::error::{Error, ErrorContext, ErrorKind, Result};
use crate::exchange::{exchange, Params, Request};
use crate::handle::ServerHandle;

/// The JSON-RPC code a receiver answers for an unknown (or expired) task id.
const INVALID_PARAMS: i64 = ErrorObject::INVALID_PARAMS;

/// The watcher of a task of `tool` just created by a call made at `started` under
/// `policy`; its handle.
pub(crate) fn start(
    server: ServerHandle,
    shape: TaskShape,
    tool: Arc<str>,
    task: &Task,
    started: Instant,
    policy: DeadlinePolicy,
) -> TaskHandle {
    let state = state_of(task);
    let (publish, state_rx) = watch::channel(state);
    let (stop_tx, stop_rx) = oneshot::channel();
    let (outcome_tx, outcome_rx) = oneshot::channel();
    server.core.tasks.add(state_rx.clone());
    // Kept and counted before the caller gets the handle: a runtime restarted right after
    // finds the task, and the numbers add up at every moment.
    let core = &server.core;
    let record = super::TaskRecord::new(&*core.name, &*tool, task.task_id.as_str());
    if let Err(e) = core.task_store.save(&record) {
        tracing::warn!(server = %core.name, task = %task.task_id, error = %e, "the task is not kept");
    }
    core.metrics.tasks_started.increment(1);
    core.metrics.tasks_in_flight.increment(1.0);
    let hard_end = saturating_after(started, policy_total(&policy));
    let watcher = Watcher {
        server: server.clone(),
        shape,
        tool: tool.clone(),
        id: task.task_id.as_str().into(),
        started,
        created: Instant::now(),
        hard_end,
        state: publish,
        answered: HashSet::new(),
    };
    tokio::spawn(watcher.run(stop_rx, outcome_tx));
    TaskHandle {
        server,
        tool,
        state: state_rx,
        outcome: outcome_rx,
        stop: Some(stop_tx),
    }
}

/// The watcher of an existing task `id`, found by one `tasks/get`.
pub(crate) async fn resume(
    server: ServerHandle,
    shape: TaskShape,
    id: Arc<str>,
    tool: Arc<str>,
    started: Instant,
    policy: DeadlinePolicy,
) -> Result<TaskHandle> {
    let timeout = policy.timeout;
    let raw = send(&server, TASKS_GET, json!({"taskId": &*id}), timeout)
        .await
        .map_err(|e| lost_if_unknown(e, &server, &id, &tool))?;
    server.core.metrics.task_polls.increment(1);
    let polled: DetailedTask = parse(&server, TASKS_GET, &raw)?;
    Ok(start(server, shape, tool, &polled.task, started, policy))
}

/// Sends `tasks/cancel` for task `id`. A refusal (-32602: the task ended already, or is
/// unknown) is no failure: the task's watcher reports how it ended.
pub(crate) async fn cancel(server: &ServerHandle, id: &str, tool: &Arc<str>) -> Result<()> {
    let timeout = server
        .core
        .policy(Some(tool), &ToolPolicy::default())
        .timeout;
    match send(server, TASKS_CANCEL, json!({"taskId": id}), timeout).await {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), ErrorKind::Rpc { code, .. } if *code == INVALID_PARAMS) => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The whole time a call may take: its timeout, or with a progress reset its hard maximum.
fn policy_total(policy: &DeadlinePolicy) -> Duration {
    if policy.reset_on_progress {
        policy.max_total
    } else {
        policy.timeout
    }
}

/// When to poll next: the server's interval from `now` (at least [`MIN_POLL_INTERVAL`],
/// [`DEFAULT_POLL_INTERVAL`] without one), never past the deadline or the end of the
/// task's time to live.
pub(crate) fn next_poll(
    now: Instant,
    interval: Option<Duration>,
    hard_end: Instant,
    ttl_end: Option<Instant>,
) -> Instant {
    let interval = interval
        .unwrap_or(DEFAULT_POLL_INTERVAL)
        .max(MIN_POLL_INTERVAL);
    let mut at = saturating_after(now, interval).min(hard_end);
    if let Some(ttl_end) = ttl_end {
        at = at.min(ttl_end.max(now));
    }
    at
}

fn state_of(task: &Task) -> TaskState {
    TaskState {
        id: task.task_id.as_str().into(),
        status: task.status,
        message: task.status_message.clone(),
        poll_interval: task.poll_interval_ms().map(Duration::from_millis),
        ttl: task.ttl_ms().map(Duration::from_millis),
    }
}

/// One request of the watcher's, through the exchange, under `timeout`.
async fn send(
    server: &ServerHandle,
    method: &'static str,
    params: Value,
    timeout: Duration,
) -> Result<Box<RawValue>> {
    let request = Request::new(
        method.into(),
        Params::from_value(params),
        Instant::now(),
        DeadlinePolicy::only(timeout.max(Duration::from_millis(1))),
    );
    exchange(&server.core, request).await
}

fn parse<T: serde::de::DeserializeOwned>(
    server: &ServerHandle,
    method: &'static str,
    raw: &RawValue,
) -> Result<T> {
    serde_json::from_str(raw.get()).map_err(|e| {
        ErrorContext::of_request(server.core.name.clone(), method.into(), None).error(
            ErrorKind::Protocol {
                detail: format!("the result is not what `{method}` answers: {e}"),
            },
        )
    })
}

/// `-32602` to a request about a task: the server does not know it (any more).
fn lost_if_unknown(error: Error, server: &ServerHandle, id: &Arc<str>, tool: &Arc<str>) -> Error {
    match error.kind() {
        ErrorKind::Rpc { code, message, .. } if *code == INVALID_PARAMS => {
            ErrorContext::of_server(server.core.name.clone())
                .with_tool(Some(tool.clone()))
                .error(ErrorKind::TaskLost {
                    task: id.clone(),
                    reason: format!(
                        "the server answered `{}` with error {code}: {message}",
                        error.method().unwrap_or_default()
                    )
                    .into(),
                })
        }
        _ => error,
    }
}

/// A failure of one poll that the next poll may not see: the task lives on the server.
fn transient(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::Timeout { .. }
            | ErrorKind::Disconnected { .. }
            | ErrorKind::StreamBroken { .. }
            | ErrorKind::Transport { .. }
            | ErrorKind::Overloaded { .. }
    )
}

/// A pending `tasks/result` (2025-11-25).
type Fetch = Pin<Box<dyn Future<Output = Result<Box<RawValue>>> + Send>>;

struct Watcher {
    server: ServerHandle,
    shape: TaskShape,
    tool: Arc<str>,
    id: Arc<str>,
    /// When the call that made the task was made.
    started: Instant,
    /// When the task's creation was seen (its time to live counts from about then).
    created: Instant,
    /// The call's deadline, for the whole task.
    hard_end: Instant,
    state: watch::Sender<TaskState>,
    /// The extension's input request keys already answered.
    answered: HashSet<String>,
}

impl Watcher {
    async fn run(
        mut self,
        stop: oneshot::Receiver<Stop>,
        outcome: oneshot::Sender<Result<Box<RawValue>>>,
    ) {
        let core = self.server.core.clone();
        let metrics = core.metrics.clone();
        let ended = {
            let drive = self.drive();
            tokio::pin!(drive);
            tokio::select! {
                result = &mut drive => Ok(result),
                stop = stop => Err(stop.is_ok()),
            }
        };
        let (finished, delivery) = match ended {
            Ok(result) => (self.outcome_of(&result), Some(result)),
            Err(true) => (TaskOutcome::Detached, None),
            Err(false) => {
                // The handle (or the call) went away: the task is of no use to anyone.
                let _ = cancel(&self.server, &self.id, &self.tool).await;
                (TaskOutcome::Cancelled, None)
            }
        };
        tracing::debug!(server = %core.name, tool = %self.tool, task = %self.id, outcome = finished.as_str(), "task no longer watched");
        // A detached task runs on: its record stays, for whoever watches it next.
        if finished != TaskOutcome::Detached {
            if let Err(e) = core.task_store.remove(&core.name, &self.id) {
                tracing::warn!(server = %core.name, task = %self.id, error = %e, "the ended task stays in the store");
            }
        }
        metrics.tasks_in_flight.decrement(1.0);
        metrics.task_finished(finished);
        // Last: whoever waits for the result sees the store and the metrics as they end.
        if let Some(result) = delivery {
            let _ = outcome.send(result);
        }
    }

    fn outcome_of(&self, result: &Result<Box<RawValue>>) -> TaskOutcome {
        match result {
            Ok(_) if self.state.borrow().status == TaskStatus::Failed => TaskOutcome::Failed,
            Ok(_) => TaskOutcome::Completed,
            Err(e) => match e.kind() {
                ErrorKind::TaskLost { .. } => TaskOutcome::Lost,
                ErrorKind::TaskCancelled { .. } => TaskOutcome::Cancelled,
                ErrorKind::Timeout { .. } => TaskOutcome::Timeout,
                ErrorKind::Rpc { .. } => TaskOutcome::Failed,
                _ => TaskOutcome::Error,
            },
        }
    }

    /// Polls the task to its end, and its result.
    async fn drive(&mut self) -> Result<Box<RawValue>> {
        let mut fetching: Option<Fetch> = None;
        let mut detail: Option<DetailedTask> = None;
        loop {
            let status = self.state.borrow().status;
            if status == TaskStatus::Cancelled {
                return Err(self.cancelled());
            }
            match self.shape {
                TaskShape::Experimental => {
                    // `input_required`: the server's requests come while `tasks/result` is
                    // pending (the actor answers them with the handlers); once the task
                    // ends, the same request brings its result.
                    if fetching.is_none()
                        && (status.is_terminal() || status == TaskStatus::InputRequired)
                    {
                        fetching = Some(Box::pin(fetch_result(
                            self.server.clone(),
                            self.hard_end,
                            self.id.clone(),
                        )));
                    }
                }
                TaskShape::Extension => {
                    if let Some(polled) = detail.take() {
                        match polled.task.status {
                            TaskStatus::Completed => return self.inline_result(polled),
                            TaskStatus::Failed => return Err(self.inline_error(polled)),
                            TaskStatus::InputRequired => {
                                self.answer(polled.input_requests.unwrap_or_default())
                                    .await?
                            }
                            _ => {}
                        }
                    }
                }
            }
            let now = Instant::now();
            if now >= self.hard_end {
                return Err(self.timed_out().await);
            }
            let interval = self.state.borrow().poll_interval;
            let at = next_poll(now, interval, self.hard_end, self.ttl_end());
            if let Raced::Fetched(result) =
                race(&mut fetching, tokio::time::sleep_until(at.into())).await
            {
                return self.fetched(result).await;
            }
            if Instant::now() >= self.hard_end {
                return Err(self.timed_out().await);
            }
            match race(&mut fetching, self.poll()).await {
                Raced::Fetched(result) => return self.fetched(result).await,
                Raced::Other(polled) => detail = polled?,
            }
        }
    }

    /// The end of the task's time to live, as the server last gave it.
    fn ttl_end(&self) -> Option<Instant> {
        let ttl = self.state.borrow().ttl?;
        Some(saturating_after(self.created, ttl))
    }

    /// One `tasks/get`: publishes the state, and gives the extension's inline details.
    async fn poll(&mut self) -> Result<Option<DetailedTask>> {
        self.server.core.metrics.task_polls.increment(1);
        let left = self.hard_end.saturating_duration_since(Instant::now());
        let timeout = self
            .server
            .core
            .policy(None, &ToolPolicy::default())
            .timeout
            .min(left);
        let raw = match send(
            &self.server,
            TASKS_GET,
            json!({"taskId": &*self.id}),
            timeout,
        )
        .await
        {
            Ok(raw) => raw,
            Err(e) if transient(&e) => {
                tracing::debug!(server = %self.server.core.name, task = %self.id, error = %e, "a task poll failed; polling on");
                return Ok(None);
            }
            Err(e) => return Err(lost_if_unknown(e, &self.server, &self.id, &self.tool)),
        };
        let polled: DetailedTask = parse(&self.server, TASKS_GET, &raw)?;
        let next = state_of(&polled.task);
        self.state.send_if_modified(|state| {
            let changed = *state != next;
            *state = next;
            changed
        });
        if !polled.task.status.is_terminal() {
            if let Some(ttl_end) = self.ttl_end() {
                if Instant::now() >= ttl_end {
                    let _ = cancel(&self.server, &self.id, &self.tool).await;
                    let ttl = self.state.borrow().ttl.unwrap_or_default();
                    return Err(ErrorContext::of_server(self.server.core.name.clone())
                        .with_tool(Some(self.tool.clone()))
                        .error(ErrorKind::TaskLost {
                            task: self.id.clone(),
                            reason: format!(
                                "it outlived its time to live ({} ms) unfinished",
                                ttl.as_millis()
                            )
                            .into(),
                        }));
                }
            }
        }
        Ok(Some(polled))
    }

    /// The answer of `tasks/result` (2025-11-25).
    async fn fetched(&self, result: Result<Box<RawValue>>) -> Result<Box<RawValue>> {
        match result {
            // It waited out the call's deadline: the task is cancelled, the call times out.
            Err(e) if e.is_timeout() && Instant::now() >= self.hard_end => {
                Err(self.timed_out().await)
            }
            other => other.map_err(|e| lost_if_unknown(e, &self.server, &self.id, &self.tool)),
        }
    }

    /// A completed task's inline result (the extension).
    fn inline_result(&self, polled: DetailedTask) -> Result<Box<RawValue>> {
        polled.result.ok_or_else(|| {
            ErrorContext::of_request(
                self.server.core.name.clone(),
                TASKS_GET.into(),
                Some(self.tool.clone()),
            )
            .error(ErrorKind::Protocol {
                detail: format!("task `{}` completed without its `result`", self.id),
            })
        })
    }

    /// A failed task's inline error (the extension): the call's error.
    fn inline_error(&self, polled: DetailedTask) -> Error {
        let parsed = polled
            .error
            .and_then(|e| serde_json::from_value::<ErrorObject>(e).ok());
        match parsed {
            Some(error) => crate::error::rpc_error(
                self.server.core.name.clone(),
                "tools/call".into(),
                Some(self.tool.clone()),
                error,
            ),
            None => ErrorContext::of_request(
                self.server.core.name.clone(),
                TASKS_GET.into(),
                Some(self.tool.clone()),
            )
            .error(ErrorKind::Protocol {
                detail: format!(
                    "task `{}` failed without a JSON-RPC `error`{}",
                    self.id,
                    polled
                        .task
                        .status_message
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                ),
            }),
        }
    }

    /// Answers the extension's input requests not answered yet, with `tasks/update`.
    async fn answer(&mut self, requests: serde_json::Map<String, Value>) -> Result<()> {
        let fresh: serde_json::Map<String, Value> = requests
            .into_iter()
            .filter(|(key, _)| !self.answered.contains(key))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = fresh.keys().cloned().collect();
        let method: Arc<str> = "tools/call".into();
        let responses = crate::exchange::follow_up::fulfil(
            &self.server.core,
            &method,
            &Some(self.tool.clone()),
            fresh,
            self.hard_end,
            None,
        )
        .await
        .map_err(|e| e.unwrap_or_else(|| self.timeout_error()))?;
        let left = self.hard_end.saturating_duration_since(Instant::now());
        let params = json!({"taskId": &*self.id, "inputResponses": responses});
        send(&self.server, TASKS_UPDATE, params, left)
            .await
            .map_err(|e| lost_if_unknown(e, &self.server, &self.id, &self.tool))?;
        self.answered.extend(keys);
        Ok(())
    }

    fn cancelled(&self) -> Error {
        ErrorContext::of_server(self.server.core.name.clone())
            .with_tool(Some(self.tool.clone()))
            .error(ErrorKind::TaskCancelled {
                task: self.id.clone(),
                message: self.state.borrow().message.clone(),
            })
    }

    fn timeout_error(&self) -> Error {
        ErrorContext::of_request(
            self.server.core.name.clone(),
            "tools/call".into(),
            Some(self.tool.clone()),
        )
        // The call's own request was answered (with the task) long ago: no request id.
        .error(ErrorKind::Timeout {
            elapsed: self.started.elapsed(),
            dropped_frames: 0,
        })
    }

    /// The deadline passed: the task is cancelled, the call times out.
    async fn timed_out(&self) -> Error {
        let _ = cancel(&self.server, &self.id, &self.tool).await;
        self.timeout_error()
    }
}

/// What came first: a pending `tasks/result`'s answer, or the other future's.
enum Raced<T> {
    Fetched(Result<Box<RawValue>>),
    Other(T),
}

/// Waits for `other`, or for a pending fetch to answer first.
async fn race<T>(fetching: &mut Option<Fetch>, other: impl Future<Output = T>) -> Raced<T> {
    match fetching {
        Some(fetch) => tokio::select! {
            biased;
            result = fetch.as_mut() => Raced::Fetched(result),
            value = other => Raced::Other(value),
        },
        None => Raced::Other(other.await),
    }
}

/// `tasks/result` for task `id`, under what is left until `hard_end`.
async fn fetch_result(
    server: ServerHandle,
    hard_end: Instant,
    id: Arc<str>,
) -> Result<Box<RawValue>> {
    let left = hard_end.saturating_duration_since(Instant::now());
    send(&server, TASKS_RESULT, json!({"taskId": &*id}), left).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_follow_the_interval_within_the_floor_the_deadline_and_the_ttl() {
        let now = Instant::now();
        let far = now + Duration::from_secs(3600);
        let ms = Duration::from_millis;
        assert_eq!(next_poll(now, Some(ms(500)), far, None), now + ms(500));
        // A server that says 0 is polled no closer than the floor.
        assert_eq!(
            next_poll(now, Some(ms(0)), far, None),
            now + MIN_POLL_INTERVAL
        );
        assert_eq!(next_poll(now, None, far, None), now + DEFAULT_POLL_INTERVAL);
        // Never past the deadline, nor past the end of the time to live.
        assert_eq!(
            next_poll(now, Some(ms(5000)), now + ms(300), None),
            now + ms(300)
        );
        assert_eq!(
            next_poll(now, Some(ms(5000)), far, Some(now + ms(700))),
            now + ms(700)
        );
        // A time to live already over: poll now, to learn how the task ended.
        assert_eq!(next_poll(now, Some(ms(5000)), far, Some(now - ms(10))), now);
    }

    #[test]
    fn a_task_bounded_by_progress_resets_gets_the_hard_maximum() {
        let plain = DeadlinePolicy::only(Duration::from_secs(5));
        assert_eq!(policy_total(&plain), Duration::from_secs(5));
        let reset = DeadlinePolicy {
            reset_on_progress: true,
            max_total: Duration::from_secs(50),
            ..plain
        };
        assert_eq!(policy_total(&reset), Duration::from_secs(50));
    }
}
