//! The authorization code grant (OAuth 2.1 §4.1): registration when needed, the
//! authorization request with PKCE `S256`, `state` and `resource`, the person's approval
//! through the [`Authorizer`](super::Authorizer), the checks of the redirect (`state`, then
//! `iss` per RFC 9207, then `error`), and the code exchange.

use url::Url;

use super::authorizer::AuthorizationRequest;
use super::crypto::{random_string, Pkce};
use super::discovery::{self, Discovered};
use super::error::{Error, Step};
use super::flow::{Inner, State};
use super::registration;
use super::token::{self, Grant};

impl Inner {
    pub(super) async fn authorization_code(
        &self,
        state: &mut State,
        d: &Discovered,
        scopes: Vec<String>,
    ) -> Result<(), Error> {
        // MCP 2025-11-25: no `code_challenge_methods_supported`, or no S256 in it, means no
        // PKCE: refuse rather than send a code that can be intercepted (and before
        // registering a client that could not be used).
        if !d.server.pkce_s256 {
            return Err(Error::PkceUnsupported {
                server: self.server.clone(),
                issuer: d.server.identity.clone(),
            });
        }
        let Some(authorization_endpoint) = d.server.authorization_endpoint.clone() else {
            return Err(Error::BadMetadata {
                server: self.server.clone(),
                step: Step::ServerMetadata,
                url: d.server.identity.clone(),
                reason: "no `authorization_endpoint`, which the authorization code grant needs"
                    .into(),
            });
        };
        let authorizer = self
            .config
            .authorizer
            .clone()
            .ok_or_else(|| Error::NoAuthorizer {
                server: self.server.clone(),
            })?;
        let redirect_uri = authorizer.redirect_uri();
        let client = match registration::configured(&self.config, &d.server) {
            Some(client) => client,
            None => match state.client.clone().filter(|c| {
                c.issuer == d.server.identity
                    && c.redirect_uri
                        .as_deref()
                        .map_or(true, |r| r == redirect_uri)
            }) {
                Some(client) => client,
                None => {
                    let client =
                        registration::register(&self.net, &self.config, &d.server, &redirect_uri)
                            .await?;
                    state.client = Some(client.clone());
                    self.persist(state);
                    client
                }
            },
        };
        let failed = |reason: &str| Error::Authorizer {
            server: self.server.clone(),
            reason: reason.to_owned(),
        };
        let pkce = Pkce::new().map_err(|e| failed(&e))?;
        let sent_state = random_string(24).map_err(|e| failed(&e))?;
        let mut url = authorization_endpoint;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &sent_state);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
            query.append_pair("resource", &d.resource);
        }
        tracing::info!(server = %self.server, "authorization needed; asking the authorizer");
        let redirect = authorizer
            .authorize(AuthorizationRequest {
                server: self.server.clone(),
                url,
                redirect_uri: redirect_uri.clone(),
                state: sent_state.clone(),
            })
            .await
            .map_err(|reason| failed(&reason))?;
        let redirect = Url::parse(&redirect).map_err(|_| failed("the redirect is not a url"))?;
        let code = self.check_redirect(d, &redirect, &sent_state)?;
        let tokens = token::request(
            &self.net,
            &d.server.token_endpoint,
            self.client_auth(&client, &d.server.identity),
            Grant::Code {
                code: &code,
                verifier: &pkce.verifier,
                redirect_uri: &redirect_uri,
            },
            &d.resource,
            &scopes,
            None,
        )
        .await?;
        tracing::info!(server = %self.server, scope = %tokens.scopes.join(" "), "authorized");
        self.set_tokens(state, Some(tokens));
        Ok(())
    }

    /// The code of an authorization response, once its `state` and `iss` (RFC 9207) check
    /// out and it carries no error.
    fn check_redirect(
        &self,
        d: &Discovered,
        redirect: &Url,
        sent_state: &str,
    ) -> Result<String, Error> {
        let param = |name: &str| {
            redirect
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if param("state").as_deref() != Some(sent_state) {
            return Err(Error::StateMismatch {
                server: self.server.clone(),
            });
        }
        match (param("iss"), &d.server.issuer) {
            (Some(iss), Some(expected)) if !discovery::same_issuer(&iss, expected) => {
                return Err(Error::IssuerMismatch {
                    server: self.server.clone(),
                    step: Step::Authorization,
                    expected: expected.clone(),
                    found: iss,
                })
            }
            (None, Some(expected)) if d.server.iss_parameter_supported => {
                return Err(Error::IssuerMismatch {
                    server: self.server.clone(),
                    step: Step::Authorization,
                    expected: expected.clone(),
                    found: String::new(),
                })
            }
            _ => {}
        }
        if let Some(error) = param("error") {
            return Err(Error::Refused {
                server: self.server.clone(),
                step: Step::Authorization,
                error,
                description: param("error_description"),
            });
        }
        param("code")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| Error::Authorizer {
                server: self.server.clone(),
                reason: "the redirect carries no code".into(),
            })
    }
}
