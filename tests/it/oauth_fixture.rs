//! A scripted authorization server and protected MCP server on one 127.0.0.1 port, for the
//! OAuth tests: resource metadata at `/.well-known/oauth-protected-resource/mcp`, the
//! authorization server at `/as` (metadata, `/as/authorize`, `/as/token`, `/as/register`;
//! a second one at `/as2` for a server that moves),
//! and a Streamable HTTP endpoint at `/mcp` that checks bearer tokens and scopes.
//!
//! The authorization endpoint approves at once (302 to the redirect URI with a code), so
//! the library's `Headless` authorizer completes logins. The token endpoint checks PKCE
//! (S256 of the verifier against the stored challenge) and `resource`, and issues tokens
//! `tok-N` and refresh tokens `ref-N`. Knobs change one behaviour at a time.
//!
//! For cross-app access, an enterprise identity provider's token endpoint at `/idp/token`
//! exchanges the ID token [`ID_TOKEN`] of its client [`IDP_CLIENT`] (RFC 8693) for an ID-JAG
//! `jag-N`, remembering its audience, resource and client; `/as/token` takes each ID-JAG
//! once with the JWT bearer grant (RFC 7523), from the client `svc` it names.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use crate::http_fixture::{empty, json_response};

/// The user's ID token that the identity provider accepts.
pub(crate) const ID_TOKEN: &str = "id-token-of-alice";
/// The host's client at the identity provider, and its secret.
pub(crate) const IDP_CLIENT: (&str, &str) = ("host-at-idp", "idp-secret");
/// RFC 7523's grant type.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What the fixture should do differently.
#[derive(Debug, Clone, Default)]
pub(crate) struct Knobs {
    /// `expires_in` of issued tokens (default 3600).
    pub(crate) expires_in: Option<u64>,
    /// A scope `tools/call` needs beyond `read` (403 `insufficient_scope` without it).
    pub(crate) call_needs: Option<&'static str>,
    /// How long a refresh takes to answer.
    pub(crate) refresh_delay: Duration,
    /// Refresh tokens are refused with `invalid_grant`.
    pub(crate) refresh_revoked: bool,
    /// The authorization server metadata body, instead of the good one.
    pub(crate) metadata_body: Option<String>,
    /// Fields changed in the good metadata (`null` removes one).
    pub(crate) metadata_patch: Option<Value>,
    /// The `state` the redirect carries, instead of the request's.
    pub(crate) redirect_state: Option<&'static str>,
    /// An `iss` added to the redirect.
    pub(crate) redirect_iss: Option<String>,
    /// The person said no: the redirect carries this `error` (with a description) and no
    /// code.
    pub(crate) redirect_error: Option<&'static str>,
    /// The token response, instead of a good one.
    pub(crate) token_body: Option<Value>,
    /// The server moved to the second authorization server (`/as2`): its resource metadata
    /// names that one, and only that one's tokens are accepted.
    pub(crate) migrated: bool,
    /// The public key (uncompressed P-256 point) that `private_key_jwt` assertions of the
    /// client `svc` must verify with; without it, `svc` authenticates with
    /// `client_secret_basic` and the secret `svc-secret`.
    pub(crate) svc_key: Option<Vec<u8>>,
    /// The identity provider refuses every token exchange with this OAuth error.
    pub(crate) idp_refusal: Option<&'static str>,
    /// The token exchange response, instead of a good one.
    pub(crate) idp_body: Option<Value>,
}

/// What an ID-JAG was issued for.
#[derive(Debug, Clone)]
struct Jag {
    audience: String,
    resource: String,
    client_id: String,
}

/// A token the fixture issued.
#[derive(Debug, Clone)]
struct Issued {
    /// The authorization server that issued it (`as` or `as2`).
    by: String,
    scopes: Vec<String>,
    expires: Instant,
    valid: bool,
}

/// What an authorization code was issued for.
#[derive(Debug, Clone)]
struct Grant {
    challenge: String,
    scopes: Vec<String>,
    resource: String,
}

/// One request the fixture saw: its path and its parameters (query or form).
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) params: HashMap<String, String>,
    pub(crate) authorization: Option<String>,
    pub(crate) rpc: Option<String>,
}

/// The fixture's state.
#[derive(Debug, Default)]
pub(crate) struct Fixture {
    pub(crate) base: String,
    pub(crate) knobs: Mutex<Knobs>,
    seen: Mutex<Vec<Seen>>,
    next: Mutex<u64>,
    tokens: Mutex<HashMap<String, Issued>>,
    refresh_tokens: Mutex<HashMap<String, Vec<String>>>,
    codes: Mutex<HashMap<String, Grant>>,
    /// ID-JAGs issued and not yet used.
    jags: Mutex<HashMap<String, Jag>>,
}

impl Fixture {
    /// The MCP endpoint's URL.
    pub(crate) fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// The identity provider's token endpoint.
    pub(crate) fn idp_url(&self) -> String {
        format!("{}/idp/token", self.base)
    }

    /// The current authorization server's issuer.
    pub(crate) fn issuer(&self) -> String {
        format!("{}/{}", self.base, self.current_server())
    }

    /// `as`, or `as2` once migrated.
    fn current_server(&self) -> &'static str {
        if self.knobs.lock().unwrap().migrated {
            "as2"
        } else {
            "as"
        }
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests to `path`.
    pub(crate) fn requests(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    /// The token requests with `grant_type` `grant`.
    pub(crate) fn grants(&self, grant: &str) -> Vec<Seen> {
        self.requests("/as/token")
            .into_iter()
            .filter(|s| s.params.get("grant_type").map(String::as_str) == Some(grant))
            .collect()
    }

    /// Makes every access token issued so far invalid (the next use is a 401).
    pub(crate) fn invalidate_access_tokens(&self) {
        for issued in self.tokens.lock().unwrap().values_mut() {
            issued.valid = false;
        }
    }

    fn issue(&self, by: &str, scopes: Vec<String>) -> Value {
        let knobs = self.knobs.lock().unwrap().clone();
        if let Some(body) = knobs.token_body {
            return body;
        }
        let n = {
            let mut next = self.next.lock().unwrap();
            *next += 1;
            *next
        };
        let expires_in = knobs.expires_in.unwrap_or(3600);
        let access = format!("tok-{n}");
        let refresh = format!("ref-{n}");
        self.tokens.lock().unwrap().insert(
            access.clone(),
            Issued {
                by: by.to_owned(),
                scopes: scopes.clone(),
                expires: Instant::now() + Duration::from_secs(expires_in),
                valid: true,
            },
        );
        self.refresh_tokens
            .lock()
            .unwrap()
            .insert(refresh.clone(), scopes.clone());
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": expires_in,
            "refresh_token": refresh,
            "scope": scopes.join(" "),
        })
    }

    fn metadata(&self, server: &str) -> Response<Full<Bytes>> {
        let knobs = self.knobs.lock().unwrap().clone();
        if let Some(body) = knobs.metadata_body {
            return Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body)))
                .unwrap();
        }
        let issuer = format!("{}/{server}", self.base);
        let mut doc = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", JWT_BEARER],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        });
        if let Some(Value::Object(patch)) = knobs.metadata_patch {
            for (k, v) in patch {
                if v.is_null() {
                    doc.as_object_mut().unwrap().remove(&k);
                } else {
                    doc[k] = v;
                }
            }
        }
        json_response(StatusCode::OK, None, doc)
    }

    fn challenge(&self, status: StatusCode, extra: &str) -> Response<Full<Bytes>> {
        let header = format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp"{extra}"#,
            self.base
        );
        Response::builder()
            .status(status)
            .header("www-authenticate", header)
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or("").to_owned();
        let authorization = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = request
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let form_text = if method == Method::GET {
            query.as_bytes()
        } else {
            &body[..]
        };
        let params: HashMap<String, String> = form_urlencoded(form_text);
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let rpc = message["method"].as_str().map(str::to_owned);
        self.seen.lock().unwrap().push(Seen {
            method: method.clone(),
            path: path.clone(),
            params: params.clone(),
            authorization: authorization.clone(),
            rpc: rpc.clone(),
        });
        match (method, path.as_str()) {
            (Method::GET, "/.well-known/oauth-protected-resource/mcp") => json_response(
                StatusCode::OK,
                None,
                json!({
                    "resource": self.mcp_url(),
                    "authorization_servers": [self.issuer()],
                    "scopes_supported": ["read"],
                }),
            ),
            (Method::GET, "/.well-known/oauth-authorization-server/as") => self.metadata("as"),
            (Method::GET, "/.well-known/oauth-authorization-server/as2") => self.metadata("as2"),
            (Method::GET, "/as/authorize" | "/as2/authorize") => self.authorize(&params),
            (Method::POST, "/as/register") => json_response(
                StatusCode::CREATED,
                None,
                json!({"client_id": "dyn-client", "token_endpoint_auth_method": "none"}),
            ),
            (Method::POST, "/as2/register") => json_response(
                StatusCode::CREATED,
                None,
                json!({"client_id": "dyn-client-2", "token_endpoint_auth_method": "none"}),
            ),
            (Method::POST, "/as/token") => {
                self.token("as", &params, authorization.as_deref()).await
            }
            (Method::POST, "/as2/token") => {
                self.token("as2", &params, authorization.as_deref()).await
            }
            (Method::POST, "/idp/token") => self.token_exchange(&params),
            (Method::POST, "/mcp") => self.mcp(authorization, &message),
            (Method::DELETE, "/mcp") => empty(StatusCode::OK),
            (Method::GET, "/mcp") => empty(StatusCode::METHOD_NOT_ALLOWED),
            _ => empty(StatusCode::NOT_FOUND),
        }
    }

    fn authorize(&self, params: &HashMap<String, String>) -> Response<Full<Bytes>> {
        let knobs = self.knobs.lock().unwrap().clone();
        let code = format!("code-{}", self.codes.lock().unwrap().len() + 1);
        let scopes = params
            .get("scope")
            .map(|s| s.split(' ').map(str::to_owned).collect())
            .unwrap_or_default();
        self.codes.lock().unwrap().insert(
            code.clone(),
            Grant {
                challenge: params.get("code_challenge").cloned().unwrap_or_default(),
                scopes,
                resource: params.get("resource").cloned().unwrap_or_default(),
            },
        );
        let state = knobs
            .redirect_state
            .map(str::to_owned)
            .or_else(|| params.get("state").cloned())
            .unwrap_or_default();
        let mut location = match knobs.redirect_error {
            Some(error) => format!(
                "{}?error={error}&error_description=the+user+declined&state={state}",
                params.get("redirect_uri").cloned().unwrap_or_default(),
            ),
            None => format!(
                "{}?code={code}&state={}",
                params.get("redirect_uri").cloned().unwrap_or_default(),
                state
            ),
        };
        if let Some(iss) = knobs.redirect_iss {
            location.push_str(&format!("&iss={iss}"));
        }
        Response::builder()
            .status(StatusCode::FOUND)
            .header("location", location)
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    async fn token(
        &self,
        by: &str,
        params: &HashMap<String, String>,
        authorization: Option<&str>,
    ) -> Response<Full<Bytes>> {
        let knobs = self.knobs.lock().unwrap().clone();
        let invalid = |error: &str| {
            json_response(
                StatusCode::BAD_REQUEST,
                None,
                json!({"error": error, "error_description": "scripted"}),
            )
        };
        if params.get("resource").map(String::as_str) != Some(self.mcp_url().as_str()) {
            return invalid("invalid_target");
        }
        match params.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let code = params.get("code").cloned().unwrap_or_default();
                let Some(Grant {
                    challenge,
                    scopes,
                    resource,
                }) = self.codes.lock().unwrap().remove(&code)
                else {
                    return invalid("invalid_grant");
                };
                let verifier = params.get("code_verifier").cloned().unwrap_or_default();
                if s256(&verifier) != challenge || resource != self.mcp_url() {
                    return invalid("invalid_grant");
                }
                json_response(StatusCode::OK, None, self.issue(by, scopes))
            }
            Some("refresh_token") => {
                tokio::time::sleep(knobs.refresh_delay).await;
                let refresh = params.get("refresh_token").cloned().unwrap_or_default();
                let scopes = self.refresh_tokens.lock().unwrap().get(&refresh).cloned();
                match scopes {
                    Some(scopes) if !knobs.refresh_revoked => {
                        json_response(StatusCode::OK, None, self.issue(by, scopes))
                    }
                    _ => invalid("invalid_grant"),
                }
            }
            Some("client_credentials") => {
                if !self.client_authenticated(&knobs, by, params, authorization) {
                    return json_response(
                        StatusCode::UNAUTHORIZED,
                        None,
                        json!({"error": "invalid_client"}),
                    );
                }
                let scopes = params
                    .get("scope")
                    .map(|s| s.split(' ').map(str::to_owned).collect())
                    .unwrap_or_default();
                json_response(StatusCode::OK, None, self.issue(by, scopes))
            }
            Some(JWT_BEARER) => {
                if !self.client_authenticated(&knobs, by, params, authorization) {
                    return json_response(
                        StatusCode::UNAUTHORIZED,
                        None,
                        json!({"error": "invalid_client"}),
                    );
                }
                // Each ID-JAG once, for this authorization server, this resource, and the
                // client that authenticated (SEP-990 §5.1).
                let assertion = params.get("assertion").cloned().unwrap_or_default();
                let jag = self.jags.lock().unwrap().remove(&assertion);
                let good = jag.is_some_and(|jag| {
                    jag.audience == format!("{}/{by}", self.base)
                        && jag.resource == self.mcp_url()
                        && jag.client_id == "svc"
                });
                if !good {
                    return invalid("invalid_grant");
                }
                let scopes = params
                    .get("scope")
                    .map(|s| s.split(' ').map(str::to_owned).collect())
                    .unwrap_or_default();
                json_response(StatusCode::OK, None, self.issue(by, scopes))
            }
            _ => invalid("unsupported_grant_type"),
        }
    }

    /// The identity provider's token exchange (RFC 8693): the ID token of its client for
    /// an ID-JAG naming the `audience` and `resource` asked for, and the client `svc` (the
    /// host's client at the authorization server, known to the identity provider).
    fn token_exchange(&self, params: &HashMap<String, String>) -> Response<Full<Bytes>> {
        let knobs = self.knobs.lock().unwrap().clone();
        let refuse = |error: &str| {
            json_response(
                StatusCode::BAD_REQUEST,
                None,
                json!({"error": error, "error_description": "scripted"}),
            )
        };
        if let Some(error) = knobs.idp_refusal {
            return refuse(error);
        }
        let param = |name: &str| params.get(name).map(String::as_str);
        if param("grant_type") != Some("urn:ietf:params:oauth:grant-type:token-exchange")
            || param("requested_token_type") != Some("urn:ietf:params:oauth:token-type:id-jag")
            || param("subject_token_type") != Some("urn:ietf:params:oauth:token-type:id_token")
        {
            return refuse("invalid_request");
        }
        if param("client_id") != Some(IDP_CLIENT.0) || param("client_secret") != Some(IDP_CLIENT.1)
        {
            return refuse("invalid_client");
        }
        if param("subject_token") != Some(ID_TOKEN) {
            return refuse("invalid_grant");
        }
        let (Some(audience), Some(resource)) = (param("audience"), param("resource")) else {
            return refuse("invalid_request");
        };
        if let Some(body) = knobs.idp_body {
            return json_response(StatusCode::OK, None, body);
        }
        let jag = {
            let mut next = self.next.lock().unwrap();
            *next += 1;
            let name = format!("jag-{next}");
            self.jags.lock().unwrap().insert(
                name.clone(),
                Jag {
                    audience: audience.to_owned(),
                    resource: resource.to_owned(),
                    client_id: "svc".to_owned(),
                },
            );
            name
        };
        json_response(
            StatusCode::OK,
            None,
            json!({
                "access_token": jag,
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "token_type": "N_A",
                "expires_in": 300,
            }),
        )
    }

    /// Whether the client `svc` proved who it is: a signed assertion (RFC 7523) for this
    /// issuer when a key is set, else `Authorization: Basic svc:svc-secret`.
    fn client_authenticated(
        &self,
        knobs: &Knobs,
        by: &str,
        params: &HashMap<String, String>,
        authorization: Option<&str>,
    ) -> bool {
        use base64::Engine;
        let Some(key) = &knobs.svc_key else {
            let expected = base64::engine::general_purpose::STANDARD.encode("svc:svc-secret");
            return authorization == Some(format!("Basic {expected}").as_str());
        };
        if params.get("client_assertion_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        {
            return false;
        }
        let jwt = params.get("client_assertion").cloned().unwrap_or_default();
        let parts: Vec<&str> = jwt.split('.').collect();
        let [header, claims, signature] = parts[..] else {
            return false;
        };
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let Ok(signature) = b64.decode(signature) else {
            return false;
        };
        let public =
            ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, key);
        if public
            .verify(format!("{header}.{claims}").as_bytes(), &signature)
            .is_err()
        {
            return false;
        }
        let claims: Value = b64
            .decode(claims)
            .ok()
            .and_then(|c| serde_json::from_slice(&c).ok())
            .unwrap_or(Value::Null);
        claims["iss"] == "svc"
            && claims["sub"] == "svc"
            && claims["aud"] == format!("{}/{by}", self.base)
            && claims["exp"].as_u64().is_some()
    }

    fn mcp(&self, authorization: Option<String>, message: &Value) -> Response<Full<Bytes>> {
        let knobs = self.knobs.lock().unwrap().clone();
        let token = authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "));
        let issued = token.and_then(|t| self.tokens.lock().unwrap().get(t).cloned());
        let current = self.current_server();
        let accepted = |i: &Issued| i.valid && i.expires > Instant::now() && i.by == current;
        let Some(issued) = issued.filter(accepted) else {
            return self.challenge(StatusCode::UNAUTHORIZED, r#", scope="read""#);
        };
        let method = message["method"].as_str().unwrap_or_default();
        if method == "tools/call" {
            if let Some(needed) = knobs.call_needs {
                if !issued.scopes.iter().any(|s| s == needed) {
                    return self.challenge(
                        StatusCode::FORBIDDEN,
                        &format!(r#", error="insufficient_scope", scope="read {needed}""#),
                    );
                }
            }
        }
        let id = &message["id"];
        match method {
            "initialize" => json_response(
                StatusCode::OK,
                None,
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "oauth-fixture", "version": "0"}
                }}),
            ),
            "tools/list" => json_response(
                StatusCode::OK,
                None,
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                    {"name": "whoami", "inputSchema": {"type": "object"}}
                ]}}),
            ),
            "tools/call" => json_response(
                StatusCode::OK,
                None,
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": format!("scopes: {}", issued.scopes.join(" "))}]
                }}),
            ),
            _ if id.is_null() => empty(StatusCode::ACCEPTED),
            _ => json_response(
                StatusCode::OK,
                None,
                json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            ),
        }
    }
}

/// `BASE64URL(SHA256(verifier))`, computed here rather than by the library under test.
fn s256(verifier: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

fn form_urlencoded(input: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(input).into_owned().collect()
}

/// Serves a new fixture on 127.0.0.1 (a free port) until the test's runtime ends.
pub(crate) async fn serve(knobs: Knobs) -> Arc<Fixture> {
    let mut served = None;
    crate::http_fixture::serve_knowing_address(|addr| {
        let fixture = Arc::new(Fixture {
            base: format!("http://{addr}"),
            knobs: Mutex::new(knobs),
            ..Fixture::default()
        });
        served = Some(fixture.clone());
        move |request| {
            let fixture = fixture.clone();
            async move { Ok::<_, Infallible>(fixture.handle(request).await) }
        }
    })
    .await;
    served.expect("the fixture is made before serving")
}
