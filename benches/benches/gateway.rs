//! The gateway's added cost per forwarded call: the same `tools/call echo` to the same kind
//! of upstream (the blocking echo server over stdio, a child process of its own each time),
//! made by the embedded runtime directly (`embedded`, the default set-up, as a user gets
//! it) and through `switchboard serve`'s code over Streamable HTTP (`gateway`: the gateway
//! crate on `switchboard-server`, its runtime's I/O and its HTTP serving on one thread of
//! its own, so that thread's CPU clock reads the gateway's cost; called by hyper's pooled
//! keep-alive client with a handshake-era session), with a bare hyper JSON echo
//! (`bare_hyper`) for the HTTP floor, and the least a forwarder does (`forwarder`: the same
//! hyper server passing each `tools/call` line as it came to a blocking echo server child of
//! its own and its answer line back, matched by id, nothing else: the gateway's floor),
//! sequential and 64 in flight, in turns in one run. `gateway_audit` is the gateway with its
//! audit log on (`serve --audit FILE`, a file in the temporary directory, removed after):
//! what the audit costs a forwarded call.
//!
//! What the targets compare: the gateway's p50 and p99 minus the embedded runtime's,
//! the gateway's calls/s at 64 in flight against the bare echo's, and the gateway thread's
//! CPU per forwarded call; the forwarder's p50 and p99 minus the embedded runtime's are what
//! the latency targets would be with no gateway code at all. `SWITCHBOARD_BENCH_ROUNDS=1`
//! makes it short.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::http_server::HttpServer;
use support::hyper_caller::Caller;
use support::measure::{self, keep, rounds, Profile};
use switchboard::Runtime;
use switchboard_gateway::audit::{Audit, Rotation, Sink};

const ROUNDS: u64 = 6;
const SEQUENTIAL_PER_ROUND: u64 = 500;
const IN_FLIGHT_PER_ROUND: u64 = 5_000;
const IN_FLIGHT: u64 = 64;

/// The gateway over a runtime whose one upstream is the blocking echo server, on a thread
/// of its own: the HTTP server and the runtime's connections on that thread's runtime.
fn gateway(audit: Option<Audit>) -> HttpServer {
    support::http_server::gateway(
        Runtime::builder().server("echo", support::echo_stdio()),
        true,
        audit,
    )
}

/// The audit log of `gateway_audit`, to `path`, as `serve --audit` starts it.
fn audit(path: &std::path::Path) -> Audit {
    Audit::start(Sink::File(path.to_owned()), Rotation::default(), false).expect("the audit file")
}

async fn embedded() -> Runtime {
    Runtime::builder()
        .server("echo", support::echo_stdio())
        .build()
        .await
        .expect("the embedded runtime")
}

async fn call_embedded(runtime: Runtime) {
    let r = runtime.call_tool("echo", support::echo_args()).await;
    assert!(r.is_ok(), "{r:?}");
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::child_main_from_env() {
        return code;
    }
    let rt = support::main_runtime();
    let audit_file =
        std::env::temp_dir().join(format!("gateway-bench-audit-{}.jsonl", std::process::id()));
    let audited = audit(&audit_file);
    let servers = [
        ("gateway", gateway(None)),
        ("bare_hyper", HttpServer::start()),
        ("forwarder", support::http_server::forwarder()),
        ("gateway_audit", gateway(Some(audited.clone()))),
    ];
    let callers: Vec<Arc<Caller>> = servers
        .iter()
        .map(|(_, server)| rt.block_on(Caller::connect(&server.url())))
        .collect();
    let direct = rt.block_on(embedded());
    // Slots: [embedded, gateway, bare_hyper, forwarder, gateway_audit] × [sequential, 64 in
    // flight].
    const SETUPS: usize = 5;
    let mut profiles: Vec<Option<Profile>> = vec![None; 2 * SETUPS];
    let mut thread_cpu = [Duration::ZERO; 2 * SETUPS];
    let rounds = rounds(ROUNDS);
    for round in 0..rounds {
        for (mode_slot, (mode, n, window)) in [
            ("sequential", SEQUENTIAL_PER_ROUND, 1),
            ("64_in_flight", IN_FLIGHT_PER_ROUND, IN_FLIGHT),
        ]
        .into_iter()
        .enumerate()
        {
            for turn in 0..SETUPS {
                let who = (round as usize + turn) % SETUPS;
                let at = mode_slot * SETUPS + who;
                if who == 0 {
                    let name = format!("gateway/embedded/{mode}");
                    let runtime = direct.clone();
                    let p = rt.block_on(measure::profile(&name, n, window, move || {
                        call_embedded(runtime.clone())
                    }));
                    keep(&mut profiles[at], p);
                    continue;
                }
                let (label, server) = &servers[who - 1];
                let name = format!("gateway/{label}/{mode}");
                let caller = callers[who - 1].clone();
                let before = server.cpu();
                let mut p = rt.block_on(measure::profile(&name, n, window, move || {
                    caller.clone().call()
                }));
                let spent = server.cpu().saturating_sub(before);
                // The profile's CPU is the whole process's: the client's is what is left.
                p.cpu = p.cpu.saturating_sub(spent);
                thread_cpu[at] += spent;
                keep(&mut profiles[at], p);
            }
        }
    }
    rt.block_on(direct.shutdown());
    let profiles: Vec<Profile> = profiles
        .into_iter()
        .map(|p| p.expect("every set-up ran"))
        .collect();
    measure::print_summary(
        "gateway: a forwarded call against the embedded runtime's direct one, a bare hyper echo and a bare forwarder, interleaved",
        &profiles,
    );
    println!("\n== the gateway's, the bare echo's and the forwarder's thread CPU per call ==");
    for at in [1, 2, 3, 4, 6, 7, 8, 9] {
        println!(
            "server  {:<48} {:>8.2} µs/call",
            profiles[at].name,
            thread_cpu[at].as_secs_f64() * 1e6 / profiles[at].calls as f64
        );
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (q, label, bound) in [(0.5, "p50", 50.0), (0.99, "p99", 150.0)] {
        measure::print_target(
            &format!("sequential {label} added by the gateway, µs"),
            us(profiles[1].quantile(q)) - us(profiles[0].quantile(q)),
            "µs",
            true,
            bound,
        );
        // The floor: the same target met by a forwarder with no gateway code.
        measure::print_target(
            &format!("sequential {label} added by the bare forwarder, µs"),
            us(profiles[3].quantile(q)) - us(profiles[0].quantile(q)),
            "µs",
            true,
            bound,
        );
    }
    measure::print_target(
        "64 in flight calls/s, gateway / bare_hyper",
        profiles[6].calls_per_sec() / profiles[7].calls_per_sec(),
        "x",
        false,
        0.5,
    );
    measure::print_target(
        "gateway thread CPU per forwarded call 64 in flight, µs",
        thread_cpu[6].as_secs_f64() * 1e6 / profiles[6].calls as f64,
        "µs",
        true,
        30.0,
    );
    measure::print_ratio(
        "64 in flight calls/s, gateway / embedded",
        profiles[6].calls_per_sec() / profiles[5].calls_per_sec(),
    );
    measure::print_ratio(
        "64 in flight calls/s, gateway / forwarder",
        profiles[6].calls_per_sec() / profiles[8].calls_per_sec(),
    );
    // What the audit log costs a forwarded call: the same gateway with it on, in turns.
    for (q, label) in [(0.5, "p50"), (0.99, "p99")] {
        println!(
            "audit  sequential {label} added by the audit log: {:+.2} µs",
            us(profiles[4].quantile(q)) - us(profiles[1].quantile(q))
        );
    }
    measure::print_ratio(
        "64 in flight calls/s, gateway_audit / gateway",
        profiles[9].calls_per_sec() / profiles[6].calls_per_sec(),
    );
    let cpu = |at: usize| thread_cpu[at].as_secs_f64() * 1e6 / profiles[at].calls as f64;
    println!(
        "audit  gateway thread CPU per call 64 in flight added by the audit log: {:+.2} µs (the writer thread's own not counted: it is off the gateway's thread)",
        cpu(9) - cpu(6)
    );
    println!("audit  lines dropped: {}", audited.dropped());
    drop(servers);
    let _ = std::fs::remove_file(&audit_file);
    std::process::ExitCode::SUCCESS
}
