//! Calls through the public handle to the bundled demo server as a real child process:
//! sequential latency and throughput at 64 in flight.
//!
//! The child is this bench binary itself, re-executed into the demo server's entry point.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use serde_json::json;
use switchboard::{Runtime, ServerConfig, ServerHandle};

fn demo_server() -> ServerConfig {
    let exe = std::env::current_exe().expect("the bench binary's path");
    ServerConfig::stdio(exe).env(switchboard::demo::ENV_VAR, "")
}

async fn calls_in_flight(server: &ServerHandle, total: u64, in_flight: u64) -> Duration {
    let started = Instant::now();
    let per_worker = total.div_ceil(in_flight);
    let mut workers = Vec::new();
    for _ in 0..in_flight {
        let server = server.clone();
        workers.push(tokio::spawn(async move {
            for _ in 0..per_worker {
                let r = server.call_tool("echo", json!({"text": "ping"})).await;
                assert!(r.is_ok(), "{r:?}");
            }
        }));
    }
    for w in workers {
        w.await.expect("worker");
    }
    // Whole rounds ran; report the time of the `total` calls asked for.
    started
        .elapsed()
        .mul_f64(total as f64 / (per_worker * in_flight) as f64)
}

fn stdio(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let runtime = rt.block_on(async {
        Runtime::builder()
            .server("demo", demo_server())
            .build()
            .await
            .expect("runtime")
    });
    let server = Arc::new(runtime.server("demo").expect("server"));
    assert!(server.status().is_ready());

    let mut group = c.benchmark_group("stdio");
    group.throughput(Throughput::Elements(1));
    group.bench_function("echo/sequential", |b| {
        b.to_async(&rt).iter(|| async {
            server
                .call_tool("echo", json!({"text": "ping"}))
                .await
                .expect("echo")
        })
    });
    group.bench_function("echo/64_in_flight", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| calls_in_flight(&server, iters, 64))
    });
    group.finish();
    rt.block_on(runtime.shutdown());
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard::demo::main_from_env() {
        return code;
    }
    let mut c = Criterion::default().configure_from_args();
    stdio(&mut c);
    c.final_summary();
    std::process::ExitCode::SUCCESS
}
