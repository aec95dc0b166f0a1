//! `switchboard serve` in front of an upstream that needs each user's own OAuth
//! authorization (`"auth": {"perUser": "oauth"}`), all real processes and sockets: an
//! authorization server this test runs (metadata, PKCE, approval without a page for the user
//! the "browser" names in `X-Test-User`, tokens as JWTs), an upstream `serve --auth` that
//! verifies them and audits who called, two gateway replicas sharing session keys and the
//! per-user folder, and the official Python SDK client answering URL-mode elicitations by
//! opening the URL, in both eras.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::KeyPair;
use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::{config_file_of, Served};
use crate::gateway_auth::post;

const ALICE: &str = "per-user-alice-key-0123456789abcdefghij";
const BOB: &str = "per-user-bob-key-0123456789abcdefghijklm";
const CAROL: &str = "per-user-carol-key-0123456789abcdefghijk";
const GATEWAY_SECRET: &str = "gateway-client-secret-9c2e4f";
const SESSION_KEY: &str = "per-user-session-key-0123456789abcdefghijklmnop";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What the authorization server keeps.
#[derive(Default)]
struct Books {
    /// By code: the PKCE challenge, the redirect URI, the user, the resource.
    codes: HashMap<String, (String, String, String, String)>,
    /// Codes exchanged for tokens, by user.
    exchanged: Vec<String>,
    /// Refresh tokens used, by user.
    refreshed: Vec<String>,
    /// Every token and code issued, to look for in logs.
    issued: Vec<String>,
    next: u64,
}

/// An authorization server on loopback.
struct AuthorizationServer {
    issuer: String,
    books: Arc<Mutex<Books>>,
}

impl AuthorizationServer {
    fn start() -> AuthorizationServer {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng)
            .unwrap()
            .as_ref()
            .to_vec();
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(&pkcs8).unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key());
        let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1",
            "alg": "EdDSA", "use": "sig"}]});
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let books = Arc::new(Mutex::new(Books::default()));
        let (kept, at) = (books.clone(), issuer.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (books, issuer, jwks, pkcs8) =
                    (kept.clone(), at.clone(), jwks.clone(), pkcs8.clone());
                std::thread::spawn(move || {
                    let server = Server {
                        books,
                        issuer,
                        jwks,
                        pkcs8,
                    };
                    server.answer(stream);
                });
            }
        });
        AuthorizationServer { issuer, books }
    }

    fn exchanged(&self) -> Vec<String> {
        self.books.lock().unwrap().exchanged.clone()
    }

    fn refreshed(&self) -> Vec<String> {
        self.books.lock().unwrap().refreshed.clone()
    }

    fn issued(&self) -> Vec<String> {
        self.books.lock().unwrap().issued.clone()
    }
}

struct Server {
    books: Arc<Mutex<Books>>,
    issuer: String,
    jwks: Value,
    pkcs8: Vec<u8>,
}

impl Server {
    fn answer(&self, stream: std::net::TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
        );
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let (status, location, reply) = self.route(&method, path, query, &headers, &body);
        let reply = reply.to_string();
        let location = location
            .map(|l| format!("location: {l}\r\n"))
            .unwrap_or_default();
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\n{location}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
            reply.len()
        );
    }

    fn route(
        &self,
        method: &str,
        path: &str,
        query: &str,
        headers: &HashMap<String, String>,
        body: &[u8],
    ) -> (&'static str, Option<String>, Value) {
        let issuer = &self.issuer;
        match (method, path) {
            (
                "GET",
                "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration",
            ) => (
                "200 OK",
                None,
                json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "registration_endpoint": format!("{issuer}/register"),
                    "jwks_uri": format!("{issuer}/jwks.json"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
                    "authorization_response_iss_parameter_supported": true}),
            ),
            ("GET", "/jwks.json") => ("200 OK", None, self.jwks.clone()),
            ("POST", "/register") => {
                let asked: Value = serde_json::from_slice(body).unwrap_or_default();
                let mut books = self.books.lock().unwrap();
                books.next += 1;
                let mut client = asked.clone();
                client["client_id"] = json!(format!("registered-{}", books.next));
                client["token_endpoint_auth_method"] = json!("none");
                ("201 Created", None, client)
            }
            ("GET", "/authorize") => {
                let q: HashMap<String, String> = form(query.as_bytes());
                let user = headers
                    .get("x-test-user")
                    .cloned()
                    .unwrap_or_else(|| "nobody".into());
                let mut books = self.books.lock().unwrap();
                books.next += 1;
                let code = format!("code-{}-{user}", books.next);
                books.codes.insert(
                    code.clone(),
                    (
                        q.get("code_challenge").cloned().unwrap_or_default(),
                        q.get("redirect_uri").cloned().unwrap_or_default(),
                        user,
                        q.get("resource").cloned().unwrap_or_default(),
                    ),
                );
                books.issued.push(code.clone());
                let to = url_with(
                    q.get("redirect_uri").map_or("", String::as_str),
                    &[
                        ("code", &code),
                        ("state", q.get("state").map_or("", String::as_str)),
                        ("iss", issuer),
                    ],
                );
                ("302 Found", Some(to), json!({}))
            }
            ("POST", "/token") => self.token(&form(body), headers),
            _ => ("404 Not Found", None, json!({"error": "not_found"})),
        }
    }

    fn token(
        &self,
        form: &HashMap<String, String>,
        headers: &HashMap<String, String>,
    ) -> (&'static str, Option<String>, Value) {
        let refuse = |error: &str| ("400 Bad Request", None, json!({"error": error}));
        let (user, resource) = match form.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let mut books = self.books.lock().unwrap();
                let Some((challenge, redirect, user, resource)) = books
                    .codes
                    .remove(form.get("code").map_or("", String::as_str))
                else {
                    return refuse("invalid_grant");
                };
                let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
                let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
                if computed != challenge || form.get("redirect_uri") != Some(&redirect) {
                    return refuse("invalid_grant");
                }
                books.exchanged.push(user.clone());
                (user, resource)
            }
            Some("client_credentials") => {
                let basic = base64::engine::general_purpose::STANDARD
                    .encode(format!("gateway:{GATEWAY_SECRET}"));
                if headers.get("authorization") != Some(&format!("Basic {basic}")) {
                    return refuse("invalid_client");
                }
                (
                    "gateway".to_owned(),
                    form.get("resource").cloned().unwrap_or_default(),
                )
            }
            Some("refresh_token") => {
                let token = form.get("refresh_token").cloned().unwrap_or_default();
                let Some(rest) = token.strip_prefix("refresh-") else {
                    return refuse("invalid_grant");
                };
                let (user, resource) = rest.split_once('|').unwrap_or((rest, ""));
                self.books.lock().unwrap().refreshed.push(user.to_owned());
                (user.to_owned(), resource.to_owned())
            }
            _ => return refuse("unsupported_grant_type"),
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // Carol's tokens live four seconds: her gateway refreshes them.
        let lifetime = if user == "carol" { 4 } else { 3600 };
        let claims = json!({"iss": self.issuer, "aud": resource, "sub": user,
            "exp": now + lifetime, "iat": now, "scope": "mcp"});
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".into());
        let access =
            jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&self.pkcs8)).unwrap();
        let refresh = format!("refresh-{user}|{resource}");
        self.books
            .lock()
            .unwrap()
            .issued
            .extend([access.clone(), refresh.clone()]);
        (
            "200 OK",
            None,
            json!({"access_token": access, "token_type": "Bearer", "expires_in": lifetime,
                   "refresh_token": refresh}),
        )
    }
}

fn form(bytes: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

fn url_with(base: &str, params: &[(&str, &str)]) -> String {
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    format!("{base}?{query}")
}

fn python() -> PathBuf {
    std::env::var_os("SWITCHBOARD_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/venv/bin/python")
        })
}

/// The Python SDK client calling `echo` `calls` times through `url` as `key`, the person
/// being `user`: what it saw.
fn python_client(url: &str, key: &str, user: &str, mode: &str, calls: u32) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/peers/python_per_user_client.py");
    let output = Command::new(python())
        .arg(script)
        .args([url, key, user, mode, &calls.to_string()])
        .output()
        .expect("the Python SDK in .ci/venv (run .ci/run once, or set SWITCHBOARD_PYTHON)");
    assert!(
        output.status.success(),
        "the Python client ({mode}): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Who the upstream's audit log says called tool `echo`, in order.
fn upstream_callers(audit: &Path) -> Vec<String> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["name"] == "echo" && record["outcome"] == "ok")
        .filter_map(|record| record["principal"].as_str().map(str::to_owned))
        .collect()
}

async fn echo(url: &str, key: &str) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                         "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let (status, _, _, answer) = post(url, Some(key), None, request).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The authorization URL an error's message names.
fn url_in(answer: &Value, issuer: &str) -> String {
    let message = answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {answer}"));
    let start = message
        .find(&format!("{issuer}/authorize"))
        .unwrap_or_else(|| panic!("no authorization URL in: {message}"));
    message[start..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
async fn each_user_authorizes_through_the_client_once_and_every_replica_reuses_it() {
    let server = AuthorizationServer::start();
    let issuer = server.issuer.clone();
    let config = config_file_of(json!({"mcpServers": {}}));
    let dir = config.parent().unwrap().to_owned();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let env = [
        ("XDG_CONFIG_HOME", home.as_path()),
        ("XDG_STATE_HOME", home.as_path()),
    ];

    // The upstream: serve in front of the demo server, verifying the server's JWTs.
    let up_port = free_port();
    let up_url = format!("http://127.0.0.1:{up_port}/mcp");
    let up_config =
        config_file_of(json!({"mcpServers": {"demo": {"command": BIN, "args": ["demo-server"]}}}));
    let up_auth = dir.join("upstream-auth.json");
    std::fs::write(
        &up_auth,
        json!({"resource": up_url, "jwt": {"issuer": issuer, "jwksUri": format!("{issuer}/jwks.json")}})
            .to_string(),
    )
    .unwrap();
    let up_audit = dir.join("upstream-audit.jsonl");
    let listen = format!("127.0.0.1:{up_port}");
    let upstream = Served::start_with_env(
        &up_config,
        &[
            "--listen",
            &listen,
            "--auth",
            up_auth.to_str().unwrap(),
            "--audit",
            up_audit.to_str().unwrap(),
        ],
        &env,
    );

    // Two gateway replicas: one auth file (its resource is replica A's), one session key, one
    // per-user folder.
    let (a_port, b_port) = (free_port(), free_port());
    std::fs::write(
        &config,
        json!({"mcpServers": {"up": {"type": "http", "url": up_url,
            "oauth": {"grant": "client_credentials", "clientId": "gateway", "clientSecret": GATEWAY_SECRET},
            "auth": {"perUser": "oauth"}}}})
        .to_string(),
    )
    .unwrap();
    let auth = dir.join("gateway-auth.json");
    std::fs::write(
        &auth,
        json!({"resource": format!("http://127.0.0.1:{a_port}/mcp"),
               "keys": [{"name": "alice", "key": ALICE}, {"name": "bob", "key": BOB},
                        {"name": "carol", "key": CAROL}]})
        .to_string(),
    )
    .unwrap();
    let keys = dir.join("session-keys");
    std::fs::write(&keys, SESSION_KEY).unwrap();
    let oauth_dir = dir.join("per-user");
    let replica = |port: u16| {
        let listen = format!("127.0.0.1:{port}");
        Served::start_with_env(
            &config,
            &[
                "--listen",
                &listen,
                "--auth",
                auth.to_str().unwrap(),
                "--session-keys",
                keys.to_str().unwrap(),
                "--oauth-dir",
                oauth_dir.to_str().unwrap(),
            ],
            &env,
        )
    };
    let (a, b) = (replica(a_port), replica(b_port));

    // Alice, handshake era, on A: one URL elicitation, opened; then her calls go through.
    let seen = python_client(&a.url, ALICE, "alice", "legacy", 2);
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "echo"),
        "{seen}"
    );
    assert_eq!(seen["elicitations"], json!(["url"]), "{seen}");
    assert_eq!(seen["texts"], json!(["call 0", "call 1"]), "{seen}");
    assert_eq!(seen["pages"][0][0], 200, "{seen}");
    assert_eq!(server.exchanged(), ["alice"]);

    // On replica B, Alice's authorization is found in the shared folder: nothing asked.
    let seen = python_client(&b.url, ALICE, "alice", "2026-07-28", 1);
    assert_eq!(seen["elicitations"], json!([]), "{seen}");
    assert_eq!(seen["texts"], json!(["call 0"]), "{seen}");
    assert_eq!(server.exchanged(), ["alice"], "one authorization, reused");

    // Carol, 2026-07-28 on A: the elicitation is an input-required round.
    let seen = python_client(&a.url, CAROL, "carol", "2026-07-28", 1);
    assert_eq!(seen["elicitations"], json!(["url"]), "{seen}");
    assert_eq!(seen["texts"], json!(["call 0"]), "{seen}");

    // Carol's token is due: her next call refreshes it, without asking her.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let answer = echo(&a.url, CAROL).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    assert_eq!(server.refreshed(), ["carol"]);

    // Bob's client declares no URL elicitation: the error names the URL. Its redirect lands
    // on A, which hands it to B, where Bob's authorization waits.
    let refused = echo(&b.url, BOB).await;
    let url = url_in(&refused, &issuer);
    let browser = reqwest::Client::new();
    let page = browser
        .get(&url)
        .header("x-test-user", "bob")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "the callback on A");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = echo(&b.url, BOB).await;
        if answer["result"]["content"][0]["text"] == "hi" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Bob is still not authorized: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(server.exchanged(), ["alice", "carol", "bob"]);
    let callers = upstream_callers(&up_audit);
    for who in ["alice", "bob", "carol"] {
        assert!(
            callers.contains(&format!("{issuer}#{who}")),
            "{who} did not reach the upstream as themselves: {callers:?}"
        );
    }
    assert!(
        !callers.iter().any(|c| c.ends_with("#gateway")),
        "a client's call reached the upstream as the gateway: {callers:?}"
    );

    // Revoked: Alice's next call asks her again.
    let revoke = Command::new(BIN)
        .args(["auth", "revoke", "--client", "key:alice", "up", "-c"])
        .arg(&config)
        .arg("--oauth-dir")
        .arg(&oauth_dir)
        .envs(env)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&revoke.stdout).contains("revoked"),
        "{}",
        String::from_utf8_lossy(&revoke.stderr)
    );
    let asked = echo(&a.url, ALICE).await;
    url_in(&asked, &issuer);

    let mut logs = String::new();
    for served in [&a, &b] {
        logs.push_str(&served.log);
        logs.push_str(&String::from_utf8_lossy(&served.later.lock().unwrap()));
    }
    let mut secrets = server.issued();
    secrets.extend([
        GATEWAY_SECRET.to_owned(),
        SESSION_KEY.to_owned(),
        ALICE.to_owned(),
    ]);
    for secret in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret reached a gateway's log: {logs}"
        );
    }
    let stored: Vec<u8> = std::fs::read_dir(oauth_dir.join("tokens"))
        .unwrap()
        .flatten()
        .flat_map(|f| std::fs::read(f.path()).unwrap())
        .collect();
    assert!(!stored.is_empty());
    for secret in server.issued() {
        assert!(
            !String::from_utf8_lossy(&stored).contains(&secret),
            "a token stored in clear"
        );
    }
    a.stop();
    b.stop();
    upstream.stop();
}
