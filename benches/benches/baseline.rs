//! The physical floor: two MCP clients with no framework against the demo server child
//! process, in the same run. Sequential (write a line, read a line, blocking) and pipelined
//! (a writer thread and a reader thread, at most 64 requests outstanding). Both do the real
//! handshake first and then send `tools/call echo`, as Switchboard does.
//!
//! Prints latency percentiles and client CPU per call after criterion's report.

mod support;

use std::time::Duration;

use criterion::{Criterion, Throughput};
use support::measure::{self, Profile};
use support::raw::RawClient;

const PROFILE_SEQUENTIAL: u64 = 5_000;
const PROFILE_IN_FLIGHT: u64 = 50_000;
const WINDOW: usize = 64;

fn baseline(c: &mut Criterion) -> Vec<Profile> {
    let mut client = RawClient::spawn(support::demo_command(""));
    let mut group = c.benchmark_group("baseline");
    group.throughput(Throughput::Elements(1));
    group.bench_function("raw/sequential", |b| b.iter(|| client.call()));
    group.bench_function("raw/64_in_flight", |b| {
        b.iter_custom(|iters| client.pipelined(iters, WINDOW, false).0)
    });
    group.finish();
    if !support::custom_loop() {
        return Vec::new();
    }
    vec![
        client.profile_sequential("stdio/raw/sequential", PROFILE_SEQUENTIAL),
        client.profile_pipelined("stdio/raw/64_in_flight", PROFILE_IN_FLIGHT, WINDOW),
    ]
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(4), 50);
    let profiles = baseline(&mut c);
    c.final_summary();
    measure::print_summary("baseline (raw clients)", &profiles);
    std::process::ExitCode::SUCCESS
}
