//! When to restart a server that went down: exponential backoff with jitter and a cap, a
//! crash-loop guard, and liveness pings for servers that are alive but stuck.
//!
//! [`Backoff`] is pure bookkeeping over injected instants and random numbers, so it is tested
//! without clocks.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::deadline::HORIZON;

/// How a server is restarted after it goes down.
///
/// The defaults: first retry after 500 ms, doubling up to 30 s, ±20 % jitter; 5 failures
/// within 60 s mean a crash loop (the server is marked failed and no longer retried); 60 s of
/// uptime resets the backoff.
///
/// Any delay is usable, however large: a restart is never scheduled more than 365 days ahead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RestartPolicy {
    pub(crate) enabled: bool,
    /// The first delay.
    pub initial_delay: Duration,
    /// The largest delay.
    pub max_delay: Duration,
    /// Relative jitter, 0.0 ..= 1.0 (0.2 = ±20 %).
    pub jitter: f64,
    /// Failures within `window` that make a crash loop.
    pub max_failures: u32,
    /// The crash-loop window.
    pub window: Duration,
    /// Uptime after which the backoff starts again from `initial_delay`.
    pub stable_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            enabled: true,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            jitter: 0.2,
            max_failures: 5,
            window: Duration::from_secs(60),
            stable_after: Duration::from_secs(60),
        }
    }
}

impl RestartPolicy {
    /// Restarts off: a server that goes down stays down.
    pub fn off() -> Self {
        RestartPolicy {
            enabled: false,
            ..RestartPolicy::default()
        }
    }

    /// Whether servers are restarted at all.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Sets the first delay.
    pub fn with_initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// Sets the largest delay.
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Sets the relative jitter (clamped to 0.0 ..= 1.0).
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// Sets the crash-loop guard: `max_failures` within `window`.
    pub fn with_crash_loop(mut self, max_failures: u32, window: Duration) -> Self {
        self.max_failures = max_failures.max(1);
        self.window = window;
        self
    }

    /// Sets the uptime that resets the backoff.
    pub fn with_stable_after(mut self, uptime: Duration) -> Self {
        self.stable_after = uptime;
        self
    }
}

/// Liveness checking of an idle server: a `ping` every `interval` while no request is in
/// flight, answered within `timeout`; `max_failures` consecutive failed pings or timed-out
/// requests count as a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Liveness {
    pub(crate) enabled: bool,
    /// Idle time before a ping.
    pub interval: Duration,
    /// How long a ping may take.
    pub timeout: Duration,
    /// Consecutive failures that count as a crash.
    pub max_failures: u32,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            enabled: true,
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            max_failures: 3,
        }
    }
}

impl Liveness {
    /// No pings, and timeouts never count as a crash.
    pub fn off() -> Self {
        Liveness {
            enabled: false,
            ..Liveness::default()
        }
    }

    /// Whether liveness checking is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Sets the idle interval and the ping timeout.
    pub fn with_ping(mut self, interval: Duration, timeout: Duration) -> Self {
        self.interval = interval;
        self.timeout = timeout;
        self
    }

    /// Sets how many consecutive failures count as a crash.
    pub fn with_max_failures(mut self, max: u32) -> Self {
        self.max_failures = max.max(1);
        self
    }
}

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Decision {
    /// Try again after this delay; at most [`HORIZON`], so `now + delay` cannot overflow.
    RetryAfter(Duration),
    /// Stop: restarts are off, or the server is crash-looping.
    GiveUp,
}

/// Backoff state of one server.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    policy: RestartPolicy,
    attempt: u32,
    failures: VecDeque<Instant>,
    ready_since: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(policy: RestartPolicy) -> Self {
        Backoff {
            policy,
            attempt: 0,
            failures: VecDeque::new(),
            ready_since: None,
        }
    }

    /// The server became ready at `now`.
    pub(crate) fn on_ready(&mut self, now: Instant) {
        self.ready_since = Some(now);
    }

    /// The policy.
    pub(crate) fn policy(&self) -> &RestartPolicy {
        &self.policy
    }

    /// Restarts so far since the last reset.
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Forget the crash loop (a user asked for a restart).
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
        self.failures.clear();
        self.ready_since = None;
    }

    /// The server went down (or failed to start) at `now`; `random` is uniform in 0..1.
    pub(crate) fn on_failure(&mut self, now: Instant, random: f64) -> Decision {
        if !self.policy.enabled {
            return Decision::GiveUp;
        }
        if let Some(since) = self.ready_since.take() {
            if now.saturating_duration_since(since) >= self.policy.stable_after {
                self.attempt = 0;
            }
        }
        while let Some(&first) = self.failures.front() {
            if now.saturating_duration_since(first) > self.policy.window {
                self.failures.pop_front();
            } else {
                break;
            }
        }
        self.failures.push_back(now);
        if self.failures.len() >= self.policy.max_failures as usize {
            return Decision::GiveUp;
        }
        let base = self
            .policy
            .initial_delay
            .saturating_mul(1u32.checked_shl(self.attempt.min(31)).unwrap_or(u32::MAX))
            .min(self.policy.max_delay);
        self.attempt = self.attempt.saturating_add(1);
        // The field is public: whatever was stored, keep the factors in 0.0 ..= 2.0.
        let jitter = if self.policy.jitter.is_finite() {
            self.policy.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let factor = 1.0 + jitter * (2.0 * random.clamp(0.0, 1.0) - 1.0);
        let ceiling = scale(self.policy.max_delay, 1.0 + jitter);
        Decision::RetryAfter(scale(base, factor).min(ceiling).min(HORIZON))
    }
}

/// `delay × factor` (`factor` finite, not negative), saturating at [`Duration::MAX`] where
/// `Duration::mul_f64` would panic: a configured delay may be near the largest duration.
fn scale(delay: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(delay.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn no_jitter() -> RestartPolicy {
        RestartPolicy::default().with_jitter(0.0)
    }

    #[test]
    fn delays_double_up_to_the_cap() {
        let mut b = Backoff::new(
            no_jitter()
                .with_max_delay(3000 * MS)
                .with_crash_loop(100, Duration::from_secs(60)),
        );
        let t = Instant::now();
        let delays: Vec<_> = (0..6).map(|i| b.on_failure(t + i * MS, 0.5)).collect();
        let expect = [500, 1000, 2000, 3000, 3000, 3000].map(|ms| Decision::RetryAfter(ms * MS));
        assert_eq!(delays, expect);
    }

    #[test]
    fn jitter_stays_within_its_band() {
        let policy = RestartPolicy::default().with_crash_loop(100, Duration::from_secs(1));
        let t = Instant::now();
        for (random, expected) in [(0.0, 400), (0.5, 500), (1.0, 600)] {
            let mut b = Backoff::new(policy.clone());
            assert_eq!(b.on_failure(t, random), Decision::RetryAfter(expected * MS));
        }
    }

    #[test]
    fn five_failures_within_the_window_is_a_crash_loop() {
        let mut b = Backoff::new(no_jitter());
        let t = Instant::now();
        for i in 0..4 {
            assert!(matches!(
                b.on_failure(t + i * Duration::from_secs(1), 0.5),
                Decision::RetryAfter(_)
            ));
        }
        assert_eq!(
            b.on_failure(t + Duration::from_secs(5), 0.5),
            Decision::GiveUp
        );
    }

    #[test]
    fn failures_outside_the_window_do_not_count() {
        let mut b = Backoff::new(no_jitter());
        let t = Instant::now();
        for i in 0..10u32 {
            let d = b.on_failure(t + i * Duration::from_secs(20), 0.5);
            assert!(matches!(d, Decision::RetryAfter(_)), "failure {i}: {d:?}");
        }
    }

    #[test]
    fn stable_uptime_resets_the_backoff() {
        let mut b = Backoff::new(no_jitter());
        let t = Instant::now();
        assert_eq!(b.on_failure(t, 0.5), Decision::RetryAfter(500 * MS));
        assert_eq!(b.on_failure(t + MS, 0.5), Decision::RetryAfter(1000 * MS));
        b.on_ready(t + Duration::from_secs(2));
        // Up for 10 s only: the backoff goes on.
        assert_eq!(
            b.on_failure(t + Duration::from_secs(12), 0.5),
            Decision::RetryAfter(2000 * MS)
        );
        b.on_ready(t + Duration::from_secs(13));
        // Up for 61 s: back to the first delay.
        assert_eq!(
            b.on_failure(t + Duration::from_secs(74), 0.5),
            Decision::RetryAfter(500 * MS)
        );
    }

    #[test]
    fn off_gives_up_at_once() {
        let mut b = Backoff::new(RestartPolicy::off());
        assert_eq!(b.on_failure(Instant::now(), 0.5), Decision::GiveUp);
    }

    #[test]
    fn huge_delays_saturate() {
        let t = Instant::now();
        for huge in [
            Duration::MAX,
            Duration::from_secs(u64::MAX / 2),
            HORIZON * 2,
        ] {
            for jitter in [0.0, 0.2, 1.0] {
                let policy = RestartPolicy::default()
                    .with_initial_delay(huge)
                    .with_max_delay(huge)
                    .with_jitter(jitter)
                    .with_crash_loop(100, Duration::from_secs(1));
                let mut b = Backoff::new(policy);
                for random in [0.0, 0.5, 1.0] {
                    let Decision::RetryAfter(delay) = b.on_failure(t, random) else {
                        panic!("gave up")
                    };
                    assert!(delay <= HORIZON, "{delay:?}");
                    // What the server actor does with it.
                    let _ = t + delay;
                }
            }
        }
        // A wild jitter stored in the public field does not panic either.
        let mut policy = RestartPolicy::default().with_max_delay(Duration::MAX);
        policy.jitter = f64::NAN;
        assert_eq!(
            Backoff::new(policy).on_failure(t, 0.5),
            Decision::RetryAfter(500 * MS)
        );
    }
}
