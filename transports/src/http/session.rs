//! Session bookkeeping shared by a connection's tasks, and the resumption backoff.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::header::HeaderValue;

/// What every request of a Streamable HTTP connection needs to know about its session.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    /// The `Mcp-Session-Id` to send, once the server gave one.
    pub(crate) id: Option<HeaderValue>,
    /// Bumped each time a session is lost, so that only the first request rejected on a
    /// session reports it.
    pub(crate) generation: u64,
    /// The `MCP-Protocol-Version` to send, once negotiated.
    pub(crate) protocol_version: Option<HeaderValue>,
}

/// Locks the state; a poisoned lock still holds consistent data (every writer sets whole
/// fields), so it is used as is.
pub(crate) fn lock(state: &Arc<Mutex<SessionState>>) -> MutexGuard<'_, SessionState> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A session id is visible ASCII (0x21–0x7E) only.
pub(crate) fn valid_session_id(value: &HeaderValue) -> bool {
    !value.is_empty() && value.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b))
}

/// The delay before the first resumption when the stream gave no `retry:`.
pub(crate) const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest delay between two resumption attempts.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(10);
/// Attempts to resume one stream before giving up.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// The wait before resumption attempt `attempt` (0-based): exactly `retry` (the stream's
/// `retry:` field, else [`DEFAULT_RETRY`]) the first time, as the spec requires, then
/// doubling, capped at [`MAX_DELAY`], scaled by `jitter` (in `[0, 1)`) into its upper half;
/// `None` after [`MAX_ATTEMPTS`].
pub(crate) fn resume_delay(attempt: u32, retry: Option<Duration>, jitter: f64) -> Option<Duration> {
    if attempt >= MAX_ATTEMPTS {
        return None;
    }
    let base = retry.unwrap_or(DEFAULT_RETRY);
    if attempt == 0 {
        return Some(base);
    }
    let grown = base
        .max(Duration::from_millis(100))
        .saturating_mul(1 << attempt.min(16))
        .min(MAX_DELAY);
    Some(grown.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0)))
}

/// A number in `[0, 1)` that differs between calls, for jitter (not for cryptography).
pub(crate) fn jitter() -> f64 {
    use std::hash::BuildHasher;
    let hash = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_attempt_waits_exactly_retry() {
        let retry = Some(Duration::from_millis(500));
        assert_eq!(
            resume_delay(0, retry, 0.9),
            Some(Duration::from_millis(500))
        );
        assert_eq!(resume_delay(0, None, 0.3), Some(DEFAULT_RETRY));
    }

    #[test]
    fn later_attempts_grow_jittered_and_capped() {
        let retry = Some(Duration::from_millis(500));
        assert_eq!(resume_delay(1, retry, 1.0), Some(Duration::from_secs(1)));
        assert_eq!(
            resume_delay(1, retry, 0.0),
            Some(Duration::from_millis(500))
        );
        assert_eq!(resume_delay(2, retry, 1.0), Some(Duration::from_secs(2)));
        assert_eq!(
            resume_delay(4, Some(Duration::from_secs(3)), 1.0),
            Some(MAX_DELAY)
        );
        assert_eq!(resume_delay(MAX_ATTEMPTS, retry, 0.5), None);
        // A zero retry still backs off.
        assert!(resume_delay(1, Some(Duration::ZERO), 0.0).unwrap() > Duration::ZERO);
    }

    #[test]
    fn jitter_is_in_range() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }

    #[test]
    fn session_ids_are_visible_ascii() {
        assert!(valid_session_id(&HeaderValue::from_static("abc-123")));
        assert!(!valid_session_id(&HeaderValue::from_static("a b")));
        assert!(!valid_session_id(&HeaderValue::from_static("")));
    }
}
