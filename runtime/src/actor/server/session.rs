//! Recovering a Streamable HTTP session the server lost, as a pure state machine.
//!
//! The first request rejected for a lost session starts one recovery: a new `initialize` on
//! the same connection, after which that request alone is sent again (the server never
//! processed it, so this is no replay); every other request pending on the old session
//! fails as disconnected. A second loss before the new session is ready gives up: the
//! server is restarted.

/// Where a server's session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Session {
    /// Nothing lost.
    #[default]
    Held,
    /// A new session is being initialized; `resend`: the rejected request, sent again once
    /// it is ready.
    Recovering { resend: Option<i64> },
}

/// What to do about a lost session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Loss {
    /// Initialize a new session, keeping `resend` (the rejected request) pending.
    Recover { resend: Option<i64> },
    /// Lost again while recovering (or before the server was ready): restart the server.
    GiveUp,
}

impl Session {
    /// The server lost the session, rejecting request `rejected`; `ready`: the server was
    /// ready.
    pub(super) fn lost(&mut self, rejected: Option<i64>, ready: bool) -> Loss {
        match self {
            Session::Held if ready => {
                *self = Session::Recovering { resend: rejected };
                Loss::Recover { resend: rejected }
            }
            _ => Loss::GiveUp,
        }
    }

    /// The new session is ready: the request to send again, if any.
    pub(super) fn recovered(&mut self) -> Option<i64> {
        match std::mem::take(self) {
            Session::Recovering { resend } => resend,
            Session::Held => None,
        }
    }

    /// The connection is gone: nothing to recover on it.
    pub(super) fn reset(&mut self) {
        *self = Session::Held;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_loss_is_recovered_and_its_request_sent_again_once() {
        let mut session = Session::default();
        assert_eq!(
            session.lost(Some(7), true),
            Loss::Recover { resend: Some(7) }
        );
        assert_eq!(session.recovered(), Some(7));
        assert_eq!(session.recovered(), None, "once");
        assert_eq!(
            session.lost(None, true),
            Loss::Recover { resend: None },
            "a later loss is a new one"
        );
    }

    #[test]
    fn a_loss_while_recovering_or_before_ready_gives_up() {
        let mut session = Session::default();
        session.lost(Some(1), true);
        assert_eq!(session.lost(Some(2), true), Loss::GiveUp);
        let mut starting = Session::default();
        assert_eq!(starting.lost(Some(1), false), Loss::GiveUp);
        session.reset();
        assert_eq!(session, Session::Held);
    }
}
