//! Failure at scale, against the demo server child process started with `--faults`:
//!
//! - `faults/deadlines_10k`: 10,000 calls to `hang` (`max_in_flight` raised to 10,000), each
//!   with the same per-call timeout, so their deadlines expire together (within the few
//!   milliseconds it takes to start them all, which is printed). Reported: the time from the
//!   last call's deadline until every call has settled (failed with `ErrorKind::Timeout`).
//! - `faults/crash_1k_pending`: 1,000 `hang` calls in flight, then `crash`: the time from
//!   calling `crash` until every pending call has failed.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use switchboard::{Liveness, Runtime, ServerHandle};
use tokio::task::JoinSet;

const DEADLINE_CALLS: usize = 10_000;
const DEADLINE_TIMEOUT: Duration = Duration::from_millis(500);
const CRASH_PENDING: usize = 1_000;

async fn start(max_in_flight: usize) -> (Runtime, ServerHandle) {
    // Timed-out requests must not count as a dead server here: this measures deadlines.
    let config = support::demo_stdio("--faults")
        .max_in_flight(max_in_flight)
        .liveness(Liveness::off());
    let runtime = Runtime::builder()
        .server("faults", config)
        .build()
        .await
        .expect("runtime");
    let server = runtime.server("faults").expect("server");
    assert!(server.status().is_ready(), "{:?}", server.status());
    (runtime, server)
}

fn hang(server: &ServerHandle, timeout: Option<Duration>) -> switchboard::Call {
    let call = server.call_tool("hang", serde_json::json!({}));
    match timeout {
        Some(t) => call.timeout(t),
        None => call,
    }
}

/// Waits until `n` calls hold an in-flight slot.
async fn until_in_flight(server: &ServerHandle, n: usize) {
    while server.in_flight() < n {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One round of 10,000 equal timeouts. Returns the time from the last call's deadline (its
/// start + the timeout) until every call has settled, and the spread of the call starts
/// (first to last), which is how far apart the deadlines are.
///
/// Every call must fail; those that fail otherwise than with `ErrorKind::Timeout` (a runtime
/// that counts timeouts as a sign of a dead server might restart it) are counted in `other`.
async fn deadlines(server: &ServerHandle, other: &AtomicUsize) -> (Duration, Duration) {
    let first = Instant::now();
    let mut calls = JoinSet::new();
    for _ in 0..DEADLINE_CALLS {
        let call = hang(server, Some(DEADLINE_TIMEOUT));
        calls.spawn(async move {
            // The call starts (and its deadline is set) when it is first polled.
            let started = Instant::now();
            (started, call.await)
        });
    }
    let mut last = first;
    while let Some(joined) = calls.join_next().await {
        let (started, result) = joined.expect("call task");
        match result {
            Err(e) if e.is_timeout() => {}
            Err(_) => {
                other.fetch_add(1, Ordering::Relaxed);
            }
            Ok(ok) => panic!("hang answered: {ok:?}"),
        }
        last = last.max(started);
    }
    let settled = Instant::now();
    // Let the cancellations drain before the next round.
    until_idle(server).await;
    (
        settled.saturating_duration_since(last + DEADLINE_TIMEOUT),
        last - first,
    )
}

async fn until_idle(server: &ServerHandle) {
    while server.in_flight() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One server that crashes with 1,000 calls pending: the time from calling `crash` until
/// every pending call failed.
async fn crash() -> Duration {
    let (runtime, server) = start(CRASH_PENDING + 1).await;
    let mut calls = JoinSet::new();
    for _ in 0..CRASH_PENDING {
        calls.spawn(hang(&server, None));
    }
    until_in_flight(&server, CRASH_PENDING).await;
    let started = Instant::now();
    calls.spawn(server.call_tool("crash", serde_json::json!({})));
    while let Some(result) = calls.join_next().await {
        let result = result.expect("call task");
        assert!(result.is_err(), "expected a failure: {result:?}");
    }
    let failed = started.elapsed();
    runtime.shutdown().await;
    failed
}

fn faults(c: &mut Criterion) {
    let rt = support::tokio_runtime();
    let mut group = c.benchmark_group("faults");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);

    let (runtime, server) = rt.block_on(start(DEADLINE_CALLS));
    let spreads = Mutex::new(Vec::new());
    let other = AtomicUsize::new(0);
    group.bench_function("deadlines_10k/settled_after_last_deadline", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let server = server.clone();
            let spreads = &spreads;
            let other = &other;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (after, spread) = deadlines(&server, other).await;
                    total += after;
                    spreads.lock().expect("spreads").push(spread);
                }
                total
            }
        })
    });
    let mut spreads = spreads.into_inner().expect("spreads");
    spreads.sort_unstable();
    if let Some(median) = spreads.get(spreads.len() / 2) {
        println!(
            "faults/deadlines_10k: the {DEADLINE_CALLS} calls started within {:.1} ms of each other (median of {} rounds)",
            median.as_secs_f64() * 1e3,
            spreads.len()
        );
    }
    let other = other.into_inner();
    if other > 0 {
        println!(
            "faults/deadlines_10k: {other} calls failed otherwise than with a timeout \
             (over {} rounds of {DEADLINE_CALLS})",
            spreads.len()
        );
    }
    rt.block_on(runtime.shutdown());

    group.bench_function("crash_1k_pending/all_failed", |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += crash().await;
            }
            total
        })
    });
    group.finish();
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_secs(1), Duration::from_secs(8), 10);
    faults(&mut c);
    c.final_summary();
    std::process::ExitCode::SUCCESS
}
