//! Resource subscriptions: one broadcast of updates per subscribed URI, kept across restarts
//! so that the runtime, not the caller, subscribes again to every new session.
//!
//! For a stateless (2026-07-28) server the set of URIs is what the actor's
//! `subscriptions/listen` asks for: every change of the set bumps a revision, which wakes
//! the actor to listen again, and the actor reports the revisions the server acknowledged,
//! which a caller's `subscribe` waits for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, watch};

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
    by_uri: Mutex<ByUri>,
    /// The set's revision, bumped by every added or removed URI.
    revision: watch::Sender<u64>,
    /// The newest revision a stateless server answered a listen for.
    acked: watch::Sender<Answered>,
}

/// What a stateless server said to the newest listen it answered.
#[derive(Debug, Clone, Default)]
struct Answered {
    /// The revision of the set the listen asked for.
    revision: u64,
    /// `Some`: the server refused that listen.
    refused: Option<crate::Error>,
}

/// The subscribed URIs and the revision of that set, changed together.
#[derive(Debug, Default)]
struct ByUri {
    senders: HashMap<String, broadcast::Sender<ResourceUpdate>>,
    revision: u64,
}

impl ByUri {
    fn bump(&mut self, revisions: &watch::Sender<u64>) {
        self.revision += 1;
        revisions.send_replace(self.revision);
    }
}

impl Subscriptions {
    pub(crate) fn new(server: Arc<str>) -> Self {
        Subscriptions {
            server,
            by_uri: Mutex::new(ByUri::default()),
            revision: watch::Sender::new(0),
            acked: watch::Sender::new(Answered::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ByUri> {
        self.by_uri.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A receiver of `uri`'s updates, registering the URI if it is new, and the revision of
    /// the set that has it.
    pub(crate) fn add(&self, uri: &str) -> (broadcast::Receiver<ResourceUpdate>, u64) {
        let mut by_uri = self.lock();
        let receiver = match by_uri.senders.get(uri) {
            Some(sender) => sender.subscribe(),
            None => {
                let (sender, receiver) = broadcast::channel(BACKLOG);
                by_uri.senders.insert(uri.to_owned(), sender);
                by_uri.bump(&self.revision);
                receiver
            }
        };
        (receiver, by_uri.revision)
    }

    /// Forgets `uri`; its receivers see the end of their stream. `false` if it was unknown.
    pub(crate) fn remove(&self, uri: &str) -> bool {
        let mut by_uri = self.lock();
        let removed = by_uri.senders.remove(uri).is_some();
        if removed {
            by_uri.bump(&self.revision);
        }
        removed
    }

    /// Every subscribed URI, to subscribe again on a new session.
    pub(crate) fn uris(&self) -> Vec<String> {
        self.snapshot().1
    }

    /// The revision of the set and its URIs (sorted, so that equal sets ask alike).
    pub(crate) fn snapshot(&self) -> (u64, Vec<String>) {
        let by_uri = self.lock();
        let mut uris: Vec<String> = by_uri.senders.keys().cloned().collect();
        uris.sort();
        (by_uri.revision, uris)
    }

    /// The set's revisions as they change, for the actor of a stateless server.
    pub(crate) fn revisions(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }

    /// The server acknowledged a listen that asked for the set at `revision`.
    pub(crate) fn acknowledged(&self, revision: u64) {
        self.answered(revision, None);
    }

    /// The server refused a listen that asked for the set at `revision`.
    pub(crate) fn refused(&self, revision: u64, error: crate::Error) {
        self.answered(revision, Some(error));
    }

    fn answered(&self, revision: u64, refused: Option<crate::Error>) {
        self.acked.send_if_modified(|answered| {
            // An answer to an older listen, arriving late, says nothing of newer ones.
            let newer = revision > answered.revision
                || (revision == answered.revision && refused.is_some());
            if newer {
                *answered = Answered { revision, refused };
            }
            newer
        });
    }

    /// Resolves once the server answered a listen for `revision` or a later one: `Ok` when
    /// it acknowledged it, the server's error when it refused it.
    pub(crate) async fn wait_acknowledged(&self, revision: u64) -> Result<(), crate::Error> {
        let mut acked = self.acked.subscribe();
        let answered = acked.wait_for(|a| a.revision >= revision).await;
        match answered.as_deref().map(|a| a.refused.clone()) {
            Ok(Some(error)) => Err(error),
            // The sender lives as long as `self`: the wait ends only by the condition.
            Ok(None) | Err(_) => Ok(()),
        }
    }

    /// An update from the server; `false` when nobody subscribed to that URI.
    pub(crate) fn deliver(&self, uri: String) -> bool {
        let by_uri = self.lock();
        let Some(sender) = by_uri.senders.get(&uri) else {
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
        let (mut a, _) = subs.add("x://a");
        let (mut b, _) = subs.add("x://b");
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

    #[test]
    fn only_changes_of_the_set_bump_its_revision() {
        let subs = Subscriptions::new("s".into());
        let revisions = subs.revisions();
        let (_a, first) = subs.add("x://a");
        let (_again, same) = subs.add("x://a");
        assert_eq!((first, same), (1, 1));
        let (_b, second) = subs.add("x://b");
        assert_eq!(second, 2);
        assert!(!subs.remove("x://nobody"));
        assert!(subs.remove("x://a"));
        assert_eq!(subs.snapshot(), (3, vec!["x://b".to_owned()]));
        assert_eq!(*revisions.borrow(), 3);
    }

    #[test]
    fn a_wait_ends_when_its_revision_or_a_later_one_is_acknowledged() {
        use futures_util::FutureExt;
        let subs = Subscriptions::new("s".into());
        subs.acknowledged(2);
        assert!(matches!(
            subs.wait_acknowledged(2).now_or_never(),
            Some(Ok(()))
        ));
        assert!(subs.wait_acknowledged(3).now_or_never().is_none());
        // An older acknowledgement arriving late does not go back.
        subs.acknowledged(1);
        subs.acknowledged(5);
        assert!(matches!(
            subs.wait_acknowledged(3).now_or_never(),
            Some(Ok(()))
        ));
        // A refusal reaches the waiters of its revision.
        subs.refused(6, crate::Error::shutdown());
        assert!(matches!(
            subs.wait_acknowledged(6).now_or_never(),
            Some(Err(e)) if matches!(e.kind(), crate::ErrorKind::Shutdown)
        ));
    }
}
