//! The official Rust SDK (`rmcp`) calling the same demo server child process the same way as
//! the `stdio` bench: sequential and 64 in flight, then latency percentiles and client CPU
//! per call.

mod support;

use std::time::Duration;

use criterion::{Criterion, Throughput};
use support::measure::{self, Profile};
use support::sdk;

const PROFILE_SEQUENTIAL: u64 = 5_000;
const PROFILE_IN_FLIGHT: u64 = 50_000;

fn peers(c: &mut Criterion) -> Vec<Profile> {
    let rt = support::tokio_runtime();
    let client = rt.block_on(sdk::connect(support::demo_command("")));
    let peer = client.peer().clone();

    let mut group = c.benchmark_group("peers");
    group.throughput(Throughput::Elements(1));
    group.bench_function("rmcp/sequential", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let peer = peer.clone();
            measure::sequential_on_worker(iters, move || {
                let peer = peer.clone();
                async move { sdk::echo(&peer).await }
            })
        })
    });
    group.bench_function("rmcp/64_in_flight", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let peer = peer.clone();
            measure::in_flight(iters, 64, move || {
                let peer = peer.clone();
                async move { sdk::echo(&peer).await }
            })
        })
    });
    group.finish();

    if !support::custom_loop() {
        return Vec::new();
    }
    let p = peer.clone();
    let sequential = measure::profile_on_worker(
        &rt,
        "stdio/rmcp/sequential",
        PROFILE_SEQUENTIAL,
        1,
        move || {
            let p = p.clone();
            async move { sdk::echo(&p).await }
        },
    );
    let p = peer.clone();
    let in_flight = measure::profile_on_worker(
        &rt,
        "stdio/rmcp/64_in_flight",
        PROFILE_IN_FLIGHT,
        64,
        move || {
            let p = p.clone();
            async move { sdk::echo(&p).await }
        },
    );
    let profiles = vec![sequential, in_flight];
    rt.block_on(async {
        let _ = client.cancel().await;
    });
    profiles
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(4), 50);
    let profiles = peers(&mut c);
    c.final_summary();
    measure::print_summary("peers (rmcp)", &profiles);
    std::process::ExitCode::SUCCESS
}
