//! What the server sends: answers, notifications, its own requests, skipped frames.

use std::sync::Arc;
use std::time::Instant;

use actix::Context;
use bytes::Bytes;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{
    ErrorObject, Id, Message, Notification, Outcome, Request, Response,
};
use switchboard_codecs::lines::Skipped;
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::connection::{Event, Outbound};

use super::{empty_object, ServerActor};
use crate::actor::pending::Reply;
use crate::call::Progress;
use crate::client::{ElicitationHandler, ElicitationRequest, HANDLER_TIMEOUT};
use crate::error::Error;

impl ServerActor {
    pub(super) fn on_event(&mut self, event: Event, ctx: &mut Context<Self>) {
        self.last_heard = Instant::now();
        match event {
            Event::Message(Message::Response(response)) => self.on_response(response, ctx),
            Event::Message(Message::Notification(n)) => self.on_notification(n, ctx),
            Event::Message(Message::Request(r)) => self.on_server_request(r),
            Event::Skipped(skipped) => self.on_skipped(skipped, ctx),
            Event::SendFailed {
                id: Id::Number(n),
                reason,
            } => {
                self.fail_one(
                    n,
                    |server, e| Error::Unavailable {
                        server,
                        tool: e.tool.clone(),
                        reason: reason.clone(),
                    },
                    ctx,
                );
            }
            Event::SessionExpired { id } => self.on_session_expired(id, ctx),
            Event::Unauthorized {
                id: Some(Id::Number(n)),
                resource_metadata,
                ..
            } => {
                let error = |server, e: &crate::actor::pending::Entry| Error::Unauthorized {
                    server,
                    tool: e.tool.clone(),
                    resource_metadata: resource_metadata.clone(),
                };
                if !self.fail_one(n, error, ctx) {
                    tracing::debug!(server = %self.name, "unauthorized answer to a finished request");
                }
            }
            Event::Closed(reason) => self.on_closed(reason, ctx),
            _ => {}
        }
    }

    fn on_response(&mut self, response: Response, ctx: &mut Context<Self>) {
        self.strikes = 0;
        let Some(Id::Number(id)) = response.id else {
            self.on_unknown_answer(response.id.as_ref(), &response.outcome);
            return;
        };
        let Some(entry) = self.pending.take(id) else {
            self.on_unknown_answer(Some(&Id::Number(id)), &response.outcome);
            return;
        };
        match entry.reply {
            Reply::Caller(tx) => {
                let result = match response.outcome {
                    Outcome::Result(raw) => Ok(raw),
                    Outcome::Error(e) => Err(super::rpc_error(
                        self.name.clone(),
                        entry.method,
                        entry.tool,
                        e,
                    )),
                };
                let _ = tx.send(result);
            }
            internal => self.on_internal(internal, response.outcome, ctx),
        }
    }

    fn on_unknown_answer(&mut self, id: Option<&Id>, outcome: &Outcome) {
        self.unknown_answers += 1;
        self.ties.metrics.unknown_answers.increment(1);
        match (id, outcome) {
            (None, Outcome::Error(e)) => {
                tracing::warn!(server = %self.name, error = %e, "the server reported an error about a message it could not read")
            }
            _ => tracing::warn!(
                server = %self.name,
                id = %id.map(ToString::to_string).unwrap_or_default(),
                total = self.unknown_answers,
                "ignored an answer to an unknown request id"
            ),
        }
    }

    fn on_skipped(&mut self, skipped: Skipped, ctx: &mut Context<Self>) {
        if let Some(Id::Number(id)) = skipped.id {
            let detail = format!("malformed answer: {}", skipped.reason());
            let failed = self.fail_one(
                id,
                |server, e| Error::Protocol {
                    server,
                    method: e.method.clone(),
                    tool: e.tool.clone(),
                    detail: detail.clone(),
                },
                ctx,
            );
            if failed {
                return;
            }
        }
        self.dropped_frames += 1;
    }

    fn on_notification(&mut self, n: Notification, ctx: &mut Context<Self>) {
        match n.method.as_str() {
            methods::PROGRESS => self.on_progress(n.params.as_deref()),
            methods::MESSAGE => {
                if let Some(params) = n.params {
                    match serde_json::from_str::<mcp::LoggingMessageParams>(params.get()) {
                        Ok(log) => tracing::info!(
                            target: "switchboard::server_log",
                            server = %self.name,
                            level = ?log.level,
                            logger = log.logger.as_deref().unwrap_or(""),
                            data = %log.data,
                        ),
                        Err(_) => {
                            tracing::debug!(server = %self.name, "malformed notifications/message")
                        }
                    }
                }
            }
            methods::TOOLS_LIST_CHANGED => self.on_tools_changed(ctx),
            other => tracing::debug!(server = %self.name, method = other, "notification ignored"),
        }
    }

    fn on_progress(&mut self, params: Option<&RawValue>) {
        let Some(params) = params else { return };
        let Ok(p) = serde_json::from_str::<mcp::ProgressNotificationParams>(params.get()) else {
            tracing::debug!(server = %self.name, "malformed notifications/progress");
            return;
        };
        let mcp::ProgressToken::Number(id) = p.progress_token else {
            return;
        };
        let Some(entry) = self.pending.get_mut(id) else {
            return;
        };
        if let Some(callback) = &entry.progress {
            callback(Progress {
                progress: p.progress,
                total: p.total,
                message: p.message.clone(),
            });
        }
        let next = entry
            .policy
            .and_then(|policy| policy.on_progress(entry.started, Instant::now()));
        if let Some(at) = next {
            self.pending.reset(id, at);
        }
    }

    fn on_server_request(&mut self, request: Request) {
        let elicitation = self
            .config
            .handlers
            .as_ref()
            .and_then(|h| h.elicitation.clone());
        let outcome = match (request.method.as_str(), elicitation) {
            (methods::PING, _) => Outcome::Result(empty_object()),
            ("elicitation/create", Some(handler)) => {
                self.serve_elicitation(request, handler);
                return;
            }
            (method, _) => Outcome::Error(ErrorObject::new(
                ErrorObject::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        self.answer(request.id, outcome);
    }

    fn answer(&self, id: Id, outcome: Outcome) {
        let answer = Message::Response(Response {
            id: Some(id),
            outcome,
        });
        self.write(None, Bytes::from(answer.to_vec()));
    }

    /// Runs the application's handler off the actor, so a slow one never wedges it, and
    /// answers on the connection the request came from.
    fn serve_elicitation(&self, request: Request, handler: Arc<dyn ElicitationHandler>) {
        let Some(link) = &self.link else { return };
        let sender = link.sender.clone();
        let server = self.name.clone();
        let id = request.id;
        let params = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
            .unwrap_or(serde_json::Value::Null);
        actix::spawn(async move {
            let outcome = match ElicitationRequest::from_params(params) {
                Err(e) => Outcome::Error(ErrorObject::new(ErrorObject::INVALID_PARAMS, e)),
                Ok(request) => {
                    let answer =
                        tokio::time::timeout(HANDLER_TIMEOUT, handler.elicit(&server, request))
                            .await;
                    match answer {
                        Ok(Ok(response)) => {
                            match serde_json::value::to_raw_value(&response.into_result()) {
                                Ok(raw) => Outcome::Result(raw),
                                Err(e) => Outcome::Error(ErrorObject::new(
                                    ErrorObject::INTERNAL_ERROR,
                                    e.to_string(),
                                )),
                            }
                        }
                        Ok(Err(e)) => Outcome::Error(ErrorObject::new(
                            ErrorObject::INTERNAL_ERROR,
                            format!("the client's elicitation handler failed: {e}"),
                        )),
                        Err(_) => Outcome::Error(ErrorObject::new(
                            ErrorObject::INTERNAL_ERROR,
                            "the client's elicitation handler did not answer in time",
                        )),
                    }
                }
            };
            let answer = Message::Response(Response {
                id: Some(id),
                outcome,
            });
            // The connection may be gone meanwhile; then nobody is waiting.
            let _ = sender.send(Outbound::from_message(&answer));
        });
    }
}
