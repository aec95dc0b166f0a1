//! The OAuth client's state machine: the current tokens, and one flow at a time per server
//! (discovery, registration, refresh, step-up; the authorization code grant itself is in
//! `code.rs`).
//!
//! Requests read the current access token from a snapshot without waiting. Everything that
//! changes the tokens runs under one async lock, so concurrent requests that find the token
//! expiring, or that were refused, wait for the one refresh or login in progress and then
//! use its result: a request refused with a token older than the current one is given the
//! current one, not a second refresh.

use std::sync::{Arc, RwLock};

use switchboard_transports::http::Challenge;
use tokio::sync::Mutex;
use url::Url;

use super::discovery::{self, Discovered};
use super::error::Error;
use super::net::Net;
use super::registration;
use super::store::{ClientRegistration, Credentials, TokenSet};
use super::token::{self, now_ms, split_scope, ClientAuth, Grant};
use super::xaa;
use super::{Config, GrantType};

/// The grant type the authorization server must support for cross-app access.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// How many step-up authorizations a server may ask for (after the first authorization):
/// with it, at most three authorizations in a row.
const MAX_STEP_UPS: u32 = 2;
/// How long before expiry a token is refreshed, at most (less for short-lived tokens).
const REFRESH_MARGIN_MS: u64 = 60_000;

/// The current access token as requests read it.
#[derive(Clone)]
struct Snapshot {
    access: String,
    /// When it should be refreshed, if it expires.
    refresh_at_ms: Option<u64>,
}

/// What the flow lock guards.
#[derive(Default)]
pub(super) struct State {
    loaded: bool,
    discovered: Option<Discovered>,
    /// A stored (dynamically registered or metadata-document) client; a configured one is
    /// rebuilt from the configuration each time.
    pub(super) client: Option<ClientRegistration>,
    tokens: Option<TokenSet>,
    step_ups: u32,
    /// The authorization server of the last discovery (kept when the discovery is redone).
    discovered_issuer: Option<String>,
}

/// One server's OAuth client.
pub(crate) struct Inner {
    pub(crate) server: Arc<str>,
    pub(crate) endpoint: Url,
    pub(crate) key: String,
    pub(crate) config: Config,
    pub(super) net: Net,
    snapshot: RwLock<Option<Snapshot>>,
    state: Mutex<State>,
}

/// The key a server's credentials are stored under.
pub(crate) fn store_key(server: &str, endpoint: &Url) -> String {
    format!("{server} {endpoint}")
}

impl Inner {
    pub(crate) fn new(server: Arc<str>, endpoint: Url, config: Config) -> Result<Inner, Error> {
        let net = Net::new(server.clone(), config.timeout)?;
        Ok(Inner {
            key: store_key(&server, &endpoint),
            server,
            endpoint,
            config,
            net,
            snapshot: RwLock::new(None),
            state: Mutex::new(State::default()),
        })
    }

    /// The current token if it is not due for refresh.
    pub(crate) fn fresh_token(&self) -> Option<String> {
        let snapshot = self.snapshot.read().unwrap_or_else(|e| e.into_inner());
        snapshot
            .as_ref()
            .filter(|s| s.refresh_at_ms.map_or(true, |at| now_ms() < at))
            .map(|s| s.access.clone())
    }

    /// The current token, whatever its age.
    pub(crate) fn any_token(&self) -> Option<String> {
        let snapshot = self.snapshot.read().unwrap_or_else(|e| e.into_inner());
        snapshot.as_ref().map(|s| s.access.clone())
    }

    fn publish(&self, tokens: Option<&TokenSet>) {
        let snapshot = tokens.map(|t| Snapshot {
            access: t.access_token.clone(),
            refresh_at_ms: t.expires_at_ms.map(|at| {
                let margin = t
                    .lifetime_ms
                    .map_or(REFRESH_MARGIN_MS, |l| (l / 4).min(REFRESH_MARGIN_MS));
                at.saturating_sub(margin)
            }),
        });
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = snapshot;
    }

    fn load(&self, state: &mut State) -> Result<(), Error> {
        if state.loaded {
            return Ok(());
        }
        let stored = self
            .config
            .store
            .load(&self.key)
            .map_err(|source| Error::Store {
                server: self.server.clone(),
                source,
            })?;
        if let Some(stored) = stored {
            state.client = stored.client;
            state.tokens = stored.tokens;
        }
        state.loaded = true;
        self.publish(state.tokens.as_ref());
        Ok(())
    }

    pub(super) fn persist(&self, state: &State) {
        let credentials = Credentials {
            client: state.client.clone(),
            tokens: state.tokens.clone(),
        };
        // The tokens in memory are still good: a store that fails costs a login next run.
        if let Err(e) = self.config.store.save(&self.key, &credentials) {
            tracing::warn!(server = %self.server, error = %e, "cannot store the oauth credentials");
        }
    }

    pub(super) fn set_tokens(&self, state: &mut State, tokens: Option<TokenSet>) {
        state.tokens = tokens;
        self.publish(state.tokens.as_ref());
        self.persist(state);
    }

    /// The token for a request: the current one, refreshed first when it is due.
    pub(crate) async fn token(&self) -> Result<Option<String>, Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        if let Some(token) = self.fresh_token() {
            return Ok(Some(token));
        }
        let Some(tokens) = state.tokens.clone() else {
            return Ok(None);
        };
        let renewed = if tokens.refresh_token.is_some() {
            self.refresh_locked(&mut state).await
        } else if self.config.grant.is_unattended() && state.discovered.is_some() {
            self.unattended(&mut state, None).await
        } else {
            // Send the old one: the server's 401 starts the flow, with its challenge.
            return Ok(Some(tokens.access_token));
        };
        match renewed {
            Ok(()) => Ok(self.any_token()),
            Err(e) => {
                tracing::warn!(server = %self.server, error = %e, "cannot renew the token before it expires");
                Ok(Some(tokens.access_token))
            }
        }
    }

    /// A new token after the server refused `rejected` with `challenge`.
    pub(crate) async fn refused(
        &self,
        rejected: Option<String>,
        challenge: Challenge,
    ) -> Result<Option<String>, Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        let current = state.tokens.as_ref().map(|t| t.access_token.clone());
        if current.is_some() && current != rejected {
            // Another request already renewed it while this one waited.
            return Ok(current);
        }
        if challenge.param("error") == Some("insufficient_scope") {
            let required = challenge
                .param("scope")
                .map(split_scope)
                .unwrap_or_default();
            let granted = state
                .tokens
                .as_ref()
                .map(|t| t.scopes.clone())
                .unwrap_or_default();
            if state.tokens.is_some() && required.iter().all(|s| granted.contains(s)) {
                return Err(Error::ScopeNotGranted {
                    server: self.server.clone(),
                    scope: required.join(" "),
                });
            }
            if state.step_ups >= MAX_STEP_UPS {
                return Err(Error::StepUpLimit {
                    server: self.server.clone(),
                    attempts: state.step_ups,
                });
            }
            state.step_ups += 1;
            let mut scopes = granted;
            for scope in required {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            tracing::info!(server = %self.server, scope = %scopes.join(" "), "the server asks for more scope; authorizing again");
            self.grant(&mut state, Some(&challenge), Some(scopes))
                .await?;
            return Ok(self.any_token());
        }
        if rejected.is_some() {
            // A token that stopped working may mean the server moved to another
            // authorization server (MCP 2026-07-28): look again before refreshing.
            self.rediscover(&mut state, &challenge).await;
        }
        if rejected.is_some()
            && state
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some())
        {
            match self.refresh_locked(&mut state).await {
                Ok(()) => return Ok(self.any_token()),
                Err(e) => {
                    tracing::warn!(server = %self.server, error = %e, "refresh failed; authorizing again")
                }
            }
        }
        state.step_ups = 0;
        self.grant(&mut state, Some(&challenge), None).await?;
        Ok(self.any_token())
    }

    /// Authorizes now, whatever the current tokens.
    pub(crate) async fn login(&self) -> Result<(), Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        state.step_ups = 0;
        self.grant(&mut state, None, None).await
    }

    /// Refreshes now.
    pub(crate) async fn refresh(&self) -> Result<(), Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        self.refresh_locked(&mut state).await
    }

    /// Forgets the tokens and the registration, here and in the store.
    pub(crate) async fn logout(&self) -> Result<(), Error> {
        let mut state = self.state.lock().await;
        state.tokens = None;
        state.client = None;
        state.loaded = true;
        self.publish(None);
        self.config
            .store
            .remove(&self.key)
            .map_err(|source| Error::Store {
                server: self.server.clone(),
                source,
            })
    }

    /// What is stored now.
    pub(crate) async fn credentials(&self) -> Result<Credentials, Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state)?;
        Ok(Credentials {
            client: state.client.clone(),
            tokens: state.tokens.clone(),
        })
    }

    /// Runs discovery again; when it fails, the previous result (if any) is kept.
    async fn rediscover(&self, state: &mut State, challenge: &Challenge) {
        let Some(previous) = state.discovered.take() else {
            return;
        };
        if let Err(e) = self.discovered(state, Some(challenge)).await {
            tracing::warn!(server = %self.server, error = %e, "discovery failed again; keeping the previous authorization server");
            state.discovered = Some(previous);
        }
    }

    async fn discovered(
        &self,
        state: &mut State,
        challenge: Option<&Challenge>,
    ) -> Result<Discovered, Error> {
        if let Some(d) = &state.discovered {
            return Ok(d.clone());
        }
        let found = discovery::discover(&self.net, &self.endpoint, challenge).await?;
        // Credentials are kept per authorization server: another one means another client
        // and other tokens.
        let issuer_changed = state
            .client
            .as_ref()
            .map(|c| c.issuer.as_str())
            .or(state.discovered_issuer.as_deref())
            .is_some_and(|issuer| issuer != found.server.identity);
        state.discovered_issuer = Some(found.server.identity.clone());
        if issuer_changed {
            tracing::info!(server = %self.server, "the authorization server changed; registering again");
            state.client = None;
            state.tokens = None;
            self.publish(None);
        }
        state.discovered = Some(found.clone());
        Ok(found)
    }

    /// The scopes to ask for: configured, else the challenge's, else the resource
    /// metadata's `scopes_supported`, else none; `offline_access` added when the
    /// authorization server offers it and scopes are asked for at all.
    fn select_scopes(&self, challenge: Option<&Challenge>, d: &Discovered) -> Vec<String> {
        let mut scopes = if let Some(configured) = &self.config.scopes {
            configured.clone()
        } else if let Some(scope) = challenge.and_then(|c| c.param("scope")) {
            split_scope(scope)
        } else {
            d.resource_scopes.clone().unwrap_or_default()
        };
        let offers_offline = d
            .server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
        if self.config.grant == GrantType::AuthorizationCode
            && offers_offline
            && !scopes.is_empty()
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".into());
        }
        scopes
    }

    /// Obtains new tokens with the configured grant.
    async fn grant(
        &self,
        state: &mut State,
        challenge: Option<&Challenge>,
        scopes: Option<Vec<String>>,
    ) -> Result<(), Error> {
        let d = self.discovered(state, challenge).await?;
        let scopes = scopes.unwrap_or_else(|| self.select_scopes(challenge, &d));
        match self.config.grant {
            GrantType::AuthorizationCode => self.authorization_code(state, &d, scopes).await,
            GrantType::ClientCredentials | GrantType::CrossAppAccess => {
                self.unattended(state, Some(scopes)).await
            }
        }
    }

    pub(super) fn client_auth<'a>(
        &'a self,
        client: &'a ClientRegistration,
        audience: &'a str,
    ) -> ClientAuth<'a> {
        ClientAuth {
            client_id: &client.client_id,
            secret: client.client_secret.as_deref(),
            method: client.auth_method,
            key: self.config.private_key.as_ref(),
            audience,
        }
    }

    /// Obtains tokens with a grant that needs no person (client credentials, cross-app
    /// access), as the pre-registered client; `scopes` default to the current tokens'.
    async fn unattended(
        &self,
        state: &mut State,
        scopes: Option<Vec<String>>,
    ) -> Result<(), Error> {
        let d = self.discovered(state, None).await?;
        let scopes = scopes.unwrap_or_else(|| {
            state
                .tokens
                .as_ref()
                .map(|t| t.scopes.clone())
                .unwrap_or_default()
        });
        let client = registration::configured(&self.config, &d.server).ok_or_else(|| {
            Error::InvalidConfig {
                server: self.server.clone(),
                reason: "this grant needs a pre-registered client id".into(),
            }
        })?;
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        let assertion;
        let grant = match self.config.grant {
            GrantType::CrossAppAccess => {
                assertion = self.id_jag(&d, scope.as_deref()).await?;
                Grant::JwtBearer {
                    assertion: &assertion,
                    scope: scope.as_deref(),
                }
            }
            // The other grant that comes here (`is_unattended`).
            _ => Grant::ClientCredentials {
                scope: scope.as_deref(),
            },
        };
        let tokens = token::request(
            &self.net,
            &d.server.token_endpoint,
            self.client_auth(&client, &d.server.identity),
            grant,
            &d.resource,
            &scopes,
            None,
        )
        .await?;
        tracing::info!(server = %self.server, grant = ?self.config.grant, "obtained a token without a person");
        self.set_tokens(state, Some(tokens));
        Ok(())
    }

    /// Cross-app access, first half: an ID-JAG from the identity provider for this server
    /// and its authorization server. A fresh one each time: it is single-use and short-lived.
    async fn id_jag(&self, d: &Discovered, scope: Option<&str>) -> Result<String, Error> {
        // RFC 8414 §2: metadata that lists its grants and omits this one will refuse it;
        // say so rather than spend the user's assertion on an exchange that cannot be used.
        if let Some(grants) = &d.server.grant_types_supported {
            if !grants.iter().any(|g| g == JWT_BEARER) {
                return Err(Error::GrantUnsupported {
                    server: self.server.clone(),
                    issuer: d.server.identity.clone(),
                    grant: JWT_BEARER.into(),
                });
            }
        }
        let idp = self
            .config
            .identity_provider
            .as_ref()
            .ok_or_else(|| Error::InvalidConfig {
                server: self.server.clone(),
                reason: "cross-app access needs an identity provider".into(),
            })?;
        let target = xaa::Target {
            // The ID-JAG's `aud` must be the issuer the authorization server knows itself by.
            audience: d.server.issuer.as_deref().unwrap_or(&d.server.identity),
            resource: &d.resource,
            scope,
        };
        let jag = xaa::exchange(&self.net, idp, target).await?;
        tracing::debug!(server = %self.server, "the identity provider issued an id-jag");
        Ok(jag)
    }

    /// Refreshes with the refresh token, under the flow lock. A refused refresh token is
    /// dropped (with the access token), so the next attempt authorizes again.
    async fn refresh_locked(&self, state: &mut State) -> Result<(), Error> {
        let Some(current) = state.tokens.clone() else {
            return Err(Error::NoRefreshToken {
                server: self.server.clone(),
            });
        };
        let Some(refresh_token) = current.refresh_token.clone() else {
            return Err(Error::NoRefreshToken {
                server: self.server.clone(),
            });
        };
        let configured = state
            .discovered
            .as_ref()
            .and_then(|d| registration::configured(&self.config, &d.server));
        let Some(client) = configured.or_else(|| state.client.clone()) else {
            return Err(Error::NoRefreshToken {
                server: self.server.clone(),
            });
        };
        let endpoint = match &state.discovered {
            Some(d) => d.server.token_endpoint.clone(),
            None => Url::parse(&client.token_endpoint).map_err(|_| Error::InvalidConfig {
                server: self.server.clone(),
                reason: "the stored token endpoint is not a url".into(),
            })?,
        };
        let resource = state
            .discovered
            .as_ref()
            .map(|d| d.resource.clone())
            .unwrap_or_else(|| discovery::canonical(&self.endpoint));
        let audience = client.issuer.clone();
        let result = token::request(
            &self.net,
            &endpoint,
            self.client_auth(&client, &audience),
            Grant::Refresh {
                refresh_token: &refresh_token,
            },
            &resource,
            &[],
            Some(&current),
        )
        .await;
        match result {
            Ok(tokens) => {
                tracing::debug!(server = %self.server, "refreshed the access token");
                self.set_tokens(state, Some(tokens));
                Ok(())
            }
            Err(e @ Error::Refused { .. }) => {
                self.set_tokens(state, None);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}
