//! A Streamable HTTP server on a real socket with the demo fixture behind it, and a client
//! of raw requests: what the HTTP tests share.

use std::time::Duration;

use serde_json::{json, Value};
use switchboard_server::http::{Config, Handle};

use crate::support::{meta, server, Probe, WAIT};

pub(crate) struct Running {
    pub(crate) url: String,
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) handle: Handle,
    pub(crate) probe: std::sync::Arc<Probe>,
    pub(crate) http: reqwest::Client,
    pub(crate) server: switchboard_server::Server,
}

pub(crate) async fn start(config: Config) -> Running {
    let (server, probe) = server();
    start_serving(server, probe, config).await
}

/// `server` (whose handler reports to `probe`) over HTTP with `config`.
pub(crate) async fn start_serving(
    server: switchboard_server::Server,
    probe: std::sync::Arc<Probe>,
    config: Config,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = server.clone().http(listener, config);
    let addr = http.local_addr().unwrap();
    let handle = http.handle();
    tokio::spawn(http.run());
    Running {
        url: format!("http://{addr}/mcp"),
        addr,
        handle,
        probe,
        http: reqwest::Client::new(),
        server,
    }
}

pub(crate) const ACCEPT: &str = "application/json, text/event-stream";

impl Running {
    pub(crate) fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .body(body.to_string())
    }

    /// A stateless request with the headers 2026-07-28 asks for.
    pub(crate) fn modern(&self, id: i64, method: &str, params: Value) -> reqwest::RequestBuilder {
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.modern_named(id, method, params, name)
    }

    /// [`modern`](Self::modern) with this `Mcp-Name`.
    pub(crate) fn modern_named(
        &self,
        id: i64,
        method: &str,
        mut params: Value,
        name: Option<String>,
    ) -> reqwest::RequestBuilder {
        params["_meta"] = meta(json!({"sampling": {}}));
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self
            .post(&body)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request
    }

    pub(crate) async fn initialize(&self) -> String {
        self.initialize_as("2025-11-25", json!({})).await
    }

    /// A session of `version` for a client that can `capabilities`.
    pub(crate) async fn initialize_as(&self, version: &str, capabilities: Value) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}});
        let response = self.post(&body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let result: Value = response.json().await.unwrap();
        assert_eq!(result["result"]["protocolVersion"], version);
        session
    }

    /// What `whoami` says of `session`: its version, the client's capabilities and who
    /// it is, as the server that answers knows them.
    pub(crate) async fn whoami(&self, session: &str) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}});
        let response = self.post(&call).header("mcp-session-id", session);
        let response = response.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        answer["result"]["structuredContent"].clone()
    }

    /// Drops the client's pooled connections and waits until every count is back to zero.
    pub(crate) async fn settled(self) {
        let Running {
            handle,
            http,
            server,
            ..
        } = self;
        drop(http);
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let stats = handle.stats();
            if stats.in_flight == 0
                && stats.connections == 0
                && stats.sessions == 0
                && server.sessions() == 0
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "counts stuck at {stats:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The status of a `tools/call echo` in `session`.
    pub(crate) async fn echo_in(&self, session: &str) -> u16 {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
        let response = self.post(&call).header("mcp-session-id", session);
        response.send().await.unwrap().status().as_u16()
    }

    /// Opens `session`'s GET stream.
    pub(crate) async fn listen(&self, session: &str) -> reqwest::Response {
        let stream = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        stream
    }

    pub(crate) async fn delete(&self, session: &str) {
        let deleted = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", session);
        assert_eq!(deleted.send().await.unwrap().status(), 200);
    }

    /// Waits until `n` sessions are open, in the HTTP table and in the server.
    pub(crate) async fn sessions_become(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.handle.stats().sessions != n || self.server.sessions() != n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} sessions open ({} in the server), not {n}",
                self.handle.stats().sessions,
                self.server.sessions()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The `data:` payloads of an event stream body.
/// The events of the next chunk of an event stream.
pub(crate) async fn next_events(stream: &mut reqwest::Response) -> Vec<Value> {
    let chunk = tokio::time::timeout(WAIT, stream.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    events(std::str::from_utf8(&chunk).unwrap())
}

pub(crate) fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| !data.is_empty())
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}
