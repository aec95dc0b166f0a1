//! Liveness as a pure state machine: only silence means a server stopped answering.
//!
//! A request that times out is a strike only if nothing at all was heard from the server
//! since it was written (the request reports that itself, as a [`Silence`]), and requests
//! written before the last strike was counted are the same silence, not a new one: a burst
//! of a thousand calls to one slow tool timing out together is one strike, and a server that
//! answers anything in between is never struck. After a strike the actor probes the server
//! with a `ping` (itself a request that can time out in silence); `max_failures` strikes in
//! a row, with nothing heard in between, and the server counts as crashed. An idle server is
//! pinged every `interval`. Every instant is an argument, so the rules are tested without
//! clocks.

use std::time::{Duration, Instant};

use crate::call_table::Silence;

/// What the actor knows of a server's liveness.
#[derive(Debug, Clone)]
pub(super) struct Strikes {
    /// Consecutive silences.
    strikes: u32,
    /// When the last strike's request timed out: one written before is the same silence.
    last_strike: Option<Instant>,
    /// The connection's count of heard events when the actor last looked.
    heard_seen: u64,
    /// When something was last heard.
    last_heard: Instant,
    /// Whether a ping is out.
    pinging: bool,
}

/// What a silence means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing new: the same silence as the last strike, or the server spoke since.
    Same,
    /// A strike; ping the server (unless a ping is out).
    Strike { ping: bool },
    /// This many strikes in a row: the server stopped answering.
    Dead(u32),
}

impl Strikes {
    /// A fresh start at `now` on a connection whose count of heard events is `heard`.
    pub(super) fn new(heard: u64, now: Instant) -> Self {
        Strikes {
            strikes: 0,
            last_strike: None,
            heard_seen: heard,
            last_heard: now,
            pinging: false,
        }
    }

    /// The connection's count of heard events is `heard` at `now`: anything new resets the
    /// strikes.
    pub(super) fn heard(&mut self, heard: u64, now: Instant) {
        if heard != self.heard_seen {
            self.heard_seen = heard;
            self.strikes = 0;
            self.last_strike = None;
            self.last_heard = now;
        }
    }

    /// Called often: whether to ping now — a struck server at once, an idle one (`busy`:
    /// callers have requests in flight) once nothing was heard for `interval`.
    pub(super) fn tick(
        &mut self,
        heard: u64,
        busy: bool,
        interval: Duration,
        now: Instant,
    ) -> bool {
        self.heard(heard, now);
        if self.pinging {
            return false;
        }
        let idle = !busy && now.saturating_duration_since(self.last_heard) >= interval;
        self.strikes > 0 || idle
    }

    /// A request timed out in silence; `max` strikes in a row are fatal.
    pub(super) fn silence(
        &mut self,
        silence: Silence,
        heard: u64,
        max: u32,
        now: Instant,
    ) -> Verdict {
        self.heard(heard, now);
        if self.last_strike.is_some_and(|at| silence.written <= at) {
            return Verdict::Same;
        }
        self.strikes += 1;
        // Dated by the timeout, not by when the actor got to it: a request written after
        // this one timed out is a new silence, however late the actor runs.
        self.last_strike = Some(silence.timed_out);
        if self.strikes >= max {
            return Verdict::Dead(self.strikes);
        }
        Verdict::Strike {
            ping: !self.pinging,
        }
    }

    /// A ping went out.
    pub(super) fn pinged(&mut self) {
        self.pinging = true;
    }

    /// The ping ended (answered or not: its silence reports itself).
    pub(super) fn ping_ended(&mut self) {
        self.pinging = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn silence(written: Instant, timed_out: Instant) -> Silence {
        Silence { written, timed_out }
    }

    #[test]
    fn a_burst_of_timeouts_in_one_silence_is_one_strike() {
        let t0 = Instant::now();
        let mut strikes = Strikes::new(0, t0);
        let first = strikes.silence(silence(t0, t0 + 5 * S), 0, 3, t0 + 5 * S);
        assert_eq!(first, Verdict::Strike { ping: true });
        for i in 0..1000 {
            // Written before the strike was counted: the same silence.
            let later = silence(t0 + S / 2, t0 + 5 * S + i * S / 1000);
            assert_eq!(strikes.silence(later, 0, 3, t0 + 6 * S), Verdict::Same);
        }
    }

    #[test]
    fn three_silences_in_a_row_are_fatal_and_anything_heard_resets_them() {
        let t0 = Instant::now();
        let mut strikes = Strikes::new(0, t0);
        assert_eq!(
            strikes.silence(silence(t0, t0 + S), 0, 3, t0 + S),
            Verdict::Strike { ping: true }
        );
        strikes.pinged();
        assert_eq!(
            strikes.silence(silence(t0 + 2 * S, t0 + 3 * S), 0, 3, t0 + 3 * S),
            Verdict::Strike { ping: false },
            "a ping is out already"
        );
        // The server said something: the count starts over.
        assert_eq!(
            strikes.silence(silence(t0 + 4 * S, t0 + 5 * S), 1, 3, t0 + 5 * S),
            Verdict::Strike { ping: false }
        );
        assert_eq!(
            strikes.silence(silence(t0 + 6 * S, t0 + 7 * S), 1, 3, t0 + 7 * S),
            Verdict::Strike { ping: false }
        );
        assert_eq!(
            strikes.silence(silence(t0 + 8 * S, t0 + 9 * S), 1, 3, t0 + 9 * S),
            Verdict::Dead(3)
        );
    }

    #[test]
    fn an_idle_server_is_pinged_every_interval_and_a_struck_one_at_once() {
        let t0 = Instant::now();
        let mut strikes = Strikes::new(0, t0);
        assert!(!strikes.tick(0, false, 30 * S, t0 + 29 * S));
        assert!(strikes.tick(0, false, 30 * S, t0 + 30 * S), "idle");
        assert!(
            !strikes.tick(0, true, 30 * S, t0 + 31 * S),
            "callers are busy"
        );
        assert!(
            !strikes.tick(1, false, 30 * S, t0 + 40 * S),
            "heard at 40 s"
        );
        strikes.silence(silence(t0 + 41 * S, t0 + 42 * S), 1, 3, t0 + 42 * S);
        assert!(
            strikes.tick(1, true, 30 * S, t0 + 42 * S),
            "struck: ping at once"
        );
        strikes.pinged();
        assert!(
            !strikes.tick(1, true, 30 * S, t0 + 43 * S),
            "one ping at a time"
        );
        strikes.ping_ended();
        assert!(
            !strikes.tick(2, true, 30 * S, t0 + 44 * S),
            "the ping's answer reset it"
        );
    }
}
