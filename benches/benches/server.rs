//! The server side, over both transports, against servers that do the least.
//!
//! Over Streamable HTTP: the demo server on `switchboard-server`, a bare hyper JSON echo
//! (`support/http_server.rs`: hyper, sessions in a set, every answer built by the blocking
//! echo server's code) and rmcp's `StreamableHttpService` in stateless JSON mode
//! (`support/rmcp_server.rs`), each alone on one thread of its own (a current-thread
//! runtime, so each uses one core at most and its CPU clock reads its own cost), answering
//! the same `tools/call echo` from the same client: hyper's pooled keep-alive client,
//! sequential and 64 in flight, in turns in one run.
//!
//! Over stdio: the raw client of `baseline` (`support/raw.rs`) against the demo server, the
//! blocking echo server (`support/echo_server.rs`), the demo server on tokio's
//! `stdin()`/`stdout()` (how it read its pipes before) and the demo server on the runtime
//! `#[tokio::main]` builds (`demo_main`: several workers, served from `block_on`), each a
//! child process, sequential and pipelined 64 in flight, in turns; each child's CPU is read
//! from `/proc`. (`demo` runs on a runtime of one thread, as `switchboard demo-server` does.)
//!
//! `cargo bench --bench server -- http` (or `-- stdio`) runs one half;
//! `SWITCHBOARD_BENCH_ROUNDS=1` makes it short (to run under a profiler).
//!
//! A note on the fast paths (issue 36). On a runtime of one thread, or of one worker, a
//! request's first poll is on the connection's reader and only a request that then waits
//! gets a task; with several workers every request runs on a task of its own, so that a
//! handler that computes before its first `.await` holds up only itself (`demo_main`
//! measures that set-up). A handshake-era `tools/call` line is read in one pass by the
//! server (`runtime/server/src/tool_call.rs`). Each against the plain version, in turns:
//! `BENCHMARKS.md` (issue 36's section) and `benches/HISTORY.md`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::http_server::HttpServer;
use support::hyper_caller::Caller;
use support::measure::{self, keep, rounds, Profile};
use support::raw::RawClient;
use support::rmcp_server;

const HTTP_ROUNDS: u64 = 6;
const STDIO_ROUNDS: u64 = 10;
const SEQUENTIAL_PER_ROUND: u64 = 500;
const IN_FLIGHT_PER_ROUND: u64 = 5_000;
const IN_FLIGHT: u64 = 64;
/// The demo server on `switchboard-server`, on a thread of its own.
fn switchboard_server() -> HttpServer {
    HttpServer::start_with(|listener, stop| {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let server = switchboard_demo::server(switchboard_demo::Options::default());
            let http = server.http(listener, support::http_server::served_config());
            tokio::select! {
                _ = stop => {}
                _ = http.run() => {}
            }
        })
    })
}

/// The HTTP servers of the comparison, each on a thread of its own, and a session on each.
fn http_servers() -> Vec<(&'static str, HttpServer)> {
    vec![
        ("switchboard_server", switchboard_server()),
        ("bare_hyper", HttpServer::start()),
        ("rmcp_stateless_json", rmcp_server::start()),
    ]
}

/// The Streamable HTTP comparison: every server in turns, the order rotating each round.
fn http(rt: &tokio::runtime::Runtime) {
    let servers = http_servers();
    let callers: Vec<Arc<Caller>> = servers
        .iter()
        .map(|(_, server)| rt.block_on(Caller::connect(&server.url())))
        .collect();
    let n = servers.len();
    let mut profiles: Vec<Option<Profile>> = vec![None; 2 * n];
    let mut server_cpu = vec![Duration::ZERO; 2 * n];
    for round in 0..rounds(HTTP_ROUNDS) {
        for (slot, (mode, calls, window)) in [
            ("sequential", SEQUENTIAL_PER_ROUND, 1),
            ("64_in_flight", IN_FLIGHT_PER_ROUND, IN_FLIGHT),
        ]
        .into_iter()
        .enumerate()
        {
            for turn in 0..n {
                let i = (round as usize + turn) % n;
                let name = format!("server/http/{}/{mode}", servers[i].0);
                let caller = callers[i].clone();
                let before = servers[i].1.cpu();
                let mut p = rt.block_on(measure::profile(&name, calls, window, move || {
                    caller.clone().call()
                }));
                let spent = servers[i].1.cpu().saturating_sub(before);
                p.cpu = p.cpu.saturating_sub(spent);
                let at = slot * n + i;
                server_cpu[at] += spent;
                keep(&mut profiles[at], p);
            }
        }
    }
    let profiles: Vec<Profile> = profiles
        .into_iter()
        .map(|p| p.expect("every server ran"))
        .collect();
    measure::print_summary(
        "server/http: the demo server on switchboard-server, a bare hyper echo and rmcp's StreamableHttpService, interleaved",
        &profiles,
    );
    print_server_cpu(&profiles, &server_cpu);
    let per_call = |i: usize| server_cpu[i].as_secs_f64() / profiles[i].calls as f64;
    let (ours, bare, rmcp) = (n, n + 1, n + 2);
    measure::print_target(
        "64 in flight calls/s, switchboard_server / bare_hyper",
        profiles[ours].calls_per_sec() / profiles[bare].calls_per_sec(),
        "x",
        false,
        0.8,
    );
    measure::print_target(
        "64 in flight calls/s, switchboard_server / rmcp_stateless_json",
        profiles[ours].calls_per_sec() / profiles[rmcp].calls_per_sec(),
        "x",
        false,
        1.0,
    );
    measure::print_target(
        "server CPU per call 64 in flight, switchboard_server / bare_hyper",
        per_call(ours) / per_call(bare),
        "x",
        true,
        1.3,
    );
    measure::print_ratio(
        "server CPU per call 64 in flight, rmcp_stateless_json / bare_hyper",
        per_call(rmcp) / per_call(bare),
    );
    measure::print_ratio(
        "sequential p50, switchboard_server / bare_hyper",
        profiles[0].quantile(0.5).as_secs_f64() / profiles[1].quantile(0.5).as_secs_f64(),
    );
}

/// The stdio comparison: the raw client (blocking sequential calls, and a pipelining writer
/// and reader thread) against the demo server and the blocking echo server, each a child
/// of its own, in turns, the order rotating each round.
fn stdio() {
    let mut servers = [
        ("demo", RawClient::spawn(support::demo_command(""))),
        ("blocking", RawClient::spawn(support::echo_command())),
        (
            "demo_tokio_std",
            RawClient::spawn(support::demo_tokio_std_command()),
        ),
        ("demo_main", RawClient::spawn(support::demo_main_command())),
    ];
    let n = servers.len();
    let mut profiles: Vec<Option<Profile>> = vec![None; 2 * n];
    let mut server_cpu = vec![Duration::ZERO; 2 * n];
    for round in 0..rounds(STDIO_ROUNDS) {
        for slot in 0..2 {
            for turn in 0..n {
                let i = (round as usize + turn) % n;
                let (label, client) = &mut servers[i];
                let before = client.server_cpu();
                let p = if slot == 0 {
                    client.profile_sequential(
                        &format!("server/stdio/{label}/sequential"),
                        SEQUENTIAL_PER_ROUND,
                    )
                } else {
                    client.profile_pipelined(
                        &format!("server/stdio/{label}/64_in_flight"),
                        IN_FLIGHT_PER_ROUND,
                        IN_FLIGHT as usize,
                    )
                };
                server_cpu[slot * n + i] += client.server_cpu().saturating_sub(before);
                keep(&mut profiles[slot * n + i], p);
            }
        }
    }
    let profiles: Vec<Profile> = profiles
        .into_iter()
        .map(|p| p.expect("every server ran"))
        .collect();
    measure::print_summary(
        "server/stdio: the raw client against the demo server on switchboard-server and the blocking echo server, interleaved",
        &profiles,
    );
    print_server_cpu(&profiles, &server_cpu);
    println!(
        "\n== server/stdio: regime indicator, raw sequential p50 against the blocking echo server {:.1} µs ==",
        profiles[1].quantile(0.5).as_secs_f64() * 1e6
    );
    measure::print_target(
        "64 in flight calls/s, demo / blocking",
        profiles[n].calls_per_sec() / profiles[n + 1].calls_per_sec(),
        "x",
        false,
        0.8,
    );
    measure::print_ratio(
        "server CPU per call 64 in flight, demo / blocking",
        server_cpu[n].as_secs_f64()
            / profiles[n].calls as f64
            / (server_cpu[n + 1].as_secs_f64() / profiles[n + 1].calls as f64),
    );
    measure::print_ratio(
        "64 in flight calls/s, demo_tokio_std / blocking (the demo server before it drove its pipes)",
        profiles[n + 2].calls_per_sec() / profiles[n + 1].calls_per_sec(),
    );
    measure::print_ratio(
        "64 in flight calls/s, demo_main / blocking (the demo server on #[tokio::main]'s runtime)",
        profiles[n + 3].calls_per_sec() / profiles[n + 1].calls_per_sec(),
    );
    measure::print_ratio(
        "server CPU per call 64 in flight, demo_main / blocking",
        server_cpu[n + 3].as_secs_f64()
            / profiles[n + 3].calls as f64
            / (server_cpu[n + 1].as_secs_f64() / profiles[n + 1].calls as f64),
    );
    measure::print_ratio(
        "sequential p50, demo / blocking",
        profiles[0].quantile(0.5).as_secs_f64() / profiles[1].quantile(0.5).as_secs_f64(),
    );
}

/// `default` rounds, or as many as `SWITCHBOARD_BENCH_ROUNDS` says (a short run under a
/// profiler such as `valgrind --tool=callgrind`).
fn print_server_cpu(profiles: &[Profile], server_cpu: &[Duration]) {
    println!("\n== each server's CPU per call ==");
    for (p, cpu) in profiles.iter().zip(server_cpu) {
        println!(
            "server  {:<48} {:>8.2} µs/call",
            p.name,
            cpu.as_secs_f64() * 1e6 / p.calls as f64
        );
    }
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::child_main_from_env() {
        return code;
    }
    // `cargo bench --bench server -- http` (or `-- stdio`) runs one half.
    let only = std::env::args()
        .skip(1)
        .find(|a| a == "http" || a == "stdio");
    if only.as_deref() != Some("stdio") {
        http(&support::main_runtime());
    }
    if only.as_deref() != Some("http") {
        stdio();
    }
    std::process::ExitCode::SUCCESS
}
