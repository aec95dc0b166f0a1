//! Protocol eras: which era a server is spoken to in, how it is chosen, and what every
//! request to a stateless (2026-07-28) server carries.
//!
//! A server is configured with a [`Protocol`]: [`Protocol::Auto`] (the default) probes it
//! with `server/discover` when it starts and keeps the verdict (see `verdicts`);
//! [`Protocol::Modern`] and [`Protocol::Legacy`] skip the probe. The verdict, an [`Era`], is
//! shown in [`ServerStatus`](crate::ServerStatus) with the protocol version.
//!
//! For a modern server the actor makes a [`Dialect`] for the connection once the era is known:
//! its own requests carry it, and so does the connection's snapshot that calls go through
//! (`crate::core::Connected`); every request frame built in it carries `params._meta` with the
//! protocol version, our identity and our capabilities (and the log level a caller chose):
//! the exchange's framer writes it as [`ModernMeta`].
//!
//! ```
//! use switchboard::{Protocol, ServerConfig};
//!
//! let config = ServerConfig::stdio("my-server").protocol(Protocol::Legacy);
//! assert_eq!("auto".parse::<Protocol>(), Ok(Protocol::Auto));
//! # let _ = config;
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use switchboard_codecs::mcp::LoggingLevel;

/// Which protocol era to speak to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// Ask with `server/discover` first: a discover result (or `-32022`, the modern
    /// "unsupported version" error) means modern; any other error, or no answer within
    /// the probe's timeout, means legacy, and `initialize` follows.
    #[default]
    Auto,
    /// 2026-07-28 (stateless): `server/discover`, `_meta` on every request, no
    /// `initialize`.
    Modern,
    /// 2024-11-05 … 2025-11-25: the `initialize` handshake.
    Legacy,
}

impl Protocol {
    /// The name used in config files: `auto`, `modern` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Auto => "auto",
            Protocol::Modern => "modern",
            Protocol::Legacy => "legacy",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol setting that is not `auto`, `modern` or `legacy`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?} (expected \"auto\", \"modern\" or \"legacy\")")]
pub struct UnknownProtocol(pub String);

impl FromStr for Protocol {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Protocol::Auto),
            "modern" => Ok(Protocol::Modern),
            "legacy" => Ok(Protocol::Legacy),
            other => Err(UnknownProtocol(other.to_owned())),
        }
    }
}

/// The era a running server is spoken to in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// The handshake era (2024-11-05 … 2025-11-25).
    Legacy,
    /// The stateless era (2026-07-28).
    Modern,
}

impl Era {
    /// `legacy` or `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every request to a modern server carries, fixed for one server process.
#[derive(Debug)]
pub(crate) struct Modern {
    /// The protocol version requests name.
    pub(crate) version: Arc<str>,
    /// Our `clientInfo`.
    pub(crate) client_info: Value,
    /// Our capabilities (those our handlers provide).
    pub(crate) capabilities: Value,
}

impl Modern {
    pub(crate) fn new(version: &str, capabilities: Value) -> Self {
        Modern {
            version: version.into(),
            client_info: client_info(),
            capabilities,
        }
    }

    /// The same, in another protocol version (after the server refused this one).
    pub(crate) fn with_version(&self, version: &str) -> Modern {
        Modern {
            version: version.into(),
            client_info: self.client_info.clone(),
            capabilities: self.capabilities.clone(),
        }
    }

    /// The `_meta` entries of one request, declaring `capabilities` instead of ours when
    /// given.
    pub(crate) fn meta<'a>(
        &'a self,
        level: Option<LoggingLevel>,
        capabilities: Option<&'a Value>,
    ) -> ModernMeta<'a> {
        ModernMeta {
            protocol_version: &self.version,
            client_info: &self.client_info,
            client_capabilities: capabilities.unwrap_or(&self.capabilities),
            log_level: level,
        }
    }
}

/// The stateless era as one connection speaks it: a [`Modern`] that stays the same for the
/// connection except for its protocol version, which a server's `-32022` answer may change
/// for the requests after it (see `crate::exchange::follow_up`). Shared by the actor's own
/// requests and the snapshot calls go through, so a change reaches both.
#[derive(Debug)]
pub(crate) struct Dialect(arc_swap::ArcSwap<Modern>);

impl Dialect {
    pub(crate) fn new(modern: Arc<Modern>) -> Dialect {
        Dialect(arc_swap::ArcSwap::new(modern))
    }

    /// What the next request carries.
    pub(crate) fn now(&self) -> arc_swap::Guard<Arc<Modern>> {
        self.0.load()
    }

    /// Requests from now on name `version` (the server refused the current one).
    pub(crate) fn switch_to(&self, version: &str) {
        let current = self.0.load();
        if *current.version != *version {
            self.0.store(Arc::new(current.with_version(version)));
        }
    }
}

/// The `_meta` entries of one modern request, serialized in place (flattened into a
/// `_meta` struct that has other entries, or on its own).
#[derive(Debug, Serialize)]
pub(crate) struct ModernMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    client_info: &'a Value,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: &'a Value,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    log_level: Option<LoggingLevel>,
}

/// Our identity, as `initialize` and modern `_meta` send it.
pub(crate) fn client_info() -> Value {
    serde_json::json!({"name": "switchboard", "version": env!("CARGO_PKG_VERSION")})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_names_round_trip() {
        for p in [Protocol::Auto, Protocol::Modern, Protocol::Legacy] {
            assert_eq!(p.as_str().parse::<Protocol>(), Ok(p));
        }
        assert!("2026".parse::<Protocol>().is_err());
    }
}
