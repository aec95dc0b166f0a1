//! Who the client is at the authorization server, in the specification's order: a
//! pre-registered client from the configuration, a registration stored earlier for the
//! same issuer, a Client ID Metadata Document (an https `client_id` URL, when the server
//! supports them), dynamic client registration (RFC 7591), else an error.

use serde_json::{json, Value};

use super::discovery::ServerMetadata;
use super::error::{Error, Step};
use super::net::{display, Net};
use super::store::ClientRegistration;
use super::token::oauth_error;
use super::{AuthMethod, Config};

/// The method for a client with (or without) a secret, among those the server supports.
pub(crate) fn method_for_secret(has_secret: bool, supported: Option<&[String]>) -> AuthMethod {
    if !has_secret {
        return AuthMethod::None;
    }
    let supports = |m: AuthMethod| supported.map_or(true, |s| s.iter().any(|x| x == m.as_str()));
    if supports(AuthMethod::ClientSecretBasic) {
        AuthMethod::ClientSecretBasic
    } else if supports(AuthMethod::ClientSecretPost) {
        AuthMethod::ClientSecretPost
    } else {
        AuthMethod::ClientSecretBasic
    }
}

/// The pre-registered client of the configuration, if any.
pub(crate) fn configured(config: &Config, server: &ServerMetadata) -> Option<ClientRegistration> {
    let client_id = config.client_id.clone()?;
    let auth_method = config.auth_method.unwrap_or_else(|| {
        method_for_secret(
            config.client_secret.is_some(),
            server.token_endpoint_auth_methods_supported.as_deref(),
        )
    });
    Some(ClientRegistration {
        issuer: server.identity.clone(),
        client_id,
        client_secret: config.client_secret.clone(),
        auth_method,
        redirect_uri: None,
        token_endpoint: server.token_endpoint.to_string(),
    })
}

/// A registration without configuration: a Client ID Metadata Document when possible, else
/// dynamic registration.
pub(crate) async fn register(
    net: &Net,
    config: &Config,
    server: &ServerMetadata,
    redirect_uri: &str,
) -> Result<ClientRegistration, Error> {
    let registration =
        |client_id: String, secret: Option<String>, method: AuthMethod| ClientRegistration {
            issuer: server.identity.clone(),
            client_id,
            client_secret: secret,
            auth_method: method,
            redirect_uri: Some(redirect_uri.to_owned()),
            token_endpoint: server.token_endpoint.to_string(),
        };
    if let Some(url) = &config.client_metadata_url {
        if server.client_id_metadata_document_supported {
            tracing::debug!(server = %net.server, client_id = %url, "using the client id metadata document");
            return Ok(registration(url.clone(), None, AuthMethod::None));
        }
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(Error::NoRegistration {
            server: net.server.clone(),
            issuer: server.identity.clone(),
        });
    };
    super::discovery::secure(net, Step::Registration, endpoint)?;
    let supported = server.token_endpoint_auth_methods_supported.as_deref();
    let supports = |m: AuthMethod| supported.map_or(true, |s| s.iter().any(|x| x == m.as_str()));
    // A public client when the server allows it: nothing to keep secret.
    let requested = [
        AuthMethod::None,
        AuthMethod::ClientSecretBasic,
        AuthMethod::ClientSecretPost,
    ]
    .into_iter()
    .find(|m| supports(*m))
    .unwrap_or(AuthMethod::None);
    let body = json!({
        "client_name": config.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested.as_str(),
        "application_type": "native",
    });
    let answer = net.post_json(Step::Registration, endpoint, &body).await?;
    let doc = answer.json();
    if !answer.status.is_success() {
        return Err(match doc.as_ref().and_then(oauth_error) {
            Some((error, description)) => Error::Refused {
                server: net.server.clone(),
                step: Step::Registration,
                error,
                description,
            },
            None => Error::Status {
                server: net.server.clone(),
                step: Step::Registration,
                url: display(endpoint),
                status: answer.status.as_u16(),
            },
        });
    }
    let bad = |reason: &str| Error::BadMetadata {
        server: net.server.clone(),
        step: Step::Registration,
        url: display(endpoint),
        reason: reason.to_owned(),
    };
    let doc = doc.ok_or_else(|| bad("not json"))?;
    let client_id = doc
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("no client_id"))?;
    let secret = doc
        .get("client_secret")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let method = doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .and_then(AuthMethod::parse)
        .unwrap_or(requested);
    // A secret-based method without a secret cannot work; fall back to a public client.
    let method = match (method, &secret) {
        (AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost, None) => AuthMethod::None,
        (m, _) => m,
    };
    tracing::info!(server = %net.server, client_id, method = method.as_str(), "registered the client");
    Ok(registration(client_id.to_owned(), secret, method))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_methods_follow_the_server() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(method_for_secret(false, None), AuthMethod::None);
        assert_eq!(method_for_secret(true, None), AuthMethod::ClientSecretBasic);
        assert_eq!(
            method_for_secret(true, Some(&s(&["client_secret_post"]))),
            AuthMethod::ClientSecretPost
        );
        assert_eq!(
            method_for_secret(true, Some(&s(&["none", "client_secret_basic"]))),
            AuthMethod::ClientSecretBasic
        );
    }
}
