//! The `subscriptions/listen` stream of a stateless (2026-07-28) server: the era's way to
//! hear of list changes and resource updates, instead of the handshake era's GET stream and
//! `resources/subscribe`.
//!
//! Once a modern server is ready, the actor opens one listen asking for what the server can
//! send and someone wants: the list changes its capabilities announce (`listChanged` of
//! tools, prompts, resources) and updates of the resources callers subscribed to (when it
//! declares `resources.subscribe`). What arrives on it goes where the handshake era's
//! notifications go ([`super::inbound`]): the catalogue is re-listed, resources and prompts
//! in the status are listed again, updates reach the subscribers.
//!
//! The listen is an ordinary request of the actor (through the connection's call table),
//! answered only when the server closes it. When it ends (a graceful result, a broken
//! stream, the server cancelling it on stdio) it is opened again after a delay that doubles
//! with each listen that ended early. A listen the server refuses with an error is not
//! asked again until the subscriptions change or the server reconnects. When callers change the subscribed URIs, the listen is
//! replaced at once: the old one is cancelled (over HTTP its stream is closed, on stdio the
//! server is sent `notifications/cancelled`), and the new one's acknowledgement is what
//! [`ServerHandle::subscribe`](crate::ServerHandle::subscribe) waits for.

use std::time::{Duration, Instant};

use actix::{AsyncContext, Context, SpawnHandle, StreamHandler};
use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_codecs::mcp::modern::listen::{self, Acknowledged, SubscriptionFilter};
use switchboard_codecs::mcp::ServerCapabilities;

use super::ServerActor;
use crate::error::{Error, ErrorKind};
use crate::exchange::{exchange, Origin};
use crate::framer;

/// The delay before the first re-open of a listen that ended early.
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// The longest delay between re-opens.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// A listen that lasted this long was not a failure: the next re-open is quick again.
const STABLE: Duration = Duration::from_secs(30);

/// The actor's listen: the one open (if any) and the re-open schedule.
#[derive(Default)]
pub(super) struct Listening {
    open: Option<Open>,
    /// Listens in a row that ended early (before [`STABLE`]).
    early_ends: u32,
    retry: Option<SpawnHandle>,
}

/// The listen in flight.
struct Open {
    id: i64,
    /// The revision of the subscribed URIs it asks for.
    revision: u64,
    filter: SubscriptionFilter,
    task: SpawnHandle,
    since: Instant,
}

/// What to ask a server with `caps` for, with `uris` subscribed: only what it says it can
/// send, since a server must not send what was not asked for and may refuse what it cannot.
pub(super) fn filter_for(caps: &ServerCapabilities, uris: Vec<String>) -> SubscriptionFilter {
    let flag = |cap: Option<&Value>, key: &str| {
        cap.and_then(|c| c.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let mut filter = SubscriptionFilter::default();
    filter.tools_list_changed = caps
        .tools
        .as_ref()
        .and_then(|t| t.list_changed)
        .unwrap_or(false);
    filter.prompts_list_changed = flag(caps.prompts.as_ref(), "listChanged");
    filter.resources_list_changed = flag(caps.resources.as_ref(), "listChanged");
    if flag(caps.resources.as_ref(), "subscribe") {
        filter.resource_subscriptions = uris;
    }
    filter
}

/// The delay before re-opening after `early_ends` listens in a row ended early.
pub(super) fn retry_delay(early_ends: u32) -> Duration {
    FIRST_RETRY
        .checked_mul(1u32 << early_ends.min(16))
        .unwrap_or(MAX_RETRY)
        .min(MAX_RETRY)
}

/// What follows the end of a listen.
#[derive(Debug)]
pub(super) enum AfterEnd {
    /// Opened again after [`retry_delay`]: the server closed it (a result), or its stream
    /// broke (`why`).
    Reopen(String),
    /// Not asked again on a timer: a JSON-RPC error is the server refusing the listen (it
    /// may not serve the method at all), and it would only refuse again. The next change
    /// of the subscriptions, or the next connection, asks again.
    Refused(Error),
}

/// What follows a listen that ended with `answer`.
pub(super) fn after_end(answer: Result<Box<RawValue>, Error>) -> AfterEnd {
    match answer {
        Ok(_) => AfterEnd::Reopen("the server closed it".to_owned()),
        Err(error) if matches!(error.kind(), ErrorKind::Rpc { .. }) => AfterEnd::Refused(error),
        Err(error) => AfterEnd::Reopen(error.to_string()),
    }
}

/// The subscribed URIs changed (a caller subscribed or unsubscribed).
pub(super) struct UrisChanged;

impl StreamHandler<UrisChanged> for ServerActor {
    fn handle(&mut self, _: UrisChanged, ctx: &mut Context<Self>) {
        let (revision, _) = self.core.subscriptions.snapshot();
        let current = self.listening.open.as_ref().map(|o| o.revision);
        if self.phase.is_ready() && self.is_modern() && current != Some(revision) {
            self.open_listen(ctx);
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl ServerActor {
    /// Opens the listen (replacing any open one) when the server is modern, ready, and has
    /// something to listen for.
    pub(super) fn open_listen(&mut self, ctx: &mut Context<Self>) {
        self.close_listen(ctx);
        if !self.phase.is_ready() || !self.is_modern() {
            return;
        }
        let Some(caps) = self.learnt.init.as_ref().map(|i| &i.capabilities) else {
            return;
        };
        let (revision, uris) = self.core.subscriptions.snapshot();
        let filter = filter_for(caps, uris);
        if filter.is_empty() {
            // Nothing to hear: a caller waiting for this revision has nothing to wait for.
            self.core.subscriptions.acknowledged(revision);
            return;
        }
        // No deadline: the stream stays open until one side closes it.
        let params = serde_json::json!({ "notifications": filter });
        let Some(mut request) = self.own_request(listen::SUBSCRIPTIONS_LISTEN, params, None) else {
            return;
        };
        // Its id is known first: the acknowledgement names it, and a close takes it back.
        let id = self.core.next_id();
        if let Origin::Actor { id: first, .. } = &mut request.origin {
            *first = Some(id);
        }
        tracing::debug!(server = %self.name, id, ?filter, "opening subscriptions/listen");
        let core = self.core.clone();
        let sending = async move { exchange(&core, request).await };
        let task = self.when_same_link(ctx, sending, move |act, answer, ctx| {
            act.on_listen_end(id, answer, ctx);
        });
        self.listening.open = Some(Open {
            id,
            revision,
            filter,
            task,
            since: Instant::now(),
        });
    }

    /// Cancels the open listen and any scheduled re-open: a new connection starts over, and
    /// a new filter replaces the old listen.
    pub(super) fn close_listen(&mut self, ctx: &mut Context<Self>) {
        if let Some(retry) = self.listening.retry.take() {
            ctx.cancel_future(retry);
        }
        let Some(open) = self.listening.open.take() else {
            return;
        };
        // Taken out of the table and cancelled here rather than by dropping the request,
        // which would count as a caller's cancellation. Over HTTP the transport closes the
        // listen's stream instead of sending the notification.
        if let Some(link) = &self.link {
            if let Some(waiter) = link.table.take(open.id) {
                waiter.discard();
                let cancel = framer::cancel(open.id, "the subscriptions changed");
                link.table.write(cancel);
            }
        }
        ctx.cancel_future(open.task);
    }

    /// A new connection: no listen of the old one survives, and its retry count goes.
    pub(super) fn reset_listen(&mut self, ctx: &mut Context<Self>) {
        self.close_listen(ctx);
        self.listening.early_ends = 0;
    }

    /// The listen request ended: a result is the server closing it gracefully, an error a
    /// stream that broke, a JSON-RPC error a refusal.
    fn on_listen_end(
        &mut self,
        id: i64,
        answer: Result<Box<RawValue>, Error>,
        ctx: &mut Context<Self>,
    ) {
        match after_end(answer) {
            AfterEnd::Reopen(why) => {
                tracing::debug!(server = %self.name, id, why = %why, "subscriptions/listen ended");
                self.listen_ended(id, ctx);
            }
            AfterEnd::Refused(error) => {
                tracing::warn!(server = %self.name, %error, "the server refused subscriptions/listen; no list changes or resource updates will arrive");
                if self.listening.open.as_ref().map(|o| o.id) == Some(id) {
                    if let Some(open) = self.listening.open.take() {
                        self.core.subscriptions.refused(open.revision, error);
                    }
                }
            }
        }
    }

    /// Schedules the re-open of listen `id`, if it is the open one.
    fn listen_ended(&mut self, id: i64, ctx: &mut Context<Self>) {
        if self.listening.open.as_ref().map(|o| o.id) != Some(id) {
            return;
        }
        let Some(open) = self.listening.open.take() else {
            return;
        };
        if open.since.elapsed() >= STABLE {
            self.listening.early_ends = 0;
        }
        let delay = retry_delay(self.listening.early_ends);
        self.listening.early_ends = self.listening.early_ends.saturating_add(1);
        let generation = self.generation;
        tracing::debug!(server = %self.name, ?delay, "re-opening subscriptions/listen");
        self.listening.retry = Some(ctx.run_later(delay, move |act, ctx| {
            act.listening.retry = None;
            if act.generation == generation {
                act.open_listen(ctx);
            }
        }));
    }

    /// `notifications/subscriptions/acknowledged`: the server took the listen; callers
    /// waiting for its URIs are told.
    pub(super) fn on_listen_acknowledged(&mut self, params: Option<&RawValue>) {
        let ack = params.and_then(|p| serde_json::from_str::<Acknowledged>(p.get()).ok());
        let Some(ack) = ack else {
            tracing::debug!(server = %self.name, "malformed notifications/subscriptions/acknowledged");
            return;
        };
        let Some(open) = &self.listening.open else {
            return;
        };
        // An acknowledgement of a listen already replaced says nothing about this one.
        if ack.subscription_id() != Some(open.id) {
            return;
        }
        let refused: Vec<&String> = open
            .filter
            .resource_subscriptions
            .iter()
            .filter(|uri| !ack.notifications.resource_subscriptions.contains(uri))
            .collect();
        if !refused.is_empty() {
            tracing::warn!(server = %self.name, ?refused, "the server will not send updates of these resources");
        }
        if ack.notifications != open.filter && refused.is_empty() {
            tracing::debug!(server = %self.name, asked = ?open.filter, agreed = ?ack.notifications, "the server agreed to part of subscriptions/listen");
        }
        self.core.subscriptions.acknowledged(open.revision);
    }

    /// `notifications/cancelled` from the server: on stdio, the server ending a listen.
    pub(super) fn on_server_cancelled(
        &mut self,
        params: Option<&RawValue>,
        ctx: &mut Context<Self>,
    ) {
        #[derive(serde::Deserialize)]
        struct Cancelled {
            #[serde(rename = "requestId")]
            request_id: Value,
        }
        let cancelled = params.and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok());
        let Some(id) = cancelled.and_then(|c| c.request_id.as_i64()) else {
            return;
        };
        let Some(open) = &self.listening.open else {
            return;
        };
        if open.id != id {
            return;
        }
        tracing::debug!(server = %self.name, id, "the server ended subscriptions/listen");
        // Taken out of the table first, so that dropping the request sends no cancel back.
        if let Some(waiter) = self.link.as_ref().and_then(|l| l.table.take(id)) {
            waiter.discard();
        }
        ctx.cancel_future(open.task);
        self.listen_ended(id, ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorContext;

    fn caps(json: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(json).expect("capabilities")
    }

    #[test]
    fn the_filter_asks_only_for_what_the_server_declares() {
        let uris = vec!["file:///a".to_owned()];
        let all = caps(serde_json::json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true},
        }));
        let filter = filter_for(&all, uris.clone());
        assert!(filter.tools_list_changed && filter.prompts_list_changed);
        assert!(filter.resources_list_changed);
        assert_eq!(filter.resource_subscriptions, uris);

        let quiet = caps(serde_json::json!({
            "tools": {},
            "prompts": {"listChanged": false},
            "resources": {},
        }));
        assert!(filter_for(&quiet, uris).is_empty());
    }

    #[test]
    fn a_refused_listen_is_not_reopened_and_an_ended_one_is() {
        let closed = RawValue::from_string(r#"{"resultType":"complete"}"#.to_owned());
        assert!(matches!(
            after_end(Ok(closed.expect("json"))),
            AfterEnd::Reopen(_)
        ));
        let broken = ErrorContext::of_request("s".into(), "subscriptions/listen".into(), None)
            .error(ErrorKind::Transport {
                reason: "the stream broke".into(),
            });
        assert!(matches!(after_end(Err(broken)), AfterEnd::Reopen(_)));
        let refused = ErrorContext::of_request("s".into(), "subscriptions/listen".into(), None)
            .error(ErrorKind::Rpc {
                code: -32601,
                message: "Method not found".into(),
                data: None,
            });
        assert!(matches!(after_end(Err(refused)), AfterEnd::Refused(_)));
    }

    #[test]
    fn retries_double_up_to_the_cap() {
        assert_eq!(retry_delay(0), FIRST_RETRY);
        assert_eq!(retry_delay(1), FIRST_RETRY * 2);
        assert_eq!(retry_delay(3), FIRST_RETRY * 8);
        assert_eq!(retry_delay(20), MAX_RETRY);
        assert_eq!(retry_delay(u32::MAX), MAX_RETRY);
    }
}
