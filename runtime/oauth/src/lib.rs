//! OAuth 2.1 for remote MCP servers (MCP authorization, 2025-03-26 … 2026-07-28).
//!
//! An [`OAuth`] client is the [`Auth`] hook of one HTTP server: give it to
//! `switchboard::transport::Http::auth` (or [`Config::auth`](switchboard_transports::http::Config::auth) of the transport). When
//! the server answers 401, it finds the
//! authorization server ([Protected Resource Metadata](https://www.rfc-editor.org/rfc/rfc9728),
//! then RFC 8414 or OpenID Connect discovery, with the 2025-03-26 fallbacks), registers
//! (pre-registered client, Client ID Metadata Document, or dynamic registration), and gets
//! a token with the authorization code grant and PKCE `S256` (asking the host's
//! [`Authorizer`] to have a person approve), with the client credentials grant, or with
//! cross-app access (an enterprise identity provider's ID token exchanged for an ID-JAG,
//! presented with the JWT bearer grant: [`IdentityProvider`]). Every
//! authorization and token request names the server with `resource` (RFC 8707). Tokens are
//! refreshed before they expire and after a 401, one refresh at a time; a 403
//! `insufficient_scope` authorizes again with the wider scope, a bounded number of times.
//! Credentials persist in a [`TokenStore`] ([`FileStore`] for a user's login,
//! [`MemoryStore`] by default).
//!
//! ```no_run
//! use std::sync::Arc;
//! use switchboard_oauth::{self as oauth, OAuth};
//! use switchboard_transports::http;
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "https://mcp.example.com/mcp";
//! let auth = OAuth::new(
//!     "example",
//!     url,
//!     oauth::Config::new()
//!         .authorizer(Arc::new(oauth::Loopback::new(0, |url| println!("open {url}"))?))
//!         .store(Arc::new(oauth::FileStore::default_location()?)),
//! )?;
//! // With the runtime: `ServerConfig::http(url, HttpKind::Auto).auth(Arc::new(auth))`.
//! let connection = http::Config::new(url).auth(Some(Arc::new(auth)));
//! # let _ = connection;
//! # Ok(())
//! # }
//! ```
//!
//! # Security
//!
//! Tokens, secrets, codes and keys never appear in logs, errors or `Debug` output.
//! Authorization server endpoints must be https (http only on a loopback host); metadata
//! and token endpoints are never followed through redirects; the resource metadata must
//! name this server, the server metadata's `issuer` the authorization server it was looked
//! up for, and an authorization response's `state` and `iss` must be the expected ones.

#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

mod authorizer;
mod code;
mod crypto;
mod discovery;
mod error;
mod exchange;
mod flow;
mod loopback;
mod net;
mod registration;
mod settings;
mod store;
mod token;
mod xaa;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_transports::connection::BoxFuture;
use switchboard_transports::http::{Auth, Challenge};
use url::Url;

pub use self::authorizer::{AuthorizationRequest, Authorizer, Headless};
pub use self::crypto::{PrivateKey, SigningAlgorithm};
pub use self::error::{Error, Step};
pub use self::exchange::{TokenExchange, EXPIRY_MARGIN};
pub use self::loopback::Loopback;
pub use self::settings::Settings;
pub use self::store::{
    ClientRegistration, Credentials, FileStore, MemoryStore, StoreError, TokenSet, TokenStore,
};
pub use self::xaa::{IdentityAssertion, IdentityProvider};

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthMethod {
    /// A public client: only `client_id` in the request.
    None,
    /// `Authorization: Basic` with the client id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the request body.
    ClientSecretPost,
    /// A JWT assertion signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The name the OAuth registries use (`client_secret_basic`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method named `name`, if known.
    pub fn parse(name: &str) -> Option<AuthMethod> {
        [
            AuthMethod::None,
            AuthMethod::ClientSecretBasic,
            AuthMethod::ClientSecretPost,
            AuthMethod::PrivateKeyJwt,
        ]
        .into_iter()
        .find(|m| m.as_str() == name)
    }
}

/// Which grant obtains tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GrantType {
    /// The authorization code grant with PKCE: a person approves in a browser.
    #[default]
    AuthorizationCode,
    /// The client credentials grant: the client is its own resource owner, no browser.
    ClientCredentials,
    /// Cross-app access (SEP-990, Enterprise-Managed Authorization): the user's identity
    /// assertion is exchanged at the enterprise identity provider for an ID-JAG (RFC 8693),
    /// which the pre-registered client presents with the JWT bearer grant (RFC 7523). No
    /// browser; needs [`Config::identity_provider`] and a client id.
    CrossAppAccess,
}

impl GrantType {
    /// Whether tokens come without a person, so that the client may get new ones itself.
    pub(crate) fn is_unattended(self) -> bool {
        matches!(
            self,
            GrantType::ClientCredentials | GrantType::CrossAppAccess
        )
    }
}

/// How one server's OAuth client behaves. Build it with [`Config::new`] and the setters;
/// `Debug` never shows the secret or the key.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    pub(crate) grant: GrantType,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) auth_method: Option<AuthMethod>,
    pub(crate) private_key: Option<PrivateKey>,
    pub(crate) identity_provider: Option<IdentityProvider>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Option<Vec<String>>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// The defaults: the authorization code grant, no pre-registered client, scopes from
    /// the server, no authorizer, an in-memory store, a 30 s bound on each request.
    pub fn new() -> Config {
        Config {
            grant: GrantType::AuthorizationCode,
            client_id: None,
            client_secret: None,
            auth_method: None,
            private_key: None,
            identity_provider: None,
            client_metadata_url: None,
            client_name: "switchboard".into(),
            scopes: None,
            authorizer: None,
            store: Arc::new(MemoryStore::new()),
            timeout: Duration::from_secs(30),
        }
    }

    /// The grant that obtains tokens.
    pub fn grant(mut self, grant: GrantType) -> Self {
        self.grant = grant;
        self
    }

    /// A pre-registered client id (used before any other way of registering).
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The pre-registered client's secret.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// How the pre-registered client authenticates at the token endpoint (default:
    /// `client_secret_basic` with a secret, when the server supports it, else
    /// `client_secret_post`; `none` without one).
    pub fn auth_method(mut self, method: AuthMethod) -> Self {
        self.auth_method = Some(method);
        self
    }

    /// The private key of `private_key_jwt` (also sets that method).
    pub fn private_key(mut self, key: PrivateKey) -> Self {
        self.private_key = Some(key);
        self.auth_method = Some(AuthMethod::PrivateKeyJwt);
        self
    }

    /// The enterprise identity provider of cross-app access (also sets that grant).
    pub fn identity_provider(mut self, idp: IdentityProvider) -> Self {
        self.identity_provider = Some(idp);
        self.grant = GrantType::CrossAppAccess;
        self
    }

    /// This client's metadata document URL (https, with a path), used as its `client_id`
    /// where the authorization server supports Client ID Metadata Documents.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The `client_name` sent in dynamic registration (default `switchboard`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for, instead of those the server names.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Who has a person approve authorizations.
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Where credentials are kept.
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// The bound on each request to the authorization server (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .field("private_key", &self.private_key)
            .field("identity_provider", &self.identity_provider)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("authorizer", &self.authorizer)
            .field("store", &self.store)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The key server `name`'s credentials are stored under when its MCP endpoint is `url`
/// ([`OAuth::store_key`]), without making its client.
pub fn store_key(name: &str, url: &str) -> Result<String, Error> {
    let endpoint = Url::parse(url).map_err(|e| Error::InvalidConfig {
        server: name.into(),
        reason: format!("the server url is not valid: {e}"),
    })?;
    Ok(flow::store_key(name, &endpoint))
}

/// One server's OAuth client, and its [`Auth`] hook. Cloning shares the client.
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<flow::Inner>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &self.inner.server)
            .field("endpoint", &net::display(&self.inner.endpoint))
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// The OAuth client of server `name` at `url` (its MCP endpoint).
    pub fn new(name: &str, url: &str, config: Config) -> Result<OAuth, Error> {
        let server: Arc<str> = name.into();
        let endpoint = Url::parse(url).map_err(|e| Error::InvalidConfig {
            server: server.clone(),
            reason: format!("the server url is not valid: {e}"),
        })?;
        if config.grant == GrantType::ClientCredentials && config.client_id.is_none() {
            return Err(Error::InvalidConfig {
                server,
                reason: "the client credentials grant needs a client id".into(),
            });
        }
        if config.grant == GrantType::CrossAppAccess {
            // The ID-JAG names the client it was issued to: there is no registering here.
            if config.client_id.is_none() {
                return Err(Error::InvalidConfig {
                    server,
                    reason: "cross-app access needs the client id registered at the server's authorization server".into(),
                });
            }
            if config.identity_provider.is_none() {
                return Err(Error::InvalidConfig {
                    server,
                    reason: "cross-app access needs an identity provider".into(),
                });
            }
        }
        Ok(OAuth {
            inner: Arc::new(flow::Inner::new(server, endpoint, config)?),
        })
    }

    /// The key its credentials are stored under.
    pub fn store_key(&self) -> &str {
        &self.inner.key
    }

    /// Runs discovery and authorization now, without waiting for the server to refuse a
    /// request (`switchboard auth login`).
    pub async fn login(&self) -> Result<(), Error> {
        self.inner.login().await
    }

    /// Refreshes the access token now. A refresh token the server refuses is an
    /// [`Error::Refused`] with step [`Step::Refresh`], and is forgotten.
    pub async fn refresh(&self) -> Result<(), Error> {
        self.inner.refresh().await
    }

    /// Forgets the tokens and registration, here and in the store.
    pub async fn logout(&self) -> Result<(), Error> {
        self.inner.logout().await
    }

    /// The credentials held now (loaded from the store on first use).
    pub async fn credentials(&self) -> Result<Credentials, Error> {
        self.inner.credentials().await
    }
}

impl Auth for OAuth {
    fn token(&self, challenge: Option<&Challenge>) -> BoxFuture<Result<Option<String>, String>> {
        let inner = self.inner.clone();
        match challenge {
            None => {
                if let Some(token) = inner.fresh_token() {
                    return Box::pin(std::future::ready(Ok(Some(token))));
                }
                Box::pin(async move { inner.token().await.map_err(|e| e.to_string()) })
            }
            // The legacy SSE stream asks this way: the token it sent was the current one.
            Some(challenge) => {
                let challenge = challenge.clone();
                Box::pin(async move {
                    let rejected = inner.any_token();
                    inner
                        .refused(rejected, challenge)
                        .await
                        .map_err(|e| e.to_string())
                })
            }
        }
    }

    fn refused(
        &self,
        rejected: Option<&str>,
        challenge: &Challenge,
    ) -> BoxFuture<Result<Option<String>, String>> {
        let inner = self.inner.clone();
        let rejected = rejected.map(str::to_owned);
        let challenge = challenge.clone();
        Box::pin(async move {
            inner
                .refused(rejected, challenge)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
