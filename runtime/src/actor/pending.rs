//! The table of requests awaiting an answer, and their deadlines in one `DelayQueue`.
//!
//! Owned by one server actor; nothing here is shared or locked.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tokio_util::time::delay_queue::{self, DelayQueue};

use crate::call::ProgressFn;
use crate::deadline::DeadlinePolicy;
use crate::error::Error;

/// Where an answer goes.
pub(crate) enum Reply {
    /// A caller waiting on a handle.
    Caller(oneshot::Sender<Result<Box<RawValue>, Error>>),
    /// The actor's own `initialize`.
    Initialize,
    /// The actor's own `tools/list`, page number.
    ToolsPage(u32),
    /// The actor's own liveness `ping`.
    Ping,
}

/// What a `DelayQueue` entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// A request's deadline.
    Request(i64),
    /// The end of the startup window.
    Startup,
}

/// One pending request.
pub(crate) struct Entry {
    pub(crate) reply: Reply,
    pub(crate) method: Arc<str>,
    pub(crate) tool: Option<Arc<str>>,
    pub(crate) started: Instant,
    pub(crate) policy: Option<DeadlinePolicy>,
    pub(crate) progress: Option<ProgressFn>,
    /// The frame, while it waits for the server to become ready; `None` once written.
    pub(crate) unsent: Option<Bytes>,
    /// The frame as written, kept for the one resend a lost HTTP session allows.
    pub(crate) frame: Option<Bytes>,
    /// The actor's count of dropped frames when the request was written.
    pub(crate) dropped_at_start: u64,
    pub(crate) key: Option<delay_queue::Key>,
    /// Frees the caller's in-flight slot when the entry goes.
    pub(crate) permit: Option<OwnedSemaphorePermit>,
}

impl Entry {
    /// Whether the caller stopped waiting.
    pub(crate) fn caller_gone(&self) -> bool {
        matches!(&self.reply, Reply::Caller(tx) if tx.is_closed())
    }

    /// An entry for one of the actor's own requests (no deadline of its own, no caller).
    pub(crate) fn internal(reply: Reply, method: &str) -> Entry {
        Entry {
            reply,
            method: method.into(),
            tool: None,
            started: Instant::now(),
            policy: None,
            progress: None,
            unsent: None,
            frame: None,
            dropped_at_start: 0,
            key: None,
            permit: None,
        }
    }
}

/// Pending requests by id, and every deadline of the actor.
#[derive(Default)]
pub(crate) struct Pending {
    entries: HashMap<i64, Entry>,
    pub(crate) deadlines: DelayQueue<Timer>,
}

impl Pending {
    /// Adds an entry, with its deadline when it has one.
    pub(crate) fn insert(&mut self, id: i64, mut entry: Entry, deadline: Option<Instant>) {
        if let Some(at) = deadline {
            entry.key = Some(
                self.deadlines
                    .insert_at(Timer::Request(id), tokio::time::Instant::from_std(at)),
            );
        }
        self.entries.insert(id, entry);
    }

    /// Removes an entry and its deadline.
    pub(crate) fn take(&mut self, id: i64) -> Option<Entry> {
        let mut entry = self.entries.remove(&id)?;
        if let Some(key) = entry.key.take() {
            self.deadlines.try_remove(&key);
        }
        // The slot is free from the moment the entry is gone, before the caller is woken.
        entry.permit = None;
        Some(entry)
    }

    /// Removes an entry whose deadline just fired (its key is spent).
    pub(crate) fn take_expired(&mut self, id: i64) -> Option<Entry> {
        let mut entry = self.entries.remove(&id)?;
        entry.key = None;
        entry.permit = None;
        Some(entry)
    }

    /// The entry, to read or update in place.
    pub(crate) fn get_mut(&mut self, id: i64) -> Option<&mut Entry> {
        self.entries.get_mut(&id)
    }

    /// Moves an entry's deadline.
    pub(crate) fn reset(&mut self, id: i64, at: Instant) {
        if let Some(key) = self.entries.get(&id).and_then(|e| e.key.as_ref()) {
            self.deadlines
                .reset_at(key, tokio::time::Instant::from_std(at));
        }
    }

    /// Starts a standalone timer (not tied to an entry).
    pub(crate) fn start_timer(&mut self, timer: Timer, at: Instant) -> delay_queue::Key {
        self.deadlines
            .insert_at(timer, tokio::time::Instant::from_std(at))
    }

    /// Stops a standalone timer.
    pub(crate) fn stop_timer(&mut self, key: &delay_queue::Key) {
        self.deadlines.try_remove(key);
    }

    /// Removes the entries `which` selects, for mass-fail, keeping standalone timers.
    pub(crate) fn drain_where(&mut self, which: impl Fn(&Entry) -> bool) -> Vec<(i64, Entry)> {
        let ids: Vec<i64> = self
            .entries
            .iter()
            .filter(|(_, e)| which(e))
            .map(|(id, _)| *id)
            .collect();
        let mut all: Vec<(i64, Entry)> = ids
            .into_iter()
            .filter_map(|id| self.entries.remove(&id).map(|e| (id, e)))
            .collect();
        for (_, entry) in &mut all {
            if let Some(key) = entry.key.take() {
                self.deadlines.try_remove(&key);
            }
            entry.permit = None;
        }
        all
    }

    /// Ids of entries still waiting to be written, oldest first.
    pub(crate) fn unsent_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.unsent.is_some())
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Ids of callers' requests already written to the server (never `initialize`).
    pub(crate) fn written_ids(&self) -> Vec<i64> {
        self.entries
            .iter()
            .filter(|(_, e)| e.unsent.is_none() && matches!(e.reply, Reply::Caller(_)))
            .map(|(id, _)| *id)
            .collect()
    }

    /// How many callers' requests are pending.
    pub(crate) fn callers(&self) -> usize {
        self.entries
            .values()
            .filter(|e| matches!(e.reply, Reply::Caller(_)))
            .count()
    }

    /// How many requests are pending.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
