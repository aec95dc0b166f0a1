//! Liveness, as the actor drives it: pings of an idle or struck server, and the silences
//! that timed-out requests report. The rules are [`super::strikes::Strikes`]'s.

use std::sync::atomic::Ordering;
use std::time::Instant;

use actix::Context;
use switchboard_codecs::mcp::methods;

use super::strikes::Verdict;
use super::ServerActor;
use crate::call_table::Silence;

impl ServerActor {
    /// Called often; pings an idle server every `liveness.interval`, and a struck one at
    /// once.
    pub(super) fn liveness_tick(&mut self, ctx: &mut Context<Self>) {
        let Some(link) = &self.link else { return };
        if !self.phase.is_ready() {
            return;
        }
        // The actor's own requests (a list still pending, say) do not make the server busy
        // with a caller's work.
        let own = self.core.own_in_flight.load(Ordering::Relaxed);
        let busy = link.table.len() > own;
        let heard = link.table.heard();
        if self
            .strikes
            .tick(heard, busy, self.liveness.interval, Instant::now())
        {
            self.ping(ctx);
        }
    }

    fn ping(&mut self, ctx: &mut Context<Self>) {
        self.strikes.pinged();
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
            act.strikes.ping_ended();
        });
    }

    /// A request timed out with nothing heard from the server since it was written.
    pub(super) fn on_silence(&mut self, silence: Silence, ctx: &mut Context<Self>) {
        let Some(link) = &self.link else { return };
        if !self.liveness.is_enabled() || !self.phase.is_ready() {
            return;
        }
        let heard = link.table.heard();
        let max = self.liveness.max_failures;
        match self.strikes.silence(silence, heard, max, Instant::now()) {
            Verdict::Same => {}
            Verdict::Strike { ping } => {
                if ping {
                    self.ping(ctx);
                }
            }
            Verdict::Dead(strikes) => {
                let why = format!(
                    "the server stopped responding (nothing heard from it through {strikes} timed-out requests in a row)"
                );
                self.abandon(why, ctx);
            }
        }
    }
}
