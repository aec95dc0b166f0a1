//! Who shares one process of a server when a gateway (`switchboard serve`) serves it to many
//! clients: everyone (the default), each client, or each session.
//!
//! A server keeps state: a knowledge graph in memory, a browser, a shell, a scratch folder.
//! Behind one gateway, a `shared` server's state is every client's. With [`Isolation::Client`]
//! each authenticated client (a principal of the gateway's `--auth`) gets an instance of its
//! own, and with [`Isolation::Session`] each front session does; the runtime only carries the
//! setting and starts instances ([`Runtime::start_instance`](crate::Runtime::start_instance)),
//! the gateway decides whose call goes where. Instances are bounded per server
//! ([`IsolationPolicy::max_instances`]) and stopped when idle
//! ([`IsolationPolicy::idle_timeout`]).
//!
//! ```
//! use std::time::Duration;
//! use switchboard::{Isolation, ServerConfig};
//!
//! let config = ServerConfig::stdio("npx")
//!     .args(["-y", "@modelcontextprotocol/server-memory"])
//!     .isolation(Isolation::Client)
//!     .max_instances(50)
//!     .idle_timeout(Duration::from_secs(600));
//! # let _ = config;
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Instances of one isolated server at most, by default.
pub const DEFAULT_MAX_INSTANCES: usize = 32;
/// How long an instance may sit idle before it is stopped, by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Who gets an instance of a server of its own behind a gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// One instance for every client (config `"shared"`).
    #[default]
    Shared,
    /// An instance per authenticated client, started on its first use (config `"client"`).
    Client,
    /// An instance per front session, started on its first use (config `"session"`).
    Session,
}

impl Isolation {
    /// The config file's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Shared => "shared",
            Isolation::Client => "client",
            Isolation::Session => "session",
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Not one of `shared`, `client`, `session`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation `{0}`: expected `shared`, `client` or `session`")]
pub struct UnknownIsolation(pub String);

impl FromStr for Isolation {
    type Err = UnknownIsolation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "shared" => Ok(Isolation::Shared),
            "client" => Ok(Isolation::Client),
            "session" => Ok(Isolation::Session),
            other => Err(UnknownIsolation(other.to_owned())),
        }
    }
}

/// A server's isolation and the bounds on its instances, as
/// [`ServerHandle::isolation`](crate::ServerHandle::isolation) reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IsolationPolicy {
    /// Who gets an instance of its own.
    pub isolation: Isolation,
    /// At most this many instances at once; past it a new client or session is refused,
    /// never a busy instance stopped.
    pub max_instances: usize,
    /// An instance with nothing in flight for this long is stopped, its process gone.
    pub idle_timeout: Duration,
}
