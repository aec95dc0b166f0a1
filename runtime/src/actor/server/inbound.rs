//! What the server sends that is not an answer: notifications, its own requests (served in
//! [`super::server_requests`]), session loss and the close (answers are settled where the
//! connection is read, see [`crate::call_table::settle`]).

use actix::Context;
use switchboard_codecs::jsonrpc::{Message, Notification};
use switchboard_codecs::mcp::modern::listen;
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::connection::Event;

use super::ServerActor;

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
                        // The call it belongs to had it where the connection is read.
                        Ok(log) => self.core.logging.log(log),
                        Err(_) => {
                            tracing::debug!(server = %self.name, "malformed notifications/message")
                        }
                    }
                }
            }
            methods::TOOLS_LIST_CHANGED => self.on_tools_changed(ctx),
            methods::RESOURCES_LIST_CHANGED => {
                self.list_features(super::lists::Lists::Resources, ctx)
            }
            methods::PROMPTS_LIST_CHANGED => self.list_features(super::lists::Lists::Prompts, ctx),
            listen::ACKNOWLEDGED => self.on_listen_acknowledged(n.params.as_deref()),
            methods::CANCELLED => self.on_server_cancelled(n.params.as_deref(), ctx),
            methods::ELICITATION_COMPLETE => self.on_elicitation_complete(n.params.as_deref()),
            methods::RESOURCES_UPDATED => {
                let update = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<mcp::ResourceUpdatedParams>(p.get()).ok());
                match update {
                    Some(update) => {
                        let uri = update.uri;
                        if !self.core.subscriptions.deliver(uri.clone()) {
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
}
