//! The runtime's own cost: calls through the public handle to the demo server running in
//! this process over the memory transport, at 1, 16, 64 and 256 in flight, next to the floor
//! for in-memory sequential latency measured in the same run: a bare cross-thread round trip
//! (a tokio `oneshot` sender handed over a channel to a task on another thread, which
//! answers on it). A second floor, `oneshot_round_trip_epoll`, gives that thread tokio's I/O
//! and time drivers, so it sleeps in `epoll_wait` as the actor thread does.
//!
//! Catalogue routing (many servers × many tools) is not measured here yet; see
//! `BENCHMARKS.md`.

mod support;

use std::time::Duration;

use criterion::{Criterion, Throughput};
use support::measure::{self, Profile};
use switchboard::demo::{serve, Options};
use switchboard::{Runtime, ServerConfig, ServerHandle};
use tokio::sync::{mpsc, oneshot};

/// Rounds of the interleaved sequential loop, and calls per round for each side.
const ROUNDS: u64 = 10;
const SEQUENTIAL_PER_ROUND: u64 = 2_000;
const PROFILE_IN_FLIGHT: u64 = 100_000;

fn memory_server() -> ServerConfig {
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

fn routing(c: &mut Criterion) -> Vec<Profile> {
    let rt = support::tokio_runtime();
    let runtime = rt.block_on(async {
        Runtime::builder()
            .server("memory", memory_server())
            .build()
            .await
            .expect("runtime")
    });
    let server = runtime.server("memory").expect("server");
    assert!(server.status().is_ready());
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
    group.bench_function("memory/echo/1_in_flight", |b| {
        b.to_async(&rt).iter(|| echo(server.clone()))
    });
    for in_flight in [16, 64, 256] {
        group.bench_function(format!("memory/echo/{in_flight}_in_flight"), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let server = server.clone();
                measure::in_flight(iters, in_flight, move || echo(server.clone()))
            })
        });
    }
    group.finish();

    // The custom loop: the floors and Switchboard in turns, so that a noisy shared machine
    // weighs on both alike; then 64 in flight.
    if !support::custom_loop() {
        rt.block_on(runtime.shutdown());
        return Vec::new();
    }
    let mut floor_profile: Option<Profile> = None;
    let mut floor_epoll_profile: Option<Profile> = None;
    let mut sequential: Option<Profile> = None;
    let keep = |slot: &mut Option<Profile>, p: Profile| match slot {
        Some(all) => all.absorb(p),
        None => *slot = Some(p),
    };
    for _ in 0..ROUNDS {
        let f = floor.clone();
        let p = rt.block_on(measure::profile(
            "memory/oneshot_round_trip/sequential",
            SEQUENTIAL_PER_ROUND,
            1,
            move || round_trip(f.clone()),
        ));
        keep(&mut floor_profile, p);
        let f = floor_epoll.clone();
        let p = rt.block_on(measure::profile(
            "memory/oneshot_round_trip_epoll/sequential",
            SEQUENTIAL_PER_ROUND,
            1,
            move || round_trip(f.clone()),
        ));
        keep(&mut floor_epoll_profile, p);
        let s = server.clone();
        let p = rt.block_on(measure::profile(
            "memory/switchboard/sequential",
            SEQUENTIAL_PER_ROUND,
            1,
            move || echo(s.clone()),
        ));
        keep(&mut sequential, p);
    }
    let s = server.clone();
    let in_flight = rt.block_on(measure::profile(
        "memory/switchboard/64_in_flight",
        PROFILE_IN_FLIGHT,
        64,
        move || echo(s.clone()),
    ));
    let profiles = vec![
        floor_profile.expect("ran"),
        floor_epoll_profile.expect("ran"),
        sequential.expect("ran"),
        in_flight,
    ];
    drop((floor, floor_epoll));
    rt.block_on(runtime.shutdown());
    profiles
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard::demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(3), 50);
    let profiles = routing(&mut c);
    c.final_summary();
    measure::print_summary(
        "routing (memory transport; CPU includes the in-process server)",
        &profiles,
    );
    if let [floor, floor_epoll, sequential, _] = &profiles[..] {
        println!("\n== routing: the ratio, from the interleaved loop above ==");
        let p50 = |p: &Profile| p.quantile(0.5).as_secs_f64();
        measure::print_target(
            "memory sequential p50, switchboard / oneshot round trip",
            p50(sequential) / p50(floor),
            "x",
            true,
            2.0,
        );
        measure::print_ratio(
            "memory sequential p50, switchboard / epoll-parked round trip",
            p50(sequential) / p50(floor_epoll),
        );
    }
    std::process::ExitCode::SUCCESS
}
