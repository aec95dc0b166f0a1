//! Resource subscriptions: one broadcast of updates per subscribed URI, kept across restarts
//! so that the runtime, not the caller, subscribes again to every new session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

/// Updates kept for a slow receiver before it starts missing some (it is told how many).
const BACKLOG: usize = 64;

/// A subscribed resource changed (`notifications/resources/updated`): read it again to see
/// how.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceUpdate {
    /// The server.
    pub server: Arc<str>,
    /// The resource that changed (the server may name a sub-resource of the one
    /// subscribed to).
    pub uri: String,
}

/// One server's subscriptions, shared by its handles and every incarnation of its actor.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    server: Arc<str>,
    by_uri: Mutex<HashMap<String, broadcast::Sender<ResourceUpdate>>>,
}

impl Subscriptions {
    pub(crate) fn new(server: Arc<str>) -> Self {
        Subscriptions {
            server,
            by_uri: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, broadcast::Sender<ResourceUpdate>>> {
        self.by_uri.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A receiver of `uri`'s updates, registering the URI if it is new.
    pub(crate) fn add(&self, uri: &str) -> broadcast::Receiver<ResourceUpdate> {
        self.lock()
            .entry(uri.to_owned())
            .or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe()
    }

    /// Forgets `uri`; its receivers see the end of their stream. `false` if it was unknown.
    pub(crate) fn remove(&self, uri: &str) -> bool {
        self.lock().remove(uri).is_some()
    }

    /// Every subscribed URI, to subscribe again on a new session.
    pub(crate) fn uris(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// An update from the server; `false` when nobody subscribed to that URI.
    pub(crate) fn deliver(&self, uri: String) -> bool {
        let by_uri = self.lock();
        let Some(sender) = by_uri.get(&uri) else {
            return false;
        };
        // No receiver left is not an error: the subscription stands until unsubscribed.
        let _ = sender.send(ResourceUpdate {
            server: self.server.clone(),
            uri,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_reach_the_receivers_of_their_uri_only() {
        let subs = Subscriptions::new("s".into());
        let mut a = subs.add("x://a");
        let mut b = subs.add("x://b");
        assert!(subs.deliver("x://a".into()));
        assert!(!subs.deliver("x://nobody".into()));
        assert_eq!(a.try_recv().map(|u| u.uri).as_deref(), Ok("x://a"));
        assert!(b.try_recv().is_err());
        let mut uris = subs.uris();
        uris.sort();
        assert_eq!(uris, ["x://a", "x://b"]);
        assert!(subs.remove("x://a"));
        assert!(matches!(
            a.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert!(!subs.remove("x://a"));
    }
}
