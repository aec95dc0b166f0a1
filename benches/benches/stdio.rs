//! Calls through the public handle to the bundled demo server as a real child process:
//! sequential latency and throughput at 64 in flight, in calls/s. Then a custom loop prints
//! latency percentiles (p50/p90/p99), calls/s and client CPU per call for Switchboard (its
//! connections' I/O on the actor thread, and on the callers' runtime with `io_runtime`), the
//! raw client of `baseline` and rmcp of `peers`, measured in turns in this one process, and
//! the ratios between them against the targets (see `BENCHMARKS.md`).
//!
//! The child is this bench binary itself, re-executed into the demo server's entry point.
//! Compare with `baseline` (no framework) and `peers` (rmcp), run by the same `cargo bench`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use support::measure::{self, Profile};
use support::raw::RawClient;
use support::sdk;
use switchboard::{Runtime, ServerHandle};

/// Rounds of the interleaved comparison; in each, every client makes
/// [`SEQUENTIAL_PER_ROUND`] sequential calls, then [`IN_FLIGHT_PER_ROUND`] calls 64 in flight.
const ROUNDS: u64 = 10;
const SEQUENTIAL_PER_ROUND: u64 = 500;
const IN_FLIGHT_PER_ROUND: u64 = 5_000;
const IN_FLIGHT: u64 = 64;

/// Switchboard with its connections' I/O on the actor thread (the default), Switchboard with
/// `io_runtime` (I/O on the callers' runtime), the raw client, rmcp.
const CLIENTS: [&str; 4] = ["switchboard", "switchboard_io", "raw", "rmcp"];

async fn echo(server: Arc<ServerHandle>) {
    let r = server.call_tool("echo", support::echo_args()).await;
    assert!(r.is_ok(), "{r:?}");
}

async fn runtime(io: Option<tokio::runtime::Handle>) -> Runtime {
    let mut builder = Runtime::builder().server("demo", support::demo_stdio(""));
    if let Some(io) = io {
        builder = builder.io_runtime(io);
    }
    builder.build().await.expect("runtime")
}

fn stdio(c: &mut Criterion) -> Vec<Profile> {
    let rt = support::tokio_runtime();
    let default = rt.block_on(runtime(None));
    let io = rt.block_on(runtime(Some(rt.handle().clone())));
    let servers = [
        Arc::new(default.server("demo").expect("server")),
        Arc::new(io.server("demo").expect("server")),
    ];
    assert!(servers.iter().all(|s| s.status().is_ready()));

    let mut group = c.benchmark_group("stdio");
    group.throughput(Throughput::Elements(1));
    for (label, server) in ["echo", "echo_io_runtime"].into_iter().zip(&servers) {
        group.bench_function(format!("{label}/sequential"), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let server = server.clone();
                measure::sequential_on_worker(iters, move || echo(server.clone()))
            })
        });
        group.bench_function(format!("{label}/64_in_flight"), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let server = server.clone();
                measure::in_flight(iters, 64, move || echo(server.clone()))
            })
        });
    }
    group.finish();

    let profiles = if support::custom_loop() {
        compare(&rt, &servers)
    } else {
        Vec::new()
    };
    rt.block_on(default.shutdown());
    rt.block_on(io.shutdown());
    profiles
}

/// The custom loop: both Switchboard set-ups, the raw client (`baseline`) and rmcp
/// (`peers`), each with its own demo server child, measured in turns (the order rotating
/// each round) so that a noisy shared machine weighs on all of them alike. Returns the
/// profiles in the order of [`CLIENTS`]; sequential first, then 64 in flight.
fn compare(rt: &tokio::runtime::Runtime, servers: &[Arc<ServerHandle>; 2]) -> Vec<Profile> {
    let mut raw = RawClient::spawn(support::demo_command(""));
    let rmcp = rt.block_on(sdk::connect(support::demo_command("")));
    let peer = rmcp.peer().clone();
    let mut sequential: Vec<Option<Profile>> = vec![None; CLIENTS.len()];
    let mut in_flight: Vec<Option<Profile>> = vec![None; CLIENTS.len()];
    let keep = |slot: &mut Option<Profile>, p: Profile| match slot {
        Some(all) => all.absorb(p),
        None => *slot = Some(p),
    };
    for round in 0..ROUNDS {
        for (mode, n, window) in [
            ("sequential", SEQUENTIAL_PER_ROUND, 1),
            ("64_in_flight", IN_FLIGHT_PER_ROUND, IN_FLIGHT),
        ] {
            for turn in 0..CLIENTS.len() {
                let client = (round as usize + turn) % CLIENTS.len();
                let name = format!("stdio/{}/{mode}", CLIENTS[client]);
                let p = match client {
                    0 | 1 => {
                        let s = servers[client].clone();
                        measure::profile_on_worker(rt, &name, n, window, move || echo(s.clone()))
                    }
                    2 if window == 1 => raw.profile_sequential(&name, n),
                    2 => raw.profile_pipelined(&name, n, window as usize),
                    _ => {
                        let peer = peer.clone();
                        measure::profile_on_worker(rt, &name, n, window, move || {
                            let peer = peer.clone();
                            async move { sdk::echo(&peer).await }
                        })
                    }
                };
                let slots = if window == 1 {
                    &mut sequential
                } else {
                    &mut in_flight
                };
                keep(&mut slots[client], p);
            }
        }
    }
    rt.block_on(async {
        let _ = rmcp.cancel().await;
    });
    sequential
        .into_iter()
        .chain(in_flight)
        .map(|p| p.expect("every client ran"))
        .collect()
}

/// The ratios that matter, against the targets, for each Switchboard set-up.
fn print_targets(p: &[Profile]) {
    let [sb_seq, io_seq, raw_seq, rmcp_seq, sb_64, io_64, raw_64, rmcp_64] = p else {
        return;
    };
    let p50 = |p: &Profile| p.quantile(0.5).as_secs_f64();
    for (label, seq, in_64) in [
        ("switchboard_io", io_seq, io_64),
        ("switchboard", sb_seq, sb_64),
    ] {
        println!("\n== stdio: {label}, the ratios, from the interleaved loop above ==");
        measure::print_target(
            "sequential p50 latency, switchboard / raw",
            p50(seq) / p50(raw_seq),
            "x",
            true,
            1.3,
        );
        measure::print_target(
            "64 in flight calls/s, switchboard / raw",
            in_64.calls_per_sec() / raw_64.calls_per_sec(),
            "x",
            false,
            0.35,
        );
        measure::print_target(
            "64 in flight calls/s, switchboard / rmcp",
            in_64.calls_per_sec() / rmcp_64.calls_per_sec(),
            "x",
            false,
            3.5,
        );
        measure::print_target(
            "client CPU per call, switchboard sequential",
            seq.cpu_us_per_call(),
            "µs",
            true,
            8.0,
        );
        measure::print_target(
            "client CPU per call, switchboard 64 in flight",
            in_64.cpu_us_per_call(),
            "µs",
            true,
            4.0,
        );
        measure::print_ratio(
            "sequential p50 latency, switchboard / rmcp",
            p50(seq) / p50(rmcp_seq),
        );
        measure::print_ratio(
            "client CPU per call sequential, switchboard / raw",
            seq.cpu_us_per_call() / raw_seq.cpu_us_per_call(),
        );
        measure::print_ratio(
            "client CPU per call sequential, switchboard / rmcp",
            seq.cpu_us_per_call() / rmcp_seq.cpu_us_per_call(),
        );
        measure::print_ratio(
            "client CPU per call 64 in flight, switchboard / raw",
            in_64.cpu_us_per_call() / raw_64.cpu_us_per_call(),
        );
        measure::print_ratio(
            "client CPU per call 64 in flight, switchboard / rmcp",
            in_64.cpu_us_per_call() / rmcp_64.cpu_us_per_call(),
        );
    }
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard::demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(4), 50);
    let profiles = stdio(&mut c);
    c.final_summary();
    measure::print_summary(
        "stdio: Switchboard, raw and rmcp, interleaved in one run",
        &profiles,
    );
    print_targets(&profiles);
    std::process::ExitCode::SUCCESS
}
