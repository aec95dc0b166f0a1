//! When the actor lists a server's tools again: a pure state machine, driven by the actor.
//!
//! A burst of `notifications/tools/list_changed` is gathered into one listing after a short
//! debounce; a caller that found a stateless server's list stale has it listed at once
//! (the callers of its burst already share that one listing); a change announced while a
//! listing runs (the handshake's included) means one more listing when it ends, since that
//! one may have missed it.

/// Where a server's tool relisting is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Relist {
    /// Nothing asked for.
    #[default]
    Idle,
    /// A change was announced; the listing starts when the debounce ends.
    Scheduled,
    /// A listing runs; `again`: another change came meanwhile.
    Running { again: bool },
}

/// What the actor does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing.
    Wait,
    /// Start the debounce timer.
    Debounce,
    /// List now.
    List,
}

impl Relist {
    /// `notifications/tools/list_changed` arrived.
    pub(super) fn changed(&mut self) -> Step {
        match *self {
            Relist::Idle => {
                *self = Relist::Scheduled;
                Step::Debounce
            }
            Relist::Scheduled => Step::Wait,
            Relist::Running { .. } => {
                *self = Relist::Running { again: true };
                Step::Wait
            }
        }
    }

    /// The debounce ended.
    pub(super) fn debounced(&mut self) -> Step {
        match *self {
            Relist::Scheduled => {
                *self = Relist::Running { again: false };
                Step::List
            }
            _ => Step::Wait,
        }
    }

    /// A caller found the list stale: list now, unless a listing runs (its end is what the
    /// caller waits for).
    pub(super) fn stale(&mut self) -> Step {
        match *self {
            Relist::Idle | Relist::Scheduled => {
                *self = Relist::Running { again: false };
                Step::List
            }
            Relist::Running { .. } => Step::Wait,
        }
    }

    /// The listing ended (listed or failed).
    pub(super) fn ended(&mut self) -> Step {
        match *self {
            Relist::Running { again: true } => {
                *self = Relist::Running { again: false };
                Step::List
            }
            _ => {
                *self = Relist::Idle;
                Step::Wait
            }
        }
    }

    /// The handshake lists the tools: a change announced meanwhile may be missing from that
    /// listing, and means one more once it ends.
    pub(super) fn handshake(&mut self) {
        *self = Relist::Running { again: false };
    }

    /// A new connection: whatever was asked of the old one is gone.
    pub(super) fn reset(&mut self) {
        *self = Relist::Idle;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_changes_is_one_listing_after_the_debounce() {
        let mut relist = Relist::default();
        assert_eq!(relist.changed(), Step::Debounce);
        assert_eq!(relist.changed(), Step::Wait);
        assert_eq!(relist.debounced(), Step::List);
        assert_eq!(relist.ended(), Step::Wait);
        assert_eq!(relist, Relist::Idle);
    }

    #[test]
    fn a_change_during_a_listing_lists_once_more() {
        let mut relist = Relist::default();
        relist.changed();
        relist.debounced();
        assert_eq!(relist.changed(), Step::Wait);
        assert_eq!(relist.changed(), Step::Wait);
        assert_eq!(relist.ended(), Step::List, "once more");
        assert_eq!(relist.ended(), Step::Wait, "not twice");
    }

    #[test]
    fn a_stale_list_is_listed_at_once_unless_a_listing_runs() {
        let mut relist = Relist::default();
        assert_eq!(relist.stale(), Step::List);
        assert_eq!(relist.stale(), Step::Wait, "the running one serves");
        assert_eq!(relist.ended(), Step::Wait);
        relist.changed();
        assert_eq!(
            relist.stale(),
            Step::List,
            "no need to wait for the debounce"
        );
        assert_eq!(
            relist.debounced(),
            Step::Wait,
            "the debounce finds it running"
        );
        relist.reset();
        assert_eq!(relist, Relist::Idle);
    }

    #[test]
    fn a_change_announced_during_the_handshakes_listing_lists_once_more() {
        let mut relist = Relist::default();
        relist.handshake();
        assert_eq!(relist.ended(), Step::Wait, "nothing announced");
        relist.handshake();
        assert_eq!(relist.changed(), Step::Wait);
        assert_eq!(
            relist.ended(),
            Step::List,
            "the handshake's listing missed it"
        );
        assert_eq!(relist.ended(), Step::Wait);
    }
}
