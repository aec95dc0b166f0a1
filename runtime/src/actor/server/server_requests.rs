//! Requests the server sends to the client (`roots/list`, `sampling/createMessage`,
//! `elicitation/create`, `ping`), answered by the application's
//! [`ClientHandlers`](crate::client::ClientHandlers).
//!
//! The actor only reads the request: params that do not fit the method are answered -32602
//! and an unknown method -32601 at once. Everything else is served in a task of its own, on
//! the connection's I/O runtime (or the actor thread), so a slow handler delays neither the
//! actor nor other answers. Inside that task the handler runs in one more task, which turns
//! its panic into a `JoinError` instead of taking the serving task down unanswered; the
//! serving task owns the deadline and answers on the connection the request came from.
//!
//! A task-augmented sampling or elicitation request (2025-11-25), where `initialize`
//! declared it, is answered at once with its task, and the server's `tasks/*` requests are
//! answered from the server's received tasks (see [`crate::client::tasks`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Outcome, Request};
use switchboard_codecs::mcp::methods;

use super::{empty_object, ServerActor};
use crate::call_table::Table;
use crate::client::serve::{prepare, Work};
use crate::client::tasks;
use crate::framer;

impl ServerActor {
    pub(super) fn on_server_request(&mut self, request: Request) {
        let Some(link) = &self.link else { return };
        let table = link.table.clone();
        // The call that caused the request answers it, when it brought handlers and nobody
        // else could have caused it (see `crate::call_scope`). Never `roots/list`: servers
        // ask for the roots by themselves (after the handshake, after a change), so it is
        // the connection's question, not a call's, whatever is in flight then.
        let handlers = (request.method != methods::ROOTS_LIST)
            .then(|| table.sole_scope(|scope| scope.handlers.is_some()))
            .flatten()
            .and_then(|scope| scope.handlers.clone())
            .or_else(|| self.core.config.handlers.clone())
            .unwrap_or_default();
        let server = self.name.clone();
        let method = request.method.as_str();
        // Absent params read as `null`: `roots/list` and `ping` need none, the others refuse it.
        let params = match request
            .params
            .as_deref()
            .map(|p| serde_json::from_str(p.get()))
        {
            None => Ok(Value::Null),
            Some(parsed) => parsed.map_err(|e| e.to_string()),
        };
        if method == methods::PING {
            answer(&table, request.id, Outcome::Result(empty_object()));
            return;
        }
        if tasks::is_task_method(method) {
            self.on_task_request(method, params.unwrap_or_default(), table, request.id);
            return;
        }
        let ttl = params.as_ref().ok().and_then(tasks::asked);
        let work = prepare(method, params, &handlers, server);
        match work {
            Err(error) => {
                tracing::debug!(server = %self.name, method = %request.method, %error.message, "server request refused");
                answer(&table, request.id, Outcome::Error(error));
            }
            Ok((kind, work)) => {
                let server = self.name.clone();
                let deadline = self.core.config.handler_timeout_value();
                let running = run(server, kind, work, deadline);
                // A task-augmented request (2025-11-25) is answered at once with its task,
                // where it was declared: the handler's outcome is kept for `tasks/result`.
                let running = match ttl {
                    Some(ttl) if self.declares_task_for(method) => {
                        match self.accept_task(ttl, running) {
                            Ok(created) => {
                                answer(&table, request.id, created);
                                return;
                            }
                            Err(running) => running,
                        }
                    }
                    _ => running,
                };
                self.spawn(async move {
                    let outcome = running.await;
                    // The connection may be gone meanwhile; then nobody is waiting.
                    answer(&table, request.id, outcome);
                });
            }
        }
    }

    /// Whether `initialize` declared task-augmented requests of `method`.
    fn declares_task_for(&self, method: &str) -> bool {
        !self.is_modern()
            && matches!(
                method,
                methods::SAMPLING_CREATE_MESSAGE | methods::ELICITATION_CREATE
            )
    }

    /// Keeps `running` as a received task: its `CreateTaskResult`, or `running` back when
    /// the server has too many tasks kept.
    fn accept_task(&self, ttl: std::time::Duration, running: Running) -> Result<Outcome, Running> {
        let io = self.wiring.io.of(&self.core.config.transport).cloned();
        let spawn =
            move |work: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>| match io {
                Some(io) => io.spawn(work).abort_handle(),
                None => tokio::spawn(work).abort_handle(),
            };
        let created = self.core.received.accept(ttl, running, spawn)?;
        Ok(match serde_json::value::to_raw_value(&created) {
            Ok(raw) => Outcome::Result(raw),
            Err(e) => Outcome::Error(ErrorObject::new(ErrorObject::INTERNAL_ERROR, e.to_string())),
        })
    }

    /// The server's `tasks/*` requests about the tasks it asked this client to run.
    fn on_task_request(&self, method: &str, params: Value, table: Arc<Table>, id: Id) {
        match self.core.received.request(method, &params) {
            tasks::Reply::Now(outcome) => answer(&table, id, outcome),
            tasks::Reply::Later(waiting) => self.spawn(async move {
                let outcome = waiting.await;
                answer(&table, id, outcome);
            }),
        }
    }

    /// Runs `work` off the actor, on the connection's I/O runtime (or the actor thread).
    fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        match self.wiring.io.of(&self.core.config.transport) {
            Some(io) => drop(io.spawn(work)),
            None => drop(tokio::spawn(work)),
        }
    }

    /// `notifications/elicitation/complete`: handed to the elicitation handler, if any.
    pub(super) fn on_elicitation_complete(&mut self, params: Option<&serde_json::value::RawValue>) {
        let Some(handler) = self
            .core
            .config
            .handlers
            .as_ref()
            .and_then(|h| h.elicitation.clone())
        else {
            tracing::debug!(server = %self.name, "elicitation complete, but no elicitation handler");
            return;
        };
        let id = params
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|p| p.get("elicitationId")?.as_str().map(str::to_owned));
        let Some(id) = id else {
            tracing::debug!(server = %self.name, "malformed notifications/elicitation/complete");
            return;
        };
        let server = self.name.clone();
        // A task of its own: a handler that panics loses only this notification.
        let deliver = async move { handler.elicitation_complete(&server, id) };
        match self.wiring.io.of(&self.core.config.transport) {
            Some(io) => drop(io.spawn(deliver)),
            None => drop(tokio::spawn(deliver)),
        }
    }
}

/// A handler's work running to its outcome.
type Running = std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>>;

/// Runs `work` to its outcome within `deadline`.
fn run(server: Arc<str>, kind: &'static str, work: Work, deadline: Duration) -> Running {
    Box::pin(async move {
        let mut running = tokio::spawn(work);
        // A received task cancelled (or past its ttl) drops this future: the handler stops.
        let _stops_with_us = StopOnDrop(running.abort_handle());
        let failure = |message: String| {
            tracing::warn!(server = %server, handler = kind, "{message}");
            Outcome::Error(ErrorObject::new(ErrorObject::INTERNAL_ERROR, message))
        };
        match tokio::time::timeout(deadline, &mut running).await {
            Ok(Ok(Ok(result))) => match serde_json::value::to_raw_value(&result) {
                Ok(raw) => Outcome::Result(raw),
                Err(e) => failure(format!(
                    "the client's {kind} handler gave an unwritable result: {e}"
                )),
            },
            Ok(Ok(Err(e))) => failure(format!("the client's {kind} handler failed: {e}")),
            Ok(Err(join)) if join.is_panic() => {
                failure(format!("the client's {kind} handler panicked"))
            }
            Ok(Err(_)) => failure(format!("the client's {kind} handler was cancelled")),
            Err(_) => {
                // Nobody will read a late answer: stop the handler's work too.
                running.abort();
                failure(format!(
                    "the client's {kind} handler did not answer within {} ms",
                    deadline.as_millis()
                ))
            }
        }
    })
}

/// Aborts a task when dropped.
struct StopOnDrop(tokio::task::AbortHandle);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn answer(table: &Table, id: Id, outcome: Outcome) {
    table.write(framer::response(id, outcome));
}
