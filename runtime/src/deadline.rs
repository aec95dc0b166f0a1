//! Deadline bookkeeping: which timeout applies to a request, and when it expires.
//!
//! Pure arithmetic over injected instants, so it is tested without clocks; the server actor
//! stores the resulting instants in one `DelayQueue`.

use std::time::{Duration, Instant};

/// The runtime-wide default request timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How `max_total` defaults: this many times the timeout.
const MAX_TOTAL_FACTOR: u32 = 10;

/// Timeout settings for one tool of one server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolPolicy {
    /// The tool's timeout (beats the server's).
    pub timeout: Option<Duration>,
    /// Whether each progress notification restarts the timeout.
    pub reset_on_progress: Option<bool>,
    /// The hard cap on a call's total time when progress restarts its timeout.
    pub max_total: Option<Duration>,
}

impl ToolPolicy {
    /// A policy with just a timeout.
    pub fn timeout(timeout: Duration) -> Self {
        ToolPolicy {
            timeout: Some(timeout),
            ..ToolPolicy::default()
        }
    }

    /// Restart the timeout on each progress notification.
    pub fn with_reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = Some(reset);
        self
    }

    /// Cap the total time when progress restarts the timeout.
    pub fn with_max_total(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }
}

/// The resolved deadline rules of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeadlinePolicy {
    pub(crate) timeout: Duration,
    pub(crate) reset_on_progress: bool,
    pub(crate) max_total: Duration,
}

impl DeadlinePolicy {
    /// Resolves the policy: per call > per tool > per server > runtime default, field by field.
    pub(crate) fn resolve(
        call: &ToolPolicy,
        tool: Option<&ToolPolicy>,
        server: Option<Duration>,
        default: Duration,
    ) -> DeadlinePolicy {
        let timeout = call
            .timeout
            .or(tool.and_then(|t| t.timeout))
            .or(server)
            .unwrap_or(default);
        let reset_on_progress = call
            .reset_on_progress
            .or(tool.and_then(|t| t.reset_on_progress))
            .unwrap_or(false);
        let max_total = call
            .max_total
            .or(tool.and_then(|t| t.max_total))
            .unwrap_or_else(|| timeout.saturating_mul(MAX_TOTAL_FACTOR))
            .max(timeout);
        DeadlinePolicy {
            timeout,
            reset_on_progress,
            max_total,
        }
    }

    /// The first deadline of a request started at `started`.
    pub(crate) fn first(&self, started: Instant) -> Instant {
        started + self.timeout
    }

    /// The new deadline after a progress notification at `now`, or `None` when progress
    /// does not move it. Never later than `started + max_total`.
    pub(crate) fn on_progress(&self, started: Instant, now: Instant) -> Option<Instant> {
        if !self.reset_on_progress {
            return None;
        }
        Some((now + self.timeout).min(started + self.max_total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn precedence_is_call_then_tool_then_server_then_default() {
        let tool = ToolPolicy::timeout(2 * S);
        let call = ToolPolicy::timeout(S);
        let none = ToolPolicy::default();
        let d = DEFAULT_TIMEOUT;
        assert_eq!(
            DeadlinePolicy::resolve(&call, Some(&tool), Some(3 * S), d).timeout,
            S
        );
        assert_eq!(
            DeadlinePolicy::resolve(&none, Some(&tool), Some(3 * S), d).timeout,
            2 * S
        );
        assert_eq!(
            DeadlinePolicy::resolve(&none, None, Some(3 * S), d).timeout,
            3 * S
        );
        assert_eq!(DeadlinePolicy::resolve(&none, None, None, d).timeout, d);
        // A tool policy without a timeout does not hide the server's.
        let reset_only = ToolPolicy::default().with_reset_on_progress(true);
        let p = DeadlinePolicy::resolve(&none, Some(&reset_only), Some(3 * S), d);
        assert_eq!(p.timeout, 3 * S);
        assert!(p.reset_on_progress);
    }

    #[test]
    fn max_total_defaults_to_ten_timeouts_and_is_never_below_the_timeout() {
        let none = ToolPolicy::default();
        let p = DeadlinePolicy::resolve(&ToolPolicy::timeout(2 * S), None, None, S);
        assert_eq!(p.max_total, 20 * S);
        let tiny = ToolPolicy::timeout(5 * S).with_max_total(S);
        assert_eq!(
            DeadlinePolicy::resolve(&tiny, None, None, S).max_total,
            5 * S
        );
        assert_eq!(
            DeadlinePolicy::resolve(&none, None, None, S).max_total,
            10 * S
        );
    }

    #[test]
    fn progress_moves_the_deadline_only_when_opted_in() {
        let t0 = Instant::now();
        let plain = DeadlinePolicy::resolve(&ToolPolicy::timeout(S), None, None, S);
        assert_eq!(plain.first(t0), t0 + S);
        assert_eq!(plain.on_progress(t0, t0 + S / 2), None);

        let resetting = DeadlinePolicy::resolve(
            &ToolPolicy::timeout(S)
                .with_reset_on_progress(true)
                .with_max_total(3 * S),
            None,
            None,
            S,
        );
        assert_eq!(resetting.on_progress(t0, t0 + S / 2), Some(t0 + S / 2 + S));
        // Near the cap the deadline stops at started + max_total.
        assert_eq!(resetting.on_progress(t0, t0 + 5 * S / 2), Some(t0 + 3 * S));
        assert_eq!(resetting.on_progress(t0, t0 + 10 * S), Some(t0 + 3 * S));
    }
}
