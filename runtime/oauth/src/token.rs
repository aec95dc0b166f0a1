//! Token endpoint requests: the authorization code exchange, refresh, the client
//! credentials grant, the JWT bearer grant (RFC 7523, cross-app access) and the token
//! exchange on a client's behalf (RFC 8693, a gateway's), each with the `resource` parameter (RFC 8707) and the client's
//! authentication (`client_secret_basic`, `client_secret_post`, `private_key_jwt` or
//! `none`), and the parsing of what comes back.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use url::Url;

use super::crypto::PrivateKey;
use super::error::{Error, Step};
use super::net::{basic_auth, Net};
use super::store::TokenSet;
use super::AuthMethod;

/// The client as the token endpoint sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAuth<'a> {
    pub(crate) client_id: &'a str,
    pub(crate) secret: Option<&'a str>,
    pub(crate) method: AuthMethod,
    pub(crate) key: Option<&'a PrivateKey>,
    /// The `aud` of a JWT assertion: the authorization server's issuer.
    pub(crate) audience: &'a str,
}

/// What is asked for.
#[derive(Debug)]
pub(crate) enum Grant<'a> {
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    },
    Refresh {
        refresh_token: &'a str,
    },
    ClientCredentials {
        scope: Option<&'a str>,
    },
    /// RFC 7523 §2.1: an authorization grant (for cross-app access, the ID-JAG).
    JwtBearer {
        assertion: &'a str,
        scope: Option<&'a str>,
    },
    /// RFC 8693 §2.1: a client's access token exchanged for one meant for the server.
    OnBehalfOf {
        subject_token: &'a str,
        audience: Option<&'a str>,
        scope: Option<&'a str>,
    },
}

/// RFC 8693's grant type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 8693 §3: the token type of an access token.
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// RFC 7523's grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl Grant<'_> {
    fn step(&self) -> Step {
        match self {
            Grant::Code { .. } => Step::CodeExchange,
            Grant::Refresh { .. } => Step::Refresh,
            Grant::ClientCredentials { .. } => Step::ClientCredentials,
            Grant::JwtBearer { .. } => Step::JwtBearer,
            Grant::OnBehalfOf { .. } => Step::OnBehalfOf,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Makes one token request. `requested` is the scope asked for (kept as the granted scope
/// when the answer names none); a refresh keeps `previous`'s refresh token when the server
/// sends no new one.
pub(crate) async fn request(
    net: &Net,
    endpoint: &Url,
    client: ClientAuth<'_>,
    grant: Grant<'_>,
    resource: &str,
    requested: &[String],
    previous: Option<&TokenSet>,
) -> Result<TokenSet, Error> {
    let step = grant.step();
    let mut form: Vec<(&str, &str)> = Vec::new();
    match &grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            form.push(("grant_type", "authorization_code"));
            form.push(("code", code));
            form.push(("code_verifier", verifier));
            form.push(("redirect_uri", redirect_uri));
        }
        Grant::Refresh { refresh_token } => {
            form.push(("grant_type", "refresh_token"));
            form.push(("refresh_token", refresh_token));
        }
        Grant::ClientCredentials { scope } => {
            form.push(("grant_type", "client_credentials"));
            if let Some(scope) = scope {
                form.push(("scope", scope));
            }
        }
        Grant::JwtBearer { assertion, scope } => {
            form.push(("grant_type", JWT_BEARER));
            form.push(("assertion", assertion));
            if let Some(scope) = scope {
                form.push(("scope", scope));
            }
        }
        Grant::OnBehalfOf { .. } => {}
    }
    if let Grant::OnBehalfOf {
        subject_token,
        audience,
        scope,
    } = &grant
    {
        form.push(("grant_type", TOKEN_EXCHANGE));
        form.push(("subject_token", subject_token));
        form.push(("subject_token_type", ACCESS_TOKEN));
        form.push(("requested_token_type", ACCESS_TOKEN));
        if let Some(audience) = audience {
            form.push(("audience", audience));
        }
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
    }
    form.push(("resource", resource));
    let assertion;
    let mut basic = None;
    match client.method {
        AuthMethod::ClientSecretBasic => {
            let secret = client.secret.ok_or_else(|| no_secret(net, client.method))?;
            basic =
                Some(
                    basic_auth(client.client_id, secret).ok_or_else(|| Error::InvalidConfig {
                        server: net.server.clone(),
                        reason: "the client id or secret is not a valid header value".into(),
                    })?,
                );
        }
        AuthMethod::ClientSecretPost => {
            let secret = client.secret.ok_or_else(|| no_secret(net, client.method))?;
            form.push(("client_id", client.client_id));
            form.push(("client_secret", secret));
        }
        AuthMethod::PrivateKeyJwt => {
            let key = client.key.ok_or_else(|| Error::InvalidConfig {
                server: net.server.clone(),
                reason: "private_key_jwt needs a private key".into(),
            })?;
            assertion = key
                .assertion(client.client_id, client.audience)
                .map_err(|reason| Error::InvalidConfig {
                    server: net.server.clone(),
                    reason,
                })?;
            form.push(("client_id", client.client_id));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            form.push(("client_assertion", &assertion));
        }
        AuthMethod::None => form.push(("client_id", client.client_id)),
    }
    let answer = net.post_form(step, endpoint, &form, basic).await?;
    let body = answer.json();
    if !answer.status.is_success() {
        return Err(refusal(net, step, endpoint, answer.status, body.as_ref()));
    }
    let body = body.ok_or_else(|| bad(net, step, "not json"))?;
    parse(net, step, &body, requested, previous)
}

/// The error of a token endpoint that did not answer 2xx: its OAuth error when the body
/// has one, else the status.
pub(crate) fn refusal(
    net: &Net,
    step: Step,
    endpoint: &Url,
    status: reqwest::StatusCode,
    body: Option<&Value>,
) -> Error {
    match body.and_then(oauth_error) {
        Some((error, description)) => Error::Refused {
            server: net.server.clone(),
            step,
            error,
            description,
        },
        None => Error::Status {
            server: net.server.clone(),
            step,
            url: super::net::display(endpoint),
            status: status.as_u16(),
        },
    }
}

fn no_secret(net: &Net, method: AuthMethod) -> Error {
    Error::InvalidConfig {
        server: net.server.clone(),
        reason: format!("{} needs a client secret", method.as_str()),
    }
}

fn bad(net: &Net, step: Step, reason: &str) -> Error {
    Error::BadTokenResponse {
        server: net.server.clone(),
        step,
        reason: reason.to_owned(),
    }
}

/// An OAuth error body's `error` and `error_description`.
pub(crate) fn oauth_error(body: &Value) -> Option<(String, Option<String>)> {
    let error = body.get("error")?.as_str()?.to_owned();
    let description = body
        .get("error_description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some((error, description))
}

/// A successful token response (RFC 6749 §5.1).
fn parse(
    net: &Net,
    step: Step,
    body: &Value,
    requested: &[String],
    previous: Option<&TokenSet>,
) -> Result<TokenSet, Error> {
    let access_token = body
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad(net, step, "no access_token"))?;
    match body.get("token_type").and_then(Value::as_str) {
        Some(kind) if !kind.eq_ignore_ascii_case("bearer") => {
            return Err(bad(net, step, &format!("token_type {kind} is not bearer")));
        }
        _ => {}
    }
    let lifetime_ms = body
        .get("expires_in")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        // A lifetime of 0 would make every request refresh first (one refresh per call,
        // in a row): it says nothing useful, so the token is used until it is refused, as
        // one without `expires_in` is.
        .filter(|&s| s > 0)
        .map(|s| s.saturating_mul(1000));
    let scopes = match body.get("scope").and_then(Value::as_str) {
        Some(scope) => split_scope(scope),
        None => match previous {
            Some(previous) if requested.is_empty() => previous.scopes.clone(),
            _ => requested.to_vec(),
        },
    };
    let refresh_token = body
        .get("refresh_token")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| previous.and_then(|p| p.refresh_token.clone()));
    Ok(TokenSet {
        access_token: access_token.to_owned(),
        refresh_token,
        expires_at_ms: lifetime_ms.map(|l| now_ms().saturating_add(l)),
        lifetime_ms,
        scopes,
    })
}

/// A space-separated scope string as a list.
pub(crate) fn split_scope(scope: &str) -> Vec<String> {
    scope.split_whitespace().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn net() -> Net {
        Net::new("s".into(), std::time::Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn token_responses() {
        let ok = parse(
            &net(),
            Step::CodeExchange,
            &json!({"access_token": "a", "token_type": "Bearer", "expires_in": 60, "refresh_token": "r"}),
            &["x".into()],
            None,
        )
        .unwrap();
        assert_eq!(ok.scopes, ["x"]);
        assert_eq!(ok.lifetime_ms, Some(60_000));
        assert_eq!(ok.refresh_token.as_deref(), Some("r"));
        let missing = parse(
            &net(),
            Step::CodeExchange,
            &json!({"token_type": "Bearer"}),
            &[],
            None,
        );
        assert!(matches!(missing, Err(Error::BadTokenResponse { .. })));
        for expires_in in [json!(0), json!("0"), json!(-5), json!("soon")] {
            let unknown = parse(
                &net(),
                Step::CodeExchange,
                &json!({"access_token": "a", "expires_in": expires_in}),
                &[],
                None,
            )
            .unwrap();
            assert_eq!(
                (unknown.lifetime_ms, unknown.expires_at_ms),
                (None, None),
                "{expires_in}"
            );
        }
        let dpop = parse(
            &net(),
            Step::CodeExchange,
            &json!({"access_token": "a", "token_type": "DPoP"}),
            &[],
            None,
        );
        assert!(matches!(dpop, Err(Error::BadTokenResponse { .. })));
        // A refresh without a new refresh token keeps the old one, and the granted scope.
        let refreshed = parse(
            &net(),
            Step::Refresh,
            &json!({"access_token": "b", "scope": "x y"}),
            &[],
            Some(&ok),
        )
        .unwrap();
        assert_eq!(refreshed.refresh_token.as_deref(), Some("r"));
        assert_eq!(refreshed.scopes, ["x", "y"]);
        assert_eq!(refreshed.expires_at_ms, None);
    }

    #[test]
    fn error_bodies() {
        assert_eq!(
            oauth_error(&json!({"error": "invalid_grant", "error_description": "revoked"})),
            Some(("invalid_grant".into(), Some("revoked".into())))
        );
        assert_eq!(oauth_error(&json!({"message": "x"})), None);
    }
}
