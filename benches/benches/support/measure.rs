//! The custom measuring loop: per-call latencies (criterion only reports means and medians)
//! and the client's CPU and context switches per call (`getrusage(RUSAGE_SELF)`, so a server
//! running as a child process is not counted, and one running in this process is).

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant};

/// What this whole process (all threads) has used so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Usage {
    /// User plus system CPU time.
    pub(crate) cpu: Duration,
    /// Context switches, voluntary (a thread blocked: parked, waited on a pipe) and not.
    pub(crate) switches: u64,
}

impl std::ops::Sub for Usage {
    type Output = Usage;

    fn sub(self, earlier: Usage) -> Usage {
        Usage {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            switches: self.switches.saturating_sub(earlier.switches),
        }
    }
}

/// This process's usage so far, from `getrusage(RUSAGE_SELF)`.
pub(crate) fn usage() -> Usage {
    // SAFETY: `getrusage` only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        let rc = libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        assert_eq!(rc, 0, "getrusage");
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Usage {
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        switches: (usage.ru_nvcsw + usage.ru_nivcsw) as u64,
    }
}

/// One measured run: how many calls, each call's latency, the wall time and the CPU used.
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    /// What was measured, e.g. `stdio/switchboard/64_in_flight`.
    pub(crate) name: String,
    /// Calls made.
    pub(crate) calls: u64,
    /// Each call's latency, sorted.
    pub(crate) latencies: Vec<Duration>,
    /// Wall time of the whole run.
    pub(crate) wall: Duration,
    /// Client CPU (user + sys, every thread of this process) over the run.
    pub(crate) cpu: Duration,
    /// Context switches of this process over the run.
    pub(crate) switches: u64,
}

impl Profile {
    /// A profile from unsorted latencies.
    pub(crate) fn new(
        name: impl Into<String>,
        mut latencies: Vec<Duration>,
        wall: Duration,
        used: Usage,
    ) -> Self {
        latencies.sort_unstable();
        Profile {
            name: name.into(),
            calls: latencies.len() as u64,
            latencies,
            wall,
            cpu: used.cpu,
            switches: used.switches,
        }
    }

    /// The latency at quantile `q` (0 to 1), nearest rank.
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q * self.latencies.len() as f64).ceil() as usize).max(1);
        self.latencies[rank.min(self.latencies.len()) - 1]
    }

    /// Adds another run of the same thing (latencies, wall time and CPU add up).
    pub(crate) fn absorb(&mut self, other: Profile) {
        self.latencies.extend(other.latencies);
        self.latencies.sort_unstable();
        self.calls = self.latencies.len() as u64;
        self.wall += other.wall;
        self.cpu += other.cpu;
        self.switches += other.switches;
    }

    /// Calls per second over the run.
    pub(crate) fn calls_per_sec(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64()
    }

    /// Context switches per call.
    pub(crate) fn switches_per_call(&self) -> f64 {
        self.switches as f64 / self.calls as f64
    }

    /// Client CPU per call, in microseconds.
    pub(crate) fn cpu_us_per_call(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.calls as f64
    }
}

/// Prints profiles as a table (machine-greppable: every row starts with `summary`).
pub(crate) fn print_summary(title: &str, profiles: &[Profile]) {
    if profiles.is_empty() {
        return;
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n== {title}: custom loop (latency percentiles, client CPU) =="
    );
    let _ = writeln!(
        out,
        "summary {:<48} {:>7} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10}",
        "name", "calls", "p50 µs", "p90 µs", "p99 µs", "calls/s", "cpu µs/call", "csw/call"
    );
    for p in profiles {
        let _ = writeln!(
            out,
            "summary {:<48} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>11.0} {:>11.2} {:>10.2}",
            p.name,
            p.calls,
            us(p.quantile(0.50)),
            us(p.quantile(0.90)),
            us(p.quantile(0.99)),
            p.calls_per_sec(),
            p.cpu_us_per_call(),
            p.switches_per_call(),
        );
    }
    print!("{out}");
}

/// Runs `total` calls made by `call`, `in_flight` at a time (each of `in_flight` tasks calls
/// in a loop), and returns the time the whole batch took. For criterion's `iter_custom`.
pub(crate) async fn in_flight<F, Fut>(total: u64, in_flight: u64, call: F) -> Duration
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let per_worker = total.div_ceil(in_flight);
    let mut workers = Vec::with_capacity(in_flight as usize);
    for _ in 0..in_flight {
        let call = call.clone();
        workers.push(tokio::spawn(async move {
            for _ in 0..per_worker {
                call().await;
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

/// Like [`in_flight`], timing each call and the CPU used: `total` calls, `in_flight` at a
/// time. With `in_flight == 1` the calls run on the calling task, as criterion's sequential
/// benches do.
pub(crate) async fn profile<F, Fut>(name: &str, total: u64, in_flight: u64, call: F) -> Profile
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let per_worker = total.div_ceil(in_flight);
    let used = usage();
    let started = Instant::now();
    let mut latencies = Vec::with_capacity((per_worker * in_flight) as usize);
    if in_flight == 1 {
        latencies.extend(timed_loop(per_worker, call).await);
    } else {
        let mut workers = Vec::with_capacity(in_flight as usize);
        for _ in 0..in_flight {
            workers.push(tokio::spawn(timed_loop(per_worker, call.clone())));
        }
        for w in workers {
            latencies.extend(w.await.expect("worker"));
        }
    }
    let wall = started.elapsed();
    Profile::new(name, latencies, wall, usage() - used)
}

/// [`profile`] as a task on `rt`'s worker rather than on the thread blocking on `rt`: callers
/// then share a thread with the tasks they talk to, as an application's tasks do on its
/// runtime's workers. Every tokio-based client (Switchboard, rmcp) is measured this way.
pub(crate) fn profile_on_worker<F, Fut>(
    rt: &tokio::runtime::Runtime,
    name: &str,
    total: u64,
    in_flight: u64,
    call: F,
) -> Profile
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let name = name.to_owned();
    rt.block_on(async move {
        tokio::spawn(async move { profile(&name, total, in_flight, call).await })
            .await
            .expect("profile task")
    })
}

/// [`profile`] sequentially on the thread blocking on `rt` (`block_on`, as the future
/// `#[tokio::main]` runs is): the calls are polled on the main thread, not on a worker, as an
/// application's `main` makes them.
pub(crate) fn profile_on_block_on<F, Fut>(
    rt: &tokio::runtime::Runtime,
    name: &str,
    total: u64,
    call: F,
) -> Profile
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    rt.block_on(profile(name, total, 1, call))
}

/// `iters` sequential calls in one task on the runtime's worker, and the time they took: the
/// sequential benches' `iter_custom`, so that callers run where [`profile_on_worker`]'s do.
pub(crate) async fn sequential_on_worker<F, Fut>(iters: u64, call: F) -> Duration
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let started = Instant::now();
        for _ in 0..iters {
            call().await;
        }
        started.elapsed()
    })
    .await
    .expect("sequential task")
}

async fn timed_loop<F, Fut>(calls: u64, call: F) -> Vec<Duration>
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut latencies = Vec::with_capacity(calls as usize);
    for _ in 0..calls {
        let t = Instant::now();
        call().await;
        latencies.push(t.elapsed());
    }
    latencies
}

/// One line of a targets table: `value` against a bound, met or missed and by how much.
pub(crate) fn print_target(what: &str, value: f64, unit: &str, at_most: bool, bound: f64) {
    let met = if at_most {
        value <= bound
    } else {
        value >= bound
    };
    let verdict = if met {
        "met".to_owned()
    } else if at_most {
        format!("MISSED: {:.2}x the bound", value / bound)
    } else {
        format!("MISSED: {:.0}% of the bound", value / bound * 100.0)
    };
    let sign = if at_most { "<=" } else { ">=" };
    println!("target  {what:<52} {value:>8.2}{unit:<6} (target {sign} {bound}{unit})  {verdict}");
}

/// An informative ratio (no target).
pub(crate) fn print_ratio(what: &str, value: f64) {
    println!("ratio   {what:<52} {value:>8.2}");
}

/// The rounds to run: `$SWITCHBOARD_BENCH_ROUNDS`, else `default` (1 makes a run short, to
/// run under a profiler).
pub(crate) fn rounds(default: u64) -> u64 {
    std::env::var("SWITCHBOARD_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

/// Keeps `p` in `slot`, or adds it to what is there (one profile per thing over all rounds).
pub(crate) fn keep(slot: &mut Option<Profile>, p: Profile) {
    match slot {
        Some(all) => all.absorb(p),
        empty => *empty = Some(p),
    }
}
