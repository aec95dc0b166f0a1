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

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Outcome, Request};
use switchboard_codecs::mcp::methods;

use super::{empty_object, ServerActor};
use crate::call_table::Table;
use crate::client::serve::{prepare, Work};
use crate::framer;

impl ServerActor {
    pub(super) fn on_server_request(&mut self, request: Request) {
        let Some(link) = &self.link else { return };
        let table = link.table.clone();
        let handlers = self.core.config.handlers.clone().unwrap_or_default();
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
        let work = prepare(method, params, &handlers, server);
        match work {
            Err(error) => {
                tracing::debug!(server = %self.name, method = %request.method, %error.message, "server request refused");
                answer(&table, request.id, Outcome::Error(error));
            }
            Ok((kind, work)) => {
                let serving = serve(
                    self.name.clone(),
                    kind,
                    work,
                    self.core.config.handler_timeout_value(),
                    table,
                    request.id,
                );
                match self.core.io.of(&self.core.config.transport) {
                    Some(io) => drop(io.spawn(serving)),
                    None => drop(tokio::spawn(serving)),
                }
            }
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
        match self.core.io.of(&self.core.config.transport) {
            Some(io) => drop(io.spawn(deliver)),
            None => drop(tokio::spawn(deliver)),
        }
    }
}

/// Runs `work` to its answer within `deadline` and writes that answer.
async fn serve(
    server: Arc<str>,
    kind: &'static str,
    work: Work,
    deadline: Duration,
    table: Arc<Table>,
    id: Id,
) {
    let mut running = tokio::spawn(work);
    let failure = |message: String| {
        tracing::warn!(server = %server, handler = kind, "{message}");
        Outcome::Error(ErrorObject::new(ErrorObject::INTERNAL_ERROR, message))
    };
    let outcome = match tokio::time::timeout(deadline, &mut running).await {
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
    };
    // The connection may be gone meanwhile; then nobody is waiting.
    answer(&table, id, outcome);
}

fn answer(table: &Table, id: Id, outcome: Outcome) {
    table.write(framer::response(id, outcome));
}
