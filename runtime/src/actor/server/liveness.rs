//! Liveness: only silence means a server stopped answering.
//!
//! A request that times out is a strike only if nothing at all was heard from the server
//! since it was written (the request reports that itself, as a [`Silence`]), and requests
//! written before the last strike was counted are the same silence, not a new one: a burst
//! of a thousand calls to one slow tool timing out together is one strike, and a server that
//! answers anything in between is never struck. After a strike the actor probes the server
//! with a `ping` (itself a request that can time out in silence); `max_failures` strikes in a
//! row, with nothing heard in between, and the server counts as crashed. An idle server is
//! pinged every `interval`.

use std::time::Instant;

use actix::Context;
use switchboard_codecs::mcp::methods;

use super::{Phase, ServerActor};
use crate::calls::table::Silence;

impl ServerActor {
    /// Anything heard from the server since the actor last looked resets the strikes.
    fn catch_up(&mut self) {
        let Some(link) = &self.link else { return };
        let heard = link.table.heard();
        if heard != self.heard_seen {
            self.heard_seen = heard;
            self.strikes = 0;
            self.last_strike = None;
            self.last_heard = Instant::now();
        }
    }

    /// Called often; pings an idle server every `liveness.interval`, and a struck one at
    /// once.
    pub(super) fn liveness_tick(&mut self, ctx: &mut Context<Self>) {
        self.catch_up();
        if self.phase != Phase::Ready || self.ping_outstanding {
            return;
        }
        // The actor's own requests (a list still pending, say) do not make the server busy
        // with a caller's work.
        let own = self
            .own_outstanding
            .load(std::sync::atomic::Ordering::Relaxed);
        let idle = self.link.as_ref().is_some_and(|l| l.table.len() <= own)
            && self.last_heard.elapsed() >= self.liveness.interval;
        if self.strikes > 0 || idle {
            self.ping(ctx);
        }
    }

    fn ping(&mut self, ctx: &mut Context<Self>) {
        self.ping_outstanding = true;
        let timeout = Some(self.liveness.timeout);
        // A ping that times out in silence reports itself like any request; whatever the
        // answer, the next one may go.
        // The stateless era has no `ping`: `server/discover`, which every modern server must
        // answer and which does no work, stands in for it.
        let method = if self.is_modern() {
            switchboard_codecs::mcp::modern::SERVER_DISCOVER
        } else {
            methods::PING
        };
        self.request(ctx, method, serde_json::json!({}), timeout, |act, _, _| {
            act.ping_outstanding = false;
        });
    }

    /// A request timed out with nothing heard from the server since it was written.
    pub(super) fn on_silence(&mut self, silence: Silence, ctx: &mut Context<Self>) {
        if !self.liveness.is_enabled() || self.phase != Phase::Ready {
            return;
        }
        self.catch_up();
        if self.last_strike.is_some_and(|at| silence.written <= at) {
            return;
        }
        self.strikes += 1;
        // Dated by the timeout, not by when the actor got to it: a request written after
        // this one timed out is a new silence, however late the actor runs.
        self.last_strike = Some(silence.timed_out);
        if self.strikes >= self.liveness.max_failures {
            let why = format!(
                "the server stopped responding (nothing heard from it through {} timed-out requests in a row)",
                self.strikes
            );
            self.abandon(why, ctx);
        } else if !self.ping_outstanding {
            self.ping(ctx);
        }
    }
}
