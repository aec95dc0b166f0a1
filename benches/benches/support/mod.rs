//! What the bench binaries share: the demo server and a blocking echo server as children,
//! a local Streamable HTTP server, clients with no framework and the official SDK's, an
//! in-process server with 50 tools for catalogue routing, and the custom measuring loop that
//! criterion lacks (per-call latency percentiles and client CPU per call).
//!
//! Each bench binary includes this module with `mod support;` and uses a part of it.
#![allow(dead_code)]

pub(crate) mod echo_server;
pub(crate) mod fault_upstreams;
pub(crate) mod http_server;
pub(crate) mod hyper_caller;
pub(crate) mod measure;
pub(crate) mod raw;
pub(crate) mod rmcp_server;
pub(crate) mod sdk;
pub(crate) mod tokio_floor;
pub(crate) mod tool_server;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use criterion::Criterion;

/// This bench binary's path: re-executed with [`switchboard_demo::ENV_VAR`] set, it is the
/// demo server.
pub(crate) fn demo_exe() -> PathBuf {
    std::env::current_exe().expect("the bench binary's path")
}

/// The demo server as a Switchboard stdio server; `args` are the demo server's options
/// (`""`, or `"--faults"`).
pub(crate) fn demo_stdio(args: &str) -> switchboard::ServerConfig<switchboard::transport::Stdio> {
    switchboard::ServerConfig::stdio(demo_exe()).env(switchboard_demo::ENV_VAR, args)
}

/// The demo server (with `args`, e.g. `""`) as a command for a client that spawns it.
pub(crate) fn demo_command(args: &str) -> Command {
    let mut command = Command::new(demo_exe());
    command.env(switchboard_demo::ENV_VAR, args);
    command
}

/// The blocking echo server ([`echo_server`]) as a command for a client that spawns it.
pub(crate) fn echo_command() -> Command {
    let mut command = Command::new(demo_exe());
    command.env(echo_server::ENV_VAR, "1");
    command
}

/// The blocking echo server as a Switchboard stdio server.
pub(crate) fn echo_stdio() -> switchboard::ServerConfig<switchboard::transport::Stdio> {
    switchboard::ServerConfig::stdio(demo_exe()).env(echo_server::ENV_VAR, "1")
}

/// Set (to anything), this bench binary is the demo server on tokio's `stdin()` and
/// `stdout()` (each read and write handed to a blocking-pool thread), which is how the
/// demo server read and wrote its pipes before it drove them itself: the `server` bench's
/// before, measured beside the after in the same run.
pub(crate) const DEMO_TOKIO_STD_VAR: &str = "SWITCHBOARD_BENCH_DEMO_TOKIO_STD";

/// The demo server on tokio's `stdin()`/`stdout()` ([`DEMO_TOKIO_STD_VAR`]) as a command.
pub(crate) fn demo_tokio_std_command() -> Command {
    let mut command = Command::new(demo_exe());
    command.env(DEMO_TOKIO_STD_VAR, "1");
    command
}

/// Set (to anything), this bench binary is the demo server on the runtime `#[tokio::main]`
/// builds (a worker per core), served from its `block_on` as such a `main` would: how an
/// application that embeds `switchboard-server` serves stdio without tuning.
pub(crate) const DEMO_MAIN_VAR: &str = "SWITCHBOARD_BENCH_DEMO_MAIN";

/// The demo server on the `#[tokio::main]` runtime ([`DEMO_MAIN_VAR`]) as a command.
pub(crate) fn demo_main_command() -> Command {
    let mut command = Command::new(demo_exe());
    command.env(DEMO_MAIN_VAR, "1");
    command
}

/// Runs this bench binary as one of the child servers if its environment asks for one (the
/// echo server first, then the fault benches' upstreams, then the demo server), and returns
/// that server's exit code; `None` when the binary is to run the benches.
pub(crate) fn child_main_from_env() -> Option<ExitCode> {
    echo_server::main_from_env()
        .or_else(fault_upstreams::main_from_env)
        .or_else(demo_tokio_std_main_from_env)
        .or_else(demo_main_from_env)
        .or_else(switchboard_demo::main_from_env)
}

fn demo_tokio_std_main_from_env() -> Option<ExitCode> {
    std::env::var_os(DEMO_TOKIO_STD_VAR)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let options = switchboard_demo::Options::default();
    let served = runtime.block_on(switchboard_demo::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        options,
    ));
    // tokio reads stdin on a blocking thread that may never return: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    Some(match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench demo server (tokio std): {e}");
            ExitCode::FAILURE
        }
    })
}

fn demo_main_from_env() -> Option<ExitCode> {
    std::env::var_os(DEMO_MAIN_VAR)?;
    let runtime = main_runtime();
    let server = switchboard_demo::server(switchboard_demo::Options::default());
    let served = runtime.block_on(server.serve_stdio());
    Some(match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench demo server (tokio main): {e}");
            ExitCode::FAILURE
        }
    })
}

/// The arguments every call sends: `echo` with a short text.
pub(crate) fn echo_args() -> serde_json::Value {
    serde_json::json!({"text": "ping"})
}

/// The tokio runtime callers run on: one worker (spawned tasks) plus the thread that blocks
/// on it (criterion's `to_async`), so that every client gets the same two threads.
pub(crate) fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The runtime `#[tokio::main]` builds: multi-thread, one worker per core, I/O and time
/// drivers. The set-up an application embedding Switchboard has without tuning.
pub(crate) fn main_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

/// Criterion settings that keep the whole `cargo bench` within a few minutes; command-line
/// flags (`--measurement-time`, ...) still win.
pub(crate) fn criterion(warm_up: Duration, measurement: Duration, samples: usize) -> Criterion {
    Criterion::default()
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .sample_size(samples)
        .configure_from_args()
}

/// Whether to run the custom measuring loop after criterion: not under criterion's
/// `--profile-time` (profiling one benchmark with `perf` should see only that benchmark).
pub(crate) fn custom_loop() -> bool {
    !std::env::args().any(|a| a == "--profile-time" || a.starts_with("--profile-time="))
}
