//! Calls over Streamable HTTP to a local server (`support/http_server.rs`: hyper, one thread,
//! JSON answers, keep-alive) from these clients: Switchboard (`ServerConfig::http` with
//! `HttpKind::StreamableHttp`, as a user gets it, and with `io_runtime`), rmcp's Streamable
//! HTTP client as shipped (its default reqwest client keeps no idle connection, so every
//! POST opens a new one), rmcp handed a pooled keep-alive `reqwest::Client` (and allowed 64
//! POSTs at once instead of its default 16), and a bare loop of keep-alive POSTs (a pooled
//! `reqwest::Client`, no MCP framework) sending the same `tools/call` frame with the session
//! header, and the same POSTs through hyper's pooled client with no reqwest above it
//! (`hyper`: the floor of an HTTP client stack here). criterion times Switchboard and the bare loop, sequential and 64 in flight; then
//! a custom loop measures every client in turns, as `stdio` does, and prints the ratios
//! against the targets.
//!
//! The server runs in this process, so the process's CPU time includes it: every profile's
//! client CPU is the process's minus the server thread's own (its CPU clock, read before and
//! after), and the server's CPU per call is printed beside it.
//!
//! Which wake-up regime the machine is in moves every sequential number (see
//! `benches/HISTORY.md`), and an HTTP round trip has no floor to compare with `stdio`'s; so each
//! round also makes sequential calls with the raw stdio client of `baseline` against the
//! blocking echo server, the same regime indicator `stdio` prints.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use reqwest_rmcp as reqwest;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use support::http_server::HttpServer;
use support::measure::{self, Profile};
use support::raw::RawClient;
use support::sdk;
use switchboard::transport::HttpKind;
use switchboard::{Runtime, ServerConfig, ServerHandle};

/// Rounds of the interleaved comparison; in each, every client makes
/// [`SEQUENTIAL_PER_ROUND`] sequential calls, then [`IN_FLIGHT_PER_ROUND`] calls 64 in flight.
const ROUNDS: u64 = 10;
const SEQUENTIAL_PER_ROUND: u64 = 500;
const IN_FLIGHT_PER_ROUND: u64 = 5_000;
const IN_FLIGHT: u64 = 64;

/// The name of the regime probe's profile: the raw stdio client, sequential, against the
/// blocking echo server.
const PROBE: &str = "regime_probe/stdio_raw_blocking_echo/sequential";

/// The protocol version the bare client asks for and then names on every POST.
const VERSION: &str = "2025-06-18";

const CLIENTS: [&str; 6] = [
    "switchboard",
    "switchboard_io",
    "rmcp",
    "rmcp_pooled",
    "bare",
    "hyper",
];

async fn echo(server: Arc<ServerHandle>) {
    let r = server.call_tool("echo", support::echo_args()).await;
    assert!(r.is_ok(), "{r:?}");
}

async fn runtime(url: &str, io: Option<tokio::runtime::Handle>) -> Runtime {
    let mut builder =
        Runtime::builder().server("http", ServerConfig::http(url, HttpKind::StreamableHttp));
    // `io`: where a user's runtime puts the connections by default (the builder's own
    // multi-thread runtime), given explicitly; `None`: on the actor thread.
    builder = match io {
        Some(io) => builder.io_runtime(io),
        None => builder.actor_thread_io(),
    };
    builder.build().await.expect("runtime")
}

/// The `tools/call echo` frame Switchboard sends, with request id `id`.
fn echo_frame(id: u64) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"#,
            r#""name":"echo","arguments":{{"text":"ping"}},"_meta":{{"progressToken":{id}}}}}}}"#
        ),
        id = id
    )
}

/// MCP over plain keep-alive POSTs: the handshake by hand, then `tools/call echo` frames
/// with the session header, answers read whole and checked by status and id only.
#[derive(Debug)]
struct Bare {
    client: reqwest::Client,
    url: String,
    session: reqwest::header::HeaderValue,
    next_id: AtomicU64,
}

impl Bare {
    async fn connect(url: String) -> Arc<Bare> {
        // reqwest pools keep-alive connections by default: one per concurrent POST.
        let client = reqwest::Client::new();
        let init = format!(
            concat!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"#,
                r#""protocolVersion":"{}","capabilities":{{}},"#,
                r#""clientInfo":{{"name":"bare-bench","version":"0.1.0"}}}}}}"#
            ),
            VERSION
        );
        let response = Bare::post(&client, &url, None, init).await;
        assert_eq!(response.status(), reqwest::StatusCode::OK, "initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .clone();
        let body = response.text().await.expect("the initialize answer");
        assert!(body.contains("\"protocolVersion\""), "{body}");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let response = Bare::post(&client, &url, Some(&session), initialized.into()).await;
        assert_eq!(response.status(), reqwest::StatusCode::ACCEPTED);
        Arc::new(Bare {
            client,
            url,
            session,
            next_id: AtomicU64::new(1),
        })
    }

    async fn post(
        client: &reqwest::Client,
        url: &str,
        session: Option<&reqwest::header::HeaderValue>,
        body: String,
    ) -> reqwest::Response {
        let mut request = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body(body);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session.clone())
                .header("mcp-protocol-version", VERSION);
        }
        request.send().await.expect("POST")
    }

    /// One `tools/call echo`, the frame Switchboard sends.
    async fn call(self: Arc<Self>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = echo_frame(id);
        let response = Bare::post(&self.client, &self.url, Some(&self.session), body).await;
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        let answer = response.bytes().await.expect("the answer");
        debug_assert!(answer.starts_with(format!(r#"{{"jsonrpc":"2.0","id":{id},"#).as_bytes()));
    }
}

/// The same POSTs as [`Bare`] through hyper's pooled client (`hyper_util`'s, the one reqwest
/// wraps) with no reqwest above it: the floor of an HTTP client stack on this runtime.
#[derive(Debug)]
struct BareHyper {
    client: HyperClient,
    uri: hyper::Uri,
    session: hyper::header::HeaderValue,
    next_id: AtomicU64,
}

type HyperClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

impl BareHyper {
    /// Joins the session [`Bare`] opened: the server keeps one session per handshake, and
    /// the calls are the same.
    fn connect(bare: &Bare) -> Arc<BareHyper> {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        Arc::new(BareHyper {
            client,
            uri: bare.url.parse().expect("the server's URI"),
            session: bare.session.clone(),
            next_id: AtomicU64::new(1),
        })
    }

    /// One `tools/call echo`, the frame Switchboard sends, answer read whole.
    async fn call(self: Arc<Self>) {
        use http_body_util::BodyExt;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = echo_frame(id);
        let request = hyper::Request::post(self.uri.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-session-id", self.session.clone())
            .header("mcp-protocol-version", VERSION)
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .expect("a request");
        let response = self.client.request(request).await.expect("POST");
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

/// rmcp's Streamable HTTP client, as shipped or with a pooled client of ours.
async fn rmcp_client(url: &str, pooled: bool) -> RunningService<RoleClient, ()> {
    let transport = if pooled {
        let config = StreamableHttpClientTransportConfig::with_uri(url).max_concurrent_requests(64);
        StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
    } else {
        StreamableHttpClientTransport::from_uri(url)
    };
    ().serve(transport).await.expect("rmcp handshake")
}

/// Every client, connected.
struct Clients {
    runtimes: [Runtime; 2],
    switchboard: [Arc<ServerHandle>; 2],
    rmcp: [RunningService<RoleClient, ()>; 2],
    peers: [Peer<RoleClient>; 2],
    bare: Arc<Bare>,
    hyper: Arc<BareHyper>,
}

impl Clients {
    fn start(rt: &tokio::runtime::Runtime, url: &str) -> Clients {
        let runtimes = [
            rt.block_on(runtime(url, None)),
            rt.block_on(runtime(url, Some(rt.handle().clone()))),
        ];
        let switchboard = [0, 1].map(|i| Arc::new(runtimes[i].server("http").expect("server")));
        assert!(switchboard.iter().all(|s| s.status().is_ready()));
        let rmcp = [false, true].map(|pooled| rt.block_on(rmcp_client(url, pooled)));
        let peers = [0, 1].map(|i| rmcp[i].peer().clone());
        let bare = rt.block_on(Bare::connect(url.to_owned()));
        let hyper = BareHyper::connect(&bare);
        Clients {
            runtimes,
            switchboard,
            rmcp,
            peers,
            bare,
            hyper,
        }
    }

    /// Profiles `n` calls of client `i` of [`CLIENTS`], `window` at a time.
    fn profile(
        &self,
        rt: &tokio::runtime::Runtime,
        i: usize,
        name: &str,
        n: u64,
        window: u64,
    ) -> Profile {
        match i {
            0 | 1 => {
                let s = self.switchboard[i].clone();
                measure::profile_on_worker(rt, name, n, window, move || echo(s.clone()))
            }
            2 | 3 => {
                let peer = self.peers[i - 2].clone();
                measure::profile_on_worker(rt, name, n, window, move || {
                    let peer = peer.clone();
                    async move { sdk::echo(&peer).await }
                })
            }
            4 => {
                let bare = self.bare.clone();
                measure::profile_on_worker(rt, name, n, window, move || bare.clone().call())
            }
            _ => {
                let hyper = self.hyper.clone();
                measure::profile_on_worker(rt, name, n, window, move || hyper.clone().call())
            }
        }
    }

    fn stop(self, rt: &tokio::runtime::Runtime) {
        let Clients { runtimes, rmcp, .. } = self;
        rt.block_on(async {
            for client in rmcp {
                let _ = client.cancel().await;
            }
            for r in runtimes {
                r.shutdown().await;
            }
        });
    }
}

fn criterion_benches(c: &mut Criterion, rt: &tokio::runtime::Runtime, clients: &Clients) {
    let mut group = c.benchmark_group("http");
    group.throughput(Throughput::Elements(1));
    let server = &clients.switchboard[0];
    group.bench_function("switchboard/sequential", |b| {
        b.to_async(rt).iter_custom(|iters| {
            let server = server.clone();
            measure::sequential_on_worker(iters, move || echo(server.clone()))
        })
    });
    group.bench_function("switchboard/64_in_flight", |b| {
        b.to_async(rt).iter_custom(|iters| {
            let server = server.clone();
            measure::in_flight(iters, IN_FLIGHT, move || echo(server.clone()))
        })
    });
    let bare = &clients.bare;
    group.bench_function("bare/sequential", |b| {
        b.to_async(rt).iter_custom(|iters| {
            let bare = bare.clone();
            measure::sequential_on_worker(iters, move || bare.clone().call())
        })
    });
    group.bench_function("bare/64_in_flight", |b| {
        b.to_async(rt).iter_custom(|iters| {
            let bare = bare.clone();
            measure::in_flight(iters, IN_FLIGHT, move || bare.clone().call())
        })
    });
    group.finish();
}

/// The custom loop: every client in turns (the order rotating each round). Returns the
/// profiles in the order of [`CLIENTS`], sequential first, then 64 in flight, with the
/// server thread's CPU taken out of each, and last the regime probe (`probe`'s sequential
/// calls, made at the start of each round); and the server's CPU per call for each client.
fn compare(
    rt: &tokio::runtime::Runtime,
    server: &HttpServer,
    clients: &Clients,
    probe: &mut RawClient,
) -> (Vec<Profile>, Vec<Duration>) {
    let slots = 2 * CLIENTS.len();
    let mut profiles: Vec<Option<Profile>> = vec![None; slots + 1];
    let mut server_cpu = vec![Duration::ZERO; slots];
    for round in 0..ROUNDS {
        let p = probe.profile_sequential(PROBE, SEQUENTIAL_PER_ROUND);
        match &mut profiles[slots] {
            Some(all) => all.absorb(p),
            slot => *slot = Some(p),
        }
        for (mode, n, window, base) in [
            ("sequential", SEQUENTIAL_PER_ROUND, 1, 0),
            (
                "64_in_flight",
                IN_FLIGHT_PER_ROUND,
                IN_FLIGHT,
                CLIENTS.len(),
            ),
        ] {
            for turn in 0..CLIENTS.len() {
                let i = (round as usize + turn) % CLIENTS.len();
                let name = format!("http/{}/{mode}", CLIENTS[i]);
                let before = server.cpu();
                let mut p = clients.profile(rt, i, &name, n, window);
                let spent = server.cpu().saturating_sub(before);
                p.cpu = p.cpu.saturating_sub(spent);
                server_cpu[base + i] += spent;
                match &mut profiles[base + i] {
                    Some(all) => all.absorb(p),
                    slot => *slot = Some(p),
                }
            }
        }
    }
    let profiles: Vec<Profile> = profiles
        .into_iter()
        .map(|p| p.expect("every client ran"))
        .collect();
    let per_call = profiles
        .iter()
        .zip(server_cpu)
        .map(|(p, cpu)| cpu / p.calls as u32)
        .collect();
    (profiles, per_call)
}

fn print_server_cpu(profiles: &[Profile], server_cpu: &[Duration]) {
    println!("\n== http: the server thread's CPU per call (taken out of the client CPU above) ==");
    for (p, cpu) in profiles.iter().zip(server_cpu) {
        println!(
            "server  {:<48} {:>8.2} µs/call",
            p.name,
            cpu.as_secs_f64() * 1e6
        );
    }
}

fn print_targets(p: &[Profile]) {
    let [sb_seq, io_seq, rmcp_seq, pooled_seq, bare_seq, hyper_seq, sb_64, io_64, rmcp_64, pooled_64, bare_64, hyper_64, probe] =
        p
    else {
        return;
    };
    let p50 = |p: &Profile| p.quantile(0.5).as_secs_f64();
    println!(
        "\n== http: regime indicator, raw stdio client sequential p50 {:.1} µs (bare HTTP sequential p50 {:.1} µs) ==",
        p50(probe) * 1e6,
        p50(bare_seq) * 1e6
    );
    for (who, seq, in_64) in [
        ("switchboard", sb_seq, sb_64),
        ("switchboard_io", io_seq, io_64),
    ] {
        println!("\n== http: {who}, from the interleaved loop above (client CPU excludes the server thread) ==");
        measure::print_target(
            &format!("64 in flight calls/s, {who} / bare"),
            in_64.calls_per_sec() / bare_64.calls_per_sec(),
            "x",
            false,
            0.7,
        );
        measure::print_target(
            &format!("client CPU per call, {who} 64 in flight"),
            in_64.cpu_us_per_call(),
            "µs",
            true,
            15.0,
        );
        for (other, o_seq, o_64) in [
            ("bare", bare_seq, bare_64),
            ("hyper", hyper_seq, hyper_64),
            ("rmcp", rmcp_seq, rmcp_64),
            ("rmcp_pooled", pooled_seq, pooled_64),
        ] {
            measure::print_ratio(
                &format!("sequential p50, {who} / {other}"),
                p50(seq) / p50(o_seq),
            );
            measure::print_ratio(
                &format!("64 in flight calls/s, {who} / {other}"),
                in_64.calls_per_sec() / o_64.calls_per_sec(),
            );
            measure::print_ratio(
                &format!("client CPU per call 64 in flight, {who} / {other}"),
                in_64.cpu_us_per_call() / o_64.cpu_us_per_call(),
            );
        }
    }
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::child_main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(4), 50);
    let server = HttpServer::start();
    let rt = support::main_runtime();
    let clients = Clients::start(&rt, &server.url());
    criterion_benches(&mut c, &rt, &clients);
    let (profiles, server_cpu) = if support::custom_loop() {
        let mut probe = RawClient::spawn(support::echo_command());
        compare(&rt, &server, &clients, &mut probe)
    } else {
        (Vec::new(), Vec::new())
    };
    clients.stop(&rt);
    drop(server);
    c.final_summary();
    measure::print_summary(
        "http: Switchboard, rmcp and bare POSTs over Streamable HTTP, interleaved in one run",
        &profiles,
    );
    if !profiles.is_empty() {
        print_server_cpu(&profiles, &server_cpu);
        print_targets(&profiles);
    }
    std::process::ExitCode::SUCCESS
}
