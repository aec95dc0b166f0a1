//! `switchboard serve --listen … --auth FILE` as a real process: who gets in, with what, and
//! what everyone else is told. A static key and JWTs from an issuer whose JWKS this test
//! serves itself (an Ed25519 key it makes), checked for signature, issuer, audience, expiry
//! and scope; per-client tool lists; a session used with another client's credentials.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::KeyPair;
use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::Served;

const ACCEPT: &str = "application/json, text/event-stream";
pub(crate) const RESOURCE: &str = "http://mcp.test/mcp";
pub(crate) const ISSUER: &str = "http://issuer.test";
const FULL_KEY: &str = "full-access-key-0123456789abcdefghij";
const ECHO_KEY: &str = "echo-only-key-0123456789abcdefghijkl";

/// An issuer: an Ed25519 key, and its JWKS served on loopback (every request answered
/// with it).
pub(crate) struct Issuer {
    pkcs8: Vec<u8>,
    pub(crate) jwks_uri: String,
}

impl Issuer {
    pub(crate) fn start() -> Issuer {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng)
            .unwrap()
            .as_ref()
            .to_vec();
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(&pkcs8).unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key());
        let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1",
            "alg": "EdDSA", "use": "sig"}]})
        .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let jwks_uri = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{jwks}",
                    jwks.len()
                );
            }
        });
        Issuer { pkcs8, jwks_uri }
    }

    /// A token with these claims over the defaults (issuer, audience, an hour to live).
    pub(crate) fn token(&self, claims: Value) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut all = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice",
            "exp": now + 3600, "iat": now, "scope": "mcp"});
        for (k, v) in claims.as_object().unwrap() {
            all[k] = v.clone();
        }
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, &all, &EncodingKey::from_ed_der(&self.pkcs8)).unwrap()
    }
}

/// The config and auth files, in a folder of their own.
fn files(issuer: &Issuer) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("switchboard-gateway-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gateway.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"demo": {"command": BIN, "args": ["demo-server"]}}}).to_string(),
    )
    .unwrap();
    let auth = dir.join("auth.json");
    std::fs::write(
        &auth,
        json!({
            "resource": RESOURCE,
            "keys": [
                {"name": "full", "key": FULL_KEY},
                {"name": "echo-only", "key": ECHO_KEY, "tools": ["echo"]}
            ],
            "jwt": {"issuer": ISSUER, "jwksUri": issuer.jwks_uri, "toolsClaim": "mcp_tools"},
            "requiredScopes": ["mcp"]
        })
        .to_string(),
    )
    .unwrap();
    (config, auth)
}

/// A POST of `body` (2026-07-28 unless `session` is given) with `token`: status, the
/// `WWW-Authenticate` header, the session id, the JSON-RPC answer.
pub(crate) async fn post(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    mut body: Value,
) -> (u16, Option<String>, Option<String>, Value) {
    let http = reqwest::Client::new();
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    match session {
        Some(session) => {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25")
        }
        None if body["method"] != "initialize" => {
            let params = &mut body["params"];
            if !params.is_object() {
                *params = json!({});
            }
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", body["method"].as_str().unwrap());
            // What the request names: a tool or prompt, or the resource a read is of.
            let name = match body["method"].as_str() {
                Some("resources/read") => body["params"]["uri"].as_str(),
                _ => body["params"]["name"].as_str(),
            };
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
        }
        None => {}
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (challenge, session) = (header("www-authenticate"), header("mcp-session-id"));
    let text = response.text().await.unwrap();
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .rfind(|m| m.get("id").is_some())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (status, challenge, session, answer)
}

fn list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

fn names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn call(tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": "hi", "a": 1, "b": 2}}})
}

#[tokio::test]
async fn only_the_clients_the_auth_file_names_get_in_and_each_sees_its_own_tools() {
    let issuer = Issuer::start();
    let (config, auth) = files(&issuer);
    let served = Served::start_with(
        &config,
        &["--listen", "0", "--auth", auth.to_str().unwrap()],
    );
    let url = served.url.clone();
    let base = url.trim_end_matches("/mcp").to_owned();

    // Nobody: 401, and where to learn how to get in.
    let (status, challenge, _, _) = post(&url, None, None, list()).await;
    assert_eq!(status, 401);
    let challenge = challenge.expect("WWW-Authenticate");
    assert!(
        challenge.starts_with("Bearer ")
            && challenge.contains(
                "resource_metadata=\"http://mcp.test/.well-known/oauth-protected-resource/mcp\""
            ),
        "{challenge}"
    );
    let metadata: Value = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], RESOURCE, "{metadata}");
    assert_eq!(
        metadata["authorization_servers"],
        json!([ISSUER]),
        "{metadata}"
    );
    assert_eq!(metadata["scopes_supported"], json!(["mcp"]), "{metadata}");
    let (status, challenge, _, _) = post(&url, Some("not-a-key"), None, list()).await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().contains("error=\"invalid_token\""));

    // The full key sees every tool; the echo-only key sees echo, and cannot call the rest.
    let (status, _, _, full) = post(&url, Some(FULL_KEY), None, list()).await;
    assert_eq!(status, 200, "{full}");
    let all = names(&full);
    assert!(all.contains(&"echo".to_owned()) && all.len() > 1, "{all:?}");
    let (_, _, _, echo_only) = post(&url, Some(ECHO_KEY), None, list()).await;
    assert_eq!(names(&echo_only), ["echo"]);
    let other = all.iter().find(|t| *t != "echo").unwrap();
    let (_, _, _, refused) = post(&url, Some(ECHO_KEY), None, call(other)).await;
    assert!(refused["error"].is_object(), "{refused}");
    let (_, _, _, echoed) = post(&url, Some(ECHO_KEY), None, call("echo")).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");

    // JWTs: a good one gets in, with the tools its claim names.
    let good = issuer.token(json!({}));
    let (status, _, _, answer) = post(&url, Some(&good), None, list()).await;
    assert_eq!((status, names(&answer)), (200, all.clone()), "{answer}");
    let limited = issuer.token(json!({"mcp_tools": ["echo"]}));
    let (_, _, _, answer) = post(&url, Some(&limited), None, list()).await;
    assert_eq!(names(&answer), ["echo"]);
    // Expired, for another audience, from another issuer, or tampered with: 401.
    for bad in [
        issuer.token(json!({"exp": 1_000_000_000u64})),
        issuer.token(json!({"aud": "http://elsewhere.test/mcp"})),
        issuer.token(json!({"iss": "http://other-issuer.test"})),
        format!("{}x", &good[..good.len() - 1]),
    ] {
        let (status, challenge, _, _) = post(&url, Some(&bad), None, list()).await;
        assert_eq!(status, 401, "{bad}");
        assert!(challenge.unwrap().contains("invalid_token"));
    }
    // Without the required scope: 403 insufficient_scope.
    let unscoped = issuer.token(json!({"scope": "other"}));
    let (status, challenge, _, _) = post(&url, Some(&unscoped), None, list()).await;
    assert_eq!(status, 403);
    let challenge = challenge.unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp\""),
        "{challenge}"
    );

    // A handshake-era session is its opener's: another client's key is refused on it.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "1"}}});
    let (status, _, session, _) = post(&url, Some(ECHO_KEY), None, initialize).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let (status, _, _, answer) = post(&url, Some(ECHO_KEY), Some(&session), list()).await;
    assert_eq!((status, names(&answer)), (200, vec!["echo".to_owned()]));
    let (status, _, _, _) = post(&url, Some(FULL_KEY), Some(&session), list()).await;
    assert_eq!(status, 403);

    // The probes need no credentials.
    let ready = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    served.stop();
}
