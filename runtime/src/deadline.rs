//! Deadline bookkeeping: which timeout applies to a request, and when it expires.
//!
//! Pure arithmetic over injected instants, so it is tested without clocks; the instants go
//! into the connection's call table, whose one deadline task enforces them (see
//! `exchange::table`).
//!
//! Deadlines saturate: any timeout, however large (a config file may say
//! `"9223372036854775807s"`), gives a deadline at most [`HORIZON`] away.

use std::time::{Duration, Instant};

/// The runtime-wide default request timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How `max_total` defaults: this many times the timeout.
const MAX_TOTAL_FACTOR: u32 = 10;

/// The furthest ahead a deadline (or a restart) is set: 365 days. A longer timeout is no
/// practical limit, and a bound is needed: `Instant + Duration` panics on overflow, and
/// tokio's timers panic on instants too far past their clock.
pub(crate) const HORIZON: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// `at + after`, saturating at [`HORIZON`] past `at`; never panics.
pub(crate) fn saturating_after(at: Instant, after: Duration) -> Instant {
    let mut after = after.min(HORIZON);
    loop {
        // A year fits in every platform's `Instant` unless `at` is itself near the end of its
        // range; then take what does fit.
        if let Some(later) = at.checked_add(after) {
            return later;
        }
        after /= 2;
    }
}

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
    /// Whether a call whose response broke before its answer (over HTTP) is sent again
    /// (beats the server's setting; default off).
    pub reissue_on_broken_stream: Option<bool>,
}

impl ToolPolicy {
    /// A policy that sets nothing (everything comes from the server and the runtime).
    pub fn new() -> Self {
        ToolPolicy::default()
    }

    /// The tool's timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Restart the timeout on each progress notification, up to
    /// [`max_total`](Self::max_total).
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = Some(reset);
        self
    }

    /// The hard cap on a call's total time when progress restarts its timeout (default
    /// 10 × the timeout).
    pub fn max_total(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }

    /// Whether a call to the tool is sent again, under a new id, when its response breaks
    /// before the answer and cannot be resumed (over HTTP: a reset, a truncated body, an
    /// event stream that ends early).
    /// Only for tools that are safe to run twice: the first call may have run. Off by
    /// default; without it the caller gets
    /// [`ErrorKind::StreamBroken`](crate::ErrorKind::StreamBroken).
    pub fn reissue_on_broken_stream(mut self, reissue: bool) -> Self {
        self.reissue_on_broken_stream = Some(reissue);
        self
    }
}

/// The resolved deadline rules of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeadlinePolicy {
    pub(crate) timeout: Duration,
    pub(crate) reset_on_progress: bool,
    pub(crate) max_total: Duration,
    /// Whether the call or the tool opted in (or out) of re-issuing after a broken stream;
    /// `None`: the server's setting decides.
    pub(crate) reissue_on_broken_stream: Option<bool>,
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
            reissue_on_broken_stream: call
                .reissue_on_broken_stream
                .or(tool.and_then(|t| t.reissue_on_broken_stream)),
        }
    }

    /// Just `timeout`: no progress reset, nothing else (the runtime's own requests).
    pub(crate) fn only(timeout: Duration) -> DeadlinePolicy {
        DeadlinePolicy::resolve(&ToolPolicy::new().timeout(timeout), None, None, timeout)
    }

    /// The first deadline of a request started at `started`: `started + timeout`, at most
    /// [`HORIZON`] away.
    pub(crate) fn first(&self, started: Instant) -> Instant {
        saturating_after(started, self.timeout)
    }

    /// The new deadline after a progress notification at `now`, or `None` when progress
    /// does not move it. Never later than `started + max_total`, nor [`HORIZON`] past
    /// `started`.
    pub(crate) fn on_progress(&self, started: Instant, now: Instant) -> Option<Instant> {
        if !self.reset_on_progress {
            return None;
        }
        Some(saturating_after(now, self.timeout).min(saturating_after(started, self.max_total)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn precedence_is_call_then_tool_then_server_then_default() {
        let tool = ToolPolicy::new().timeout(2 * S);
        let call = ToolPolicy::new().timeout(S);
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
        let reset_only = ToolPolicy::default().reset_on_progress(true);
        let p = DeadlinePolicy::resolve(&none, Some(&reset_only), Some(3 * S), d);
        assert_eq!(p.timeout, 3 * S);
        assert!(p.reset_on_progress);
    }

    #[test]
    fn max_total_defaults_to_ten_timeouts_and_is_never_below_the_timeout() {
        let none = ToolPolicy::default();
        let p = DeadlinePolicy::resolve(&ToolPolicy::new().timeout(2 * S), None, None, S);
        assert_eq!(p.max_total, 20 * S);
        let tiny = ToolPolicy::new().timeout(5 * S).max_total(S);
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
        let plain = DeadlinePolicy::resolve(&ToolPolicy::new().timeout(S), None, None, S);
        assert_eq!(plain.first(t0), t0 + S);
        assert_eq!(plain.on_progress(t0, t0 + S / 2), None);

        let resetting = DeadlinePolicy::resolve(
            &ToolPolicy::new()
                .timeout(S)
                .reset_on_progress(true)
                .max_total(3 * S),
            None,
            None,
            S,
        );
        assert_eq!(resetting.on_progress(t0, t0 + S / 2), Some(t0 + S / 2 + S));
        // Near the cap the deadline stops at started + max_total.
        assert_eq!(resetting.on_progress(t0, t0 + 5 * S / 2), Some(t0 + 3 * S));
        assert_eq!(resetting.on_progress(t0, t0 + 10 * S), Some(t0 + 3 * S));
    }

    #[test]
    fn huge_timeouts_saturate() {
        let t0 = Instant::now();
        for huge in [
            Duration::MAX,
            Duration::from_secs(i64::MAX as u64),
            Duration::from_secs(u64::MAX / 10),
            HORIZON + S,
        ] {
            let p = DeadlinePolicy::resolve(
                &ToolPolicy::new().timeout(huge).reset_on_progress(true),
                None,
                None,
                S,
            );
            assert_eq!(p.max_total, huge.saturating_mul(MAX_TOTAL_FACTOR));
            assert_eq!(p.first(t0), t0 + HORIZON);
            assert_eq!(p.on_progress(t0, t0 + S), Some(t0 + HORIZON));
            let capped = DeadlinePolicy {
                max_total: huge,
                ..DeadlinePolicy::resolve(&ToolPolicy::new().timeout(S), None, None, S)
            };
            assert_eq!(capped.first(t0), t0 + S);
        }
        // Below the horizon nothing changes.
        let p = DeadlinePolicy::resolve(&ToolPolicy::new().timeout(HORIZON), None, None, S);
        assert_eq!(p.first(t0), t0 + HORIZON);
    }
}
