//! Calls through the public handle to a real child process over stdio, against two servers:
//! the **blocking echo server** (`support/echo_server.rs`: plain std I/O, no async runtime,
//! so that the server is never what is measured) as the primary comparison, and the bundled
//! **demo server** (tokio-based) beside it. criterion times sequential calls and 64 in
//! flight, in calls/s. Then a custom loop prints latency percentiles (p50/p90/p99), calls/s
//! and client CPU per call for Switchboard (as a user gets it; with `io_runtime`; and with
//! `.reset_on_progress(true)` on every call), the raw client of `baseline` (sequential and
//! pipelined), rmcp of `peers` and, against the blocking server, the tokio floor
//! (`support/tokio_floor.rs`: the least a tokio client with a task per caller does), against
//! both servers, measured in turns in this one process, and the ratios between them against
//! the targets (see `BENCHMARKS.md`).
//!
//! Both children are this bench binary itself, re-executed into the server's entry point.
//! The callers run on a runtime built as `#[tokio::main]` builds one (multi-thread, one
//! worker per core).

mod support;

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use rmcp::service::{Peer, RoleClient, RunningService};
use support::measure::{self, Profile};
use support::raw::RawClient;
use support::sdk;
use support::tokio_floor::TokioFloor;
use switchboard::{Runtime, ServerConfig, ServerHandle};

/// Rounds of the interleaved comparison; in each, every client makes
/// [`SEQUENTIAL_PER_ROUND`] sequential calls, then [`IN_FLIGHT_PER_ROUND`] calls 64 in flight,
/// against each server.
const ROUNDS: u64 = 10;
const SEQUENTIAL_PER_ROUND: u64 = 500;
const IN_FLIGHT_PER_ROUND: u64 = 5_000;
const IN_FLIGHT: u64 = 64;

/// The clients of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// Switchboard with its connections on the actor thread (`actor_thread_io`).
    Switchboard,
    /// Switchboard with its connections on the callers' runtime: what a user gets without
    /// tuning (`#[tokio::main]`), given explicitly with `io_runtime`.
    SwitchboardIo,
    /// The `io_runtime` set-up (a user's default), its sequential calls made from the thread
    /// blocking on the runtime (`block_on`: where `#[tokio::main]`'s future runs) rather
    /// than from a spawned task. Against the blocking echo server only.
    SwitchboardBlockOn,
    /// The actor-thread set-up, every call with `.reset_on_progress(true)`.
    SwitchboardReset,
    /// The raw client of `baseline`: blocking sequential calls, or a pipelining writer and
    /// reader thread.
    Raw,
    /// rmcp over its child-process transport.
    Rmcp,
    /// The least a tokio client with a task per caller does (`support/tokio_floor.rs`):
    /// Switchboard's floor on this runtime. Against the blocking echo server only.
    TokioFloor,
    /// The floor's sequential calls made from the `block_on` thread: what any tokio client
    /// pays there, beside `SwitchboardBlockOn`. Against the blocking echo server only.
    TokioFloorBlockOn,
}

impl Client {
    fn label(self) -> &'static str {
        match self {
            Client::Switchboard => "switchboard",
            Client::SwitchboardIo => "switchboard_io",
            Client::SwitchboardBlockOn => "switchboard_block_on",
            Client::SwitchboardReset => "switchboard_reset",
            Client::Raw => "raw",
            Client::Rmcp => "rmcp",
            Client::TokioFloor => "tokio_floor",
            Client::TokioFloorBlockOn => "tokio_floor_block_on",
        }
    }
}

/// The servers, primary first, and the clients measured against each.
const SERVERS: [(&str, &[Client]); 2] = [
    (
        "blocking",
        &[
            Client::Switchboard,
            Client::SwitchboardIo,
            Client::SwitchboardBlockOn,
            Client::SwitchboardReset,
            Client::Raw,
            Client::Rmcp,
            Client::TokioFloor,
            Client::TokioFloorBlockOn,
        ],
    ),
    (
        "demo",
        &[
            Client::Switchboard,
            Client::SwitchboardIo,
            Client::Raw,
            Client::Rmcp,
        ],
    ),
];

async fn echo(server: Arc<ServerHandle>) {
    let r = server.call_tool("echo", support::echo_args()).await;
    assert!(r.is_ok(), "{r:?}");
}

async fn echo_reset(server: Arc<ServerHandle>) {
    let r = server
        .call_tool("echo", support::echo_args())
        .reset_on_progress(true)
        .await;
    assert!(r.is_ok(), "{r:?}");
}

async fn runtime(server: impl Into<ServerConfig>, io: Option<tokio::runtime::Handle>) -> Runtime {
    let mut builder = Runtime::builder().server("s", server);
    // `io`: where a user's runtime puts the connections by default (the builder's own
    // multi-thread runtime), given explicitly; `None`: on the actor thread.
    builder = match io {
        Some(io) => builder.io_runtime(io),
        None => builder.actor_thread_io(),
    };
    builder.build().await.expect("runtime")
}

/// One server's clients, each with its own child.
struct Clients {
    /// Switchboard's runtimes: the default set-up and the one with `io_runtime`.
    runtimes: [Runtime; 2],
    /// Their handles to the server; the default one also makes the `reset` calls.
    switchboard: Arc<ServerHandle>,
    switchboard_io: Arc<ServerHandle>,
    raw: RawClient,
    rmcp: RunningService<RoleClient, ()>,
    peer: Peer<RoleClient>,
    /// Against the blocking echo server only.
    floor: Option<Arc<TokioFloor>>,
}

impl Clients {
    fn start(rt: &tokio::runtime::Runtime, server: &str) -> Clients {
        let (config, command): (_, fn() -> std::process::Command) = match server {
            "blocking" => (support::echo_stdio(), support::echo_command),
            _ => (support::demo_stdio(""), || support::demo_command("")),
        };
        let default = rt.block_on(runtime(config.clone(), None));
        let io = rt.block_on(runtime(config, Some(rt.handle().clone())));
        let switchboard = Arc::new(default.server("s").expect("server"));
        let switchboard_io = Arc::new(io.server("s").expect("server"));
        assert!(switchboard.status().is_ready() && switchboard_io.status().is_ready());
        let raw = RawClient::spawn(command());
        let rmcp = rt.block_on(sdk::connect(command()));
        let peer = rmcp.peer().clone();
        let floor = (server == "blocking").then(|| rt.block_on(TokioFloor::spawn(command())));
        Clients {
            runtimes: [default, io],
            switchboard,
            switchboard_io,
            raw,
            rmcp,
            peer,
            floor,
        }
    }

    fn profile(
        &mut self,
        rt: &tokio::runtime::Runtime,
        client: Client,
        name: &str,
        n: u64,
        window: u64,
    ) -> Profile {
        match client {
            Client::Switchboard | Client::SwitchboardIo => {
                let s = if client == Client::Switchboard {
                    self.switchboard.clone()
                } else {
                    self.switchboard_io.clone()
                };
                measure::profile_on_worker(rt, name, n, window, move || echo(s.clone()))
            }
            Client::SwitchboardBlockOn if window == 1 => {
                let s = self.switchboard_io.clone();
                measure::profile_on_block_on(rt, name, n, move || echo(s.clone()))
            }
            // Many calls at once are tasks wherever the caller sits: the spawned set-up's.
            Client::SwitchboardBlockOn => {
                let s = self.switchboard_io.clone();
                measure::profile_on_worker(rt, name, n, window, move || echo(s.clone()))
            }
            Client::SwitchboardReset => {
                let s = self.switchboard.clone();
                measure::profile_on_worker(rt, name, n, window, move || echo_reset(s.clone()))
            }
            Client::Raw if window == 1 => self.raw.profile_sequential(name, n),
            Client::Raw => self.raw.profile_pipelined(name, n, window as usize),
            Client::Rmcp => {
                let peer = self.peer.clone();
                measure::profile_on_worker(rt, name, n, window, move || {
                    let peer = peer.clone();
                    async move { sdk::echo(&peer).await }
                })
            }
            Client::TokioFloorBlockOn if window == 1 => {
                let floor = self.floor.clone().expect("the floor client runs here");
                measure::profile_on_block_on(rt, name, n, move || floor.clone().call())
            }
            Client::TokioFloor | Client::TokioFloorBlockOn => {
                let floor = self.floor.clone().expect("the floor client runs here");
                measure::profile_on_worker(rt, name, n, window, move || floor.clone().call())
            }
        }
    }

    fn stop(self, rt: &tokio::runtime::Runtime) {
        let Clients { runtimes, rmcp, .. } = self;
        rt.block_on(async {
            let _ = rmcp.cancel().await;
            for r in runtimes {
                r.shutdown().await;
            }
        });
    }
}

/// criterion's part: Switchboard in both set-ups against both servers.
fn criterion_benches(c: &mut Criterion, rt: &tokio::runtime::Runtime, clients: &[Clients]) {
    let mut group = c.benchmark_group("stdio");
    group.throughput(Throughput::Elements(1));
    // `echo` and `echo_io_runtime` keep the names the demo server's numbers have always had.
    let labels = [
        ("blocking_echo", "blocking_echo_io_runtime"),
        ("echo", "echo_io_runtime"),
    ];
    for (clients, (default, io)) in clients.iter().zip(labels) {
        for (label, server) in [
            (default, &clients.switchboard),
            (io, &clients.switchboard_io),
        ] {
            group.bench_function(format!("{label}/sequential"), |b| {
                b.to_async(rt).iter_custom(|iters| {
                    let server = server.clone();
                    measure::sequential_on_worker(iters, move || echo(server.clone()))
                })
            });
            group.bench_function(format!("{label}/64_in_flight"), |b| {
                b.to_async(rt).iter_custom(|iters| {
                    let server = server.clone();
                    measure::in_flight(iters, 64, move || echo(server.clone()))
                })
            });
        }
    }
    group.finish();
}

/// The custom loop: every client of [`SERVERS`], each with its own child, measured in turns
/// (the order rotating each round) so that a noisy shared machine weighs on all of them
/// alike. Returns the profiles server by server, client by client in the order of
/// [`SERVERS`]; sequential first, then 64 in flight.
fn compare(rt: &tokio::runtime::Runtime, clients: &mut [Clients]) -> Vec<Profile> {
    let pairs: Vec<(usize, Client)> = SERVERS
        .iter()
        .enumerate()
        .flat_map(|(s, (_, list))| list.iter().map(move |&c| (s, c)))
        .collect();
    let mut sequential: Vec<Option<Profile>> = vec![None; pairs.len()];
    let mut in_flight: Vec<Option<Profile>> = vec![None; pairs.len()];
    let keep = |slot: &mut Option<Profile>, p: Profile| match slot {
        Some(all) => all.absorb(p),
        None => *slot = Some(p),
    };
    for round in 0..ROUNDS {
        for (mode, n, window) in [
            ("sequential", SEQUENTIAL_PER_ROUND, 1),
            ("64_in_flight", IN_FLIGHT_PER_ROUND, IN_FLIGHT),
        ] {
            for turn in 0..pairs.len() {
                let at = (round as usize + turn) % pairs.len();
                let (server, client) = pairs[at];
                let name = format!("stdio/{}/{}/{mode}", SERVERS[server].0, client.label());
                let p = clients[server].profile(rt, client, &name, n, window);
                let slots = if window == 1 {
                    &mut sequential
                } else {
                    &mut in_flight
                };
                keep(&mut slots[at], p);
            }
        }
    }
    sequential
        .into_iter()
        .chain(in_flight)
        .map(|p| p.expect("every client ran"))
        .collect()
}

/// The ratios that matter, against the targets, for each server and Switchboard set-up.
fn print_targets(profiles: &[Profile]) {
    let find = |server: &str, client: Client, mode: &str| {
        let name = format!("stdio/{server}/{}/{mode}", client.label());
        profiles.iter().find(|p| p.name == name)
    };
    let p50 = |p: &Profile| p.quantile(0.5).as_secs_f64();
    for (server, list) in SERVERS {
        let seq = |c| find(server, c, "sequential");
        let in_64 = |c| find(server, c, "64_in_flight");
        let (Some(raw_seq), Some(raw_64), Some(rmcp_seq), Some(rmcp_64)) = (
            seq(Client::Raw),
            in_64(Client::Raw),
            seq(Client::Rmcp),
            in_64(Client::Rmcp),
        ) else {
            continue;
        };
        println!(
            "\n== stdio, {server} server: regime indicator, raw sequential p50 {:.1} µs ==",
            p50(raw_seq) * 1e6
        );
        for client in [Client::Switchboard, Client::SwitchboardIo] {
            let (Some(s), Some(s64)) = (seq(client), in_64(client)) else {
                continue;
            };
            let who = client.label();
            println!("\n== stdio, {server} server: {who}, from the interleaved loop above ==");
            measure::print_target(
                &format!("sequential p50, {who} / raw"),
                p50(s) / p50(raw_seq),
                "x",
                true,
                1.5,
            );
            measure::print_target(
                &format!("64 in flight calls/s, {who} / raw pipelined"),
                s64.calls_per_sec() / raw_64.calls_per_sec(),
                "x",
                false,
                0.5,
            );
            measure::print_target(
                &format!("64 in flight calls/s, {who} / rmcp"),
                s64.calls_per_sec() / rmcp_64.calls_per_sec(),
                "x",
                false,
                2.5,
            );
            measure::print_target(
                &format!("client CPU per call, {who} 64 in flight"),
                s64.cpu_us_per_call(),
                "µs",
                true,
                2.0,
            );
            measure::print_ratio(
                &format!("sequential p50, {who} / rmcp"),
                p50(s) / p50(rmcp_seq),
            );
            measure::print_ratio(
                &format!("client CPU per call sequential, {who} / raw"),
                s.cpu_us_per_call() / raw_seq.cpu_us_per_call(),
            );
            measure::print_ratio(
                &format!("client CPU per call 64 in flight, {who} / raw"),
                s64.cpu_us_per_call() / raw_64.cpu_us_per_call(),
            );
            measure::print_ratio(
                &format!("client CPU per call 64 in flight, {who} / rmcp"),
                s64.cpu_us_per_call() / rmcp_64.cpu_us_per_call(),
            );
            if let (Some(floor), Some(floor_64)) =
                (seq(Client::TokioFloor), in_64(Client::TokioFloor))
            {
                measure::print_ratio(
                    &format!("sequential p50, {who} / tokio_floor"),
                    p50(s) / p50(floor),
                );
                measure::print_ratio(
                    &format!("64 in flight calls/s, {who} / tokio_floor"),
                    s64.calls_per_sec() / floor_64.calls_per_sec(),
                );
                measure::print_ratio(
                    &format!("client CPU per call 64 in flight, {who} / tokio_floor"),
                    s64.cpu_us_per_call() / floor_64.cpu_us_per_call(),
                );
            }
        }
        if let (Some(spawned), Some(main)) =
            (seq(Client::SwitchboardIo), seq(Client::SwitchboardBlockOn))
        {
            println!("\n== stdio, {server} server: a caller on the block_on thread against a spawned one ==");
            measure::print_target(
                "sequential p50, switchboard_block_on / switchboard_io",
                p50(main) / p50(spawned),
                "x",
                true,
                1.3,
            );
            measure::print_target(
                "client CPU per call sequential, switchboard_block_on / switchboard_io",
                main.cpu_us_per_call() / spawned.cpu_us_per_call(),
                "x",
                true,
                1.3,
            );
            // The same place for the least a tokio client does: the cost of the place itself.
            if let (Some(floor), Some(floor_main)) =
                (seq(Client::TokioFloor), seq(Client::TokioFloorBlockOn))
            {
                measure::print_ratio(
                    "sequential p50, tokio_floor_block_on / tokio_floor",
                    p50(floor_main) / p50(floor),
                );
                measure::print_ratio(
                    "client CPU per call sequential, tokio_floor_block_on / tokio_floor",
                    floor_main.cpu_us_per_call() / floor.cpu_us_per_call(),
                );
                measure::print_ratio(
                    "sequential p50, switchboard_block_on / tokio_floor_block_on",
                    p50(main) / p50(floor_main),
                );
            }
        }
        if !list.contains(&Client::SwitchboardReset) {
            continue;
        }
        let (Some(plain), Some(plain_64), Some(reset), Some(reset_64)) = (
            seq(Client::Switchboard),
            in_64(Client::Switchboard),
            seq(Client::SwitchboardReset),
            in_64(Client::SwitchboardReset),
        ) else {
            continue;
        };
        println!("\n== stdio, {server} server: a call with progress reset against a plain one ==");
        measure::print_target(
            "sequential p50, switchboard_reset / switchboard",
            p50(reset) / p50(plain),
            "x",
            true,
            1.1,
        );
        measure::print_target(
            "64 in flight calls/s, switchboard_reset / switchboard",
            reset_64.calls_per_sec() / plain_64.calls_per_sec(),
            "x",
            false,
            0.9,
        );
        measure::print_ratio(
            "client CPU per call 64 in flight, reset / plain",
            reset_64.cpu_us_per_call() / plain_64.cpu_us_per_call(),
        );
    }
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::child_main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(4), 50);
    let rt = support::main_runtime();
    let mut clients: Vec<Clients> = SERVERS
        .iter()
        .map(|(server, _)| Clients::start(&rt, server))
        .collect();
    criterion_benches(&mut c, &rt, &clients);
    let profiles = if support::custom_loop() {
        compare(&rt, &mut clients)
    } else {
        Vec::new()
    };
    for clients in clients {
        clients.stop(&rt);
    }
    c.final_summary();
    measure::print_summary(
        "stdio: Switchboard, raw and rmcp against the blocking echo server and the demo server, interleaved in one run",
        &profiles,
    );
    print_targets(&profiles);
    std::process::ExitCode::SUCCESS
}
