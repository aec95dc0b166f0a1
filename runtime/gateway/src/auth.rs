//! Who may use the gateway over HTTP: static keys and JWTs, as an auth file says.
//!
//! A key is compared in constant time with each configured one and names its client
//! (`key:NAME`), with the tools that client may use. A JWT is verified against its issuer's
//! JWKS (fetched on first use, again when a token names a key id the set does not have, at
//! most every [`REFETCH_AFTER`], and every [`REFRESH_EVERY`]): signature (asymmetric
//! algorithms only), `iss`, `aud` (this resource), `exp` and `nbf`; its client is
//! `ISSUER#SUB`, its scopes are `scope` (space-separated) or `scp`, its tools a claim the
//! file names. A token that lacks a required scope is refused with `403 insufficient_scope`.
//! The front client's token is never passed upstream: upstreams use their own credentials,
//! or a token exchanged for it on the client's behalf (`auth.tokenExchange`).
//! No token or key is ever logged.
//!
//! ```json
//! {
//!   "resource": "https://mcp.example.com/mcp",
//!   "keys": [{"name": "ci", "key": "…32 bytes or more…", "tools": ["echo", "github__*"]}],
//!   "jwt": {"issuer": "https://idp.example.com", "jwksUri": "https://idp.example.com/jwks.json",
//!           "toolsClaim": "mcp_tools"},
//!   "requiredScopes": ["mcp"]
//! }
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;
use switchboard_server::http::{Auth, AuthFuture, AuthRefusal, Authenticate};
use switchboard_server::Principal;
use tokio::sync::Mutex;

/// The shortest key accepted: a key is a password nobody types.
pub const MIN_KEY_LEN: usize = 32;

/// How soon an unknown key id may fetch the JWKS again.
pub const REFETCH_AFTER: Duration = Duration::from_secs(30);

/// How often the JWKS is fetched again anyway (keys rotate).
pub const REFRESH_EVERY: Duration = Duration::from_secs(600);

/// An auth file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct AuthConfig {
    /// The endpoint's public URL: what the metadata names, and the JWTs' audience.
    pub resource: String,
    /// Static keys.
    #[serde(default)]
    pub keys: Vec<KeyConfig>,
    /// JWTs from one issuer.
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
    /// Scopes every JWT must grant.
    #[serde(default)]
    pub required_scopes: Vec<String>,
}

/// One static key.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct KeyConfig {
    /// The client it names.
    pub name: String,
    /// The secret itself.
    pub key: String,
    /// The tools its client may use (names or `prefix*`); absent: all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
}

impl std::fmt::Debug for KeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("KeyConfig")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

/// JWTs from one issuer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The `iss` every token must carry; named in the metadata as the authorization server.
    pub issuer: String,
    /// Where the issuer's signing keys are.
    pub jwks_uri: String,
    /// The `aud` tokens must carry (default: the resource).
    #[serde(default)]
    pub audience: Option<String>,
    /// The claim listing the tools a token's client may use (absent from a token: all).
    #[serde(default)]
    pub tools_claim: Option<String>,
}

impl AuthConfig {
    /// Reads an auth file's text; says what is wrong with it, never quoting a key.
    pub fn parse(text: &str) -> Result<AuthConfig, String> {
        let config: AuthConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if config.keys.is_empty() && config.jwt.is_none() {
            return Err("it names no keys and no jwt issuer: nobody could get in".into());
        }
        if let Some(short) = config.keys.iter().find(|k| k.key.len() < MIN_KEY_LEN) {
            return Err(format!(
                "key `{}` is shorter than {MIN_KEY_LEN} bytes",
                short.name
            ));
        }
        if !config.resource.starts_with("http://") && !config.resource.starts_with("https://") {
            return Err(format!(
                "resource {:?} is not an http(s) URL",
                config.resource
            ));
        }
        Ok(config)
    }

    /// The HTTP server's authentication for this file.
    pub fn into_auth(self) -> Auth {
        let issuers: Vec<String> = self.jwt.iter().map(|j| j.issuer.clone()).collect();
        let resource = self.resource.clone();
        let scopes = self.required_scopes.clone();
        Auth::new(Authenticator::new(self), &resource, &issuers, &scopes)
    }
}

/// Checks keys and JWTs.
struct Authenticator {
    config: Arc<AuthConfig>,
    jwks: Option<Arc<Jwks>>,
}

impl Authenticator {
    fn new(config: AuthConfig) -> Authenticator {
        let jwks = config
            .jwt
            .as_ref()
            .map(|jwt| Arc::new(Jwks::new(jwt.jwks_uri.clone())));
        Authenticator {
            config: Arc::new(config),
            jwks,
        }
    }
}

impl Authenticate for Authenticator {
    fn authenticate(&self, token: Option<&str>) -> AuthFuture {
        let Some(token) = token.map(str::to_owned) else {
            return Box::pin(async { Err(AuthRefusal::Missing) });
        };
        if let Some(key) = self.config.keys.iter().find(|k| same(&k.key, &token)) {
            let principal = Principal::new(format!("key:{}", key.name))
                .with_name(key.name.clone())
                .with_tools(key.tools.clone());
            return Box::pin(async move { Ok(Arc::new(principal)) });
        }
        let (Some(jwt), Some(jwks)) = (self.config.jwt.clone(), self.jwks.clone()) else {
            return Box::pin(async {
                Err(AuthRefusal::Invalid("not a key of this server".into()))
            });
        };
        let config = self.config.clone();
        Box::pin(async move { verify(&token, &config, &jwt, &jwks).await.map(Arc::new) })
    }
}

/// Whether a presented token is `key`, in time that tells nothing of the key: their digests
/// are compared whole (a digest's match leaks nothing of where a guess went wrong).
fn same(key: &str, token: &str) -> bool {
    let digest = |s: &str| ring::digest::digest(&ring::digest::SHA256, s.as_bytes());
    let (a, b) = (digest(key), digest(token));
    a.as_ref()
        .iter()
        .zip(b.as_ref())
        .fold(0u8, |differ, (x, y)| differ | (x ^ y))
        == 0
}

/// The principal of a JWT, or why it is refused.
async fn verify(
    token: &str,
    config: &AuthConfig,
    jwt: &JwtConfig,
    jwks: &Jwks,
) -> Result<Principal, AuthRefusal> {
    let invalid = |why: String| AuthRefusal::Invalid(why);
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| invalid(format!("not a JWT: {e}")))?;
    if !matches!(
        header.alg,
        Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512
            | Algorithm::ES256
            | Algorithm::ES384
            | Algorithm::EdDSA
    ) {
        return Err(invalid(format!(
            "algorithm {:?} is not accepted",
            header.alg
        )));
    }
    let kid = header.kid.unwrap_or_default();
    let key = jwks.key(&kid).await.map_err(invalid)?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[&jwt.issuer]);
    validation.set_audience(&[jwt.audience.as_deref().unwrap_or(&config.resource)]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.validate_nbf = true;
    validation.leeway = 30;
    let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
        .map_err(|e| invalid(format!("{e}")))?
        .claims;
    let scopes: Vec<String> = match (&claims["scope"], &claims["scp"]) {
        (Value::String(s), _) => s.split_whitespace().map(str::to_owned).collect(),
        (_, Value::Array(a)) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let missing: Vec<&str> = config
        .required_scopes
        .iter()
        .filter(|s| !scopes.contains(s))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(AuthRefusal::InsufficientScope(
            config.required_scopes.join(" "),
        ));
    }
    let tools = jwt
        .tools_claim
        .as_ref()
        .and_then(|claim| match &claims[claim.as_str()] {
            Value::Array(names) => Some(
                names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        });
    let subject = claims["sub"].as_str().unwrap_or_default().to_owned();
    let claims = match claims {
        Value::Object(claims) => claims,
        _ => serde_json::Map::new(),
    };
    Ok(Principal::new(format!("{}#{subject}", jwt.issuer))
        .with_name(subject)
        .with_claims(claims)
        .with_token(token)
        .with_scopes(scopes)
        .with_tools(tools))
}

/// An issuer's signing keys, fetched when needed.
struct Jwks {
    uri: String,
    http: reqwest::Client,
    keys: ArcSwap<Option<(JwkSet, Instant)>>,
    /// One fetch at a time.
    fetching: Mutex<()>,
}

impl Jwks {
    fn new(uri: String) -> Jwks {
        Jwks {
            uri,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
            keys: ArcSwap::from_pointee(None),
            fetching: Mutex::new(()),
        }
    }

    /// The key `kid` names, fetching the set when it is stale or lacks it.
    async fn key(&self, kid: &str) -> Result<DecodingKey, String> {
        let now = Instant::now();
        if let Some((set, at)) = &**self.keys.load() {
            if now.duration_since(*at) < REFRESH_EVERY {
                if let Some(jwk) = set.find(kid) {
                    return DecodingKey::from_jwk(jwk).map_err(|e| format!("key {kid:?}: {e}"));
                }
                if now.duration_since(*at) < REFETCH_AFTER {
                    return Err(format!("no key {kid:?} in the issuer's key set"));
                }
            }
        }
        let _one = self.fetching.lock().await;
        // Another request may have fetched it meanwhile.
        let fresh = match &**self.keys.load() {
            Some((set, at)) if Instant::now().duration_since(*at) < REFETCH_AFTER => set.clone(),
            _ => {
                let set = self.fetch().await?;
                self.keys
                    .store(Arc::new(Some((set.clone(), Instant::now()))));
                set
            }
        };
        let jwk = fresh
            .find(kid)
            .ok_or_else(|| format!("no key {kid:?} in the issuer's key set"))?;
        DecodingKey::from_jwk(jwk).map_err(|e| format!("key {kid:?}: {e}"))
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        let response = self
            .http
            .get(&self.uri)
            .send()
            .await
            .map_err(|e| format!("the issuer's key set could not be fetched: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "the issuer's key set answered {}",
                response.status()
            ));
        }
        response
            .json::<JwkSet>()
            .await
            .map_err(|e| format!("the issuer's key set is not a JWKS: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_auth_file_must_let_someone_in_with_long_keys() {
        assert!(AuthConfig::parse(r#"{"resource": "http://x/mcp"}"#).is_err());
        let short = AuthConfig::parse(
            r#"{"resource": "http://x/mcp", "keys": [{"name": "a", "key": "short"}]}"#,
        )
        .unwrap_err();
        assert!(
            short.contains("`a`") && !short.contains("short\""),
            "{short}"
        );
        let long = "k".repeat(MIN_KEY_LEN);
        let ok = format!(
            r#"{{"resource": "http://x/mcp", "keys": [{{"name": "a", "key": "{long}"}}]}}"#
        );
        assert!(AuthConfig::parse(&ok).is_ok());
        assert!(!format!("{:?}", AuthConfig::parse(&ok).unwrap()).contains(&long));
    }
}
