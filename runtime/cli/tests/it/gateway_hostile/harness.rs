//! The measured gateway, the well-behaved client beside each attack, and the attackers'
//! tools: connections from another address, floods, the metrics scraped.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::net::TcpStream;

use crate::cli::BIN;
use crate::gateway::{config_file_of, Served};
use crate::gateway_support::{addr_of, connect, get, mib, Peak, Sample, Session};

/// How long anything awaited may take before the test fails.
pub(super) const WAIT: Duration = Duration::from_secs(20);

/// The bound on the well-behaved client's p99: generous, for a loaded two-core machine (an
/// unloaded call takes a few milliseconds).
const P99: Duration = Duration::from_secs(1);

/// How far the descriptors may be from their baseline once the attackers have gone.
pub(super) const FDS_SLACK: usize = 4;

pub(super) const MIB: u64 = 1024 * 1024;

pub(super) const WELL_BEHAVED: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
pub(super) const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const PROBER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// One attack at a time: each measures the gateway's memory and a client's latency, which
/// another attack on the same two cores would blur.
pub(super) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Raises this process's descriptor limit to its hard limit (the gateway it starts inherits
/// it); fails the test when that is under `needed`.
pub(super) fn descriptors(needed: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: both write or read one rlimit, through a pointer to one.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(
        limit.rlim_cur >= needed,
        "needs {needed} descriptors; RLIMIT_NOFILE's hard limit is {}",
        limit.rlim_max
    );
}

/// An attacker's connection: it must open.
pub(super) async fn attacker(from: IpAddr, to: SocketAddr, reads: bool) -> TcpStream {
    connect(from, to, reads)
        .await
        .unwrap_or_else(|e| panic!("connect from {from}: {e}"))
}

/// What one side of the well-behaved client saw: each success's latency, each failure.
#[derive(Debug, Default)]
struct Log {
    latencies: Vec<Duration>,
    failures: Vec<String>,
}

impl Log {
    fn percentile(&self, q: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let at = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len().max(1));
        sorted.get(at - 1).copied().unwrap_or_default()
    }

    fn summary(&self) -> String {
        format!(
            "{} ok, {} failed, p50 {:.1?}, p99 {:.1?}, max {:.1?}",
            self.latencies.len(),
            self.failures.len(),
            self.percentile(0.5),
            self.percentile(0.99),
            self.percentile(1.0)
        )
    }
}

/// A well-behaved client beside the attack: a session from 127.0.0.1 calling `echo` every
/// 100 ms, and a prober asking `/healthz` and `/readyz` in turn every 250 ms from 127.0.0.3,
/// each time on a connection of its own.
struct WellBehaved {
    calls: tokio::task::JoinHandle<Log>,
    probes: tokio::task::JoinHandle<Log>,
    stop: tokio::sync::watch::Sender<bool>,
    /// Calls and probes made so far.
    made: Arc<[AtomicUsize; 2]>,
}

/// What the well-behaved client saw during the attack.
pub(super) struct Seen {
    calls: Log,
    probes: Log,
}

impl WellBehaved {
    async fn start(gateway: &Gateway) -> WellBehaved {
        let session = Session::open(&gateway.served.url, WELL_BEHAVED)
            .await
            .unwrap_or_else(|e| panic!("the well-behaved client's session: {e}"));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let made: Arc<[AtomicUsize; 2]> = Arc::default();
        let every = |ms| {
            let mut tick = tokio::time::interval(Duration::from_millis(ms));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick
        };
        let calls = {
            let (mut stopped, made, mut tick) = (stopped.clone(), made.clone(), every(100));
            let echo = gateway.echo.clone();
            tokio::spawn(async move {
                let mut log = Log::default();
                for n in 1.. {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stopped.changed() => break,
                    }
                    let started = Instant::now();
                    match session.echo(&echo, n).await {
                        Ok(()) => log.latencies.push(started.elapsed()),
                        Err(e) => log.failures.push(e),
                    }
                    made[0].fetch_add(1, Ordering::Relaxed);
                }
                log
            })
        };
        let probes = {
            let (mut stopped, made, mut tick) = (stopped, made.clone(), every(250));
            let addr = gateway.addr;
            tokio::spawn(async move {
                let mut log = Log::default();
                for path in ["/healthz", "/readyz"].iter().cycle() {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stopped.changed() => break,
                    }
                    let started = Instant::now();
                    match get(PROBER, addr, path).await {
                        Ok((200, _)) => log.latencies.push(started.elapsed()),
                        Ok((status, body)) => log.failures.push(format!("{path}: {status} {body}")),
                        Err(e) => log.failures.push(e),
                    }
                    made[1].fetch_add(1, Ordering::Relaxed);
                }
                log
            })
        };
        WellBehaved {
            calls,
            probes,
            stop,
            made,
        }
    }

    async fn for_at_least(&self, calls: usize, probes: usize) {
        let target = [
            self.made[0].load(Ordering::Relaxed) + calls,
            self.made[1].load(Ordering::Relaxed) + probes,
        ];
        let deadline = Instant::now() + WAIT;
        while (0..2).any(|side| self.made[side].load(Ordering::Relaxed) < target[side]) {
            assert!(
                Instant::now() < deadline,
                "the well-behaved client made {:?} of {target:?} calls and probes in {WAIT:?}",
                self.made
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) -> Seen {
        let _ = self.stop.send(true);
        Seen {
            calls: self.calls.await.unwrap(),
            probes: self.probes.await.unwrap(),
        }
    }
}

impl Seen {
    /// Every call and probe succeeded, enough of them to mean something, the calls' p99
    /// under [`P99`].
    pub(super) fn assert_served(&self) {
        let failed: Vec<String> = [("call", &self.calls), ("probe", &self.probes)]
            .iter()
            .filter(|(_, log)| !log.failures.is_empty())
            .map(|(what, log)| {
                let first = &log.failures[..log.failures.len().min(5)];
                format!(
                    "{} well-behaved {what}s failed: {first:?}",
                    log.failures.len()
                )
            })
            .collect();
        assert!(failed.is_empty(), "{}", failed.join("; "));
        for (what, log) in [("call", &self.calls), ("probe", &self.probes)] {
            assert!(
                log.latencies.len() >= 5,
                "only {} well-behaved {what}s during the attack",
                log.latencies.len()
            );
        }
        let p99 = self.calls.percentile(0.99);
        assert!(p99 < P99, "the well-behaved client's p99 was {p99:?}");
    }
}

/// An attack under way: the gateway watched, a well-behaved client beside it.
pub(super) struct Attack {
    peak: Peak,
    client: WellBehaved,
}

/// What an attack did: what the well-behaved client saw, the most the gateway held, and
/// its metrics.
pub(super) struct Measured {
    pub(super) seen: Seen,
    pub(super) peak: Sample,
    pub(super) scrape: Scrape,
}

impl Attack {
    /// Waits until the well-behaved client has made `calls` more calls and `probes` more
    /// probes: the attack lasts at least that long.
    pub(super) async fn for_at_least(&self, calls: usize, probes: usize) {
        self.client.for_at_least(calls, probes).await;
    }

    /// Stops the watch and the well-behaved client: what they saw.
    pub(super) async fn end(self, gateway: &Gateway) -> Measured {
        Measured {
            seen: self.client.stop().await,
            peak: self.peak.end(),
            scrape: gateway.scrape().await,
        }
    }
}

/// `GET /metrics`, scraped.
pub(super) struct Scrape(String);

impl Scrape {
    /// `switchboard_front_rejected_total{reason}`.
    pub(super) fn rejected(&self, reason: &str) -> u64 {
        self.sum(&format!(
            "switchboard_front_rejected_total{{reason=\"{reason}\"}}"
        ))
    }

    /// The sum of the series whose line starts with `prefix` (a name and some labels).
    pub(super) fn sum(&self, prefix: &str) -> u64 {
        self.0
            .lines()
            .filter(|line| line.starts_with(prefix))
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// Every rejection counted, by reason.
    pub(super) fn rejections(&self) -> Vec<(String, u64)> {
        self.0
            .lines()
            .filter_map(|l| l.strip_prefix("switchboard_front_rejected_total{reason=\""))
            .filter_map(|rest| {
                let (reason, value) = rest.split_once("\"} ")?;
                let value = value.trim().parse::<f64>().ok()? as u64;
                (value > 0).then(|| (reason.to_owned(), value))
            })
            .collect()
    }
}

/// `switchboard serve --listen 0 --metrics 127.0.0.1:0` fronting the demo server with its
/// fault tools, ready and warmed up, with what it held then.
pub(super) struct Gateway {
    pub(super) served: Served,
    pub(super) pid: u32,
    pub(super) addr: SocketAddr,
    metrics: SocketAddr,
    /// The tool the well-behaved client calls.
    pub(super) echo: String,
    /// What it held once ready and warmed up.
    pub(super) baseline: Sample,
}

impl Gateway {
    /// Fronting one demo server, whose tools keep their names.
    pub(super) async fn start(args: &[&str]) -> Gateway {
        Gateway::start_with(&["demo"], args).await
    }

    /// Fronting a demo server under each of `servers`' names, its tools under
    /// `server__tool` when there are several; the well-behaved client calls the first's.
    pub(super) async fn start_with(servers: &[&str], args: &[&str]) -> Gateway {
        let demo = json!({"command": BIN, "args": ["demo-server", "--faults"]});
        let named: serde_json::Map<String, Value> = servers
            .iter()
            .map(|name| (name.to_string(), demo.clone()))
            .collect();
        let config = config_file_of(json!({"mcpServers": named}));
        let echo = match servers {
            [_] => "echo".to_owned(),
            [first, ..] => format!("{first}__echo"),
            [] => panic!("no server"),
        };
        let mut all = vec!["--listen", "0", "--metrics", "127.0.0.1:0", "-v"];
        all.extend(args);
        let served = Served::start_with(&config, &all);
        let metrics = served
            .log
            .split_whitespace()
            .find_map(|word| word.strip_prefix("addr="))
            .and_then(|addr| addr.parse().ok())
            .unwrap_or_else(|| panic!("no metrics address in {}", served.log));
        let (pid, addr) = (served.child.id(), addr_of(&served));
        let mut gateway = Gateway {
            served,
            pid,
            addr,
            metrics,
            echo,
            baseline: Sample::default(),
        };
        let deadline = Instant::now() + WAIT;
        while !matches!(get(PROBER, addr, "/readyz").await, Ok((200, _))) {
            assert!(Instant::now() < deadline, "/readyz never answered 200");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Warmed up, so that what is allocated once is in the baseline.
        let session = Session::open(&gateway.served.url, WELL_BEHAVED)
            .await
            .unwrap();
        for n in 0..20 {
            session.echo(&gateway.echo, n).await.unwrap();
        }
        drop(session);
        gateway.scrape().await;
        gateway.baseline = gateway.settled().await;
        gateway
    }

    /// Starts watching it, with a well-behaved client beside it.
    pub(super) async fn attack(&self) -> Attack {
        Attack {
            peak: Peak::watch(self.pid),
            client: WellBehaved::start(self).await,
        }
    }

    pub(super) fn url(&self) -> &str {
        &self.served.url
    }

    pub(super) async fn scrape(&self) -> Scrape {
        match get(WELL_BEHAVED, self.metrics, "/metrics").await {
            Ok((200, body)) => Scrape(body),
            other => panic!("GET /metrics: {other:?}"),
        }
    }

    /// What it holds once its descriptors stop changing (closed connections gone).
    async fn settled(&self) -> Sample {
        let deadline = Instant::now() + WAIT;
        let mut last = Sample::of(self.pid);
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = Sample::of(self.pid);
            assert!(Instant::now() < deadline, "its descriptors never settled");
            if now.fds == last.fds {
                return now;
            }
            last = now;
        }
    }

    /// Once the attackers have gone: its descriptors back to the baseline, it alive; what
    /// it holds then.
    pub(super) async fn after(&mut self) -> Sample {
        let deadline = Instant::now() + WAIT;
        let mut after = Sample::of(self.pid);
        while after.fds > self.baseline.fds + FDS_SLACK && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            after = Sample::of(self.pid);
        }
        assert!(
            self.served.child.try_wait().unwrap().is_none(),
            "the gateway died"
        );
        assert!(
            after.fds.abs_diff(self.baseline.fds) <= FDS_SLACK,
            "descriptors: {} before the attack, {} after it",
            self.baseline.fds,
            after.fds
        );
        after
    }

    /// Prints what the attack did, for the README.
    pub(super) fn report(&self, attack: &str, measured: &Measured, after: Sample) {
        eprintln!(
            "[{attack}] gateway before {}; peak {}; after {}\n  \
             well-behaved calls: {}\n  probes: {}\n  rejected: {:?}",
            self.baseline,
            measured.peak,
            after,
            measured.seen.calls.summary(),
            measured.seen.probes.summary(),
            measured.scrape.rejections()
        );
    }

    /// The peak's memory is within the baseline and `allowance` (`why` it may take that).
    pub(super) fn assert_memory(&self, peak: Sample, allowance: u64, why: &str) {
        assert!(
            peak.rss <= self.baseline.rss + allowance,
            "resident memory peaked at {:.1} MiB, over the baseline's {:.1} MiB + {:.1} MiB ({why})",
            mib(peak.rss),
            mib(self.baseline.rss),
            mib(allowance)
        );
    }

    pub(super) fn stop(self) {
        self.served.stop();
    }
}

/// What each attack may make the gateway allocate beyond what it is built to hold (each
/// test's own allowance): the runtime's and the allocator's working memory under load
/// (thread arenas, buffers grown once, freed pages the allocator keeps). Measured at up to
/// 15 MiB, in the answer tests; the rest is room for a loaded machine.
pub(super) const SLACK: u64 = 40 * MIB;

/// Makes requests `workers` at a time for as long as `more(n)` says request `n` is to be
/// made: `request(n)` makes it and says how it was answered.
pub(super) async fn flood<M, F, Fut, T>(workers: usize, more: M, request: F) -> Vec<T>
where
    M: Fn(usize) -> bool + Clone + Send + 'static,
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = T> + Send,
    T: Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut running = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (next, more, request) = (next.clone(), more.clone(), request.clone());
        running.push(tokio::spawn(async move {
            let mut answered = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if !more(n) {
                    return answered;
                }
                answered.push(request(n).await);
            }
        }));
    }
    let mut answered = Vec::new();
    for worker in running {
        answered.extend(worker.await.unwrap());
    }
    answered
}

/// How a flooder's request was answered: its status, and whether a 429 said when to
/// come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Answered {
    Ok,
    TooMany { retry_after: bool },
    Other(u16),
}

impl Answered {
    /// A request's answer, or `Other(0)` when there was none.
    pub(super) fn of(answer: &Result<reqwest::Response, reqwest::Error>) -> Answered {
        answer
            .as_ref()
            .map_or(Answered::Other(0), Answered::of_response)
    }

    pub(super) fn of_response(answer: &reqwest::Response) -> Answered {
        match answer.status().as_u16() {
            200 => Answered::Ok,
            429 => Answered::TooMany {
                retry_after: answer
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|s| s >= 1),
            },
            status => Answered::Other(status),
        }
    }

    /// How many of each.
    pub(super) fn tally(answers: &[Answered]) -> Tally {
        let mut counts = std::collections::BTreeMap::new();
        for answer in answers {
            *counts.entry(*answer).or_default() += 1;
        }
        let of = |answer| counts.get(&answer).copied().unwrap_or(0);
        Tally {
            ok: of(Answered::Ok),
            limited: of(Answered::TooMany { retry_after: true }),
            counts,
        }
    }
}

/// How a flood was answered.
#[derive(Debug)]
pub(super) struct Tally {
    /// 200s.
    pub(super) ok: u64,
    /// 429s with a `Retry-After`.
    pub(super) limited: u64,
    pub(super) counts: std::collections::BTreeMap<Answered, u64>,
}
