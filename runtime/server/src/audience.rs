//! Who hears about a server's changes: its handshake-era sessions and its open
//! `subscriptions/listen` streams.
//!
//! A change (a list changed, a resource was updated) reaches every
//! handshake-era session through its notifier, and every open `subscriptions/listen` stream
//! whose filter asked for it. Delivery never waits: a session whose queue is full loses the
//! notification (and on HTTP its stream), so one slow client cannot stall the handler that
//! made the change. The registries are locked only to add, remove and announce, never on a
//! request's path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use serde_json::{json, Value};
use switchboard_transports::server::Responder;

use crate::session::{lock, Session};

/// Something clients may want to hear about.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Tools,
    Resources,
    Prompts,
    Resource(String),
}

impl Change {
    fn method(&self) -> &'static str {
        match self {
            Change::Tools => "notifications/tools/list_changed",
            Change::Resources => "notifications/resources/list_changed",
            Change::Prompts => "notifications/prompts/list_changed",
            Change::Resource(_) => "notifications/resources/updated",
        }
    }
}

/// An open `subscriptions/listen` stream.
pub(crate) struct Listen {
    pub(crate) responder: Responder,
    pub(crate) subscription_id: Value,
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: Vec<String>,
}

impl Listen {
    fn wants(&self, change: &Change) -> bool {
        match change {
            Change::Tools => self.tools,
            Change::Prompts => self.prompts,
            Change::Resources => self.resources,
            Change::Resource(uri) => self.uris.iter().any(|u| u == uri),
        }
    }
}

/// The sessions and listen streams of one server.
#[derive(Default)]
pub(crate) struct Audience {
    next_key: AtomicU64,
    sessions: Mutex<HashMap<u64, Weak<Session>>>,
    listens: Mutex<HashMap<u64, Listen>>,
}

/// Unregisters a listen stream when its request ends, however it ends.
pub(crate) struct ListenGuard {
    audience: Arc<Audience>,
    key: u64,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        lock(&self.audience.listens).remove(&self.key);
    }
}

impl Audience {
    pub(crate) fn next_key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn register(&self, session: &Arc<Session>) {
        lock(&self.sessions).insert(session.key, Arc::downgrade(session));
    }

    pub(crate) fn unregister(&self, session: &Session) {
        lock(&self.sessions).remove(&session.key);
    }

    /// How many sessions are registered (the stateless ones are not).
    pub(crate) fn sessions(&self) -> usize {
        lock(&self.sessions).len()
    }

    pub(crate) fn listen(self: &Arc<Self>, listen: Listen) -> ListenGuard {
        let key = self.next_key();
        lock(&self.listens).insert(key, listen);
        ListenGuard {
            audience: self.clone(),
            key,
        }
    }

    pub(crate) fn announce(&self, change: Change) {
        let method = change.method();
        let params = match &change {
            Change::Resource(uri) => Some(json!({ "uri": uri })),
            _ => None,
        };
        let frame = |params: Option<Value>| {
            let mut message = json!({"jsonrpc": "2.0", "method": method});
            if let Some(params) = params {
                message["params"] = params;
            }
            Bytes::from(serde_json::to_vec(&message).unwrap_or_default())
        };
        let plain = frame(params.clone());
        let sessions: Vec<Arc<Session>> = lock(&self.sessions)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for session in sessions {
            if session.is_closed() {
                continue;
            }
            if let Change::Resource(uri) = &change {
                if !session.is_subscribed(uri) {
                    continue;
                }
            }
            session.notifier.notify(plain.clone());
        }
        for listen in lock(&self.listens).values() {
            if !listen.wants(&change) {
                continue;
            }
            let mut params = params.clone().unwrap_or_else(|| json!({}));
            params["_meta"] = json!({ switchboard_codecs::mcp::modern::meta::SUBSCRIPTION_ID: listen.subscription_id });
            if !listen.responder.try_send(frame(Some(params))) {
                tracing::warn!("a listen stream is full or gone: it misses a notification");
            }
        }
    }
}
