//! `switchboard serve` scaled out for real: three replicas with the same session keys behind
//! nginx's round-robin on loopback, each with its own demo server upstream. Handshake-era
//! sessions (sealed ids, so any replica serves any of their requests) and 2026-07-28
//! requests (no session at all) mix; then one replica is killed in the middle of a run, and
//! only the calls in flight on it fail, each with an error, while every client carries on.
//!
//! What needs affinity is tested both ways: the answer to a request the gateway sends a
//! handshake-era client (an upstream's sampling request) is lost under round-robin, and
//! arrives with nginx hashing on the session id (the README's setting). So is a server
//! isolated per client: its state is on the replica that started the client's instance, and
//! only hashing on the client's credentials keeps the client there.
//!
//! nginx runs with the proxy directives of the deployment example
//! (`runtime/gateway/deploy/nginx/mcp-proxy.conf`). It is a Debian package `.ci/run`
//! installs; the test is ignored without it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::Served;

const WAIT: Duration = Duration::from_secs(30);
const ACCEPT: &str = "application/json, text/event-stream";

/// A folder of the test's own, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "switchboard-replicas-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A free loopback port (bound and released: the process that takes it next binds at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `switchboard serve --listen` replica, and its port.
struct Replica {
    served: Option<Served>,
    port: u16,
}

impl Replica {
    fn start(config: &Path, keys: &Path) -> Replica {
        Replica::start_with(config, keys, &[])
    }

    /// With `extra` arguments too.
    fn start_with(config: &Path, keys: &Path, extra: &[&str]) -> Replica {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec![
            "--listen",
            &listen,
            "--session-keys",
            keys.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let served = Served::start_with(config, &args);
        Replica {
            served: Some(served),
            port,
        }
    }

    /// Killed at once (`SIGKILL`): what a crashed machine does.
    fn kill(&mut self) {
        if let Some(mut served) = self.served.take() {
            let _ = served.child.kill();
            let _ = served.child.wait();
        }
    }

    /// `SIGTERM`, and exit 0 (a replica that was not killed).
    fn stop(mut self) {
        if let Some(served) = self.served.take() {
            served.stop();
        }
    }
}

impl Drop for Replica {
    /// A failed test leaves no replica behind.
    fn drop(&mut self) {
        self.kill();
    }
}

/// nginx in the foreground, round-robin over the replicas, no buffering of event streams.
struct Nginx {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Nginx {
    /// Round-robin over `replicas`.
    fn start(dir: &Path, replicas: &[Replica]) -> Nginx {
        Nginx::start_balanced(dir, replicas, "")
    }

    /// Over `replicas`, with `balance` as the upstream's balancing directive (empty:
    /// round-robin).
    fn start_balanced(dir: &Path, replicas: &[Replica], balance: &str) -> Nginx {
        let port = free_port();
        let upstreams: String = replicas
            .iter()
            .map(|r| format!("    server 127.0.0.1:{};\n", r.port))
            .collect();
        let dir = dir.display();
        // The proxy directives are the deployment example's own file.
        let proxy = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../gateway/deploy/nginx/mcp-proxy.conf")
            .canonicalize()
            .unwrap();
        let proxy = proxy.display();
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n\
             client_body_temp_path {dir}/body;\n  proxy_temp_path {dir}/proxy;\n\
             fastcgi_temp_path {dir}/fastcgi;\n  uwsgi_temp_path {dir}/uwsgi;\n  scgi_temp_path {dir}/scgi;\n\
             upstream switchboard {{\n    {balance}\n{upstreams}    keepalive 16;\n  }}\n\
             server {{\n    listen 127.0.0.1:{port};\n    location / {{ include {proxy}; }}\n  }}\n}}\n"
        );
        let path = format!("{dir}/nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(nginx())
            .args(["-c", &path, "-p", &dir.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let deadline = std::time::Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "nginx did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = PathBuf::from(format!("{dir}/error.log"));
        Nginx { child, url, log }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // What nginx saw go wrong (a refused or cut upstream), for a failure's reader.
        if let Ok(log) = std::fs::read_to_string(&self.log) {
            eprint!("{log}");
        }
    }
}

fn nginx() -> &'static str {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("nginx")
}

/// What a client saw.
#[derive(Default)]
struct Tally {
    /// Requests sent, `initialize` included.
    sent: AtomicUsize,
    ok: AtomicUsize,
    /// Answers that say the session is unknown (404): what sealed ids must prevent.
    session_errors: AtomicUsize,
    /// Calls that failed some other way, each with an error (a replica killed under them).
    failed: AtomicUsize,
    /// Calls the client gave up on (closed their response, and in a session sent
    /// `notifications/cancelled`), as it meant to.
    cancelled: AtomicUsize,
}

/// A client of the gateway through nginx: raw HTTP, so that every status is seen.
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    async fn post(
        &self,
        session: Option<&str>,
        modern: bool,
        body: Value,
    ) -> Result<(u16, Option<String>, Value), String> {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        if modern {
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", body["method"].as_str().unwrap_or(""));
            if let Some(name) = body["params"]["name"].as_str() {
                request = request.header("mcp-name", name);
            }
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let text = response.text().await.map_err(|e| e.to_string())?;
        let answer = if sse {
            // The answer is the last event with an id and a result or an error.
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .rfind(|m| m.get("id").is_some() && m.get("method").is_none())
                .unwrap_or(Value::Null)
        } else if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?
        };
        Ok((status, session, answer))
    }

    async fn initialize(&self, tally: &Tally) -> Result<String, String> {
        tally.sent.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "replicas-test", "version": "1"}}});
        let (status, session, answer) = self.post(None, false, body).await?;

        if status != 200 || answer.get("result").is_none() {
            return Err(format!("initialize: {status} {answer}"));
        }
        let session = session.ok_or("initialize gave no session id")?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(Some(&session), false, initialized).await?;
        Ok(session)
    }

    /// One request of a sequence, counted in `tally`.
    async fn step(
        &self,
        session: Option<&str>,
        id: u64,
        method: &str,
        params: Value,
        tally: &Tally,
    ) {
        let mut params = params;
        let modern = session.is_none();
        if modern {
            let meta = &mut params["_meta"];
            if !meta.is_object() {
                *meta = json!({});
            }
            meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
            meta["io.modelcontextprotocol/clientInfo"] =
                json!({"name": "replicas-test", "version": "1"});
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        tally.sent.fetch_add(1, Ordering::Relaxed);
        match self.post(session, modern, body).await {
            Ok((200, _, answer)) if answer.get("result").is_some() => {
                tally.ok.fetch_add(1, Ordering::Relaxed);
            }
            Ok((404, _, answer)) if session.is_some() => {
                eprintln!("session error: {answer}");
                tally.session_errors.fetch_add(1, Ordering::Relaxed);
            }
            Ok((status, _, answer)) => {
                eprintln!("{method} failed: {status} {answer}");
                tally.failed.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                eprintln!("{method} failed: {e}");
                tally.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A call of `sleep` for 5 s given up after 30 ms: its response closed, and in a session
    /// `notifications/cancelled` sent.
    async fn cancel(&self, session: Option<&str>, tally: &Tally) {
        let mut params = json!({"name": "sleep", "arguments": {"ms": 5000}});
        let modern = session.is_none();
        if modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": params});
        tally.sent.fetch_add(1, Ordering::Relaxed);
        let given_up =
            tokio::time::timeout(Duration::from_millis(30), self.post(session, modern, body))
                .await
                .is_err();
        if !given_up {
            eprintln!("a 5 s call answered within 30 ms");
            tally.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Some(session) = session {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 10, "reason": "given up"}});
            let _ = self.post(Some(session), false, cancel).await;
        }
        tally.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    /// A sequence: a session (or none, in 2026-07-28), a list, calls, a progress call, and
    /// in one of five a call given up.
    async fn sequence(&self, n: u64, tally: Arc<Tally>) {
        let handshake = n % 2 == 0;
        let session = if handshake {
            // `initialize` and its `notifications/initialized`, one step.
            match self.initialize(&tally).await {
                Ok(session) => {
                    tally.ok.fetch_add(1, Ordering::Relaxed);
                    Some(session)
                }
                Err(e) => {
                    eprintln!("sequence {n}: {e}");
                    tally.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        } else {
            None
        };
        let session = session.as_deref();
        self.step(session, 1, "tools/list", json!({}), &tally).await;
        for i in 0..3 {
            let args = json!({"name": "add", "arguments": {"a": n, "b": i}});
            self.step(session, 2 + i, "tools/call", args, &tally).await;
        }
        let slow = json!({"name": "sleep", "arguments": {"ms": 2, "steps": 2},
            "_meta": {"progressToken": format!("p{n}")}});
        self.step(session, 9, "tools/call", slow, &tally).await;
        // One in five sequences gives up on a long call: the gateway cancels it upstream
        // (a pile of sleeping calls would fill the upstreams' in-flight slots otherwise).
        if n % 5 == 3 || n % 5 == 4 {
            self.cancel(session, &tally).await;
        }
        if let Some(session) = session {
            let _ = self
                .http
                .delete(&self.url)
                .header("mcp-session-id", session)
                .send()
                .await;
        }
    }
}

/// Runs `sequences` sequences, `parallel` at a time.
async fn run(client: &Client, sequences: u64, parallel: u64, tally: &Arc<Tally>) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..parallel {
        let (client, tally, next) = (client.clone(), tally.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed) as u64;
                if n >= sequences {
                    return;
                }
                client.sequence(n, tally.clone()).await;
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx (.ci/run installs it)"]
async fn three_replicas_behind_round_robin_share_nothing_and_survive_the_loss_of_one() {
    let scratch = Scratch::new();
    let config = scratch.0.join("gateway.json");
    let upstream =
        json!({"mcpServers": {"demo": {"command": BIN, "args": ["demo-server", "--faults"]}}});
    std::fs::write(&config, upstream.to_string()).unwrap();
    let keys = scratch.0.join("keys");
    std::fs::write(&keys, "a shared secret of the three replicas, 32+ bytes\n").unwrap();
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&config, &keys)).collect();
    let nginx = Nginx::start(&scratch.0, &replicas);
    let client = Client {
        http: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
        url: nginx.url.clone(),
    };
    // Every replica answers ready before the load starts.
    for replica in &replicas {
        let ready = format!("http://127.0.0.1:{}/readyz", replica.port);
        let deadline = tokio::time::Instant::now() + WAIT;
        while client
            .http
            .get(&ready)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .ok()
            != Some(200)
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "a replica never got ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // 10,000 sequences of 5 requests (6 with the `initialize` of the half in sessions), and
    // 4,000 calls given up.
    let tally = Arc::new(Tally::default());
    run(&client, 10_000, 16, &tally).await;
    let ok = tally.ok.load(Ordering::Relaxed);
    assert_eq!(
        tally.session_errors.load(Ordering::Relaxed),
        0,
        "session errors"
    );
    assert_eq!(tally.failed.load(Ordering::Relaxed), 0, "failed requests");
    assert_eq!(
        ok,
        10_000 * 5 + 5_000,
        "every request answered, initialize included"
    );
    assert_eq!(
        tally.cancelled.load(Ordering::Relaxed),
        4_000,
        "calls given up"
    );

    // One replica dies in the middle of a run: what was in flight on it fails, each with
    // an error; nginx sends the rest to the others, and every client carries on.
    let tally = Arc::new(Tally::default());
    let load = {
        let (client, tally) = (client.clone(), tally.clone());
        tokio::spawn(async move { run(&client, 600, 16, &tally).await })
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while tally.ok.load(Ordering::Relaxed) < 500 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second run did not start"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    replicas[1].kill();
    let after_kill = tally.ok.load(Ordering::Relaxed);
    load.await.unwrap();
    let (ok, failed) = (
        tally.ok.load(Ordering::Relaxed),
        tally.failed.load(Ordering::Relaxed),
    );
    let sessions = tally.session_errors.load(Ordering::Relaxed);
    eprintln!("after the kill: {ok} answered, {failed} failed, {sessions} session errors");
    assert!(
        ok > after_kill + 1_000,
        "the clients carried on: {ok} answered"
    );
    // At most what 16 workers had in flight at the kill, plus nginx's own retries of
    // requests that had reached the dead replica's socket.
    assert!(
        failed + sessions <= 32,
        "{failed} failed, {sessions} session errors"
    );
    assert_eq!(
        ok + failed + sessions + tally.cancelled.load(Ordering::Relaxed),
        tally.sent.load(Ordering::Relaxed),
        "every request answered, failed or given up"
    );

    // And after it, nothing fails.
    let tally = Arc::new(Tally::default());
    run(&client, 200, 8, &tally).await;
    assert_eq!(tally.ok.load(Ordering::Relaxed), 200 * 5 + 100);
    drop(nginx);
    for replica in replicas {
        replica.stop();
    }
}

/// Samples by saying which call asked.
#[derive(Debug)]
struct Sampler;

impl switchboard::client::SamplingHandler for Sampler {
    fn create_message(
        &self,
        _server: &str,
        request: switchboard::client::SamplingRequest,
    ) -> switchboard::client::BoxFuture<Result<switchboard::client::SamplingResponse, String>> {
        let prompt = format!("{:?}", request.messages.len());
        Box::pin(async move {
            Ok(switchboard::client::SamplingResponse::new(
                "m",
                [switchboard::model::Content::text(format!(
                    "sampled {prompt}"
                ))],
            ))
        })
    }
}

/// Nine sampling calls of a handshake-era client through three replicas behind nginx with
/// `balance`: how many succeeded.
async fn sampling_calls_through(balance: &str) -> usize {
    let scratch = Scratch::new();
    let config = scratch.0.join("gateway.json");
    // A stateless upstream: its input requests belong to their calls, whatever runs at once.
    let upstream = json!({"mcpServers": {"fixture": {"command": BIN,
        "args": ["demo-server", "--conformance", "--modern"], "protocol": "modern"}}});
    std::fs::write(&config, upstream.to_string()).unwrap();
    let keys = scratch.0.join("keys");
    std::fs::write(&keys, "a shared secret of the three replicas, 32+ bytes\n").unwrap();
    let replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&config, &keys)).collect();
    let nginx = Nginx::start_balanced(&scratch.0, &replicas, balance);
    let front = switchboard::Runtime::builder()
        .client_handlers(switchboard::client::ClientHandlers::new().sampling(Sampler))
        .server(
            "gateway",
            switchboard::ServerConfig::http(
                nginx.url.clone(),
                switchboard::transport::HttpKind::StreamableHttp,
            )
            .protocol(switchboard::Protocol::Legacy),
        )
        .build()
        .await
        .unwrap();
    let gateway = front.server("gateway").unwrap();
    assert!(gateway.status().is_ready(), "{:?}", gateway.status());
    // One call at a time: nginx's round-robin is deterministic, and nine calls at once
    // would put answer j on call j's replica whenever the answers come back in order.
    let mut results = Vec::new();
    for _ in 0..9 {
        let call = gateway
            .call_tool("test_sampling", json!({"prompt": "p"}))
            .timeout(Duration::from_secs(3));
        results.push(call.await);
    }
    let ok = results
        .iter()
        .filter(|r| matches!(r, Ok(result) if result.text() == "LLM response: sampled 1"))
        .count();
    front.shutdown().await;
    for replica in replicas {
        replica.stop();
    }
    drop(nginx);
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx (.ci/run installs it)"]
async fn a_request_to_a_handshake_era_client_needs_affinity_and_works_with_it() {
    // The answer POST lands on the replica that sent the request: every call succeeds.
    let with_affinity = sampling_calls_through("hash $http_mcp_session_id consistent;").await;
    assert_eq!(with_affinity, 9, "with affinity");
    // Round-robin sends each answer POST to the replica after the one that asked, which
    // never sent that request: those calls fail.
    let round_robin = sampling_calls_through("").await;
    eprintln!("round-robin: {round_robin} of 9 sampling calls succeeded");
    assert!(round_robin < 9, "round-robin: {round_robin} of 9 succeeded");
}

/// Six toggles of server-everything's simulated logging by one client, through three
/// replicas behind nginx with `balance`, the server isolated per client: whether each
/// toggle said "Started", in order.
async fn toggles_through(balance: &str) -> Vec<bool> {
    let everything = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/peers/node_modules/.bin/mcp-server-everything");
    assert!(
        everything.exists(),
        "no {} (run .ci/run once)",
        everything.display()
    );
    let scratch = Scratch::new();
    let config = scratch.0.join("gateway.json");
    let servers = json!({"mcpServers": {"everything": {
        "command": everything, "args": ["stdio"], "isolation": "client"}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let keys = scratch.0.join("keys");
    std::fs::write(&keys, "a shared secret of the three replicas, 32+ bytes\n").unwrap();
    let auth = scratch.0.join("auth.json");
    let key = "replicas-alice-key-0123456789abcdefghijk";
    let auth_file = json!({"resource": "http://mcp.test/mcp",
        "keys": [{"name": "alice", "key": key}]});
    std::fs::write(&auth, auth_file.to_string()).unwrap();
    let extra = ["--auth", auth.to_str().unwrap()];
    let replicas: Vec<Replica> = (0..3)
        .map(|_| Replica::start_with(&config, &keys, &extra))
        .collect();
    let nginx = Nginx::start_balanced(&scratch.0, &replicas, balance);
    let mut started = Vec::new();
    for id in 0..6 {
        let toggle = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "toggle-simulated-logging", "arguments": {}}});
        let (status, _, _, answer) =
            crate::gateway_auth::post(&nginx.url, Some(key), None, toggle).await;
        assert_eq!(status, 200, "{answer}");
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_owned();
        started.push(text.starts_with("Started"));
    }
    for replica in replicas {
        replica.stop();
    }
    drop(nginx);
    started
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx and server-everything (.ci/run installs them)"]
async fn a_server_isolated_per_client_needs_affinity_on_the_client_and_works_with_it() {
    // Every toggle reaches the one instance of the replica the client hashes to.
    let with_affinity = toggles_through("hash $http_authorization consistent;").await;
    assert_eq!(
        with_affinity,
        [true, false, true, false, true, false],
        "with affinity"
    );
    // Round-robin: each replica starts an instance of its own for the same client.
    let round_robin = toggles_through("").await;
    eprintln!("round-robin: {round_robin:?}");
    assert_ne!(round_robin, with_affinity, "round-robin");
}
