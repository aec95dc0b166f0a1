//! The runtime's own cost: calls through the public handle to the demo server running in
//! this process over the memory transport, at 1, 16, 64 and 256 in flight, next to the floor
//! for in-memory sequential latency measured in the same run: a bare cross-thread round trip
//! (a tokio `oneshot` sender handed over a channel to a task on another thread, which
//! answers on it). A second floor, `oneshot_round_trip_epoll`, gives that thread tokio's I/O
//! and time drivers, so it sleeps in `epoll_wait` as the actor thread does.
//!
//! The same calls with a Prometheus exporter active (`metrics_listener`), next to the runtime
//! without one, sequential and 64 in flight: what recording metrics costs.
//!
//! Catalogue routing: `Runtime::call_tool` by catalogue name across 1, 10 and 100 in-process
//! [`ToolServer`]s of 50 tools each. Every server's tool names are its own (`s007_tool_00`
//! ...), so no name is prefixed and every catalogue name is a tool name at every server
//! count; the calls visit every tool of every server in a fixed shuffled order. Three
//! levels: the lookup alone (`runtime.catalogue().resolve(name)`), the routing alone (a
//! `Call` built by `Runtime::call_tool` and dropped unsent: snapshot, lookup, server handle;
//! once walking every name, once with one name over and over), and the sequential call
//! (routing plus the in-memory round trip). `100_servers_one_called` is the 100-server
//! runtime called on the 50 tools of one server only: the catalogue is as large, but the
//! servers the calls reach are as few as with one server.
//!
//! A note on the size of a call's futures. Every call allocates two of them once: its
//! sending future (`CallSpec::send`, `runtime/src/call.rs`) and its exchange
//! (`exchange::exchange`). With glibc's allocator, a block over 1,032 bytes misses the
//! per-thread cache and takes the slow path, which consolidates the heap: that cost about a
//! tenth of a call's CPU at 64 in flight when both futures had grown past it. Unit tests used
//! to assert both stayed at or under 1,024 bytes; a number tuned to one allocator's bins is
//! no property of the code, so they are gone, and this bench (`64_in_flight`, CPU per call)
//! is where such a growth shows. To see the sizes, print `size_of_val` of the futures.

mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use support::measure::{self, Profile};
use support::tool_server::{ToolServer, TOOLS};
use switchboard::{Call, Runtime, ServerConfig, ServerHandle};
use switchboard_demo::{serve, Options};
use tokio::sync::{mpsc, oneshot};

/// Rounds of the interleaved sequential loop, and calls per round for each side.
const ROUNDS: u64 = 10;
const SEQUENTIAL_PER_ROUND: u64 = 2_000;
/// Rounds of the interleaved 64-in-flight loop (with and without metrics), and calls per
/// round for each side.
const IN_FLIGHT_ROUNDS: u64 = 4;
const IN_FLIGHT_PER_ROUND: u64 = 25_000;
/// Servers in the catalogue routing benches.
const SERVER_COUNTS: [usize; 3] = [1, 10, 100];

fn memory_server() -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(|io| async move {
        let (reader, writer) = tokio::io::split(io);
        let _ = serve(reader, writer, Options::default()).await;
    })
    .max_in_flight(1024)
}

async fn echo(server: ServerHandle) {
    let r = server.call_tool("echo", support::echo_args()).await;
    assert!(r.is_ok(), "{r:?}");
}

/// A runtime of one demo server over the memory transport; with `prometheus`, it also serves
/// its metrics on a free loopback port (without, it records into the global recorder of the
/// `metrics` facade, and none is installed).
async fn memory_runtime(prometheus: bool, io: Option<tokio::runtime::Handle>) -> Runtime {
    let mut builder = Runtime::builder().server("memory", memory_server());
    // `io`: where a user's runtime puts the connections by default (the builder's own
    // multi-thread runtime), given explicitly; `None`: on the actor thread.
    builder = match io {
        Some(io) => builder.io_runtime(io),
        None => builder.actor_thread_io(),
    };
    if prometheus {
        builder = builder.metrics_listener("127.0.0.1:0".parse().expect("an address"));
    }
    let runtime = builder.build().await.expect("runtime");
    assert!(runtime
        .server("memory")
        .expect("server")
        .status()
        .is_ready());
    runtime
}

/// Catalogue names in a fixed order that visits every tool of every server, and the next one
/// to call.
struct Names {
    all: Vec<String>,
    next: AtomicUsize,
}

impl Names {
    fn next(&self) -> &str {
        let at = self.next.fetch_add(1, Ordering::Relaxed) % self.all.len();
        &self.all[at]
    }
}

/// A runtime of `servers` tool servers, `s000`, `s001`, ..., each listing 50 tools of its own
/// (`s000_tool_00` ...); every catalogue name, shuffled; and the names of `s000` alone,
/// shuffled.
async fn catalogue_runtime(servers: usize) -> (Runtime, Arc<Names>, Arc<Names>) {
    let mut builder = Runtime::builder();
    let mut names = Vec::with_capacity(servers * TOOLS);
    for i in 0..servers {
        let server = format!("s{i:03}");
        let prefix = format!("{server}_");
        builder = builder.server(server, ToolServer::new(&prefix).config());
        names.extend(ToolServer::names(&prefix));
    }
    let started = std::time::Instant::now();
    let runtime = builder.build().await.expect("runtime");
    println!(
        "setup   {servers} tool servers ready, catalogue of {} tools built, in {:.1} ms",
        servers * TOOLS,
        started.elapsed().as_secs_f64() * 1e3
    );
    let catalogue = runtime.catalogue();
    assert_eq!(catalogue.len(), servers * TOOLS, "every tool is listed");
    for name in &names {
        let entry = catalogue.get(name).expect("a catalogue name");
        assert_eq!(entry.name, *name, "no name is prefixed");
        assert_eq!(entry.tool.name, *name);
    }
    let mut first: Vec<String> = names[..TOOLS].to_vec();
    shuffle(&mut names);
    shuffle(&mut first);
    let cursor = |all| {
        Arc::new(Names {
            all,
            next: AtomicUsize::new(0),
        })
    };
    (runtime, cursor(names), cursor(first))
}

/// Fisher-Yates with a fixed xorshift seed: the same order in every run.
fn shuffle<T>(items: &mut [T]) {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

/// One sequential call by catalogue name; the tool server answers with an error for a tool
/// it does not list, so a call routed to the wrong server fails here.
async fn call(call: Call) {
    match call.await {
        Ok(result) => assert!(!result.is_error(), "{result:?}"),
        Err(e) => panic!("{e}"),
    }
}

fn call_next(runtime: &Runtime, names: &Names) -> impl std::future::Future<Output = ()> {
    call(runtime.call_tool(names.next(), support::echo_args()))
}

/// The floor: a task on its own thread (a current-thread runtime, as the actor thread is)
/// that answers every `oneshot` sender it is handed. The thread ends when every sender of
/// the returned channel is gone.
///
/// With `drivers`, the runtime has tokio's I/O and time drivers, as the actor thread's has,
/// so the idle thread parks in `epoll_wait` and is woken through an eventfd rather than a
/// futex: the same floor with the actor thread's way of sleeping.
fn start_echo_thread(drivers: bool) -> mpsc::Sender<oneshot::Sender<u64>> {
    let (requests, mut rx) = mpsc::channel::<oneshot::Sender<u64>>(1024);
    std::thread::spawn(move || {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        if drivers {
            builder.enable_all();
        }
        let rt = builder.build().expect("echo runtime");
        rt.block_on(async move {
            let mut n = 0;
            while let Some(reply) = rx.recv().await {
                n += 1;
                let _ = reply.send(n);
            }
        });
    });
    requests
}

/// One round trip to the echo thread.
async fn round_trip(requests: mpsc::Sender<oneshot::Sender<u64>>) {
    let (reply, answer) = oneshot::channel();
    requests.send(reply).await.expect("echo thread");
    answer.await.expect("answer");
}

/// The profiles of the custom loop.
struct Profiles {
    floor: Profile,
    floor_epoll: Profile,
    sequential: Profile,
    sequential_prometheus: Profile,
    in_flight: Profile,
    in_flight_prometheus: Profile,
    /// The same server with `io_runtime`: its connection and itself on the callers' runtime.
    sequential_io: Profile,
    /// The same, called from a task on the worker the server runs on.
    sequential_io_worker: Profile,
    in_flight_io: Profile,
    /// Sequential catalogue calls, by label (`10_servers`, ...).
    catalogue: Vec<(String, Profile)>,
}

impl Profiles {
    fn all(&self) -> Vec<Profile> {
        let mut all = vec![
            self.floor.clone(),
            self.floor_epoll.clone(),
            self.sequential.clone(),
            self.sequential_prometheus.clone(),
            self.in_flight.clone(),
            self.in_flight_prometheus.clone(),
            self.sequential_io.clone(),
            self.sequential_io_worker.clone(),
            self.in_flight_io.clone(),
        ];
        all.extend(self.catalogue.iter().map(|(_, p)| p.clone()));
        all
    }
}

fn keep(slot: &mut Option<Profile>, p: Profile) {
    match slot {
        Some(all) => all.absorb(p),
        None => *slot = Some(p),
    }
}

fn routing(c: &mut Criterion) -> Option<Profiles> {
    let rt = support::tokio_runtime();
    let runtime = rt.block_on(memory_runtime(false, None));
    let prometheus = rt.block_on(memory_runtime(true, None));
    let io = rt.block_on(memory_runtime(false, Some(rt.handle().clone())));
    let server = runtime.server("memory").expect("server");
    let server_prometheus = prometheus.server("memory").expect("server");
    let server_io = io.server("memory").expect("server");
    // Every server count, calling tools of every server; and the most servers, calling the
    // tools of one of them only.
    let mut catalogues: Vec<(String, Runtime, Arc<Names>)> = Vec::new();
    for n in SERVER_COUNTS {
        let (runtime, names, first) = rt.block_on(catalogue_runtime(n));
        catalogues.push((format!("{n}_servers"), runtime.clone(), names));
        if n == SERVER_COUNTS[SERVER_COUNTS.len() - 1] {
            catalogues.push((format!("{n}_servers_one_called"), runtime, first));
        }
    }
    let floor = start_echo_thread(false);
    let floor_epoll = start_echo_thread(true);

    let mut group = c.benchmark_group("routing");
    group.throughput(Throughput::Elements(1));
    group.bench_function("oneshot_round_trip/sequential", |b| {
        b.to_async(&rt).iter(|| round_trip(floor.clone()))
    });
    group.bench_function("oneshot_round_trip_epoll/sequential", |b| {
        b.to_async(&rt).iter(|| round_trip(floor_epoll.clone()))
    });
    for (label, server) in [
        ("memory", &server),
        ("memory_prometheus", &server_prometheus),
        ("memory_io_runtime", &server_io),
    ] {
        group.bench_function(format!("{label}/echo/1_in_flight"), |b| {
            b.to_async(&rt).iter(|| echo(server.clone()))
        });
        let in_flights: &[u64] = if label == "memory" {
            &[16, 64, 256]
        } else {
            &[64]
        };
        for &in_flight in in_flights {
            group.bench_function(format!("{label}/echo/{in_flight}_in_flight"), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let server = server.clone();
                    measure::in_flight(iters, in_flight, move || echo(server.clone()))
                })
            });
        }
    }
    for (label, runtime, names) in &catalogues {
        // The micro-benches walk the names with a plain index, not the shared cursor.
        let mut at = 0;
        let mut next = || {
            at += 1;
            if at == names.all.len() {
                at = 0;
            }
            names.all[at].as_str()
        };
        group.bench_function(format!("catalogue/resolve/{label}"), |b| {
            b.iter(|| runtime.catalogue().resolve(next()).is_ok())
        });
        group.bench_function(format!("catalogue/route/{label}"), |b| {
            b.iter(|| black_box(runtime.call_tool(next(), serde_json::Value::Null)))
        });
        // The same routing with one name over and over: what is left when the working set
        // is a single entry and a single server handle.
        let one = names.all[0].as_str();
        if !label.ends_with("one_called") {
            group.bench_function(format!("catalogue/route_one_name/{label}"), |b| {
                b.iter(|| black_box(runtime.call_tool(black_box(one), serde_json::Value::Null)))
            });
        }
        group.bench_function(format!("catalogue/call/{label}"), |b| {
            b.to_async(&rt).iter(|| call_next(runtime, names))
        });
    }
    group.finish();

    let profiles = support::custom_loop().then(|| {
        custom_loop(
            &rt,
            [&floor, &floor_epoll],
            [&server, &server_prometheus, &server_io],
            &catalogues,
        )
    });
    drop((floor, floor_epoll));
    rt.block_on(async {
        runtime.shutdown().await;
        prometheus.shutdown().await;
        io.shutdown().await;
        for (_, runtime, _) in &catalogues {
            runtime.shutdown().await;
        }
    });
    profiles
}

/// The custom loop: the floors, Switchboard with and without metrics, and the catalogue calls
/// in turns, so that a noisy shared machine weighs on all alike; then 64 in flight with and
/// without metrics, in turns too.
fn custom_loop(
    rt: &tokio::runtime::Runtime,
    [floor, floor_epoll]: [&mpsc::Sender<oneshot::Sender<u64>>; 2],
    [server, server_prometheus, server_io]: [&ServerHandle; 3],
    catalogues: &[(String, Runtime, Arc<Names>)],
) -> Profiles {
    let sequential = |name: &str, server: &ServerHandle| {
        let s = server.clone();
        rt.block_on(measure::profile(name, SEQUENTIAL_PER_ROUND, 1, move || {
            echo(s.clone())
        }))
    };
    let mut floor_profile = None;
    let mut floor_epoll_profile = None;
    let mut plain = None;
    let mut with_metrics = None;
    let mut on_io = None;
    let mut on_io_worker = None;
    let mut catalogue: Vec<Option<Profile>> = vec![None; catalogues.len()];
    for _ in 0..ROUNDS {
        for (slot, name, f) in [
            (
                &mut floor_profile,
                "memory/oneshot_round_trip/sequential",
                floor,
            ),
            (
                &mut floor_epoll_profile,
                "memory/oneshot_round_trip_epoll/sequential",
                floor_epoll,
            ),
        ] {
            let f = f.clone();
            let p = rt.block_on(measure::profile(name, SEQUENTIAL_PER_ROUND, 1, move || {
                round_trip(f.clone())
            }));
            keep(slot, p);
        }
        keep(
            &mut plain,
            sequential("memory/switchboard/sequential", server),
        );
        keep(
            &mut with_metrics,
            sequential(
                "memory/switchboard_prometheus/sequential",
                server_prometheus,
            ),
        );
        keep(
            &mut on_io,
            sequential("memory/switchboard_io_runtime/sequential", server_io),
        );
        // The caller a task on the worker that runs the connection and the server: a call
        // from a task of the application's runtime to a server embedded in it.
        let s = server_io.clone();
        keep(
            &mut on_io_worker,
            measure::profile_on_worker(
                rt,
                "memory/switchboard_io_runtime/sequential_same_worker",
                SEQUENTIAL_PER_ROUND,
                1,
                move || echo(s.clone()),
            ),
        );
        for ((label, runtime, names), slot) in catalogues.iter().zip(&mut catalogue) {
            let (runtime, names) = (runtime.clone(), names.clone());
            let p = rt.block_on(measure::profile(
                &format!("catalogue/call/{label}/sequential"),
                SEQUENTIAL_PER_ROUND,
                1,
                move || call_next(&runtime, &names),
            ));
            keep(slot, p);
        }
    }
    let mut in_flight = None;
    let mut in_flight_prometheus = None;
    let mut in_flight_io = None;
    for round in 0..IN_FLIGHT_ROUNDS {
        let mut sides = [
            (&mut in_flight, "memory/switchboard/64_in_flight", server),
            (
                &mut in_flight_prometheus,
                "memory/switchboard_prometheus/64_in_flight",
                server_prometheus,
            ),
            (
                &mut in_flight_io,
                "memory/switchboard_io_runtime/64_in_flight",
                server_io,
            ),
        ];
        // Rotate which side goes first.
        sides.rotate_left(round as usize % 3);
        for (slot, name, server) in sides {
            let s = server.clone();
            let p = rt.block_on(measure::profile(name, IN_FLIGHT_PER_ROUND, 64, move || {
                echo(s.clone())
            }));
            keep(slot, p);
        }
    }
    Profiles {
        floor: floor_profile.expect("ran"),
        floor_epoll: floor_epoll_profile.expect("ran"),
        sequential: plain.expect("ran"),
        sequential_prometheus: with_metrics.expect("ran"),
        in_flight: in_flight.expect("ran"),
        in_flight_prometheus: in_flight_prometheus.expect("ran"),
        sequential_io: on_io.expect("ran"),
        sequential_io_worker: on_io_worker.expect("ran"),
        in_flight_io: in_flight_io.expect("ran"),
        catalogue: catalogues
            .iter()
            .zip(catalogue)
            .map(|((label, _, _), p)| (label.clone(), p.expect("ran")))
            .collect(),
    }
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(3), 50);
    let profiles = routing(&mut c);
    c.final_summary();
    let Some(p) = profiles else {
        return std::process::ExitCode::SUCCESS;
    };
    measure::print_summary(
        "routing (memory transport; CPU includes the in-process servers)",
        &p.all(),
    );
    let p50 = |p: &Profile| p.quantile(0.5).as_secs_f64();
    println!("\n== routing: the ratios, from the interleaved loop above ==");
    measure::print_target(
        "memory sequential p50, switchboard / oneshot round trip",
        p50(&p.sequential) / p50(&p.floor),
        "x",
        true,
        2.0,
    );
    measure::print_ratio(
        "memory sequential p50, switchboard / epoll-parked round trip",
        p50(&p.sequential) / p50(&p.floor_epoll),
    );
    measure::print_target(
        "memory sequential p50, switchboard io_runtime / oneshot",
        p50(&p.sequential_io) / p50(&p.floor),
        "x",
        true,
        2.0,
    );
    measure::print_ratio(
        "memory sequential p50, switchboard io_runtime / epoll-parked",
        p50(&p.sequential_io) / p50(&p.floor_epoll),
    );
    measure::print_ratio(
        "memory sequential p50, io_runtime same worker / oneshot",
        p50(&p.sequential_io_worker) / p50(&p.floor),
    );
    measure::print_ratio(
        "memory 64 in flight calls/s, io_runtime / actor thread",
        p.in_flight_io.calls_per_sec() / p.in_flight.calls_per_sec(),
    );
    measure::print_ratio(
        "metrics: sequential p50, prometheus / none",
        p50(&p.sequential_prometheus) / p50(&p.sequential),
    );
    measure::print_ratio(
        "metrics: sequential cpu/call, prometheus / none",
        p.sequential_prometheus.cpu_us_per_call() / p.sequential.cpu_us_per_call(),
    );
    measure::print_ratio(
        "metrics: 64 in flight calls/s, prometheus / none",
        p.in_flight_prometheus.calls_per_sec() / p.in_flight.calls_per_sec(),
    );
    measure::print_ratio(
        "metrics: 64 in flight cpu/call, prometheus / none",
        p.in_flight_prometheus.cpu_us_per_call() / p.in_flight.cpu_us_per_call(),
    );
    if let Some((first, one)) = p.catalogue.first() {
        for (label, profile) in &p.catalogue[1..] {
            measure::print_ratio(
                &format!("catalogue call p50, {label} / {first}"),
                p50(profile) / p50(one),
            );
            measure::print_ratio(
                &format!("catalogue call cpu/call, {label} / {first}"),
                profile.cpu_us_per_call() / one.cpu_us_per_call(),
            );
        }
    }
    std::process::ExitCode::SUCCESS
}
