//! A gateway's upstream tokens on its clients' behalf (RFC 8693 token exchange).
//!
//! A gateway that verified a client's token may not pass it upstream (the MCP
//! specification forbids token passthrough): it exchanges it at an authorization server for
//! a token meant for the upstream (its `resource`, and `audience` when set), and presents
//! that. Each client's upstream token is kept until it is about to expire
//! ([`EXPIRY_MARGIN`]) or the upstream refuses it, then exchanged again with the client's
//! newest token: one exchange per client per token lifetime, however many calls it makes.
//! The runtime's own connection to the upstream, which lists its tools for everyone, has no
//! client: it uses the client credentials grant with the same client, as the gateway itself.
//!
//! Exchanges are made one at a time per upstream (a burst of calls from one client makes one
//! exchange). No token or secret is ever logged or put in an error.
//!
//! ```
//! use switchboard_oauth::TokenExchange;
//!
//! let exchange = TokenExchange::new("github", "https://github-mcp.example.com/mcp",
//!     "https://idp.example.com/oauth2/token", "switchboard")
//!     .client_secret("…")
//!     .audience("github-mcp")
//!     .scope("repo:read");
//! # let _ = exchange;
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use switchboard_transports::connection::BoxFuture;
use switchboard_transports::http::{Auth, Challenge};
use url::Url;

use super::error::{Error, Step};
use super::net::Net;
use super::store::TokenSet;
use super::token::{self, ClientAuth, Grant};
use super::AuthMethod;

/// A token is exchanged again this long before it expires, so that a call in flight does
/// not carry one that lapses on the way.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// How long a token endpoint may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// One upstream's token exchange: the authorization server, the gateway's client there,
/// and each client's newest token and exchanged token. `Debug` shows no secret or token.
pub struct TokenExchange {
    server: Arc<str>,
    resource: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    audience: Option<String>,
    scope: Option<String>,
    state: Arc<State>,
}

/// What the exchange keeps between calls, shared by every client's connection.
#[derive(Default)]
struct State {
    /// Each client's newest verified token, by principal.
    subjects: Mutex<HashMap<String, String>>,
    /// Each client's upstream token, by principal (`""`: the gateway's own).
    tokens: Mutex<HashMap<String, TokenSet>>,
    /// One exchange at a time.
    exchanging: tokio::sync::Mutex<()>,
    /// Exchanges made (and client credentials grants).
    made: AtomicU64,
}

impl fmt::Debug for TokenExchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenExchange")
            .field("server", &self.server)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("audience", &self.audience)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Clone for TokenExchange {
    fn clone(&self) -> Self {
        TokenExchange {
            server: self.server.clone(),
            resource: self.resource.clone(),
            token_endpoint: self.token_endpoint.clone(),
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            audience: self.audience.clone(),
            scope: self.scope.clone(),
            state: self.state.clone(),
        }
    }
}

impl TokenExchange {
    /// Exchanges clients' tokens for server `server` (at `resource`, its URL) at
    /// `token_endpoint`, as client `client_id`.
    pub fn new(
        server: impl Into<Arc<str>>,
        resource: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        TokenExchange {
            server: server.into(),
            resource: resource.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            audience: None,
            scope: None,
            state: Arc::default(),
        }
    }

    /// The client's secret (sent with `Authorization: Basic`); without one, the client is
    /// public and only its id is sent.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The `audience` asked for: the upstream as the authorization server names it.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// The `scope` asked for.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The token endpoint.
    pub fn token_endpoint(&self) -> &str {
        &self.token_endpoint
    }

    /// Exchanges made so far (client credentials grants included).
    pub fn exchanges(&self) -> u64 {
        self.state.made.load(Ordering::Relaxed)
    }

    /// Records `token` as client `principal`'s newest verified token: what its next
    /// exchange presents. Its upstream token, while valid, is kept.
    pub fn present(&self, principal: &str, token: &str) {
        let mut subjects = lock(&self.state.subjects);
        if subjects.get(principal).map(String::as_str) != Some(token) {
            subjects.insert(principal.to_owned(), token.to_owned());
        }
    }

    /// The hook that gives client `principal`'s connection its upstream token.
    pub fn for_client(&self, principal: &str) -> Arc<dyn Auth> {
        Arc::new(Bearer {
            exchange: self.clone(),
            principal: Some(principal.to_owned()),
        })
    }

    /// The hook that gives the gateway's own connection its token (client credentials).
    pub fn for_gateway(&self) -> Arc<dyn Auth> {
        Arc::new(Bearer {
            exchange: self.clone(),
            principal: None,
        })
    }

    /// The upstream token of `principal` (or the gateway's), exchanged if there is none
    /// still valid.
    async fn token(&self, principal: Option<&str>) -> Result<String, Error> {
        let key = principal.unwrap_or_default();
        if let Some(token) = self.valid(key) {
            return Ok(token);
        }
        let _one = self.state.exchanging.lock().await;
        // Another call may have exchanged it meanwhile.
        if let Some(token) = self.valid(key) {
            return Ok(token);
        }
        let net = Net::new(self.server.clone(), TIMEOUT)?;
        let endpoint = Url::parse(&self.token_endpoint).map_err(|e| Error::InvalidConfig {
            server: self.server.clone(),
            reason: format!("the token exchange endpoint is not a url: {e}"),
        })?;
        super::discovery::secure(&net, Step::OnBehalfOf, &endpoint)?;
        let subject;
        let grant = match principal {
            Some(principal) => {
                subject = lock(&self.state.subjects)
                    .get(principal)
                    .cloned()
                    .ok_or_else(|| Error::InvalidConfig {
                        server: self.server.clone(),
                        reason: format!("client {principal} presented no token to exchange"),
                    })?;
                Grant::OnBehalfOf {
                    subject_token: &subject,
                    audience: self.audience.as_deref(),
                    scope: self.scope.as_deref(),
                }
            }
            None => Grant::ClientCredentials {
                scope: self.scope.as_deref(),
            },
        };
        let client = ClientAuth {
            client_id: &self.client_id,
            secret: self.client_secret.as_deref(),
            method: match self.client_secret {
                Some(_) => AuthMethod::ClientSecretBasic,
                None => AuthMethod::None,
            },
            key: None,
            audience: "",
        };
        let requested = self
            .scope
            .as_deref()
            .map(token::split_scope)
            .unwrap_or_default();
        self.state.made.fetch_add(1, Ordering::Relaxed);
        let set = token::request(
            &net,
            &endpoint,
            client,
            grant,
            &self.resource,
            &requested,
            None,
        )
        .await?;
        let access = set.access_token.clone();
        lock(&self.state.tokens).insert(key.to_owned(), set);
        Ok(access)
    }

    /// `principal`'s upstream token, if it is not about to expire.
    fn valid(&self, principal: &str) -> Option<String> {
        let tokens = lock(&self.state.tokens);
        let set = tokens.get(principal)?;
        let margin = EXPIRY_MARGIN.as_millis() as u64;
        match set.expires_at_ms {
            Some(at) if token::now_ms().saturating_add(margin) >= at => None,
            _ => Some(set.access_token.clone()),
        }
    }

    /// Forgets `principal`'s upstream token if it is `rejected`: the upstream refused it.
    fn forget(&self, principal: &str, rejected: Option<&str>) {
        let mut tokens = lock(&self.state.tokens);
        if tokens
            .get(principal)
            .is_some_and(|set| Some(set.access_token.as_str()) == rejected)
        {
            tokens.remove(principal);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One connection's token hook: a client's, or the gateway's own.
#[derive(Debug)]
struct Bearer {
    exchange: TokenExchange,
    principal: Option<String>,
}

impl Auth for Bearer {
    fn token(&self, _challenge: Option<&Challenge>) -> BoxFuture<Result<Option<String>, String>> {
        let exchange = self.exchange.clone();
        let principal = self.principal.clone();
        Box::pin(async move {
            exchange
                .token(principal.as_deref())
                .await
                .map(Some)
                .map_err(|e| e.to_string())
        })
    }

    fn refused(
        &self,
        rejected: Option<&str>,
        challenge: &Challenge,
    ) -> BoxFuture<Result<Option<String>, String>> {
        self.exchange
            .forget(self.principal.as_deref().unwrap_or_default(), rejected);
        self.token(Some(challenge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_neither_secret_nor_token() {
        let exchange = TokenExchange::new("s", "http://127.0.0.1/mcp", "http://127.0.0.1/t", "c")
            .client_secret("hunter2-secret");
        exchange.present("alice", "alice-subject-token");
        let shown = format!("{exchange:?} {:?}", exchange.for_client("alice"));
        assert!(
            !shown.contains("hunter2") && !shown.contains("alice-subject"),
            "{shown}"
        );
    }

    #[test]
    fn an_expiring_token_is_not_valid_and_a_refused_one_is_forgotten() {
        let exchange = TokenExchange::new("s", "http://127.0.0.1/mcp", "http://127.0.0.1/t", "c");
        let set = |token: &str, in_ms: u64| TokenSet {
            access_token: token.into(),
            refresh_token: None,
            expires_at_ms: Some(token::now_ms() + in_ms),
            lifetime_ms: Some(in_ms),
            scopes: Vec::new(),
        };
        lock(&exchange.state.tokens).insert("a".into(), set("fresh", 3_600_000));
        lock(&exchange.state.tokens).insert("b".into(), set("stale", 10_000));
        assert_eq!(exchange.valid("a").as_deref(), Some("fresh"));
        assert_eq!(exchange.valid("b"), None);
        exchange.forget("a", Some("other"));
        assert!(exchange.valid("a").is_some());
        exchange.forget("a", Some("fresh"));
        assert!(exchange.valid("a").is_none());
    }
}
