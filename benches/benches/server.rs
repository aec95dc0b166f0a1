//! The server side over Streamable HTTP: the demo server on `switchboard-server` against a
//! bare hyper JSON echo (`support/http_server.rs`: hyper, sessions in a set, every answer
//! built by the blocking echo server's code), each alone on one thread of its own (a
//! current-thread runtime, so each uses one core at most and its CPU clock reads its own
//! cost), answering the same `tools/call echo` from the same client: hyper's pooled
//! keep-alive client, sequential and 64 in flight, in turns in one run.
//!
//! rmcp's `StreamableHttpService` is not in the comparison: its `server` feature needs
//! `schemars`, which this offline build has no copy of.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use support::http_server::HttpServer;
use support::measure::{self, Profile};

const ROUNDS: u64 = 6;
const SEQUENTIAL_PER_ROUND: u64 = 500;
const IN_FLIGHT_PER_ROUND: u64 = 5_000;
const IN_FLIGHT: u64 = 64;
const VERSION: &str = "2025-11-25";

type HyperClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// A session on one server, and hyper's pooled client to it.
struct Caller {
    client: HyperClient,
    uri: hyper::Uri,
    session: hyper::header::HeaderValue,
    next_id: AtomicU64,
}

impl Caller {
    fn request(
        &self,
        session: Option<&hyper::header::HeaderValue>,
        body: String,
    ) -> hyper::Request<http_body_util::Full<bytes::Bytes>> {
        let mut request = hyper::Request::post(self.uri.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session.clone())
                .header("mcp-protocol-version", VERSION);
        }
        request
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .expect("a request")
    }

    async fn connect(url: &str) -> Arc<Caller> {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let mut caller = Caller {
            client,
            uri: url.parse().expect("the server's URI"),
            session: hyper::header::HeaderValue::from_static("none"),
            next_id: AtomicU64::new(1),
        };
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{VERSION}","capabilities":{{}},"clientInfo":{{"name":"server-bench","version":"0.1.0"}}}}}}"#
        );
        let response = caller
            .client
            .request(caller.request(None, init))
            .await
            .expect("initialize");
        assert_eq!(response.status(), hyper::StatusCode::OK);
        caller.session = response.headers()["mcp-session-id"].clone();
        let _ = response.into_body().collect().await;
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
        let response = caller
            .client
            .request(caller.request(Some(&caller.session), initialized))
            .await
            .expect("initialized");
        assert_eq!(response.status(), hyper::StatusCode::ACCEPTED);
        Arc::new(caller)
    }

    /// One `tools/call echo`, its answer read whole.
    async fn call(self: Arc<Self>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello","message":"hello"}}}}}}"#
        );
        let response = self
            .client
            .request(self.request(Some(&self.session), body))
            .await
            .expect("POST");
        assert_eq!(response.status(), hyper::StatusCode::OK);
        let answer = response
            .into_body()
            .collect()
            .await
            .expect("the answer")
            .to_bytes();
        debug_assert!(answer.starts_with(format!(r#"{{"jsonrpc":"2.0","id":{id},"#).as_bytes()));
    }
}

/// The demo server on `switchboard-server`, on a thread of its own.
fn switchboard_server() -> HttpServer {
    HttpServer::start_with(|listener, stop| {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let server = switchboard_demo::server(switchboard_demo::Options::default());
            let http = server.http(listener, switchboard_server::http::Config::default());
            tokio::select! {
                _ = stop => {}
                _ = http.run() => {}
            }
        })
    })
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::child_main_from_env() {
        return code;
    }
    let servers = [
        ("switchboard_server", switchboard_server()),
        ("bare_hyper", HttpServer::start()),
    ];
    let rt = support::main_runtime();
    let callers: Vec<Arc<Caller>> = servers
        .iter()
        .map(|(_, server)| rt.block_on(Caller::connect(&server.url())))
        .collect();
    let mut profiles: Vec<Option<Profile>> = vec![None; 4];
    let mut server_cpu = [Duration::ZERO; 4];
    for round in 0..ROUNDS {
        for (slot, (mode, n, window)) in [
            ("sequential", SEQUENTIAL_PER_ROUND, 1),
            ("64_in_flight", IN_FLIGHT_PER_ROUND, IN_FLIGHT),
        ]
        .into_iter()
        .enumerate()
        {
            for turn in 0..servers.len() {
                let i = (round as usize + turn) % servers.len();
                let name = format!("server/{}/{mode}", servers[i].0);
                let caller = callers[i].clone();
                let before = servers[i].1.cpu();
                let mut p = rt.block_on(measure::profile(&name, n, window, move || {
                    caller.clone().call()
                }));
                let spent = servers[i].1.cpu().saturating_sub(before);
                p.cpu = p.cpu.saturating_sub(spent);
                let at = slot * servers.len() + i;
                server_cpu[at] += spent;
                match &mut profiles[at] {
                    Some(all) => all.absorb(p),
                    empty => *empty = Some(p),
                }
            }
        }
    }
    let profiles: Vec<Profile> = profiles
        .into_iter()
        .map(|p| p.expect("every server ran"))
        .collect();
    measure::print_summary("server: the demo server on switchboard-server and a bare hyper echo, over Streamable HTTP, interleaved", &profiles);
    println!("\n== server: each server thread's CPU per call ==");
    for (p, cpu) in profiles.iter().zip(server_cpu) {
        println!(
            "server  {:<48} {:>8.2} µs/call",
            p.name,
            cpu.as_secs_f64() * 1e6 / p.calls as f64
        );
    }
    let per_call = |i: usize| server_cpu[i].as_secs_f64() / profiles[i].calls as f64;
    measure::print_target(
        "64 in flight calls/s, switchboard_server / bare_hyper",
        profiles[2].calls_per_sec() / profiles[3].calls_per_sec(),
        "x",
        false,
        0.8,
    );
    measure::print_target(
        "server CPU per call 64 in flight, switchboard_server / bare_hyper",
        per_call(2) / per_call(3),
        "x",
        true,
        1.3,
    );
    measure::print_ratio(
        "sequential p50, switchboard_server / bare_hyper",
        profiles[0].quantile(0.5).as_secs_f64() / profiles[1].quantile(0.5).as_secs_f64(),
    );
    drop(servers);
    std::process::ExitCode::SUCCESS
}
