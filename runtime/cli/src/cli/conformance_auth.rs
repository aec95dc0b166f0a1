//! The OAuth set-up of `switchboard conformance-client` for the suite's `auth/*` scenarios.
//!
//! The suite's authorization servers approve without a person, so the authorization URL is
//! approved by [`Headless`](switchboard::oauth::Headless) (GET it, read the `code` from the
//! redirect). The scenario's `MCP_CONFORMANCE_CONTEXT` (JSON) carries pre-registered
//! credentials: `client_id`, `client_secret`, and for `private_key_jwt` a PKCS#8
//! `private_key_pem` and its `signing_algorithm`. The `client-credentials-*` scenarios use
//! the client credentials grant; the `cross-app-access-*` ones cross-app access, with the
//! suite's identity provider (`idp_token_endpoint`, `idp_client_id`, and the user's
//! `idp_id_token`); all others the authorization code grant, with the suite's Client ID
//! Metadata Document URL offered where the server supports those.

use std::sync::Arc;

use serde_json::Value;
use switchboard::oauth::{
    self, GrantType, IdentityAssertion, IdentityProvider, OAuth, PrivateKey, SigningAlgorithm,
};
use switchboard::transport::Auth;

use super::Failure;

/// The environment variable the harness passes a scenario's context in.
const CONTEXT_VAR: &str = "MCP_CONFORMANCE_CONTEXT";
/// The client metadata URL the suite's `basic-cimd` scenario expects as `client_id`.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Where the headless authorizer says it is redirected to; nothing listens there.
const REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// The auth hook for `scenario` against `url`: `None` for scenarios without OAuth.
pub(super) fn hook(
    scenario: &str,
    server: &str,
    url: &str,
) -> Result<Option<Arc<dyn Auth>>, Failure> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context: Value = match std::env::var(CONTEXT_VAR) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
            .map_err(|e| Failure::Usage(format!("{CONTEXT_VAR} is not json: {e}")))?,
        _ => Value::Null,
    };
    let field = |name: &str| context.get(name).and_then(Value::as_str);
    let mut config = oauth::Config::new();
    if let Some(id) = field("client_id") {
        config = config.client_id(id);
    }
    if let Some(secret) = field("client_secret") {
        config = config.client_secret(secret);
    }
    if let Some(pem) = field("private_key_pem") {
        let name = field("signing_algorithm").unwrap_or("ES256");
        let algorithm = SigningAlgorithm::parse(name)
            .ok_or_else(|| Failure::Usage(format!("unsupported signing algorithm {name}")))?;
        config = config.private_key(PrivateKey::from_pem(pem, algorithm));
    }
    if scenario.starts_with("auth/client-credentials") {
        config = config.grant(GrantType::ClientCredentials);
    } else if scenario.starts_with("auth/cross-app-access") {
        let required = |name: &str| {
            field(name).ok_or_else(|| Failure::Usage(format!("{CONTEXT_VAR} has no {name}")))
        };
        let idp = IdentityProvider::new(
            required("idp_token_endpoint")?,
            required("idp_client_id")?,
            IdentityAssertion::IdToken(required("idp_id_token")?.to_owned()),
        );
        config = config.identity_provider(idp);
    } else {
        let headless =
            oauth::Headless::new(REDIRECT_URI).map_err(|e| Failure::Run(e.to_string()))?;
        config = config
            .authorizer(Arc::new(headless))
            .client_metadata_url(CLIENT_METADATA_URL);
    }
    let auth = OAuth::new(server, url, config).map_err(|e| Failure::Usage(e.to_string()))?;
    Ok(Some(Arc::new(auth)))
}
