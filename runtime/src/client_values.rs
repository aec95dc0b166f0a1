//! Per-client values in a server's config: `${client.name}`, `${client.claims.NAME}` and
//! `${client.secret.NAME}` in its `args`, `env`, `headers` and `url`, filled for each client
//! of a gateway when that client's instance of the server starts.
//!
//! A server whose config uses them runs an instance per client (it is
//! [`Isolation::Client`](crate::Isolation::Client) unless it says `session`): one process per
//! principal, started with that principal's values, so a filesystem server can be rooted in
//! the client's own folder and a code host's server run with the user's own token. The
//! runtime's own instance, which lists the server's tools for everyone, is started with the
//! values its config names for listing ([`ServerConfig::list_as`](crate::ServerConfig::list_as),
//! config key `listAs`); without them it is not started at all.
//!
//! A value that cannot be filled is an error naming the value, never an empty string: the
//! server is not started with it. `${client.claims.org:-none}` gives a default, as the
//! environment's `${VAR:-default}` does. Values are checked before they are used: none may
//! hold a control character (a header or an argument would be split or cut by one), and the
//! name, which goes into paths, may not be empty, `.`, `..`, or hold `/` or `\`.
//!
//! ```
//! use switchboard::client_values::ClientValues;
//! use switchboard::ServerConfig;
//!
//! let config: ServerConfig = ServerConfig::stdio("npx")
//!     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/users/${client.name}"])
//!     .list_as(ClientValues::new("catalogue"))
//!     .into();
//! assert!(config.per_client());
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// What opens a per-client value in a config string.
const MARK: &str = "${client.";

/// One client's values: its name, its token's claims, and its secrets.
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ClientValues {
    /// The client as the gateway names it (`key:NAME`, `ISSUER#SUB`): whose token a server
    /// with a token exchange presents.
    principal: Option<String>,
    name: String,
    claims: Map<String, Value>,
    secrets: BTreeMap<String, String>,
}

impl fmt::Debug for ClientValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secrets' names, never their values.
        f.debug_struct("ClientValues")
            .field("principal", &self.principal)
            .field("name", &self.name)
            .field("claims", &self.claims.keys().collect::<Vec<_>>())
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ClientValues {
    /// The values of a client named `name` (what `${client.name}` becomes).
    pub fn new(name: impl Into<String>) -> Self {
        ClientValues {
            name: name.into(),
            ..ClientValues::default()
        }
    }

    /// With its verified token's claims (`${client.claims.NAME}`).
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// With its secrets (`${client.secret.NAME}`).
    pub fn with_secrets<I, K, V>(mut self, secrets: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.secrets = secrets
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self
    }

    /// With the client's principal, as the gateway names it: whose token a server with a
    /// token exchange presents.
    pub fn with_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The client's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client's principal, when given.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The value `${client.<reference>}` stands for.
    fn lookup(&self, reference: &str) -> Result<Option<String>, ClientValueError> {
        let unusable = |why: &'static str| ClientValueError::Unusable {
            value: format!("client.{reference}"),
            why,
        };
        if reference == "name" {
            return Ok(Some(self.name.clone()));
        }
        if let Some(claim) = reference.strip_prefix("claims.") {
            return match self.claims.get(claim) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(Value::Bool(b)) => Ok(Some(b.to_string())),
                Some(_) => Err(unusable("the claim is not a string, number or boolean")),
            };
        }
        if let Some(secret) = reference.strip_prefix("secret.") {
            return Ok(self.secrets.get(secret).cloned());
        }
        Err(ClientValueError::Unknown(format!("client.{reference}")))
    }
}

/// Gives each client's instance of an HTTP server an auth hook of its own: a token
/// exchanged for the client's ([`TokenExchange`](crate::oauth::TokenExchange)), or the
/// client's own OAuth authorization (a gateway's per-user OAuth). Set with
/// [`ServerConfig::client_auth`](crate::ServerConfig::client_auth).
#[cfg(feature = "http")]
pub trait ClientAuth: Send + Sync + fmt::Debug {
    /// The hook of the instance started for `values`' client.
    fn for_client(
        &self,
        values: &ClientValues,
    ) -> Result<std::sync::Arc<dyn crate::transport::Auth>, ClientValueError>;
}

#[cfg(feature = "oauth")]
impl ClientAuth for crate::oauth::TokenExchange {
    fn for_client(
        &self,
        values: &ClientValues,
    ) -> Result<std::sync::Arc<dyn crate::transport::Auth>, ClientValueError> {
        let principal = values.principal().ok_or(ClientValueError::NoPrincipal)?;
        Ok(crate::oauth::TokenExchange::for_client(self, principal))
    }
}

/// A per-client value that cannot be filled, or a config string that names none we know.
/// The message names the value (`${client.secret.TOKEN}`), never what it holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientValueError {
    /// The client has no such value, and the config gives no default.
    #[error("`${{{0}}}` has no value for this client")]
    Missing(String),
    /// The value exists but cannot be used.
    #[error("`${{{value}}}` cannot be used: {why}")]
    Unusable {
        /// Which value.
        value: String,
        /// Why not.
        why: &'static str,
    },
    /// Not `client.name`, `client.claims.NAME` or `client.secret.NAME`.
    #[error(
        "unknown per-client value `${{{0}}}`: expected `client.name`, `client.claims.NAME` or \
         `client.secret.NAME`"
    )]
    Unknown(String),
    /// A `${client.` with no closing `}`.
    #[error("unterminated `${{client.` (expected a closing `}}`)")]
    Unterminated,
    /// The server authenticates as each client (a token exchange, per-user OAuth), and no
    /// client was named.
    #[error("the server authenticates as each client, and no client was named")]
    NoPrincipal,
    /// The client's own auth hook could not be made.
    #[error("the client's own authorization cannot be set up: {0}")]
    Auth(String),
    /// The server uses per-client values and no values were given to list it with.
    #[error(
        "the server's config uses per-client values (`${{client.…}}`), and names none to list \
         its tools with (`listAs`): only clients' own instances of it run"
    )]
    NothingToListWith,
}

/// Whether `text` uses a per-client value.
pub(crate) fn uses(text: &str) -> bool {
    text.contains(MARK)
}

/// Checks that every per-client value in `text` is one we know, without filling it.
pub(crate) fn check(text: &str) -> Result<(), ClientValueError> {
    scan(
        text,
        &mut |reference| match reference.split_once(":-").map_or(reference, |(r, _)| r) {
            "name" => Ok(String::new()),
            r if r.strip_prefix("claims.").is_some_and(|n| !n.is_empty())
                || r.strip_prefix("secret.").is_some_and(|n| !n.is_empty()) =>
            {
                Ok(String::new())
            }
            r => Err(ClientValueError::Unknown(format!("client.{r}"))),
        },
    )
    .map(drop)
}

/// `text` with each per-client value filled from `values`; each value filled is pushed onto
/// `used`, in order (what two starts are compared by).
pub(crate) fn fill(
    text: &str,
    values: &ClientValues,
    used: &mut Vec<String>,
) -> Result<String, ClientValueError> {
    scan(text, &mut |reference| {
        let (reference, default) = match reference.split_once(":-") {
            Some((reference, default)) => (reference, Some(default)),
            None => (reference, None),
        };
        let value = match (values.lookup(reference)?, default) {
            (Some(v), Some(default)) if v.is_empty() => default.to_owned(),
            (Some(v), _) => v,
            (None, Some(default)) => default.to_owned(),
            (None, None) => return Err(ClientValueError::Missing(format!("client.{reference}"))),
        };
        checked(reference, &value)?;
        used.push(value.clone());
        Ok(value)
    })
}

/// Refuses a value that would break or escape where it goes.
fn checked(reference: &str, value: &str) -> Result<(), ClientValueError> {
    let unusable = |why: &'static str| ClientValueError::Unusable {
        value: format!("client.{reference}"),
        why,
    };
    if value.chars().any(char::is_control) {
        return Err(unusable("it holds a control character"));
    }
    if reference == "name"
        && (value.is_empty() || value == "." || value == ".." || value.contains(['/', '\\']))
    {
        return Err(unusable(
            "a name used in a config must not be empty, `.` or `..`, nor hold `/` or `\\`",
        ));
    }
    Ok(())
}

/// Replaces each `${client.REFERENCE}` in `text` with what `value` says for REFERENCE.
fn scan(
    text: &str,
    value: &mut dyn FnMut(&str) -> Result<String, ClientValueError>,
) -> Result<String, ClientValueError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MARK.len()..];
        let end = after.find('}').ok_or(ClientValueError::Unterminated)?;
        out.push_str(&value(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn alice() -> ClientValues {
        let Value::Object(claims) =
            json!({"org": "acme", "level": 3, "admin": false, "groups": ["a"]})
        else {
            unreachable!()
        };
        ClientValues::new("alice")
            .with_claims(claims)
            .with_secrets([("GITHUB_TOKEN", "ghp_secret")])
    }

    fn fill_alice(text: &str) -> Result<String, ClientValueError> {
        fill(text, &alice(), &mut Vec::new())
    }

    #[test]
    fn each_form_is_filled() {
        assert_eq!(fill_alice("/srv/${client.name}/x").unwrap(), "/srv/alice/x");
        assert_eq!(
            fill_alice("${client.claims.org}-${client.claims.level}-${client.claims.admin}")
                .unwrap(),
            "acme-3-false"
        );
        assert_eq!(
            fill_alice("Bearer ${client.secret.GITHUB_TOKEN}").unwrap(),
            "Bearer ghp_secret"
        );
        assert_eq!(fill_alice("${client.claims.team:-none}").unwrap(), "none");
        assert_eq!(
            fill_alice("$HOME ${NOT_OURS}").unwrap(),
            "$HOME ${NOT_OURS}"
        );
        let mut used = Vec::new();
        fill("${client.name}:${client.claims.org}", &alice(), &mut used).unwrap();
        assert_eq!(used, ["alice", "acme"]);
    }

    #[test]
    fn what_cannot_be_filled_is_named_never_shown() {
        let e = fill_alice("${client.secret.JIRA}").unwrap_err();
        assert_eq!(e, ClientValueError::Missing("client.secret.JIRA".into()));
        assert!(e.to_string().contains("`${client.secret.JIRA}`"), "{e}");
        assert!(matches!(
            fill_alice("${client.claims.groups}"),
            Err(ClientValueError::Unusable { .. })
        ));
        assert!(matches!(
            fill_alice("${client.email}"),
            Err(ClientValueError::Unknown(_))
        ));
        assert_eq!(
            fill_alice("${client.name"),
            Err(ClientValueError::Unterminated)
        );
        assert!(!format!("{:?}", alice()).contains("ghp_secret"));
    }

    #[test]
    fn a_value_that_would_escape_is_refused() {
        for name in ["", ".", "..", "../etc", "a/b", "a\\b", "line\nbreak"] {
            let e = fill(
                "/srv/${client.name}",
                &ClientValues::new(name),
                &mut Vec::new(),
            )
            .unwrap_err();
            assert!(
                matches!(e, ClientValueError::Unusable { .. }),
                "{name:?}: {e}"
            );
        }
        let crlf = ClientValues::new("bob").with_secrets([("T", "x\r\nX-Injected: 1")]);
        assert!(fill("Bearer ${client.secret.T}", &crlf, &mut Vec::new()).is_err());
    }

    #[test]
    fn check_knows_the_forms_without_values() {
        assert!(check("${client.name:-x} ${client.claims.sub} ${client.secret.T:-x}").is_ok());
        assert!(check("${client.secret.}").is_err());
        assert!(check("${client.nme}").is_err());
        assert!(uses("a${client.name}") && !uses("${CLIENT}"));
    }
}
