//! [`Settings`]: a server's `"oauth"` object of a config file, as plain values, and the
//! [`Config`] it makes.

use std::fmt;
use std::path::PathBuf;

use super::{AuthMethod, Config, Error, GrantType, IdentityProvider, PrivateKey, SigningAlgorithm};

/// What a config file says about one server's OAuth (its `"oauth"` object), with variables
/// expanded. `Debug` never shows the secret.
///
/// ```json
/// "oauth": {
///   "clientId": "my-app", "clientSecret": "${MY_APP_SECRET}",
///   "scopes": ["files:read"], "redirectPort": 8976, "grant": "authorization_code"
/// }
/// ```
///
/// Cross-app access names the enterprise identity provider, where the host is another
/// client, and the user's ID token from it (`idToken`, or `idTokenFile` read at each
/// exchange):
///
/// ```json
/// "oauth": {
///   "grant": "cross_app_access", "clientId": "my-app", "clientSecret": "${MY_APP_SECRET}",
///   "identityProvider": {
///     "tokenEndpoint": "https://idp.example.com/oauth2/token",
///     "clientId": "my-app-at-idp", "clientSecret": "${IDP_SECRET}",
///     "idTokenFile": "${HOME}/.cache/idp/id_token"
///   }
/// }
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// `grant`: `authorization_code` (default), `client_credentials` or `cross_app_access`
    /// (the default when there is an `identityProvider`).
    pub grant: GrantType,
    /// `clientId`: a pre-registered client.
    pub client_id: Option<String>,
    /// `clientSecret`: its secret.
    pub client_secret: Option<String>,
    /// `tokenEndpointAuthMethod`: `client_secret_basic`, `client_secret_post`,
    /// `private_key_jwt` or `none`.
    pub auth_method: Option<AuthMethod>,
    /// `privateKeyFile`: a PKCS#8 PEM key for `private_key_jwt`.
    pub private_key_file: Option<PathBuf>,
    /// `signingAlgorithm`: `ES256` (default) or `RS256`.
    pub signing_algorithm: SigningAlgorithm,
    /// `clientMetadataUrl`: this client's metadata document URL.
    pub client_metadata_url: Option<String>,
    /// `scopes`: the scopes to ask for instead of the server's.
    pub scopes: Option<Vec<String>>,
    /// `redirectPort`: the loopback port of the redirect (default: any free port).
    pub redirect_port: Option<u16>,
    /// `identityProvider`: the enterprise identity provider of cross-app access
    /// (`tokenEndpoint`, `clientId`, `clientSecret`, and `idToken` or `idTokenFile`).
    pub identity_provider: Option<IdentityProvider>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .field("private_key_file", &self.private_key_file)
            .field("signing_algorithm", &self.signing_algorithm)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("redirect_port", &self.redirect_port)
            .field("identity_provider", &self.identity_provider)
            .finish()
    }
}

impl Settings {
    /// The [`Config`] these settings describe (without authorizer or store: those are the
    /// host's). Reads the private key file, if any.
    pub fn config(&self, server: &str) -> Result<Config, Error> {
        let mut config = Config::new().grant(self.grant);
        if let Some(id) = &self.client_id {
            config = config.client_id(id.clone());
        }
        if let Some(secret) = &self.client_secret {
            config = config.client_secret(secret.clone());
        }
        if let Some(path) = &self.private_key_file {
            let pem = std::fs::read_to_string(path).map_err(|e| Error::InvalidConfig {
                server: server.into(),
                reason: format!("cannot read the private key {}: {e}", path.display()),
            })?;
            config = config.private_key(PrivateKey::from_pem(pem, self.signing_algorithm));
        }
        if let Some(method) = self.auth_method {
            config = config.auth_method(method);
        }
        if let Some(url) = &self.client_metadata_url {
            config = config.client_metadata_url(url.clone());
        }
        if let Some(scopes) = &self.scopes {
            config = config.scopes(scopes.clone());
        }
        if let Some(idp) = &self.identity_provider {
            // `grant` below still decides: settings that name another grant keep it (and
            // the identity provider goes unused) rather than changing grant silently.
            config = config.identity_provider(idp.clone()).grant(self.grant);
        }
        Ok(config)
    }
}
