//! The handshake-era sessions of an HTTP server: created by `initialize`, found by their
//! `Mcp-Session-Id`, ended by DELETE, bounded in number.
//!
//! Ids are 128 random bits from the operating system, in hex: visible ASCII, as the spec
//! asks, and not guessable. A lookup takes a read lock for the time of a hash-map access;
//! stateless (2026-07-28) requests never touch the table.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, PoisonError, RwLock};

use super::super::{Notifier, Service};

/// One open session.
pub(crate) struct Entry<S: Service> {
    pub(crate) session: Arc<S::Session>,
    pub(crate) notifier: Notifier,
    /// Its requests in flight.
    pub(crate) in_flight: Arc<AtomicUsize>,
}

/// The open sessions, by id.
pub(crate) struct Sessions<S: Service> {
    map: RwLock<HashMap<String, Arc<Entry<S>>>>,
    max: usize,
}

impl<S: Service> Sessions<S> {
    pub(crate) fn new(max: usize) -> Self {
        Sessions {
            map: RwLock::default(),
            max,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Entry<S>>> {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Adds a session under a fresh id; `None` when the table is full.
    pub(crate) fn insert(&self, entry: Entry<S>) -> Option<(String, Arc<Entry<S>>)> {
        let id = new_id()?;
        let entry = Arc::new(entry);
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= self.max {
            return None;
        }
        map.insert(id.clone(), entry.clone());
        Some((id, entry))
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Entry<S>>> {
        self.map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }
}

/// 128 random bits in hex, or `None` if the system has no randomness to give.
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
