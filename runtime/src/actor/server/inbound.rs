//! What the server sends that is not an answer: notifications, its own requests, session
//! loss and the close (answers are settled by the connection's router, see
//! [`crate::calls::router`]).

use std::sync::Arc;

use actix::Context;
use bytes::Bytes;
use switchboard_codecs::jsonrpc::{
    ErrorObject, Id, Message, Notification, Outcome, Request, Response,
};
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::connection::Event;

use super::{empty_object, ServerActor};
use crate::client::{ElicitationHandler, ElicitationRequest, HANDLER_TIMEOUT};

impl ServerActor {
    /// An event the router passed on: everything that is not an answer to a pending request.
    pub(super) fn on_event(&mut self, event: Event, ctx: &mut Context<Self>) {
        match event {
            Event::Message(Message::Notification(n)) => self.on_notification(n, ctx),
            Event::Message(Message::Request(r)) => self.on_server_request(r),
            Event::SessionExpired { id } => self.on_session_expired(id, ctx),
            Event::Closed(reason) => self.on_closed(reason, ctx),
            other => tracing::debug!(server = %self.name, event = ?other, "event ignored"),
        }
    }

    fn on_notification(&mut self, n: Notification, ctx: &mut Context<Self>) {
        match n.method.as_str() {
            methods::MESSAGE => {
                if let Some(params) = n.params {
                    match serde_json::from_str::<mcp::LoggingMessageParams>(params.get()) {
                        Ok(log) => self.ties.logging.log(log),
                        Err(_) => {
                            tracing::debug!(server = %self.name, "malformed notifications/message")
                        }
                    }
                }
            }
            methods::TOOLS_LIST_CHANGED => self.on_tools_changed(ctx),
            methods::RESOURCES_LIST_CHANGED => {
                self.list_features(super::features::Lists::Resources, ctx)
            }
            methods::PROMPTS_LIST_CHANGED => {
                self.list_features(super::features::Lists::Prompts, ctx)
            }
            methods::RESOURCES_UPDATED => {
                let update = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<mcp::ResourceUpdatedParams>(p.get()).ok());
                match update {
                    Some(update) => {
                        let uri = update.uri;
                        if !self.ties.subscriptions.deliver(uri.clone()) {
                            tracing::debug!(server = %self.name, %uri, "update for a resource nobody subscribed to");
                        }
                    }
                    None => {
                        tracing::debug!(server = %self.name, "malformed notifications/resources/updated")
                    }
                }
            }
            other => tracing::debug!(server = %self.name, method = other, "notification ignored"),
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
        if let Some(link) = &self.link {
            link.table.write(None, Bytes::from(answer.to_vec()));
        }
    }

    /// Runs the application's handler off the actor, so a slow one never wedges it, and
    /// answers on the connection the request came from.
    fn serve_elicitation(&self, request: Request, handler: Arc<dyn ElicitationHandler>) {
        let Some(link) = &self.link else { return };
        let table = link.table.clone();
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
            table.write(None, Bytes::from(answer.to_vec()));
        });
    }
}
