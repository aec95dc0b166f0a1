//! The router of one connection: the task that reads everything the server sends, settles
//! the call table in place, and passes the rest on to the server actor in order. Over stdio
//! and in-process connections the reader settles answers itself with [`settle_inline`], and
//! the router only passes on the rest.
//!
//! Settled here, never in an actor: answers (results and JSON-RPC errors), malformed answers
//! whose id can be read, HTTP send failures (a server that could not be reached is noted on
//! the table first) and 401s for a request, and progress notifications (they run the
//! caller's callback and may move its deadline). Answers to ids nobody waits for are counted
//! and logged here too. Log messages are handed to the call they belong to here, and passed
//! on too. Passed on: every other notification, every request from the server, session
//! loss, and the close.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use switchboard_codecs::jsonrpc::{Id, Message, Notification, Outcome, Response};
use switchboard_codecs::mcp::{methods, LoggingMessageParams, ProgressNotificationParams};
use switchboard_transports::connection::Event;
use switchboard_transports::CloseReason;
use tokio::sync::mpsc;

use super::Table;
use crate::error::ErrorKind;
use crate::logging::ServerLog;

/// Routes a connection's events until its stream ends.
///
/// The close is passed on, not handled: the actor marks the server down first, then closes
/// the table (a caller told "disconnected" then finds the server down, not ready). If the
/// actor is gone, the router closes the table itself once the stream ends.
///
/// `announced` runs for each announcement that the server's tools changed, before the
/// actor hears of it (see [`announces_tools`]).
pub(crate) async fn route(
    table: Arc<Table>,
    mut events: mpsc::Receiver<Event>,
    actor: mpsc::Sender<Event>,
    announced: impl Fn(),
) {
    let mut forwarding = true;
    while let Some(event) = events.recv().await {
        if announces_tools(&event) {
            announced();
        }
        let Some(event) = settle(&table, event) else {
            continue;
        };
        if forwarding && actor.send(event).await.is_err() {
            forwarding = false;
        }
    }
    if !forwarding && !table.is_closed() {
        let reason = Arc::new(CloseReason::aborted("the server's actor stopped"));
        table.close(|waiter| waiter.disconnected(reason.clone()));
    }
}

/// The reader's part, on its own task, for stdio and in-process connections (their
/// [`Inline`](switchboard_transports::Inline) handler): answers, progress and unreadable
/// frames are settled in place, so an answer reaches its caller without a hop through the
/// router task. Everything else is handed back untouched, for the router to count and pass
/// on once.
pub(crate) fn settle_inline(table: &Table, event: Event) -> Option<Event> {
    table.read_inline.store(true, Ordering::Relaxed);
    match &event {
        Event::Message(Message::Response(_)) | Event::Skipped(_) => settle(table, event),
        Event::Message(Message::Notification(n)) if n.method == methods::PROGRESS => {
            settle(table, event)
        }
        Event::Message(Message::Notification(n)) if n.method == methods::MESSAGE => {
            log_to_call(table, n);
            Some(event)
        }
        _ => Some(event),
    }
}

/// Hands a `notifications/message` to the call it belongs to, if one can be told (see
/// [`crate::call_scope`]), before the answer that may follow it settles the call: where the
/// connection is read, in order. The message goes on to the actor all the same (tracing and
/// the server's log stream).
fn log_to_call(table: &Table, n: &Notification) {
    let Some(scope) = table.sole_scope(|scope| scope.logs.is_some()) else {
        return;
    };
    let params = n
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<LoggingMessageParams>(p.get()).ok());
    if let Some(params) = params {
        scope.deliver_log(&ServerLog {
            server: table.server().clone(),
            level: params.level,
            logger: params.logger,
            data: params.data,
        });
    }
}

/// Whether `event` is the server's announcement that its tools changed
/// (`notifications/tools/list_changed`). It is noted where it is first read (by the reader
/// of a stdio or in-process connection, else by the router), so that a caller an answer
/// read after it wakes knows that a re-listing is on its way: a call by a name the list
/// does not have yet waits for it. Noted twice (by the reader and again by the router) is
/// the same as once: both come before the actor acts on it.
pub(crate) fn announces_tools(event: &Event) -> bool {
    matches!(event, Event::Message(Message::Notification(n)) if n.method == methods::TOOLS_LIST_CHANGED)
}

/// Settles what belongs to the table; hands back what the actor must see.
fn settle(table: &Table, event: Event) -> Option<Event> {
    let metrics = &table.metrics;
    match event {
        Event::Message(message) => {
            table.hear();
            metrics.messages_in.increment(1);
            match message {
                Message::Response(response) => {
                    if let Some(unclaimed) = table.claim(response) {
                        unknown_answer(table, &unclaimed);
                    }
                    None
                }
                Message::Notification(n) if n.method == methods::PROGRESS => {
                    let params = n.params.as_deref().and_then(|p| {
                        serde_json::from_str::<ProgressNotificationParams>(p.get()).ok()
                    });
                    match params {
                        Some(params) => {
                            if !table.progress(params) {
                                tracing::debug!(server = %table.server(), "progress for no pending request");
                            }
                        }
                        None => {
                            tracing::debug!(server = %table.server(), "malformed notifications/progress")
                        }
                    }
                    None
                }
                Message::Notification(n) if n.method == methods::MESSAGE => {
                    // Read inline, it was handed to its call there already.
                    if !table.read_inline.load(Ordering::Relaxed) {
                        log_to_call(table, &n);
                    }
                    Some(Event::Message(Message::Notification(n)))
                }
                other => Some(Event::Message(other)),
            }
        }
        Event::Skipped(skipped) => {
            table.hear();
            metrics.skipped(skipped.kind.as_str());
            let claimed = match skipped.id {
                Some(Id::Number(id)) => table.fail(id, |waiter| {
                    waiter.context().error(ErrorKind::Protocol {
                        detail: format!("malformed answer: {}", skipped.reason()),
                    })
                }),
                _ => false,
            };
            if !claimed {
                table.drop_frame(|| format!("`{}` ({})", skipped.excerpt, skipped.reason()));
            }
            None
        }
        Event::Unreachable { id, reason } => {
            table.note_unreachable();
            fail_send(table, id, &reason, "the server could not be reached");
            None
        }
        Event::SendFailed { id, reason } => {
            fail_send(table, id, &reason, "a send failed");
            None
        }
        Event::StreamBroken { id, reason } => {
            let failed = match id {
                Id::Number(id) => table.fail(id, |waiter| {
                    waiter.context().error(ErrorKind::StreamBroken {
                        reason: reason.clone(),
                    })
                }),
                Id::String(_) => false,
            };
            if !failed {
                tracing::debug!(server = %table.server(), %reason, "a stream broke for a finished request");
            }
            None
        }
        Event::Unauthorized {
            id,
            resource_metadata,
            reason,
        } => {
            table.hear();
            let failed = match id {
                Some(Id::Number(id)) => table.fail(id, |waiter| {
                    waiter.context().error(ErrorKind::Unauthorized {
                        resource_metadata: resource_metadata.clone(),
                    })
                }),
                _ => false,
            };
            if !failed {
                tracing::debug!(server = %table.server(), %reason, "unauthorized answer to a finished request");
            }
            None
        }
        Event::SessionExpired { id } => {
            table.hear();
            Some(Event::SessionExpired { id })
        }
        other => Some(other),
    }
}

/// An answer nobody waits for: counted and logged, never fatal.
fn unknown_answer(table: &Table, response: &Response) {
    table.metrics.unknown_answers.increment(1);
    match (&response.id, &response.outcome) {
        (None, Outcome::Error(e)) => tracing::warn!(
            server = %table.server(),
            error = %e,
            "the server reported an error about a message it could not read"
        ),
        (id, _) => tracing::warn!(
            server = %table.server(),
            id = %id.as_ref().map(ToString::to_string).unwrap_or_default(),
            "ignored an answer to an unknown request id"
        ),
    }
}

/// Fails request `id`, whose send failed for `reason`, with a transport error; `what`
/// says in the log what happened when the request had finished already.
fn fail_send(table: &Table, id: Id, reason: &Arc<str>, what: &str) {
    let failed = match id {
        Id::Number(id) => table.fail(id, |waiter| {
            waiter.context().error(ErrorKind::Transport {
                reason: reason.clone(),
            })
        }),
        Id::String(_) => false,
    };
    if !failed {
        tracing::debug!(server = %table.server(), %reason, "{what} for a finished request");
    }
}
