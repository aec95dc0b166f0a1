//! Finding the authorization server: Protected Resource Metadata (RFC 9728), then the
//! authorization server's metadata (RFC 8414, OpenID Connect discovery), in the order the
//! MCP specification (2025-11-25) gives, with the 2025-03-26 fallbacks for servers without
//! resource metadata.
//!
//! - Resource metadata: the `resource_metadata` URL of the `WWW-Authenticate` challenge,
//!   else `/.well-known/oauth-protected-resource<path of the MCP endpoint>`, then
//!   `/.well-known/oauth-protected-resource` at the root. Its `resource` must be this server
//!   (same origin, a path prefix of the endpoint's).
//! - Server metadata, for an issuer with a path `/t`: `/.well-known/oauth-authorization-server/t`,
//!   `/.well-known/openid-configuration/t`, `/t/.well-known/openid-configuration`; without a
//!   path the first two at the root. Its `issuer` must be the one it was looked up for, its
//!   endpoints https (or http on a loopback host). The authorization code grant also needs
//!   an `authorization_endpoint` and PKCE `S256` (`code.rs` checks, before registering);
//!   grants without a browser (client credentials, cross-app access) need neither.
//! - No resource metadata at all (2025-03-26): the authorization server is the MCP server's
//!   origin; without metadata there, its endpoints are `/authorize`, `/token`, `/register`.
//!
//! A location that answers 404 (or another 4xx) is skipped; one that answers 200 with a
//! document that is not valid is an error, not a reason to look elsewhere.

use serde_json::Value;
use switchboard_transports::http::Challenge;
use url::Url;

use super::error::{Error, Step};
use super::net::{display, Net};

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter for authorization and token requests (RFC 8707).
    pub(crate) resource: String,
    /// The resource metadata's `scopes_supported`.
    pub(crate) resource_scopes: Option<Vec<String>>,
    /// The authorization server.
    pub(crate) server: ServerMetadata,
}

/// The authorization server metadata this client uses.
#[derive(Debug, Clone)]
pub(crate) struct ServerMetadata {
    /// The issuer identifier; `None` for the 2025-03-26 fallbacks, which have none to check.
    pub(crate) issuer: Option<String>,
    /// The issuer, or for the fallbacks the server's origin (keys stored registrations).
    pub(crate) identity: String,
    /// Only the authorization code grant uses it: servers for other grants may have none.
    pub(crate) authorization_endpoint: Option<Url>,
    /// `code_challenge_methods_supported` lists `S256` (the code grant refuses without).
    pub(crate) pkce_s256: bool,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) grant_types_supported: Option<Vec<String>>,
    pub(crate) client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    pub(crate) iss_parameter_supported: bool,
}

/// Runs discovery for the MCP endpoint `endpoint`.
pub(crate) async fn discover(
    net: &Net,
    endpoint: &Url,
    challenge: Option<&Challenge>,
) -> Result<Discovered, Error> {
    let header = challenge
        .and_then(|c| c.resource_metadata.as_deref())
        .and_then(|u| endpoint.join(u).ok());
    let candidates = resource_metadata_candidates(endpoint, header);
    let tried = match first_document(net, Step::ResourceMetadata, candidates).await? {
        Found::Document(url, doc) => {
            let bad = |reason: &str| Error::BadMetadata {
                server: net.server.clone(),
                step: Step::ResourceMetadata,
                url: display(&url),
                reason: reason.to_owned(),
            };
            return resource_metadata(net, endpoint, &doc, bad).await;
        }
        Found::Nothing(tried) => tried,
    };
    tracing::debug!(server = %net.server, tried = %tried.join(", "), "no protected resource metadata; using the 2025-03-26 fallbacks");
    let mut origin = endpoint.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    let server = match server_metadata(net, &origin, None).await {
        Ok(server) => server,
        Err(Error::NoMetadata { .. }) => fallback_endpoints(net, &origin)?,
        Err(e) => return Err(e),
    };
    Ok(Discovered {
        resource: canonical(endpoint),
        resource_scopes: None,
        server,
    })
}

/// Checks a protected resource metadata document and looks up its authorization server.
async fn resource_metadata(
    net: &Net,
    endpoint: &Url,
    doc: &Value,
    bad: impl Fn(&str) -> Error,
) -> Result<Discovered, Error> {
    let resource = doc
        .get("resource")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `resource`"))?;
    if !resource_matches(resource, endpoint) {
        return Err(Error::ResourceMismatch {
            server: net.server.clone(),
            resource: resource.to_owned(),
            expected: display(endpoint),
        });
    }
    let issuer = doc
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find_map(Value::as_str))
        .ok_or_else(|| bad("no `authorization_servers`"))?;
    let issuer_url = Url::parse(issuer).map_err(|_| bad("an authorization server is not a url"))?;
    let server = server_metadata(net, &issuer_url, Some(issuer)).await?;
    Ok(Discovered {
        resource: resource.to_owned(),
        resource_scopes: strings(doc, "scopes_supported"),
        server,
    })
}

/// What a walk through metadata candidates found.
enum Found {
    /// The first document a candidate URL had.
    Document(Url, Value),
    /// Every candidate answered 4xx: the URLs tried, for the error.
    Nothing(Vec<String>),
}

/// The first of `candidates` the server has, as JSON. A 4xx moves on to the next one;
/// any other failure status, or a body that is not JSON, is an error naming `step`.
async fn first_document(net: &Net, step: Step, candidates: Vec<Url>) -> Result<Found, Error> {
    let mut tried = Vec::new();
    for url in candidates {
        let answer = net.get(step, &url).await?;
        tried.push(display(&url));
        if answer.status.is_client_error() {
            continue;
        }
        if !answer.status.is_success() {
            return Err(Error::Status {
                server: net.server.clone(),
                step,
                url: display(&url),
                status: answer.status.as_u16(),
            });
        }
        let doc = answer.json().ok_or_else(|| Error::BadMetadata {
            server: net.server.clone(),
            step,
            url: display(&url),
            reason: "not json".into(),
        })?;
        return Ok(Found::Document(url, doc));
    }
    Ok(Found::Nothing(tried))
}

/// The resource metadata URLs to try, in order.
pub(crate) fn resource_metadata_candidates(endpoint: &Url, header: Option<Url>) -> Vec<Url> {
    let mut out: Vec<Url> = header.into_iter().collect();
    let path = endpoint.path().trim_end_matches('/');
    let mut at = |path: &str| {
        let mut url = endpoint.clone();
        url.set_path(path);
        url.set_query(None);
        url.set_fragment(None);
        if !out.contains(&url) {
            out.push(url);
        }
    };
    if !path.is_empty() {
        at(&format!("/.well-known/oauth-protected-resource{path}"));
    }
    at("/.well-known/oauth-protected-resource");
    out
}

/// The authorization server metadata URLs to try for `issuer`, in order.
pub(crate) fn server_metadata_candidates(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| {
        let mut url = issuer.clone();
        url.set_path(&p);
        url.set_query(None);
        url.set_fragment(None);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Fetches and checks the metadata of `issuer_url`; `issuer` is the identifier to compare
/// with the document's `issuer` (`None`: the 2025-03-26 origin guess, not compared).
async fn server_metadata(
    net: &Net,
    issuer_url: &Url,
    issuer: Option<&str>,
) -> Result<ServerMetadata, Error> {
    let candidates = server_metadata_candidates(issuer_url);
    match first_document(net, Step::ServerMetadata, candidates).await? {
        Found::Document(url, doc) => parse_server_metadata(net, &url, &doc, issuer, issuer_url),
        Found::Nothing(tried) => Err(Error::NoMetadata {
            server: net.server.clone(),
            step: Step::ServerMetadata,
            tried: tried.join(", "),
        }),
    }
}

/// Checks one authorization server metadata document.
pub(crate) fn parse_server_metadata(
    net: &Net,
    url: &Url,
    doc: &Value,
    expected_issuer: Option<&str>,
    issuer_url: &Url,
) -> Result<ServerMetadata, Error> {
    let bad = |reason: String| Error::BadMetadata {
        server: net.server.clone(),
        step: Step::ServerMetadata,
        url: display(url),
        reason,
    };
    let found_issuer = doc
        .get("issuer")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `issuer`".into()))?;
    if let Some(expected) = expected_issuer {
        if !same_issuer(expected, found_issuer) {
            return Err(Error::IssuerMismatch {
                server: net.server.clone(),
                step: Step::ServerMetadata,
                expected: expected.to_owned(),
                found: found_issuer.to_owned(),
            });
        }
    }
    let endpoint = |name: &str, required: bool| -> Result<Option<Url>, Error> {
        let Some(value) = doc.get(name) else {
            return if required {
                Err(bad(format!("no `{name}`")))
            } else {
                Ok(None)
            };
        };
        let url = value
            .as_str()
            .and_then(|s| Url::parse(s).ok())
            .ok_or_else(|| bad(format!("`{name}` is not a url")))?;
        secure(net, Step::ServerMetadata, &url)?;
        Ok(Some(url))
    };
    // RFC 8414 §2: required unless no grant uses it; the code grant checks it is there.
    let authorization_endpoint = endpoint("authorization_endpoint", false)?;
    let Some(token_endpoint) = endpoint("token_endpoint", true)? else {
        return Err(bad("no `token_endpoint`".into()));
    };
    let registration_endpoint = endpoint("registration_endpoint", false)?;
    let pkce = strings(doc, "code_challenge_methods_supported").unwrap_or_default();
    Ok(ServerMetadata {
        issuer: expected_issuer.map(|_| found_issuer.to_owned()),
        identity: match expected_issuer {
            Some(_) => found_issuer.to_owned(),
            None => issuer_url.as_str().trim_end_matches('/').to_owned(),
        },
        authorization_endpoint,
        pkce_s256: pkce.iter().any(|m| m == "S256"),
        token_endpoint,
        registration_endpoint,
        scopes_supported: strings(doc, "scopes_supported"),
        token_endpoint_auth_methods_supported: strings(
            doc,
            "token_endpoint_auth_methods_supported",
        ),
        grant_types_supported: strings(doc, "grant_types_supported"),
        client_id_metadata_document_supported: doc
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        iss_parameter_supported: doc
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The 2025-03-26 default endpoints at the server's origin.
fn fallback_endpoints(net: &Net, origin: &Url) -> Result<ServerMetadata, Error> {
    let at = |path: &str| {
        let mut url = origin.clone();
        url.set_path(path);
        url
    };
    let authorization_endpoint = at("/authorize");
    secure(net, Step::ServerMetadata, &authorization_endpoint)?;
    Ok(ServerMetadata {
        issuer: None,
        identity: origin.as_str().trim_end_matches('/').to_owned(),
        authorization_endpoint: Some(authorization_endpoint),
        // The 2025-03-26 servers without metadata had PKCE required by that revision.
        pkce_s256: true,
        token_endpoint: at("/token"),
        registration_endpoint: Some(at("/register")),
        scopes_supported: None,
        token_endpoint_auth_methods_supported: None,
        grant_types_supported: None,
        client_id_metadata_document_supported: false,
        iss_parameter_supported: false,
    })
}

/// Refuses plain http except on a loopback host.
pub(crate) fn secure(net: &Net, step: Step, url: &Url) -> Result<(), Error> {
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if url.scheme() == "https" || (url.scheme() == "http" && loopback) {
        Ok(())
    } else {
        Err(Error::InsecureEndpoint {
            server: net.server.clone(),
            step,
            url: display(url),
        })
    }
}

/// Issuers compare as strings, without any normalization (RFC 8414 §3.3, RFC 9207 §2.4):
/// `https://as.example/` is not `https://as.example`.
pub(crate) fn same_issuer(a: &str, b: &str) -> bool {
    a == b
}

/// Whether the resource metadata's `resource` names the endpoint: the same origin, and a
/// path that is the endpoint's or a parent of it.
pub(crate) fn resource_matches(resource: &str, endpoint: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != endpoint.origin() || resource.fragment().is_some() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = endpoint.path();
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The canonical URI of the server (RFC 8707): the URL without fragment.
pub(crate) fn canonical(endpoint: &Url) -> String {
    let mut url = endpoint.clone();
    url.set_fragment(None);
    url.to_string()
}

fn strings(doc: &Value, name: &str) -> Option<Vec<String>> {
    doc.get(name).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(v: Vec<Url>) -> Vec<String> {
        v.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn resource_metadata_order() {
        let endpoint = Url::parse("https://h.example/public/mcp").unwrap();
        assert_eq!(
            urls(resource_metadata_candidates(&endpoint, None)),
            [
                "https://h.example/.well-known/oauth-protected-resource/public/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        let header = Url::parse("https://h.example/custom.json").unwrap();
        assert_eq!(
            resource_metadata_candidates(&endpoint, Some(header))[0].as_str(),
            "https://h.example/custom.json"
        );
        let root = Url::parse("https://h.example/").unwrap();
        assert_eq!(resource_metadata_candidates(&root, None).len(), 1);
    }

    #[test]
    fn server_metadata_order() {
        let with_path = Url::parse("https://as.example/tenant1").unwrap();
        assert_eq!(
            urls(server_metadata_candidates(&with_path)),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        let root = Url::parse("https://as.example").unwrap();
        assert_eq!(
            urls(server_metadata_candidates(&root)),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn resource_must_be_this_server() {
        let endpoint = Url::parse("https://h.example/mcp").unwrap();
        assert!(resource_matches("https://h.example/mcp", &endpoint));
        assert!(resource_matches("https://h.example", &endpoint));
        assert!(resource_matches("https://h.example/", &endpoint));
        assert!(!resource_matches("https://evil.example/mcp", &endpoint));
        assert!(!resource_matches("https://h.example/mc", &endpoint));
        assert!(!resource_matches("http://h.example/mcp", &endpoint));
        assert!(!resource_matches("not a url", &endpoint));
    }

    fn net() -> Net {
        Net::new("s".into(), std::time::Duration::from_secs(1)).unwrap()
    }

    fn doc() -> Value {
        serde_json::json!({
            "issuer": "https://as.example/t",
            "authorization_endpoint": "https://as.example/t/authorize",
            "token_endpoint": "https://as.example/t/token",
            "code_challenge_methods_supported": ["S256"],
        })
    }

    #[test]
    fn server_metadata_is_checked() {
        let url =
            Url::parse("https://as.example/.well-known/oauth-authorization-server/t").unwrap();
        let issuer = Url::parse("https://as.example/t").unwrap();
        let ok = parse_server_metadata(&net(), &url, &doc(), Some("https://as.example/t"), &issuer)
            .unwrap();
        assert_eq!(ok.token_endpoint.as_str(), "https://as.example/t/token");
        let check = |d: Value| {
            parse_server_metadata(&net(), &url, &d, Some("https://as.example/t"), &issuer)
        };
        let mut wrong_issuer = doc();
        wrong_issuer["issuer"] = "https://evil.example/t".into();
        assert!(matches!(
            check(wrong_issuer),
            Err(Error::IssuerMismatch { .. })
        ));
        let mut slash = doc();
        slash["issuer"] = "https://as.example/t/".into();
        assert!(
            matches!(check(slash), Err(Error::IssuerMismatch { .. })),
            "no normalization"
        );
        let mut no_pkce = doc();
        no_pkce
            .as_object_mut()
            .unwrap()
            .remove("code_challenge_methods_supported");
        assert!(!check(no_pkce).unwrap().pkce_s256, "the code grant refuses");
        let mut plain = doc();
        plain["code_challenge_methods_supported"] = serde_json::json!(["plain"]);
        assert!(!check(plain).unwrap().pkce_s256);
        assert!(ok.pkce_s256);
        let mut no_authorize = doc();
        no_authorize
            .as_object_mut()
            .unwrap()
            .remove("authorization_endpoint");
        assert!(check(no_authorize)
            .unwrap()
            .authorization_endpoint
            .is_none());
        let mut no_token = doc();
        no_token.as_object_mut().unwrap().remove("token_endpoint");
        assert!(matches!(check(no_token), Err(Error::BadMetadata { .. })));
        let mut insecure = doc();
        insecure["token_endpoint"] = "http://as.example/t/token".into();
        assert!(matches!(
            check(insecure),
            Err(Error::InsecureEndpoint { .. })
        ));
        let mut loopback = doc();
        loopback["token_endpoint"] = "http://127.0.0.1:9/token".into();
        assert!(check(loopback).is_ok());
    }
}
