//! The handshake-era sessions of an HTTP server: created by `initialize`, found by their
//! `Mcp-Session-Id`, ended by DELETE, by idleness, or to make room, and bounded in number.
//!
//! A client may vanish without its DELETE (a crashed host, a closed laptop), so a session
//! that is quiet (nothing in flight, no GET stream open) for longer than the idle timeout is
//! ended, and a full table ends its least recently used session to admit a new one rather
//! than refuse every new client until a restart. A session in use, or used within the grace
//! period, is never ended for another, and each client holds at most its share of the
//! table: past it, a new session of that client ends one of the client's own, so that a
//! flood of `initialize` evicts nobody else's. A client whose session ended this way gets
//! 404 and, as the spec has it, starts a new one (with sealed ids, it is restored instead).
//!
//! Ids are 128 random bits from the operating system, in hex: visible ASCII, as the spec
//! asks, and not guessable. A lookup takes a read lock for the time of a hash-map access;
//! stateless (2026-07-28) requests never touch the table.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use super::super::{Notifier, Service};
use super::clients::{now_us, Client, Held, Quota};
use super::config::Rejection;
use super::Principal;

/// One open session.
pub(crate) struct Entry<S: Service> {
    pub(crate) session: Arc<S::Session>,
    pub(crate) notifier: Notifier,
    /// Its requests in flight.
    pub(crate) in_flight: Arc<AtomicUsize>,
    /// When it was last used, in microseconds since the clock's origin ([`now_us`]).
    last_used: AtomicU64,
    /// The principal that opened it, with inbound authentication: nobody else may use it.
    pub(crate) owner: OnceLock<Arc<str>>,
}

impl<S: Service> Entry<S> {
    pub(crate) fn new(session: Arc<S::Session>, notifier: Notifier) -> Self {
        Entry {
            session,
            notifier,
            in_flight: Arc::default(),
            last_used: AtomicU64::new(now_us()),
            owner: OnceLock::new(),
        }
    }

    /// Whether `principal` may use it: the one that opened it, or anyone when it was opened
    /// without authentication.
    pub(crate) fn admits(&self, principal: Option<&Principal>) -> bool {
        match (self.owner.get(), principal) {
            (None, _) => true,
            (Some(owner), Some(principal)) => **owner == *principal.subject,
            (Some(_), None) => false,
        }
    }

    /// Marks it used now.
    pub(crate) fn touch(&self) {
        self.last_used.store(now_us(), Ordering::Relaxed);
    }

    /// How long it has been quiet, or `None` while a request or its GET stream is open.
    fn quiet_for(&self, now: u64) -> Option<u64> {
        if self.in_flight.load(Ordering::Relaxed) > 0 || self.notifier.is_open() {
            return None;
        }
        Some(now.saturating_sub(self.last_used.load(Ordering::Relaxed)))
    }
}

/// Held while one of a session's requests is in flight: the session is busy until it drops,
/// and counts as used from then on (a long request does not make a session look idle).
pub(crate) struct Busy<S: Service>(Arc<Entry<S>>);

impl<S: Service> Busy<S> {
    pub(crate) fn new(entry: &Arc<Entry<S>>) -> Self {
        entry.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(entry.clone())
    }
}

impl<S: Service> Drop for Busy<S> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What [`Sessions::insert`] did.
pub(crate) enum Inserted<S: Service> {
    /// Added; the session it ended to make room, if the table (or its client's share)
    /// was full.
    Added { evicted: Option<Arc<Entry<S>>> },
    /// The id is in the table already (two requests restored it at once): this one.
    Present(Arc<Entry<S>>),
    /// Full of sessions that are busy or used too recently to end: the server's
    /// ([`Rejection::Sessions`]) or the client's share ([`Rejection::ClientSessions`]).
    Refused(Rejection),
}

/// How many ended ids a table of sealed sessions remembers, to answer 404 for them.
const ENDED: usize = 4096;

/// A session in the table, and its place in its client's share.
struct Slot<S: Service> {
    entry: Arc<Entry<S>>,
    held: Held,
}

/// The open sessions, by id.
pub(crate) struct Sessions<S: Service> {
    map: RwLock<HashMap<String, Slot<S>>>,
    max: usize,
    /// A session used more recently than this is never ended to make room.
    grace: u64,
    /// Sealed ids ended here (DELETE): a sealed id would otherwise open again. Bounded, and
    /// this replica's only; see the README on what needs affinity.
    ended: Mutex<(HashSet<String>, VecDeque<String>)>,
}

impl<S: Service> Sessions<S> {
    pub(crate) fn new(max: usize, grace: Duration) -> Self {
        Sessions {
            map: RwLock::default(),
            max,
            grace: u64::try_from(grace.as_micros()).unwrap_or(u64::MAX),
            ended: Mutex::default(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The session under `id`, marked used.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Entry<S>>> {
        let entry = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map(|slot| slot.entry.clone())?;
        entry.touch();
        Some(entry)
    }

    /// Adds a session under `id`, opened by `client` (which may hold `share` sessions),
    /// unless one is there. A client at its share ends its own least recently used
    /// session to make room; a full table ends the least recently used one; neither ends
    /// a session in use or used within the grace period.
    pub(crate) fn insert(
        &self,
        id: String,
        entry: Arc<Entry<S>>,
        client: &Arc<Client>,
        share: usize,
    ) -> Inserted<S> {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(present) = map.get(&id) {
            return Inserted::Present(present.entry.clone());
        }
        let now = now_us();
        let mut evicted = None;
        let held = match client.take(Quota::Sessions, share) {
            Some(held) => held,
            None => {
                let own = |slot: &Slot<S>| Arc::ptr_eq(slot.held.client(), client);
                let Some(victim) = self.least_recently_used(&map, now, own) else {
                    return Inserted::Refused(Rejection::ClientSessions);
                };
                evicted = map.remove(&victim).map(|slot| slot.entry);
                match client.take(Quota::Sessions, share) {
                    Some(held) => held,
                    // Taken meanwhile by another of its requests: this one is refused.
                    None => return Inserted::Refused(Rejection::ClientSessions),
                }
            }
        };
        if evicted.is_none() && map.len() >= self.max {
            let Some(victim) = self.least_recently_used(&map, now, |_| true) else {
                return Inserted::Refused(Rejection::Sessions);
            };
            evicted = map.remove(&victim).map(|slot| slot.entry);
        }
        map.insert(id, Slot { entry, held });
        Inserted::Added { evicted }
    }

    /// The id of the session among `eligible` ones used least recently, if one is quiet
    /// (nothing in flight, no GET stream) and has been for longer than the grace period.
    fn least_recently_used(
        &self,
        map: &HashMap<String, Slot<S>>,
        now: u64,
        eligible: impl Fn(&Slot<S>) -> bool,
    ) -> Option<String> {
        map.iter()
            .filter(|(_, slot)| eligible(slot))
            .filter_map(|(id, slot)| Some((slot.entry.quiet_for(now)?, id)))
            .filter(|(quiet, _)| *quiet >= self.grace)
            .max_by_key(|(quiet, _)| *quiet)
            .map(|(_, id)| id.clone())
    }

    /// Remembers that the sealed session `id` ended here.
    pub(crate) fn remember_ended(&self, id: &str) {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        let (set, order) = &mut *ended;
        if set.insert(id.to_owned()) {
            order.push_back(id.to_owned());
            if order.len() > ENDED {
                if let Some(oldest) = order.pop_front() {
                    set.remove(&oldest);
                }
            }
        }
    }

    /// Whether the sealed session `id` ended here.
    pub(crate) fn has_ended(&self, id: &str) -> bool {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .contains(id)
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Entry<S>>> {
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
            .map(|slot| slot.entry)
    }

    /// Removes and returns the sessions quiet for longer than `idle`.
    pub(crate) fn expire(&self, idle: Duration) -> Vec<Arc<Entry<S>>> {
        let now = now_us();
        let idle = u64::try_from(idle.as_micros()).unwrap_or(u64::MAX);
        let stale = |e: &Entry<S>| e.quiet_for(now).is_some_and(|quiet| quiet > idle);
        // A read pass first: the sweep runs every few seconds and mostly finds nothing, and
        // must not hold the write lock that every new session waits for.
        let any = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .any(|slot| stale(&slot.entry));
        if !any {
            return Vec::new();
        }
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        let ids: Vec<String> = map
            .iter()
            .filter(|(_, slot)| stale(&slot.entry))
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter()
            .filter_map(|id| map.remove(id))
            .map(|slot| slot.entry)
            .collect()
    }
}

/// 128 random bits in hex, or `None` if the system has no randomness to give.
pub(crate) fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
