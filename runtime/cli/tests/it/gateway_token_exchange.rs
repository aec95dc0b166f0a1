//! `switchboard serve` brokering each client's identity to an HTTP upstream with RFC 8693
//! token exchange, all as real processes and sockets: clients present JWTs (from an issuer
//! this test runs), the gateway exchanges each at an authorization server this test runs
//! (every request recorded and checked field by field), and presents the exchanged token to
//! the upstream: a second `switchboard serve` in front of the demo server whose `--auth` keys
//! are the tokens the authorization server issues, and whose audit log says who called.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::{config_file_of, Served};
use crate::gateway_auth::{post, Issuer, ISSUER, RESOURCE};

const CLIENT_ID: &str = "switchboard-gateway";
const CLIENT_SECRET: &str = "exchange-client-secret-5d1f0b";
const AUDIENCE: &str = "upstream-api";
const SCOPE: &str = "mcp:tools";
/// The upstream tokens the authorization server issues, which the upstream takes as keys.
const GATEWAY_UPSTREAM: &str = "upstream-token-for-the-gateway-0123456789";
const ALICE_UPSTREAM: &str = "upstream-token-for-alice-0123456789abcdef";
const BOB_UPSTREAM: &str = "upstream-token-for-bob-0123456789abcdefghi";
const UPSTREAM_KEY: &str = "front-ci-key-0123456789abcdefghijklmnop";

/// One request the authorization server received: its form fields and its
/// `Authorization` header.
#[derive(Debug, Clone)]
struct Received {
    form: HashMap<String, String>,
    authorization: Option<String>,
}

/// An authorization server's token endpoint on loopback: the client credentials grant for
/// the gateway, token exchange for Alice and Bob (Bob's token lives 31 s: with the gateway's
/// 30 s margin, one second), `invalid_grant` for Mallory.
struct AuthorizationServer {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl AuthorizationServer {
    fn start() -> AuthorizationServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let kept = kept.clone();
                std::thread::spawn(move || answer(stream, &kept));
            }
        });
        AuthorizationServer { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The token exchanges made for `subject`.
    fn exchanges_for(&self, subject: &str) -> usize {
        self.received()
            .iter()
            .filter(|r| r.form.get("subject_token").map(|t| sub_of(t)).as_deref() == Some(subject))
            .count()
    }
}

/// The `sub` of a JWT, read without checking it (the test issued it).
fn sub_of(jwt: &str) -> String {
    let payload = jwt.split('.').nth(1).unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap_or_default();
    let claims: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    claims["sub"].as_str().unwrap_or_default().to_owned()
}

fn answer(stream: std::net::TcpStream, received: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    let mut authorization = None;
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
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    received.lock().unwrap().push(Received {
        form: form.clone(),
        authorization,
    });
    let (status, reply) = match form.get("grant_type").map(String::as_str) {
        Some("client_credentials") => (
            "200 OK",
            json!({"access_token": GATEWAY_UPSTREAM, "token_type": "Bearer", "expires_in": 3600}),
        ),
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
            match sub_of(form.get("subject_token").map_or("", String::as_str)).as_str() {
                "alice" => ("200 OK", issued(ALICE_UPSTREAM, 3600)),
                "bob" => ("200 OK", issued(BOB_UPSTREAM, 31)),
                _ => (
                    "400 Bad Request",
                    json!({"error": "invalid_grant", "error_description": "subject may not act here"}),
                ),
            }
        }
        _ => (
            "400 Bad Request",
            json!({"error": "unsupported_grant_type"}),
        ),
    };
    let reply = reply.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

fn issued(token: &str, expires_in: u64) -> Value {
    json!({"access_token": token, "token_type": "Bearer", "expires_in": expires_in,
           "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
}

/// The upstream: `serve` in front of the demo server, its keys the issued tokens, auditing.
fn upstream(dir: &Path) -> (Served, std::path::PathBuf) {
    let config =
        config_file_of(json!({"mcpServers": {"demo": {"command": BIN, "args": ["demo-server"]}}}));
    let auth = dir.join("upstream-auth.json");
    std::fs::write(
        &auth,
        json!({"resource": "http://upstream.test/mcp", "keys": [
            {"name": "gateway", "key": GATEWAY_UPSTREAM},
            {"name": "alice", "key": ALICE_UPSTREAM},
            {"name": "bob", "key": BOB_UPSTREAM}]})
        .to_string(),
    )
    .unwrap();
    let audit = dir.join("upstream-audit.jsonl");
    let served = Served::start_with(
        &config,
        &[
            "--listen",
            "0",
            "--auth",
            auth.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
    );
    (served, audit)
}

/// Who the upstream's audit log says called tool `echo`, in order.
fn upstream_callers(audit: &Path) -> Vec<String> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["name"] == "echo")
        .filter_map(|record| record["principal"].as_str().map(str::to_owned))
        .collect()
}

async fn echo(url: &str, token: &str) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                         "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let (status, _, _, answer) = post(url, Some(token), None, request).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn each_clients_token_is_exchanged_once_and_presented_upstream() {
    let issuer = Issuer::start();
    let server = AuthorizationServer::start();
    let config = config_file_of(json!({"mcpServers": {}}));
    let dir = config.parent().unwrap().to_owned();
    let (upstream, audit) = upstream(&dir);
    std::fs::write(
        &config,
        json!({"mcpServers": {"up": {
            "type": "http", "url": upstream.url,
            "auth": {"tokenExchange": {"tokenEndpoint": server.url, "clientId": CLIENT_ID,
                     "clientSecret": CLIENT_SECRET, "audience": AUDIENCE, "scope": SCOPE}}
        }}})
        .to_string(),
    )
    .unwrap();
    let auth = dir.join("gateway-auth.json");
    std::fs::write(
        &auth,
        json!({"resource": RESOURCE, "keys": [{"name": "ci", "key": UPSTREAM_KEY}],
               "jwt": {"issuer": ISSUER, "jwksUri": issuer.jwks_uri}})
        .to_string(),
    )
    .unwrap();
    let gateway = Served::start_with(
        &config,
        &["--listen", "0", "--auth", auth.to_str().unwrap()],
    );
    let url = gateway.url.clone();
    let alice = issuer.token(json!({"sub": "alice"}));
    let bob = issuer.token(json!({"sub": "bob"}));
    let mallory = issuer.token(json!({"sub": "mallory"}));

    // The gateway lists the upstream's tools as itself: the client credentials grant.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (_, _, _, tools) = post(&url, Some(&alice), None, list).await;
    assert!(tools.to_string().contains("\"echo\""), "{tools}");
    let first = &server.received()[0];
    assert_eq!(first.form["grant_type"], "client_credentials");
    assert_eq!(first.form["scope"], SCOPE);

    // Alice's calls: one exchange, checked field by field, and her identity upstream.
    for _ in 0..4 {
        let answer = echo(&url, &alice).await;
        assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    }
    assert_eq!(server.exchanges_for("alice"), 1, "{:?}", server.received());
    let exchange = server
        .received()
        .into_iter()
        .find(|r| r.form.get("subject_token") == Some(&alice))
        .unwrap();
    let form = &exchange.form;
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:access_token"
    );
    assert_eq!(
        form["requested_token_type"],
        "urn:ietf:params:oauth:token-type:access_token"
    );
    assert_eq!(form["audience"], AUDIENCE);
    assert_eq!(form["scope"], SCOPE);
    assert_eq!(form["resource"], upstream.url);
    assert!(
        !form.contains_key("client_secret"),
        "the secret goes in the header"
    );
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    assert_eq!(
        exchange.authorization.as_deref(),
        Some(format!("Basic {basic}").as_str())
    );
    wait_for("Alice's calls in the upstream's audit", || {
        upstream_callers(&audit).len() >= 4
    })
    .await;
    assert!(
        upstream_callers(&audit).iter().all(|p| p == "key:alice"),
        "{:?}",
        upstream_callers(&audit)
    );

    // Bob's token lives a second past the margin: his next call a while later exchanges again.
    echo(&url, &bob).await;
    assert_eq!(server.exchanges_for("bob"), 1);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answer = echo(&url, &bob).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    assert_eq!(server.exchanges_for("bob"), 2);
    assert_eq!(
        server.exchanges_for("alice"),
        1,
        "Alice's token is still good"
    );
    wait_for("Bob's calls in the upstream's audit", || {
        upstream_callers(&audit)
            .iter()
            .filter(|p| *p == "key:bob")
            .count()
            == 2
    })
    .await;

    // Mallory's exchange is refused: her call fails, naming the server and the error.
    let refused = echo(&url, &mallory).await;
    let error = refused["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("Mallory's call went through: {refused}"));
    assert!(
        error.contains("up") && error.contains("invalid_grant"),
        "{error}"
    );
    // A static key is not a token an authorization server can exchange.
    let keyed = echo(&url, UPSTREAM_KEY).await;
    let error = keyed["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("presented a key"), "{keyed}");
    assert!(
        !upstream_callers(&audit).iter().any(|p| p == "key:gateway"),
        "a client's call reached the upstream as the gateway"
    );

    let log = format!(
        "{}{}",
        gateway.log,
        String::from_utf8_lossy(&gateway.later.lock().unwrap())
    );
    for secret in [
        &alice,
        &bob,
        &mallory,
        CLIENT_SECRET,
        ALICE_UPSTREAM,
        BOB_UPSTREAM,
        GATEWAY_UPSTREAM,
    ] {
        assert!(
            !log.contains(secret),
            "a secret reached the gateway's log: {log}"
        );
    }
    gateway.stop();
    upstream.stop();
}
