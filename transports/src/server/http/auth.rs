//! Who a request comes from: the [`Authenticate`] hook the HTTP server asks about every
//! request to the endpoint, the [`Principal`] it answers, and the protected-resource metadata
//! (RFC 9728) that tells a client where to get a token.
//!
//! A request without a valid token is answered `401` with `WWW-Authenticate: Bearer
//! resource_metadata="…"` (RFC 9728 § 5.1), one whose token lacks a scope `403` with
//! `error="insufficient_scope"` (RFC 6750 § 3.1). The metadata document is served, without
//! a token, at `/.well-known/oauth-protected-resource` followed by the endpoint's path, and
//! at the bare well-known path too. A handshake-era session belongs to the principal that
//! opened it: a request on it with another principal's token is refused (`403`), on this
//! replica or, with sealed ids, on any.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

pub use super::super::principal::Principal;

/// A boxed, sendable future, as [`Authenticate::authenticate`] returns.
pub type AuthFuture = Pin<Box<dyn Future<Output = Result<Arc<Principal>, AuthRefusal>> + Send>>;

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthRefusal {
    /// No `Authorization: Bearer` header (401).
    Missing,
    /// A token that is not valid here: why, for the log and the `error_description` (401).
    Invalid(String),
    /// A valid token without the scopes the endpoint needs, space-separated (403).
    InsufficientScope(String),
}

/// Decides who a bearer token belongs to.
pub trait Authenticate: Send + Sync + 'static {
    /// The principal of `token` (the `Authorization: Bearer` value; `None` when absent).
    fn authenticate(&self, token: Option<&str>) -> AuthFuture;
}

/// Inbound authentication for the HTTP server ([`Config::with_auth`](super::Config::with_auth)).
#[derive(Clone)]
pub struct Auth {
    pub(crate) authenticator: Arc<dyn Authenticate>,
    /// The protected-resource metadata document, as served.
    pub(crate) metadata: Arc<Value>,
    /// Where the metadata is served (the full URL is in `WWW-Authenticate`).
    pub(crate) metadata_url: Arc<str>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("metadata_url", &self.metadata_url)
            .finish_non_exhaustive()
    }
}

/// The well-known path of RFC 9728's metadata.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

impl Auth {
    /// Authentication by `authenticator` for the resource at `resource` (the endpoint's
    /// public URL, e.g. `https://mcp.example.com/mcp`: the tokens' audience), whose tokens
    /// come from `authorization_servers` (issuer URLs; none for static keys) with
    /// `scopes_supported`.
    pub fn new(
        authenticator: impl Authenticate,
        resource: &str,
        authorization_servers: &[String],
        scopes_supported: &[String],
    ) -> Self {
        let mut metadata = serde_json::json!({
            "resource": resource,
            "bearer_methods_supported": ["header"],
        });
        if !authorization_servers.is_empty() {
            metadata["authorization_servers"] = serde_json::json!(authorization_servers);
        }
        if !scopes_supported.is_empty() {
            metadata["scopes_supported"] = serde_json::json!(scopes_supported);
        }
        Auth {
            authenticator: Arc::new(authenticator),
            metadata: Arc::new(metadata),
            metadata_url: metadata_url(resource).into(),
        }
    }

    /// Whether `path` is where the metadata is served, for an endpoint at `endpoint`.
    pub(crate) fn serves_metadata(&self, path: &str, endpoint: &str) -> bool {
        path == WELL_KNOWN || path.strip_prefix(WELL_KNOWN) == Some(endpoint)
    }

    /// The `WWW-Authenticate` value of a refusal.
    pub(crate) fn challenge(&self, refusal: &AuthRefusal) -> String {
        let quoted = |s: &str| s.replace(['"', '\\'], "");
        match refusal {
            AuthRefusal::Missing => {
                format!("Bearer resource_metadata=\"{}\"", self.metadata_url)
            }
            AuthRefusal::Invalid(why) => format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{}\"",
                quoted(why),
                self.metadata_url
            ),
            AuthRefusal::InsufficientScope(scope) => format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\"",
                quoted(scope),
                self.metadata_url
            ),
        }
    }
}

/// The metadata URL of `resource` (RFC 9728 § 3.1: the well-known path goes between the
/// host and the resource's path).
fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let (host, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let path = path.trim_end_matches('/');
    format!("{scheme}://{host}{WELL_KNOWN}{path}")
}

/// The token of an `Authorization` header value: `Bearer TOKEN` (the scheme in any case).
pub(crate) fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_puts_the_well_known_path_before_the_resources() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn a_bearer_token_is_read_in_any_case_and_nothing_else_is() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
    }
}
