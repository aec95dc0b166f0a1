//! What the runtime remembers of its servers' eras: the verdicts of auto servers, kept for
//! the runtime's life, so that a new connection to a server whose era is known does not probe
//! it again.
//!
//! A [`Protocol::Auto`](crate::Protocol::Auto) server is probed with `server/discover` when
//! a connection opens. The answer is a property of what runs behind the connection, not of
//! one connection, so it is kept under a key naming that:
//!
//! - over HTTP, the origin: a reconnect (after a lost session, a silent server, a second
//!   server entry on the same origin, a server removed and added again) reuses it: a legacy
//!   origin gets `initialize` at once, a modern one its discover result again. It is
//!   forgotten when the origin could not be reached (it may come back as another
//!   deployment);
//! - over stdio (and in memory), the command: a legacy verdict spares a restart the probe,
//!   and a server that exits on the probe a second process. Modern verdicts are not kept
//!   there: each new process answers its own `server/discover`.
//!
//! Either is forgotten when a start with it failed, and on an explicit restart.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use switchboard_codecs::mcp::modern::DiscoverResult;

/// What a probe of an origin found.
#[derive(Debug, Clone)]
pub(crate) enum Verdict {
    /// The handshake era: `initialize`.
    Legacy,
    /// The stateless era, in `version`, as `discover` described the server.
    Modern {
        version: String,
        // Boxed: a discover result is large, and most verdicts are `Legacy`-sized.
        discover: Box<DiscoverResult>,
    },
}

/// The verdicts of a runtime's auto servers, by origin or command.
#[derive(Debug, Default)]
pub(crate) struct EraMemory(Mutex<HashMap<String, Verdict>>);

impl EraMemory {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Verdict>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The verdict for `origin`, if one is known.
    pub(crate) fn get(&self, origin: &str) -> Option<Verdict> {
        self.lock().get(origin).cloned()
    }

    /// Keeps `verdict` for `origin`.
    pub(crate) fn keep(&self, origin: String, verdict: Verdict) {
        self.lock().insert(origin, verdict);
    }

    /// Forgets `origin`'s verdict: the next connection probes it.
    pub(crate) fn forget(&self, origin: &str) {
        self.lock().remove(origin);
    }
}

/// The origin of `url` (RFC 6454): scheme, host and port, lower-case, with the scheme's
/// default port spelled out; `None` when `url` has no `scheme://host`.
pub(crate) fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Credentials are not part of the origin.
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.is_empty() {
        return None;
    }
    // A port follows the last colon, unless that colon is inside an IPv6 literal.
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (host_port, None),
    };
    let port = match (port, scheme.as_str()) {
        (Some(port), _) if !port.is_empty() => port.to_owned(),
        (_, "https") => "443".to_owned(),
        (_, "http") => "80".to_owned(),
        _ => String::new(),
    };
    Some(format!("{scheme}://{}:{port}", host.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_ignore_path_credentials_and_case_and_spell_default_ports() {
        let o = |url| origin(url).unwrap();
        assert_eq!(o("https://Example.com/mcp"), "https://example.com:443");
        assert_eq!(
            o("https://example.com:443/other?x=1"),
            "https://example.com:443"
        );
        assert_eq!(
            o("http://user:pw@example.com:8080/mcp"),
            "http://example.com:8080"
        );
        assert_eq!(o("http://[::1]:3000/mcp"), "http://[::1]:3000");
        assert_eq!(o("http://[::1]/mcp"), "http://[::1]:80");
        assert_ne!(o("http://example.com/mcp"), o("https://example.com/mcp"));
        assert_eq!(origin("not a url"), None);
        assert_eq!(origin("http:///path"), None);
    }

    #[test]
    fn a_forgotten_origin_is_probed_again() {
        let verdicts = EraMemory::default();
        verdicts.keep("http://a:80".into(), Verdict::Legacy);
        assert!(matches!(verdicts.get("http://a:80"), Some(Verdict::Legacy)));
        assert!(verdicts.get("http://b:80").is_none());
        verdicts.forget("http://a:80");
        assert!(verdicts.get("http://a:80").is_none());
    }
}
