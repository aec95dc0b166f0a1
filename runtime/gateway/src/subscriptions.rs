//! Resource subscriptions through the gateway: a front client's `resources/subscribe` has the
//! gateway subscribe at the upstream that owns the URI, once per URI, and the upstream's
//! `notifications/resources/updated` reach every front client subscribed to it.
//!
//! The server crate answers the subscription and keeps, per front session, what it
//! subscribed to; the gateway only asks upstream, from [`Handler::check_subscription`]
//! (which cannot wait), by queueing the URI for [`Upstream::run`], the task that subscribes
//! and forwards. Upstream subscriptions last as long as the gateway (front clients'
//! unsubscribes are not told to the handler), so at most [`MAX_URIS`] are made.
//!
//! [`Handler::check_subscription`]: switchboard_server::Handler::check_subscription

use std::collections::HashSet;

use switchboard::Runtime;
use switchboard_server::Server;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;

/// The most distinct URIs the gateway subscribes to upstream.
pub(crate) const MAX_URIS: usize = 1024;

/// How many URIs may wait to be subscribed upstream.
const QUEUE: usize = 256;

/// Where subscriptions are asked for.
#[derive(Debug)]
pub(crate) struct Requests {
    tx: mpsc::Sender<String>,
}

impl Requests {
    /// Asks for `uri` upstream; `false` when the queue is full (the subscription is then
    /// not made upstream, and the front client hears no updates).
    pub(crate) fn ask(&self, uri: &str) -> bool {
        self.tx.try_send(uri.to_owned()).is_ok()
    }
}

/// The task's side: what it subscribes to, and the forwarders of the updates.
#[derive(Debug)]
pub(crate) struct Upstream {
    rx: mpsc::Receiver<String>,
}

/// A queue of subscription requests and the side that serves it.
pub(crate) fn channel() -> (Requests, Upstream) {
    let (tx, rx) = mpsc::channel(QUEUE);
    (Requests { tx }, Upstream { rx })
}

impl Upstream {
    /// Subscribes upstream to every URI asked for, and forwards its updates to `server`'s
    /// subscribed clients; runs until the gateway is gone. The forwarders end with it
    /// (dropping this future aborts them).
    pub(crate) async fn run(mut self, runtime: Runtime, server: Server) {
        let mut subscribed = HashSet::new();
        let mut forwarders = JoinSet::new();
        while let Some(uri) = self.rx.recv().await {
            if subscribed.contains(&uri) {
                continue;
            }
            if subscribed.len() >= MAX_URIS {
                tracing::warn!(%uri, "too many resource subscriptions: not subscribed upstream");
                continue;
            }
            let updates = match runtime.resource_owner(&uri).await {
                Ok(owner) => owner.subscribe(&uri).await,
                Err(e) => Err(e),
            };
            match updates {
                Ok(updates) => {
                    subscribed.insert(uri);
                    forwarders.spawn(forward(updates, server.clone()));
                }
                Err(e) => tracing::warn!(%uri, "cannot subscribe upstream: {e}"),
            }
        }
    }
}

/// Passes every update on until the upstream subscription ends.
async fn forward(mut updates: broadcast::Receiver<switchboard::ResourceUpdate>, server: Server) {
    loop {
        match updates.recv().await {
            Ok(update) => server.resource_updated(&update.uri),
            // Updates say "read it again": one missed among many is told by the next.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
