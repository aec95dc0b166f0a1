//! A server's `"oauth"` object: read into [`Settings`], with variables expanded.

use serde_json::Value;

use super::{field, ConfigError, Ctx, JsonPath};
use crate::oauth::{AuthMethod, GrantType, Settings, SigningAlgorithm};

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
];

/// Reads an `"oauth"` object.
pub(super) fn settings(
    ctx: &Ctx<'_>,
    value: &Value,
    at: &JsonPath,
) -> Result<Settings, ConfigError> {
    let object = ctx.object(value, at)?;
    if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(ctx.error(
            &at.key(unknown),
            format!("unknown field; expected one of {}", FIELDS.join(", ")),
        ));
    }
    let text = |name: &str| -> Result<Option<String>, ConfigError> {
        match field(object, name) {
            None => Ok(None),
            Some(v) => {
                let at = at.key(name);
                Ok(Some(ctx.expand(ctx.non_empty_string(v, &at)?, &at)?))
            }
        }
    };
    let mut settings = Settings::default();
    if let Some(grant) = text("grant")? {
        settings.grant = match grant.as_str() {
            "authorization_code" => GrantType::AuthorizationCode,
            "client_credentials" => GrantType::ClientCredentials,
            _ => {
                return Err(ctx.error(
                    &at.key("grant"),
                    "expected authorization_code or client_credentials",
                ))
            }
        };
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
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::oauth::{AuthMethod, GrantType, MemoryStore, SigningAlgorithm};
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
