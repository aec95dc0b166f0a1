//! How fresh a server's cached lists are: a stateless (2026-07-28) server's after their
//! `ttlMs`, and any server's tools after it announced a change (`list_changed`).
//!
//! Each list (tools; resources and templates together; prompts) is fresh for the `ttlMs` of
//! its last listing (the shortest of its pages), and at least a floor ([`MIN_FRESH`] unless
//! [`ServerConfig::min_list_freshness`](crate::ServerConfig::min_list_freshness) says
//! otherwise). A caller that
//! routes by a list past that has it fetched again first and waits (within its own
//! deadline) for that one re-list; every caller of the same burst waits for the same one. A
//! list only looked at is re-listed in the background and served stale meanwhile, as the
//! caching rules allow. Nothing polls. Every rule that depends on time takes the instant as
//! an argument, so it is tested without clocks.
//!
//! A server of either era that announced a change of its tools has them re-listed (after a
//! short debounce): meanwhile a call by a name no list has yet waits, within its deadline,
//! until the re-listing is over, since the name may be one the change brings ([`announce`]
//! and [`settled`]); a call by a name the list has goes on by it.
//!
//! [`announce`]: Freshness::announce
//! [`settled`]: Freshness::settled

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use serde_json::{Map, Value};
use tokio::sync::watch;

/// The shortest time a stateless server's tool listing counts as fresh, whatever its
/// `ttlMs` (`0` or absent: stale at once): a heuristic the caching rules allow, so that a
/// busy caller does not re-list the tools before every call.
pub(crate) const MIN_FRESH: Duration = Duration::from_secs(1);

/// How fresh one of a stateless server's cached lists is, after its `ttlMs`: shared by the
/// actor, which lists, and callers, which find it stale when they route by it.
///
/// A caller that routes by a stale list has it fetched again first, and waits (within its
/// own deadline) for that one re-list; every caller of the same burst waits for the same
/// one, and the next listing is fresh for at least [`MIN_FRESH`]. A list only looked at (a
/// catalogue read) is re-listed in the background and served stale meanwhile, as the caching
/// rules allow. There is no polling.
#[derive(Debug)]
pub(crate) struct Freshness {
    /// Until when the list is fresh; `None`: no TTL to honour (a legacy server, not listed
    /// yet, or a re-list under way).
    until: ArcSwapOption<Instant>,
    /// Whether a re-list was asked for and has not ended yet: callers wait for it.
    pending: AtomicBool,
    /// Whether the server announced a change and the re-listing it causes is not over:
    /// callers of a name no list has wait for it.
    announced: AtomicBool,
    /// Wakes the actor to list again.
    wake: tokio::sync::Notify,
    /// Counts the re-lists that ended (listed, failed or abandoned), for the callers waiting.
    rounds: watch::Sender<u64>,
    /// The shortest time a listing counts as fresh.
    floor: Duration,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness::new(MIN_FRESH)
    }
}

impl Freshness {
    /// A list fresh for its `ttlMs`, and at least `floor`.
    pub(crate) fn new(floor: Duration) -> Self {
        Freshness {
            until: ArcSwapOption::empty(),
            pending: AtomicBool::new(false),
            announced: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            rounds: watch::channel(0).0,
            floor,
        }
    }

    /// A listing with `ttl` (`None` when the result had none) is in use from `now`.
    pub(crate) fn listed(&self, ttl: Option<Duration>, now: Instant) {
        let fresh = ttl.unwrap_or_default().max(self.floor);
        self.until
            .store(Some(Arc::new(crate::deadline::saturating_after(
                now, fresh,
            ))));
        self.end_round();
    }

    /// Listing again failed at `now`: the last list stays in use, and is tried again once
    /// it has served for the floor (at least [`MIN_FRESH`]) more: a failing server is not
    /// asked before every call.
    pub(crate) fn failed(&self, now: Instant) {
        let again = self.floor.max(MIN_FRESH);
        self.until
            .store(Some(Arc::new(crate::deadline::saturating_after(
                now, again,
            ))));
        self.end_round();
    }

    /// No TTL applies (a legacy server, or the connection is gone); callers waiting for a
    /// re-list go on.
    pub(crate) fn forget(&self) {
        self.until.store(None);
        self.settled();
        self.end_round();
    }

    fn end_round(&self) {
        // After the new `until`: a caller that sees no re-list pending sees the new list.
        if self.pending.swap(false, Ordering::SeqCst) {
            self.rounds.send_modify(|round| *round += 1);
        }
    }

    /// The server announced a change of the list (`list_changed`), as read from the
    /// connection, before the actor acts on it: a re-listing will follow.
    pub(crate) fn announce(&self) {
        self.announced.store(true, Ordering::SeqCst);
    }

    /// The re-listing an announcement caused is over (listed, failed, or there was nothing
    /// to list on), and no other is due: callers waiting for it go on, with the list as it
    /// is now in the status.
    pub(crate) fn settled(&self) {
        if self.announced.swap(false, Ordering::SeqCst) {
            self.rounds.send_modify(|round| *round += 1);
        }
    }

    /// Whether a caller routing by a name the list does not have at `now` must wait: a
    /// re-list is needed (as [`needs_relist`](Self::needs_relist) says), or the server
    /// announced a change whose re-listing is not over.
    pub(crate) fn may_bring_names(&self, now: Instant) -> bool {
        // Both checked: a stale list still asks the actor for its re-list.
        let relist = self.needs_relist(now);
        relist || self.announced.load(Ordering::SeqCst)
    }

    /// Whether a caller routing by the list at `now` must wait for a re-list: the list is
    /// past its TTL (then the actor is asked, once per burst), or a re-list is under way.
    pub(crate) fn needs_relist(&self, now: Instant) -> bool {
        let stale = self
            .until
            .load()
            .as_deref()
            .is_some_and(|until| now >= *until);
        if !stale {
            return self.pending.load(Ordering::SeqCst);
        }
        // The first caller of a burst asks; the others find it pending.
        if self
            .pending
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.until.store(None);
            self.wake.notify_one();
        }
        true
    }

    /// A caller is about to read the list at `now` without routing by it: when it is stale,
    /// the actor is asked to list again, and the caller goes on with the list it has.
    pub(crate) fn touch(&self, now: Instant) {
        self.needs_relist(now);
    }

    /// Waits for the re-list that [`needs_relist`](Self::needs_relist) found under way, or
    /// until `deadline`; `false` when the deadline passed first.
    pub(crate) async fn relisted(&self, deadline: Option<Instant>) -> bool {
        self.wait_until(deadline, || self.pending.load(Ordering::SeqCst))
            .await
    }

    /// Waits for what [`may_bring_names`](Self::may_bring_names) found under way (a re-list,
    /// an announced re-listing) to be over, or until `deadline`; `false` when the deadline
    /// passed first.
    pub(crate) async fn names_settled(&self, deadline: Option<Instant>) -> bool {
        self.wait_until(deadline, || {
            self.pending.load(Ordering::SeqCst) || self.announced.load(Ordering::SeqCst)
        })
        .await
    }

    /// Waits until `busy` is false, checked again at the end of every round.
    async fn wait_until(&self, deadline: Option<Instant>, busy: impl Fn() -> bool) -> bool {
        let mut rounds = self.rounds.subscribe();
        let wait = async {
            // Subscribed before the first check, and `changed` marks each round seen before
            // the next: a round that ends after a check wakes the wait. The sender lives as
            // long as `self`: `changed` only returns on a new round.
            while busy() {
                if rounds.changed().await.is_err() {
                    break;
                }
            }
        };
        match deadline {
            Some(at) => tokio::time::timeout_at(at.into(), wait).await.is_ok(),
            None => {
                wait.await;
                true
            }
        }
    }

    /// Resolves when a caller found the list stale.
    pub(crate) async fn stale(&self) {
        self.wake.notified().await
    }
}

/// How fresh each cached list of a stateless server is: its tools (in the catalogue), and
/// its resources, resource templates and prompts (in its status, where the runtime resolves
/// URIs and prompt names). Each has its own `ttlMs`.
#[derive(Debug, Default)]
pub(crate) struct ListFreshness {
    /// `tools/list`.
    pub(crate) tools: Freshness,
    /// `resources/list` and `resources/templates/list` (the shorter `ttlMs` of the two).
    pub(crate) resources: Freshness,
    /// `prompts/list`.
    pub(crate) prompts: Freshness,
}

impl ListFreshness {
    /// Lists fresh for their `ttlMs`, and at least `floor`.
    pub(crate) fn new(floor: Duration) -> Self {
        ListFreshness {
            tools: Freshness::new(floor),
            resources: Freshness::new(floor),
            prompts: Freshness::new(floor),
        }
    }

    /// No TTL applies to any list (a new connection, whose era is not known yet).
    pub(crate) fn forget(&self) {
        self.tools.forget();
        self.resources.forget();
        self.prompts.forget();
    }
}

/// The `ttlMs` of a list result's fields, negative read as 0.
pub(crate) fn ttl_ms(extra: &Map<String, Value>) -> Option<i64> {
    extra.get("ttlMs").and_then(Value::as_i64).map(|t| t.max(0))
}

/// The shorter of two `ttlMs`, either absent: a listing of several pages (or lists) is
/// fresh as long as its least fresh part.
pub(crate) fn shortest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_stale_listing_wakes_the_actor_once_per_burst() {
        use futures_util::FutureExt as _;
        let freshness = Freshness::default();
        let t0 = Instant::now();
        assert!(!freshness.needs_relist(t0), "no listing, no TTL");
        freshness.listed(Some(60 * S), t0);
        assert!(!freshness.needs_relist(t0 + 59 * S), "still fresh");
        assert!(freshness.needs_relist(t0 + 60 * S), "stale: asks");
        assert!(freshness.stale().now_or_never().is_some(), "the actor woke");
        // The rest of the burst waits for the same re-list and does not ask again.
        assert!(freshness.needs_relist(t0 + 61 * S));
        freshness.touch(t0 + 61 * S);
        assert!(freshness.stale().now_or_never().is_none(), "once");
        let t1 = t0 + 62 * S;
        freshness.listed(None, t1);
        assert!(!freshness.needs_relist(t1), "fresh for MIN_FRESH");
        assert!(freshness.needs_relist(t1 + MIN_FRESH), "then stale");
    }

    #[test]
    fn a_failed_relist_keeps_the_list_for_min_fresh() {
        let freshness = Freshness::default();
        let t0 = Instant::now();
        freshness.listed(Some(S), t0);
        assert!(freshness.needs_relist(t0 + 2 * S));
        freshness.failed(t0 + 2 * S);
        assert!(!freshness.needs_relist(t0 + 2 * S + MIN_FRESH / 2));
        assert!(freshness.needs_relist(t0 + 2 * S + MIN_FRESH));
    }

    #[tokio::test]
    async fn callers_wait_for_the_relist_and_go_on_when_it_ends_however_it_ends() {
        let freshness = Arc::new(Freshness::default());
        let t0 = Instant::now();
        for end in [
            (|f: &Freshness, at| f.listed(None, at)) as fn(&Freshness, Instant),
            |f, at| f.failed(at),
            |f, _| f.forget(),
        ] {
            freshness.listed(Some(60 * S), t0);
            assert!(!freshness.needs_relist(t0), "fresh: no wait");
            let stale = t0 + 61 * S;
            let (tx, mut started) = tokio::sync::mpsc::unbounded_channel();
            let waiting: Vec<_> = (0..3)
                .map(|_| {
                    let (f, tx) = (freshness.clone(), tx.clone());
                    tokio::spawn(async move {
                        assert!(f.needs_relist(stale));
                        let relisted = f.relisted(None);
                        let _ = tx.send(());
                        relisted.await
                    })
                })
                .collect();
            for _ in 0..3 {
                started.recv().await;
            }
            freshness.stale().await;
            end(&freshness, stale);
            for w in waiting {
                assert!(w.await.unwrap());
            }
            assert!(!freshness.needs_relist(stale));
        }
    }

    #[tokio::test]
    async fn a_caller_waits_no_longer_than_its_deadline() {
        let freshness = Freshness::default();
        let t0 = Instant::now();
        freshness.listed(None, t0);
        assert!(freshness.needs_relist(t0 + MIN_FRESH));
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(!freshness.relisted(Some(deadline)).await);
    }

    #[test]
    fn the_shortest_ttl_of_the_pages_counts_and_negative_is_zero() {
        let extra = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(ttl_ms(&extra(serde_json::json!({"ttlMs": -5}))), Some(0));
        assert_eq!(ttl_ms(&extra(serde_json::json!({"ttlMs": "soon"}))), None);
        assert_eq!(shortest(Some(5), Some(3)), Some(3));
        assert_eq!(shortest(None, Some(3)), Some(3));
        assert_eq!(shortest(Some(5), None), Some(5));
        assert_eq!(shortest(None, None), None);
    }
}
