//! When a gateway says it is ready (`/readyz`): by default once no upstream is still in its
//! first start (fail open: an upstream that failed is simply absent), or, for a deployment
//! that must not take traffic without them, once some upstreams, or all, are ready.
//!
//! ```
//! use switchboard_gateway::Readiness;
//!
//! let fail_open = Readiness::default();
//! let all = Readiness::All;
//! let these = Readiness::servers(["github", "docs"]);
//! # let _ = (fail_open, all, these);
//! ```

use switchboard::{ServerState, ServerStatus};

/// What [`Gateway::is_ready_for`](crate::Gateway::is_ready_for) requires.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Readiness {
    /// Every upstream has started or failed: none is still in its first start. An upstream
    /// that restarts later, even one that crash-loops, does not make the gateway unready.
    #[default]
    Started,
    /// Every upstream is ready (not starting, restarting, failed or down).
    All,
    /// These upstreams are ready, and the others have started or failed (as
    /// [`Started`](Self::Started)). A name the runtime does not run is never ready.
    Servers(Vec<String>),
}

impl Readiness {
    /// [`Readiness::Servers`] of `names`.
    pub fn servers<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Readiness {
        Readiness::Servers(names.into_iter().map(Into::into).collect())
    }

    /// Whether servers in these states (every server the runtime runs) meet the
    /// requirement.
    pub(crate) fn met<'a>(&self, servers: impl IntoIterator<Item = Upstream<'a>>) -> bool {
        let mut required: Vec<&str> = match self {
            Readiness::Servers(names) => names.iter().map(String::as_str).collect(),
            Readiness::Started | Readiness::All => Vec::new(),
        };
        for server in servers {
            let needs_ready = match self {
                Readiness::All => true,
                Readiness::Started => false,
                Readiness::Servers(_) => {
                    let named = required.contains(&server.name);
                    required.retain(|r| *r != server.name);
                    named
                }
            };
            let ok = if needs_ready {
                server.ready
            } else {
                server.started
            };
            if !ok {
                return false;
            }
        }
        // A required name no server has is not ready.
        required.is_empty()
    }
}

/// What readiness reads of one upstream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Upstream<'a> {
    pub(crate) name: &'a str,
    /// Ready for calls.
    pub(crate) ready: bool,
    /// Past its first start: ready, failed, down, or restarting.
    pub(crate) started: bool,
}

impl<'a> Upstream<'a> {
    pub(crate) fn of(name: &'a str, status: &ServerStatus) -> Self {
        Upstream {
            name,
            ready: status.is_ready(),
            // A restart's attempt is `Starting` too, with the restart counted: an upstream
            // that crash-loops must not make the gateway flap to not ready (fail open).
            started: !matches!(status.state, ServerState::Starting) || status.restarts > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(name: &str, ready: bool, started: bool) -> Upstream<'_> {
        Upstream {
            name,
            ready,
            started,
        }
    }

    #[test]
    fn by_default_an_upstream_that_failed_or_restarts_leaves_the_gateway_ready() {
        let failed = [up("a", true, true), up("b", false, true)];
        assert!(Readiness::Started.met(failed));
        assert!(!Readiness::Started.met([up("a", true, true), up("b", false, false)]));
        assert!(Readiness::Started.met([]));
    }

    #[test]
    fn all_wants_every_upstream_ready() {
        assert!(Readiness::All.met([up("a", true, true), up("b", true, true)]));
        assert!(!Readiness::All.met([up("a", true, true), up("b", false, true)]));
    }

    #[test]
    fn named_upstreams_must_be_ready_and_the_others_started() {
        let these = Readiness::servers(["b"]);
        assert!(these.met([up("a", false, true), up("b", true, true)]));
        assert!(!these.met([up("a", true, true), up("b", false, true)]));
        // The others still have to be past their first start, as by default.
        assert!(!these.met([up("a", false, false), up("b", true, true)]));
        // A name no upstream has (one a reload removed) is never ready.
        assert!(!Readiness::servers(["gone"]).met([up("a", true, true)]));
        assert!(Readiness::servers(["b", "b"]).met([up("b", true, true)]));
    }
}
