//! A server's `"oauth"` object, read into [`Settings`], and its `"auth"` object (a gateway's
//! token exchange, read into a [`TokenExchange`]), with variables expanded.

use serde_json::{Map, Value};

use super::{field, ConfigError, Ctx, JsonPath};
use crate::oauth::{
    AuthMethod, GrantType, IdentityAssertion, IdentityProvider, Settings, SigningAlgorithm,
    TokenExchange,
};

const FIELDS: &[&str] = &[
    "grant",
    "clientId",
    "clientSecret",
    "tokenEndpointAuthMethod",
    "privateKeyFile",
    "signingAlgorithm",
    "clientMetadataUrl",
    "scopes",
    "redirectPort",
    "identityProvider",
];

const IDP_FIELDS: &[&str] = &[
    "tokenEndpoint",
    "clientId",
    "clientSecret",
    "idToken",
    "idTokenFile",
];

/// Reads an `"oauth"` object.
pub(super) fn settings(
    ctx: &Ctx<'_>,
    value: &Value,
    at: &JsonPath,
) -> Result<Settings, ConfigError> {
    let object = known_fields(ctx, value, at, FIELDS)?;
    let text = |name: &str| text(ctx, object, at, name);
    let mut settings = Settings::default();
    if let Some(idp) = field(object, "identityProvider") {
        settings.identity_provider =
            Some(identity_provider(ctx, idp, &at.key("identityProvider"))?);
        settings.grant = GrantType::CrossAppAccess;
    }
    if let Some(grant) = text("grant")? {
        settings.grant = match grant.as_str() {
            "authorization_code" => GrantType::AuthorizationCode,
            "client_credentials" => GrantType::ClientCredentials,
            "cross_app_access" => GrantType::CrossAppAccess,
            _ => {
                return Err(ctx.error(
                    &at.key("grant"),
                    "expected authorization_code, client_credentials or cross_app_access",
                ))
            }
        };
        if settings.identity_provider.is_some() && settings.grant != GrantType::CrossAppAccess {
            return Err(ctx.error(
                &at.key("identityProvider"),
                "an identity provider is only for the cross_app_access grant",
            ));
        }
    }
    settings.client_id = text("clientId")?;
    settings.client_secret = text("clientSecret")?;
    if let Some(method) = text("tokenEndpointAuthMethod")? {
        settings.auth_method = Some(AuthMethod::parse(&method).ok_or_else(|| {
            ctx.error(
                &at.key("tokenEndpointAuthMethod"),
                "expected client_secret_basic, client_secret_post, private_key_jwt or none",
            )
        })?);
    }
    settings.private_key_file = text("privateKeyFile")?.map(Into::into);
    if let Some(alg) = text("signingAlgorithm")? {
        settings.signing_algorithm = SigningAlgorithm::parse(&alg)
            .ok_or_else(|| ctx.error(&at.key("signingAlgorithm"), "expected ES256 or RS256"))?;
    }
    settings.client_metadata_url = text("clientMetadataUrl")?;
    if let Some(scopes) = field(object, "scopes") {
        let scopes_at = at.key("scopes");
        let list = match scopes {
            Value::String(s) => ctx
                .expand(s, &scopes_at)?
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            other => {
                let mut list = Vec::new();
                for (scope, scope_at) in ctx.strings(other, &scopes_at)? {
                    list.push(ctx.expand(scope, &scope_at)?);
                }
                list
            }
        };
        settings.scopes = Some(list);
    }
    if let Some(port) = field(object, "redirectPort") {
        let port_at = at.key("redirectPort");
        settings.redirect_port = Some(
            port.as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| ctx.error(&port_at, "expected a port number (0 to 65535)"))?,
        );
    }
    if settings.grant == GrantType::ClientCredentials && settings.client_id.is_none() {
        return Err(ctx.error(at, "the client_credentials grant needs a `clientId`"));
    }
    if settings.grant == GrantType::CrossAppAccess {
        if settings.client_id.is_none() {
            return Err(ctx.error(
                at,
                "the cross_app_access grant needs a `clientId` (the one the identity provider names in its grants)",
            ));
        }
        if settings.identity_provider.is_none() {
            return Err(ctx.error(at, "the cross_app_access grant needs an `identityProvider`"));
        }
    }
    Ok(settings)
}

const EXCHANGE_FIELDS: &[&str] = &[
    "tokenEndpoint",
    "clientId",
    "clientSecret",
    "clientSecretEnv",
    "audience",
    "scope",
];

/// How each client's instance of a server authenticates: a server's `"auth"` object.
pub(super) enum ClientAuth {
    /// `{"tokenExchange": {...}}`: the client's token exchanged (RFC 8693).
    Exchange(TokenExchange),
    /// `{"perUser": "oauth"}`: the client's own OAuth authorization.
    PerUser,
}

/// Reads an `"auth"` object (`{"tokenExchange": {...}}` or `{"perUser": "oauth"}`) of HTTP
/// server `server` at `url`.
pub(super) fn auth(
    ctx: &Ctx<'_>,
    value: &Value,
    at: &JsonPath,
    server: &str,
    url: &str,
) -> Result<ClientAuth, ConfigError> {
    let object = known_fields(ctx, value, at, &["tokenExchange", "perUser"])?;
    let (Some(exchange), None) = (field(object, "tokenExchange"), field(object, "perUser")) else {
        return match field(object, "perUser") {
            Some(Value::String(how)) if how == "oauth" && object.len() == 1 => {
                Ok(ClientAuth::PerUser)
            }
            Some(_) if object.len() == 1 => {
                Err(ctx.error(&at.key("perUser"), "expected \"oauth\""))
            }
            _ => Err(ctx.error(
                at,
                "expected one of `tokenExchange` (an object) and `perUser` (\"oauth\")",
            )),
        };
    };
    let at = at.key("tokenExchange");
    let object = known_fields(ctx, exchange, &at, EXCHANGE_FIELDS)?;
    let text = |name: &str| text(ctx, object, &at, name);
    let required = |name: &str| {
        text(name)?.ok_or_else(|| ctx.error(&at, format!("a token exchange needs `{name}`")))
    };
    let token_endpoint = required("tokenEndpoint")?;
    if !(token_endpoint.starts_with("https://") || token_endpoint.starts_with("http://")) {
        return Err(ctx.error(&at.key("tokenEndpoint"), "expected an https URL"));
    }
    let mut exchange = TokenExchange::new(server, url, token_endpoint, required("clientId")?);
    match (text("clientSecret")?, text("clientSecretEnv")?) {
        (Some(_), Some(_)) => {
            return Err(ctx.error(&at, "give `clientSecret` or `clientSecretEnv`, not both"))
        }
        (Some(secret), None) => exchange = exchange.client_secret(secret),
        (None, Some(var)) => {
            let secret = (ctx.env)(&var).filter(|s| !s.is_empty()).ok_or_else(|| {
                ctx.error(
                    &at.key("clientSecretEnv"),
                    format!("environment variable `{var}` is not set"),
                )
            })?;
            exchange = exchange.client_secret(secret);
        }
        (None, None) => {}
    }
    if let Some(audience) = text("audience")? {
        exchange = exchange.audience(audience);
    }
    if let Some(scope) = text("scope")? {
        exchange = exchange.scope(scope);
    }
    Ok(ClientAuth::Exchange(exchange))
}

/// `value` as an object with only the `known` fields.
fn known_fields<'v>(
    ctx: &Ctx<'_>,
    value: &'v Value,
    at: &JsonPath,
    known: &[&str],
) -> Result<&'v Map<String, Value>, ConfigError> {
    let object = ctx.object(value, at)?;
    if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(ctx.error(
            &at.key(unknown),
            format!("unknown field; expected one of {}", known.join(", ")),
        ));
    }
    Ok(object)
}

/// The field `name` of `object`, a non-empty string with variables expanded, if present.
fn text(
    ctx: &Ctx<'_>,
    object: &Map<String, Value>,
    at: &JsonPath,
    name: &str,
) -> Result<Option<String>, ConfigError> {
    match field(object, name) {
        None => Ok(None),
        Some(v) => {
            let at = at.key(name);
            Ok(Some(ctx.expand(ctx.non_empty_string(v, &at)?, &at)?))
        }
    }
}

/// Reads an `"identityProvider"` object: `tokenEndpoint`, `clientId`, `clientSecret`, and
/// exactly one of `idToken` and `idTokenFile`.
fn identity_provider(
    ctx: &Ctx<'_>,
    value: &Value,
    at: &JsonPath,
) -> Result<IdentityProvider, ConfigError> {
    let object = known_fields(ctx, value, at, IDP_FIELDS)?;
    let text = |name: &str| text(ctx, object, at, name);
    let required = |name: &str| {
        text(name)?.ok_or_else(|| ctx.error(at, format!("an identity provider needs `{name}`")))
    };
    let token_endpoint = required("tokenEndpoint")?;
    let client_id = required("clientId")?;
    let assertion = match (text("idToken")?, text("idTokenFile")?) {
        (Some(token), None) => IdentityAssertion::IdToken(token),
        (None, Some(path)) => IdentityAssertion::IdTokenFile(path.into()),
        _ => {
            return Err(ctx.error(
                at,
                "an identity provider needs one of `idToken` and `idTokenFile`",
            ))
        }
    };
    let mut idp = IdentityProvider::new(token_endpoint, client_id, assertion);
    if let Some(secret) = text("clientSecret")? {
        idp = idp.client_secret(secret);
    }
    Ok(idp)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::oauth::{
        AuthMethod, GrantType, IdentityAssertion, IdentityProvider, MemoryStore, SigningAlgorithm,
    };
    use crate::ConfigFile;

    fn parse(text: &str) -> Result<ConfigFile, crate::ConfigError> {
        let env = |name: &str| (name == "SECRET").then(|| "s3cret".to_owned());
        ConfigFile::parse_with_env(text, Path::new("/p/.mcp.json"), &env)
    }

    #[test]
    fn oauth_object_is_read_with_expansion() {
        let file = parse(
            r#"{"mcpServers": {
                "docs": {"url": "https://docs.example/mcp", "oauth": {
                    "clientId": "app", "clientSecret": "${SECRET}", "scopes": "a b",
                    "redirectPort": 8976, "tokenEndpointAuthMethod": "client_secret_post"
                }},
                "cc": {"type": "http", "url": "https://cc.example/mcp", "oauth": {
                    "grant": "client_credentials", "clientId": "svc", "scopes": ["x"],
                    "signingAlgorithm": "rs256"
                }},
                "plain": {"url": "https://plain.example/mcp"}
            }}"#,
        )
        .unwrap();
        assert_eq!(file.oauth.len(), 2);
        let (name, docs) = &file.oauth[0];
        assert_eq!(name, "docs");
        assert_eq!(docs.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(docs.scopes, Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(docs.redirect_port, Some(8976));
        assert_eq!(docs.auth_method, Some(AuthMethod::ClientSecretPost));
        assert!(!format!("{docs:?}").contains("s3cret"));
        let (_, cc) = &file.oauth[1];
        assert_eq!(cc.grant, GrantType::ClientCredentials);
        assert_eq!(cc.signing_algorithm, SigningAlgorithm::Rs256);
    }

    #[test]
    fn identity_provider_means_cross_app_access() {
        let file = parse(
            r#"{"mcpServers": {
                "crm": {"url": "https://crm.example/mcp", "oauth": {
                    "clientId": "app", "clientSecret": "${SECRET}",
                    "identityProvider": {
                        "tokenEndpoint": "https://idp.example/token", "clientId": "app-at-idp",
                        "clientSecret": "${SECRET}", "idToken": "${SECRET}"
                    }
                }},
                "wiki": {"url": "https://wiki.example/mcp", "oauth": {
                    "grant": "cross_app_access", "clientId": "app",
                    "identityProvider": {
                        "tokenEndpoint": "https://idp.example/token", "clientId": "app-at-idp",
                        "idTokenFile": "/run/idp/id_token"
                    }
                }}
            }}"#,
        )
        .unwrap();
        let (_, crm) = &file.oauth[0];
        assert_eq!(crm.grant, GrantType::CrossAppAccess, "implied");
        let idp = crm.identity_provider.as_ref().unwrap();
        assert_eq!(idp.token_endpoint(), "https://idp.example/token");
        assert_eq!(idp.client_id(), "app-at-idp");
        assert!(!format!("{crm:?}").contains("s3cret"), "{crm:?}");
        let (_, wiki) = &file.oauth[1];
        assert_eq!(
            wiki.identity_provider,
            Some(IdentityProvider::new(
                "https://idp.example/token",
                "app-at-idp",
                IdentityAssertion::IdTokenFile("/run/idp/id_token".into()),
            ))
        );
        let config = wiki.config("wiki").unwrap();
        assert!(crate::oauth::OAuth::new("wiki", "https://wiki.example/mcp", config).is_ok());
    }

    #[test]
    fn attach_installs_clients_only_where_asked() {
        let mut file = parse(
            r#"{"mcpServers": {
                "docs": {"url": "https://docs.example/mcp", "oauth": {}},
                "plain": {"url": "https://plain.example/mcp"}
            }}"#,
        )
        .unwrap();
        let clients = file
            .attach_oauth(Arc::new(MemoryStore::new()), |_, _| None)
            .unwrap();
        assert_eq!(clients.len(), 1);
        assert_eq!(clients[0].0, "docs");
        assert_eq!(clients[0].1.store_key(), "docs https://docs.example/mcp");
        let has_auth = |name: &str| {
            let (_, config) = file.servers.iter().find(|(n, _)| n == name).unwrap();
            matches!(&config.transport, crate::transport::Transport::Http(h) if h.auth.is_some())
        };
        assert!(has_auth("docs") && !has_auth("plain"));
    }

    #[test]
    fn bad_oauth_objects_name_their_field() {
        let cases = [
            (r#"{"clientID": "x"}"#, "mcpServers.s.oauth.clientID"),
            (r#"{"grant": "password"}"#, "mcpServers.s.oauth.grant"),
            (
                r#"{"redirectPort": 70000}"#,
                "mcpServers.s.oauth.redirectPort",
            ),
            (
                r#"{"clientSecret": "${MISSING}"}"#,
                "mcpServers.s.oauth.clientSecret",
            ),
            (r#"{"grant": "client_credentials"}"#, "mcpServers.s.oauth"),
            (
                r#"{"grant": "cross_app_access", "clientId": "a"}"#,
                "mcpServers.s.oauth",
            ),
            (
                r#"{"identityProvider": {"tokenEndpoint": "https://i/t", "clientId": "i", "idToken": "t"}}"#,
                "mcpServers.s.oauth",
            ),
            (
                r#"{"clientId": "a", "identityProvider": {"tokenEndpoint": "https://i/t", "clientId": "i"}}"#,
                "mcpServers.s.oauth.identityProvider",
            ),
            (
                r#"{"clientId": "a", "identityProvider": {"tokenEndpoint": "https://i/t", "clientId": "i", "idToken": "t", "idTokenFile": "f"}}"#,
                "mcpServers.s.oauth.identityProvider",
            ),
            (
                r#"{"clientId": "a", "identityProvider": {"clientId": "i", "idToken": "t"}}"#,
                "mcpServers.s.oauth.identityProvider",
            ),
            (
                r#"{"clientId": "a", "identityProvider": {"tokenEndpoint": "https://i/t", "clientId": "i", "idToken": "t", "audience": "x"}}"#,
                "mcpServers.s.oauth.identityProvider.audience",
            ),
            (
                r#"{"grant": "client_credentials", "clientId": "a", "identityProvider": {"tokenEndpoint": "https://i/t", "clientId": "i", "idToken": "t"}}"#,
                "mcpServers.s.oauth.identityProvider",
            ),
        ];
        for (oauth, path) in cases {
            let text = format!(
                r#"{{"mcpServers": {{"s": {{"url": "https://s.example/mcp", "oauth": {oauth}}}}}}}"#
            );
            let error = parse(&text).unwrap_err();
            assert_eq!(error.path, path, "{oauth}: {error}");
        }
        let stdio = r#"{"mcpServers": {"s": {"command": "x", "oauth": {}}}}"#;
        assert_eq!(parse(stdio).unwrap_err().path, "mcpServers.s.oauth");
    }
}
