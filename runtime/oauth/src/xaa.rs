//! Cross-app access (Enterprise-Managed Authorization, SEP-990): the identity provider side.
//!
//! A user signed in to the host through an enterprise identity provider (IdP), which gave it
//! an identity assertion (an OpenID Connect ID token). To reach an MCP server without a
//! browser, the client exchanges that assertion at the IdP's token endpoint (RFC 8693 token
//! exchange) for an Identity Assertion JWT Authorization Grant (ID-JAG) naming the MCP
//! server's authorization server (`audience`) and the server itself (`resource`). The flow
//! (`flow.rs`) then presents the ID-JAG to the authorization server with the JWT bearer
//! grant (RFC 7523), authenticating as the client registered there, and gets an access
//! token. This file is the first half: the [`IdentityProvider`] settings (its docs have an
//! example) and the exchange.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;
use url::Url;

use super::error::{Error, Step};
use super::net::Net;
use super::token;

/// RFC 8693's grant type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant).
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

/// Where the identity assertion (the user's ID token from the IdP) comes from.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentityAssertion {
    /// The ID token itself.
    IdToken(String),
    /// A file holding the ID token, read again for every exchange, so that whatever keeps
    /// the user signed in can replace an expired token there.
    IdTokenFile(PathBuf),
}

impl fmt::Debug for IdentityAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentityAssertion::IdToken(_) => f.write_str("IdToken(<redacted>)"),
            IdentityAssertion::IdTokenFile(path) => {
                f.debug_tuple("IdTokenFile").field(path).finish()
            }
        }
    }
}

/// The enterprise identity provider of cross-app access: its token endpoint, this host's
/// client there, and the user's identity assertion. `Debug` never shows the secret or the
/// token.
///
/// ```
/// use switchboard_oauth::{self as oauth, IdentityAssertion, IdentityProvider};
///
/// let idp = IdentityProvider::new(
///     "https://idp.example.com/oauth2/token",
///     "mcp-host-at-idp",
///     IdentityAssertion::IdTokenFile("/run/user/1000/idp/id_token".into()),
/// )
/// .client_secret("idp-secret");
/// let config = oauth::Config::new()
///     .client_id("mcp-host-at-the-server")
///     .client_secret("server-secret")
///     .identity_provider(idp);
/// # let _ = config;
/// ```
///
/// # Security
///
/// The ID token and the secret go only to `token_endpoint`, which must be https (http only
/// on a loopback host) and is not followed through redirects. The ID-JAG it returns is sent
/// only to the MCP server's authorization server, once, and kept nowhere.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentityProvider {
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) assertion: IdentityAssertion,
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("assertion", &self.assertion)
            .finish()
    }
}

impl IdentityProvider {
    /// The IdP whose token endpoint is `token_endpoint` (https, or http on a loopback
    /// host), where this host is the client `client_id`, for the user `assertion` names.
    pub fn new(
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        assertion: IdentityAssertion,
    ) -> IdentityProvider {
        IdentityProvider {
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            assertion,
        }
    }

    /// The client's secret at the IdP, sent in the exchange's body (`client_secret_post`);
    /// without one the exchange sends only `client_id`.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The IdP's token endpoint.
    pub fn token_endpoint(&self) -> &str {
        &self.token_endpoint
    }

    /// This host's client id at the IdP.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The token endpoint as a URL, checked to be https (http only on a loopback host).
    pub(crate) fn endpoint(&self, net: &Net) -> Result<Url, Error> {
        let url = Url::parse(&self.token_endpoint).map_err(|e| Error::InvalidConfig {
            server: net.server.clone(),
            reason: format!("the identity provider's token endpoint is not a url: {e}"),
        })?;
        super::discovery::secure(net, Step::TokenExchange, &url)?;
        Ok(url)
    }

    /// The identity assertion now (a file is read again each time).
    fn subject_token(&self, net: &Net) -> Result<String, Error> {
        let token = match &self.assertion {
            IdentityAssertion::IdToken(token) => token.clone(),
            IdentityAssertion::IdTokenFile(path) => std::fs::read_to_string(path)
                .map_err(|e| Error::InvalidConfig {
                    server: net.server.clone(),
                    reason: format!("cannot read the id token file {}: {e}", path.display()),
                })?
                .trim()
                .to_owned(),
        };
        if token.is_empty() {
            return Err(Error::InvalidConfig {
                server: net.server.clone(),
                reason: "the identity assertion (id token) is empty".into(),
            });
        }
        Ok(token)
    }
}

/// What the exchange asks the IdP for: an ID-JAG for `audience` (the authorization
/// server's issuer) and `resource` (the MCP server), with `scope` if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) audience: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) scope: Option<&'a str>,
}

/// Exchanges the identity assertion for an ID-JAG at the IdP (RFC 8693 §2), and returns
/// the ID-JAG. The response must say it issued an ID-JAG: anything else presented as an
/// authorization grant would be a token meant for another use.
pub(crate) async fn exchange(
    net: &Net,
    idp: &IdentityProvider,
    target: Target<'_>,
) -> Result<String, Error> {
    let endpoint = idp.endpoint(net)?;
    let subject_token = idp.subject_token(net)?;
    let mut form: Vec<(&str, &str)> = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG),
        ("audience", target.audience),
        ("resource", target.resource),
        ("subject_token", &subject_token),
        ("subject_token_type", ID_TOKEN),
        ("client_id", &idp.client_id),
    ];
    if let Some(scope) = target.scope {
        form.push(("scope", scope));
    }
    if let Some(secret) = &idp.client_secret {
        form.push(("client_secret", secret));
    }
    let answer = net
        .post_form(Step::TokenExchange, &endpoint, &form, None)
        .await?;
    let body = answer.json();
    if !answer.status.is_success() {
        return Err(token::refusal(
            net,
            Step::TokenExchange,
            &endpoint,
            answer.status,
            body.as_ref(),
        ));
    }
    let body = body.ok_or_else(|| bad(net, "not json".into()))?;
    id_jag(net, &body)
}

/// The ID-JAG of a token exchange response (RFC 8693 §2.2.1).
fn id_jag(net: &Net, body: &Value) -> Result<String, Error> {
    match body.get("issued_token_type").and_then(Value::as_str) {
        Some(ID_JAG) => {}
        Some(other) => {
            // The type is the IdP's text, not a secret; bounded so an error stays readable.
            let shown: String = other.chars().take(80).collect();
            return Err(bad(
                net,
                format!("issued_token_type {shown} is not an id-jag"),
            ));
        }
        None => return Err(bad(net, "no issued_token_type".into())),
    }
    body.get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| bad(net, "no access_token (the id-jag)".into()))
}

fn bad(net: &Net, reason: String) -> Error {
    Error::BadTokenResponse {
        server: net.server.clone(),
        step: Step::TokenExchange,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn net() -> Net {
        Net::new("s".into(), std::time::Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn only_an_id_jag_is_accepted() {
        let good = json!({"access_token": "jag", "issued_token_type": ID_JAG, "token_type": "N_A"});
        assert_eq!(id_jag(&net(), &good).unwrap(), "jag");
        let cases = [
            json!({"issued_token_type": ID_JAG, "token_type": "N_A"}),
            json!({"access_token": "", "issued_token_type": ID_JAG}),
            json!({"access_token": "at", "token_type": "Bearer"}),
            json!({"access_token": "at", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
        ];
        for body in cases {
            let error = id_jag(&net(), &body).unwrap_err();
            assert!(
                matches!(
                    error,
                    Error::BadTokenResponse {
                        step: Step::TokenExchange,
                        ..
                    }
                ),
                "{body}: {error:?}"
            );
            assert!(!error.to_string().contains("\"at\""), "{error}");
        }
    }

    #[test]
    fn debug_hides_the_secret_and_the_token() {
        let idp = IdentityProvider::new(
            "https://idp.example/token",
            "app",
            IdentityAssertion::IdToken("eyJ.secret.token".into()),
        )
        .client_secret("hunter2");
        let shown = format!("{idp:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("eyJ"),
            "{shown}"
        );
        assert!(shown.contains("app"), "{shown}");
    }

    #[test]
    fn the_id_token_file_is_read_and_trimmed() {
        let dir = std::env::temp_dir().join(format!("sb-xaa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id_token");
        std::fs::write(&path, "tok-1\n").unwrap();
        let idp = IdentityProvider::new(
            "https://idp.example/token",
            "app",
            IdentityAssertion::IdTokenFile(path.clone()),
        );
        assert_eq!(idp.subject_token(&net()).unwrap(), "tok-1");
        std::fs::write(&path, "tok-2").unwrap();
        assert_eq!(idp.subject_token(&net()).unwrap(), "tok-2", "read again");
        std::fs::write(&path, " \n").unwrap();
        assert!(matches!(
            idp.subject_token(&net()),
            Err(Error::InvalidConfig { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_endpoint_must_be_secure() {
        let idp = |url: &str| {
            IdentityProvider::new(url, "app", IdentityAssertion::IdToken("t".into()))
                .endpoint(&net())
        };
        assert!(idp("https://idp.example/token").is_ok());
        assert!(idp("http://127.0.0.1:9/token").is_ok());
        assert!(matches!(
            idp("http://idp.example/token"),
            Err(Error::InsecureEndpoint {
                step: Step::TokenExchange,
                ..
            })
        ));
        assert!(matches!(idp("not a url"), Err(Error::InvalidConfig { .. })));
    }
}
