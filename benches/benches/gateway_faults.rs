//! The gateway under two faults of issue 22, measured in a custom loop like `gateway`'s
//! (the gateway crate on `switchboard-server`, its runtime's I/O and HTTP serving on one
//! thread of its own, upstreams over stdio as child processes of this binary):
//!
//! - `cancel`: the time from a front client closing the connection of a `tools/call` whose
//!   answer has not come (the call reached the upstream; its answer never will) to the
//!   upstream reading `notifications/cancelled` for it. The upstream (the *waiter* of
//!   `support::fault_upstreams`) writes a byte to a Unix socket the moment it reads the call
//!   and the moment it reads the cancel; the bench drops the connection when the first
//!   arrives and takes the time when the second does. A handshake-era session's POST and a
//!   2026-07-28 request, in turns.
//! - `crash_loop`: calls spread over nine healthy upstreams (the blocking echo server),
//!   sequential and 64 in flight, with a tenth upstream that crash-loops (exits 50 ms after
//!   each handshake and is restarted 20 to 50 ms later, the crash-loop guard raised so that
//!   it never gives up), in turns with the same set-up whose tenth is healthy too. Each
//!   turn starts a gateway of its own, so a crash loop never runs beside the healthy turn.
//!
//! `SWITCHBOARD_BENCH_ONLY=cancel` (or `crash_loop`) runs one of the two;
//! `SWITCHBOARD_BENCH_UPSTREAM_IO_ON_ACTOR=1` moves the upstreams' I/O off the gateway's thread;
//! `SWITCHBOARD_BENCH_SMALL_LOOPER=1` makes the tenth a small program that never handshakes;
//! `SWITCHBOARD_BENCH_LOOPER_DEFAULT_BACKOFF=1` restarts it with the default backoff;
//! `SWITCHBOARD_BENCH_LOOPER_CONTROL=1` makes it healthy in both set-ups (the control: what
//! this machine's noise alone does to the ratio).
//!
//! Targets (issue 22): the cancel reaches the upstream within 10 ms at p99; the crash loop
//! moves the others' p99 by 10 % at most. `SWITCHBOARD_BENCH_ROUNDS=1` makes it short.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::fault_upstreams::{CRASH_AFTER_VAR, STARTS_VAR, WAITER_VAR};
use support::http_server::HttpServer;
use support::hyper_caller::Caller;
use support::measure::{self, keep, rounds, Profile};
use switchboard::{Naming, NamingMode, RestartPolicy, Runtime, ServerConfig};

const ROUNDS: u64 = 6;
/// Cancelled calls per round, half in each era.
const CANCELS_PER_ROUND: usize = 100;
const SEQUENTIAL_PER_ROUND: u64 = 5_000;
const IN_FLIGHT_PER_ROUND: u64 = 50_000;
/// Calls made before each turn's measured ones, to warm the gateway and its connections.
const WARM_UP: u64 = 2_000;
const IN_FLIGHT: u64 = 64;
/// How long the bench waits for a byte of the waiter before it counts it missing.
const PATIENCE: Duration = Duration::from_secs(5);

/// Set (to anything), the upstreams' connections (their spawning included) run on the
/// runtime's actor thread, not on the gateway's thread: a diagnostic, to tell what a restart
/// costs the thread that serves the front.
const UPSTREAM_IO_ON_ACTOR_VAR: &str = "SWITCHBOARD_BENCH_UPSTREAM_IO_ON_ACTOR";

/// Set (to anything), the tenth upstream is restarted with the runtime's default backoff
/// (0.5 s, doubling to 30 s) instead of every 20 to 50 ms: what a user's configuration gets,
/// against the worst case.
const DEFAULT_BACKOFF_VAR: &str = "SWITCHBOARD_BENCH_LOOPER_DEFAULT_BACKOFF";

/// Set (to anything), the tenth upstream crash-loops as `sh -c 'exec sleep 0.05'`: a small
/// program that never completes a handshake (so the catalogue never changes), a diagnostic
/// to tell the cost of a process's churn from that of a server coming and going.
const SMALL_LOOPER_VAR: &str = "SWITCHBOARD_BENCH_SMALL_LOOPER";

/// Set (to anything), the tenth upstream is a healthy echo server in the "looping" turns
/// too: the same two set-ups, measured in the same turns, with no crash loop at all, so that
/// the ratio shows how far this machine's noise alone moves the p99 between turns.
const CONTROL_VAR: &str = "SWITCHBOARD_BENCH_LOOPER_CONTROL";

/// The gateway over a runtime of `servers`, every tool prefixed, on a thread of its own.
fn gateway(servers: Vec<(String, ServerConfig)>) -> HttpServer {
    let mut builder = Runtime::builder().naming(Naming::new(NamingMode::Always));
    for (name, server) in servers {
        builder = builder.server(name, server);
    }
    let io_here = std::env::var_os(UPSTREAM_IO_ON_ACTOR_VAR).is_none();
    support::http_server::gateway(builder, io_here, None)
}

/// A POST of `body` to `/mcp` as HTTP/1.1 bytes, with `headers` (each ending in `\r\n`).
fn post(body: &str, headers: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A 2026-07-28 request (no session: its `_meta` says who asks).
fn modern(id: u64, method: &str, params: serde_json::Value, name: Option<&str>) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = format!("mcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\n");
    if let Some(name) = name {
        headers.push_str(&format!("mcp-name: {name}\r\n"));
    }
    post(&body.to_string(), &headers)
}

/// Sends `request` on a connection of its own (closed after it) and returns the answer.
fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect to the gateway");
    stream.set_read_timeout(Some(PATIENCE)).expect("a timeout");
    let request = String::from_utf8_lossy(request).replacen("\r\n", "\r\nconnection: close\r\n", 1);
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// A handshake-era session on the gateway: its id.
fn open_session(addr: SocketAddr) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "cancel-bench", "version": "1"}}});
    let answer = exchange(addr, &post(&init.to_string(), ""));
    let session = answer
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in {answer}"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let headers = format!("mcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\n");
    let answer = exchange(addr, &post(initialized, &headers));
    assert!(answer.starts_with("HTTP/1.1 202"), "initialized: {answer}");
    session
}

/// The next byte the waiter writes, within [`PATIENCE`].
fn next_byte(report: &mut UnixStream) -> Option<u8> {
    let mut byte = [0];
    report.read_exact(&mut byte).ok().map(|()| byte[0])
}

/// Quantile `q` of sorted `samples` (nearest rank).
fn quantile(samples: &[Duration], q: f64) -> Duration {
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The cancel delays, each era's sorted, and how many cancels never came.
fn cancels(rounds: u64) -> ([Vec<Duration>; 2], usize) {
    let dir = std::env::temp_dir().join(format!("switchboard-bench-cancel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let socket = dir.join("waiter.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).expect("bind the waiter's socket");
    let waiter = ServerConfig::stdio(support::demo_exe()).env(WAITER_VAR, &socket);
    let server = gateway(vec![("waiter".to_owned(), waiter.into())]);
    let addr = server.addr();
    let (mut report, _) = listener.accept().expect("the waiter connects");
    report.set_read_timeout(Some(PATIENCE)).expect("a timeout");
    // Serving, and the tool listed (the runtime is built before the first accept).
    let list = modern(1, "tools/list", serde_json::json!({}), None);
    let listed = exchange(addr, &list);
    assert!(listed.contains("waiter__wait"), "tools/list: {listed}");
    let session = open_session(addr);
    let handshake_headers =
        format!("mcp-protocol-version: 2025-11-25\r\nmcp-session-id: {session}\r\n");

    let mut delays = [Vec::new(), Vec::new()];
    let mut missing = 0;
    let mut id = 10;
    for _ in 0..rounds {
        for n in 0..CANCELS_PER_ROUND {
            let era = n % 2;
            id += 1;
            let params = serde_json::json!({"name": "waiter__wait", "arguments": {}});
            let request = if era == 0 {
                let body = serde_json::json!({"jsonrpc": "2.0", "id": id,
                    "method": "tools/call", "params": params});
                post(&body.to_string(), &handshake_headers)
            } else {
                modern(id, "tools/call", params, Some("waiter__wait"))
            };
            let mut front = TcpStream::connect(addr).expect("connect to the gateway");
            front.set_nodelay(true).expect("nodelay");
            front.write_all(&request).expect("send the call");
            // The call is at the upstream (a late cancel of an earlier one is skipped).
            loop {
                match next_byte(&mut report) {
                    Some(b'c') => break,
                    Some(_) => continue,
                    None => panic!("call {id} never reached the upstream"),
                }
            }
            let closed = Instant::now();
            drop(front);
            match next_byte(&mut report) {
                Some(b'x') => delays[era].push(closed.elapsed()),
                _ => missing += 1,
            }
        }
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    for d in &mut delays {
        d.sort_unstable();
    }
    (delays, missing)
}

/// The ten upstreams: nine echo servers and a tenth, crash-looping or another echo server.
fn ten(looping: bool, starts: &Path) -> Vec<(String, ServerConfig)> {
    let mut servers: Vec<(String, ServerConfig)> = (0..9)
        .map(|n| (format!("s{n}"), support::echo_stdio().into()))
        .collect();
    let looper = if std::env::var_os(SMALL_LOOPER_VAR).is_some() {
        let script = format!("echo start >> '{}'; exec sleep 0.05", starts.display());
        ServerConfig::stdio("sh").args(["-c", &script])
    } else {
        ServerConfig::stdio(support::demo_exe())
            .env(CRASH_AFTER_VAR, "50")
            .env(STARTS_VAR, starts)
    };
    let tenth = if looping && std::env::var_os(CONTROL_VAR).is_none() {
        // The crash-loop guard raised either way, so that the tenth never gives up.
        let policy = if std::env::var_os(DEFAULT_BACKOFF_VAR).is_some() {
            RestartPolicy::default()
        } else {
            RestartPolicy::default()
                .with_initial_delay(Duration::from_millis(20))
                .with_max_delay(Duration::from_millis(50))
        };
        looper
            .restart(policy.with_crash_loop(1_000_000, Duration::from_secs(60)))
            .into()
    } else {
        support::echo_stdio().into()
    };
    servers.push(("s9".to_owned(), tenth));
    servers
}

/// This process's minor page faults so far (a fork makes every page copy-on-write: each
/// thread's next write to one faults).
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    usage.ru_minflt as i64
}

fn starts_in(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::child_main_from_env() {
        return code;
    }
    let rounds = rounds(ROUNDS);
    let skip = std::env::var("SWITCHBOARD_BENCH_ONLY").unwrap_or_default();

    if skip != "crash_loop" {
        let (delays, missing) = cancels(rounds);
        println!("\n== gateway_faults/cancel: front connection closed -> upstream reads notifications/cancelled ==");
        let mut all: Vec<Duration> = delays.iter().flatten().copied().collect();
        all.sort_unstable();
        for (label, d) in [
            ("handshake-era session", &delays[0]),
            ("2026-07-28 request", &delays[1]),
            ("both", &all),
        ] {
            if d.is_empty() {
                println!("cancel  {label:<24} no sample");
                continue;
            }
            println!(
                "cancel  {label:<24} n={:<5} p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms",
                d.len(),
                ms(quantile(d, 0.5)),
                ms(quantile(d, 0.99)),
                ms(d[d.len() - 1]),
            );
        }
        println!("cancel  never reached the upstream within {PATIENCE:?}: {missing}");
        if !all.is_empty() {
            measure::print_target(
                "closed front stream -> upstream cancelled, p99, ms",
                ms(quantile(&all, 0.99)),
                "ms",
                true,
                10.0,
            );
        }
    }

    if skip != "cancel" {
        let rt = support::main_runtime();
        let starts =
            std::env::temp_dir().join(format!("switchboard-bench-starts-{}", std::process::id()));
        let _ = std::fs::remove_file(&starts);
        let names: Arc<[String]> = (0..9).map(|n| format!("s{n}__echo")).collect();
        // Slots: [healthy, looping] × [sequential, 64 in flight].
        let mut profiles: Vec<Option<Profile>> = vec![None; 4];
        let mut ratios = Vec::new();
        for round in 0..rounds {
            let mut p99 = [Duration::ZERO; 4];
            for turn in 0..2 {
                let looping = (round as usize + turn) % 2 == 1;
                let label = if looping { "looping" } else { "healthy" };
                let server = gateway(ten(looping, &starts));
                let caller = rt.block_on(Caller::connect(&server.url()));
                // Warm, and the loop under way, before anything is measured.
                let warm = {
                    let (caller, names) = (caller.clone(), names.clone());
                    let next = Arc::new(AtomicUsize::new(0));
                    move || {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let (caller, names) = (caller.clone(), names.clone());
                        async move { caller.call_tool(&names[k % names.len()]).await }
                    }
                };
                rt.block_on(measure::in_flight(WARM_UP, IN_FLIGHT, warm));
                std::thread::sleep(Duration::from_millis(300));
                let started_before = starts_in(&starts);
                let faults_before = minor_faults();
                let began = Instant::now();
                for (mode_slot, (mode, n, window)) in [
                    ("sequential", SEQUENTIAL_PER_ROUND, 1),
                    ("64_in_flight", IN_FLIGHT_PER_ROUND, IN_FLIGHT),
                ]
                .into_iter()
                .enumerate()
                {
                    let at = mode_slot * 2 + usize::from(looping);
                    let name = format!("gateway_faults/{label}/{mode}");
                    let next = Arc::new(AtomicUsize::new(0));
                    let (caller, names) = (caller.clone(), names.clone());
                    let p = rt.block_on(measure::profile(&name, n, window, move || {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let (caller, names) = (caller.clone(), names.clone());
                        async move { caller.call_tool(&names[k % names.len()]).await }
                    }));
                    p99[at] = p.quantile(0.99);
                    keep(&mut profiles[at], p);
                }
                let faults = minor_faults() - faults_before;
                if looping {
                    println!(
                        "round {round}: the tenth started {} times in the {:.1} s measured; \
                         this process's minor page faults meanwhile: {faults}",
                        starts_in(&starts) - started_before,
                        began.elapsed().as_secs_f64()
                    );
                } else {
                    println!(
                        "round {round}: healthy, this process's minor page faults meanwhile: {faults}"
                    );
                }
                drop(caller);
                drop(server);
            }
            let ratio = [
                p99[1].as_secs_f64() / p99[0].as_secs_f64(),
                p99[3].as_secs_f64() / p99[2].as_secs_f64(),
            ];
            println!(
                "round {round}: p99 looping / healthy: sequential {:.3} ({:.1} / {:.1} µs), \
                 64 in flight {:.3} ({:.1} / {:.1} µs)",
                ratio[0],
                p99[1].as_secs_f64() * 1e6,
                p99[0].as_secs_f64() * 1e6,
                ratio[1],
                p99[3].as_secs_f64() * 1e6,
                p99[2].as_secs_f64() * 1e6,
            );
            ratios.push(ratio);
        }
        let _ = std::fs::remove_file(&starts);
        let profiles: Vec<Profile> = profiles
            .into_iter()
            .map(|p| p.expect("every set-up ran"))
            .collect();
        measure::print_summary(
            "gateway_faults/crash_loop: calls over nine healthy upstreams, the tenth crash-looping or healthy, in turns",
            &profiles,
        );
        for (mode, healthy, looping) in [("sequential", 0, 1), ("64 in flight", 2, 3)] {
            measure::print_target(
                &format!("{mode} p99, looping / healthy (all rounds)"),
                profiles[looping].quantile(0.99).as_secs_f64()
                    / profiles[healthy].quantile(0.99).as_secs_f64(),
                "x",
                true,
                1.10,
            );
            measure::print_ratio(
                &format!("{mode} p50, looping / healthy (all rounds)"),
                profiles[looping].quantile(0.5).as_secs_f64()
                    / profiles[healthy].quantile(0.5).as_secs_f64(),
            );
        }
    }
    std::process::ExitCode::SUCCESS
}
