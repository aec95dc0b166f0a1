//! The clients of an HTTP server, each with its quotas: who a request comes from (its
//! authenticated principal, else its address), what that client holds (sessions, streams,
//! requests in flight), its request rate, and when it was last warned about.
//!
//! A client is looked up when a connection is accepted (by address) and when a request
//! names another principal or forwarded address than the connection's last one, never per
//! request otherwise: the connection keeps the client it last saw. A client nobody holds
//! and whose rate is back to rest is forgotten by the server's sweep, so the table holds
//! only the clients of open connections, sessions and recent requests.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::config::{ClientLimits, Rejection, Rejections};

/// The process's clock origin for the times kept in atomics (a session's last use, a
/// client's rate): an atomic holds microseconds, not an `Instant`.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

pub(crate) fn now_us() -> u64 {
    u64::try_from(epoch().elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Who a client is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// An address; IPv6 ones by their /64, which one host usually holds whole.
    Address(IpAddr),
    /// An authenticated principal's subject.
    Principal(Arc<str>),
}

impl ClientKey {
    pub(crate) fn address(ip: IpAddr) -> ClientKey {
        let ip = match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let mut segments = v6.segments();
                    segments[4..].fill(0);
                    IpAddr::V6(Ipv6Addr::from(segments))
                }
            },
            v4 => v4,
        };
        ClientKey::Address(ip)
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientKey::Address(IpAddr::V6(v6)) => write!(f, "address {v6}/64"),
            ClientKey::Address(ip) => write!(f, "address {ip}"),
            ClientKey::Principal(subject) => write!(f, "principal {subject:?}"),
        }
    }
}

/// What a client may hold at once, by kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Quota {
    Sessions,
    Streams,
    InFlight,
    /// Connections from its address (never refused for it: counted, so that past the cap
    /// the connection closed for a newcomer is one of the client that holds the most).
    Connections,
    /// Its connections on the lane past the cap.
    Shed,
}

/// How often a client's rejections are logged at most.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// One client.
pub(crate) struct Client {
    pub(crate) key: ClientKey,
    held: [AtomicUsize; 5],
    /// The rate limit's theoretical arrival time (GCRA), in microseconds since the epoch.
    tat: AtomicU64,
    /// When it was last warned about, and the rejections since.
    warned_at: AtomicU64,
    unreported: AtomicU64,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("key", &self.key).finish()
    }
}

impl Client {
    fn new(key: ClientKey) -> Self {
        Client {
            key,
            held: Default::default(),
            tat: AtomicU64::new(0),
            warned_at: AtomicU64::new(0),
            unreported: AtomicU64::new(0),
        }
    }

    /// How many of `quota` it holds.
    pub(crate) fn holds(&self, quota: Quota) -> usize {
        self.held[quota as usize].load(Ordering::Relaxed)
    }

    /// One more of `quota`, if it holds fewer than `max`.
    pub(crate) fn take(self: &Arc<Self>, quota: Quota, max: usize) -> Option<Held> {
        let counter = &self.held[quota as usize];
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(Held {
            client: self.clone(),
            quota,
        })
    }

    /// One more of `quota`, whatever it holds (a count, not a limit).
    pub(crate) fn count(self: &Arc<Self>, quota: Quota) -> Held {
        self.held[quota as usize].fetch_add(1, Ordering::Relaxed);
        Held {
            client: self.clone(),
            quota,
        }
    }

    /// Admits one request at `now` (µs) under `limits`' rate: `Err` with how long until
    /// one would be admitted. GCRA: one atomic, no timer.
    pub(crate) fn admit(&self, limits: &ClientLimits, now: u64) -> Result<(), Duration> {
        let Some(rate) = limits.rate else {
            return Ok(());
        };
        let interval = ((1_000_000.0 / rate) as u64).max(1);
        let tolerance = interval.saturating_mul(u64::from(limits.burst.max(1)) - 1);
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let start = tat.max(now);
            if start - now > tolerance {
                return Err(Duration::from_micros(start - now - tolerance));
            }
            match self.tat.compare_exchange_weak(
                tat,
                start + interval,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(current) => tat = current,
            }
        }
    }

    /// Counts `rejection` and logs it at warn, at most once per client every ten seconds
    /// (with how many went unreported since), never per request.
    pub(crate) fn reject(&self, rejection: Rejection, hook: Option<&Rejections>) {
        if let Some(hook) = hook {
            (hook.0)(rejection);
        }
        if let Some(more) = self.report_due(now_us()) {
            tracing::warn!(
                "refused {}: {rejection} ({more} more refusals of this client since the last report)",
                self.key
            );
        }
    }

    /// Whether a rejection at `now` (µs) is to be logged: `Some` with how many went
    /// unreported since the last report, once every [`WARN_EVERY`]; `None` counts it as
    /// unreported.
    fn report_due(&self, now: u64) -> Option<u64> {
        let last = self.warned_at.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= WARN_EVERY.as_micros() as u64;
        if due
            && self
                .warned_at
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.unreported.swap(0, Ordering::Relaxed));
        }
        self.unreported.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Whether nothing holds it and its rate is at rest: it may be forgotten.
    fn at_rest(self: &Arc<Self>, now: u64) -> bool {
        Arc::strong_count(self) == 1 && self.tat.load(Ordering::Relaxed) <= now
    }
}

/// One of a client's quota held; given back by drop.
pub(crate) struct Held {
    client: Arc<Client>,
    quota: Quota,
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Held")
            .field("client", &self.client.key)
            .field("quota", &self.quota)
            .finish()
    }
}

impl Held {
    pub(crate) fn client(&self) -> &Arc<Client> {
        &self.client
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.client.held[self.quota as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

const SHARDS: usize = 16;

/// Every client the server knows now, in shards so that accepting connections and the
/// sweep do not wait on one lock.
pub(crate) struct Clients {
    shards: [Mutex<HashMap<ClientKey, Arc<Client>>>; SHARDS],
    hasher: std::collections::hash_map::RandomState,
}

impl Clients {
    pub(crate) fn new() -> Self {
        Clients {
            shards: Default::default(),
            hasher: Default::default(),
        }
    }

    fn shard(&self, key: &ClientKey) -> &Mutex<HashMap<ClientKey, Arc<Client>>> {
        &self.shards[(self.hasher.hash_one(key) as usize) % SHARDS]
    }

    /// The client under `key`, made if new.
    pub(crate) fn get(&self, key: ClientKey) -> Arc<Client> {
        let mut shard = self
            .shard(&key)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        shard
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Client::new(key)))
            .clone()
    }

    /// Forgets the clients nothing holds whose rate is at rest.
    pub(crate) fn sweep(&self) {
        let now = now_us();
        for shard in &self.shards {
            shard
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|_, client| !client.at_rest(now));
        }
    }

    /// How many clients it knows.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }
}

/// The client address an `X-Forwarded-For` from a trusted proxy names: the rightmost
/// address that is not itself a trusted proxy (the ones left of it are the client's to
/// write, and so to forge).
pub(crate) fn forwarded_for<'a>(
    values: impl Iterator<Item = &'a [u8]>,
    trusted: &[IpAddr],
) -> Option<IpAddr> {
    let mut addresses: Vec<IpAddr> = Vec::new();
    for value in values {
        let text = std::str::from_utf8(value).ok()?;
        for part in text.split(',') {
            addresses.push(part.trim().parse().ok()?);
        }
    }
    addresses.into_iter().rev().find(|ip| !trusted.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rate: f64, burst: u32) -> ClientLimits {
        ClientLimits {
            sessions: 1,
            streams: 1,
            in_flight: 1,
            rate: Some(rate),
            burst,
        }
    }

    #[test]
    fn the_rate_admits_a_burst_then_one_per_interval() {
        let client = Client::new(ClientKey::Principal("a".into()));
        let limits = limits(10.0, 3); // one every 100 ms, three at once
        let t0 = 1_000_000;
        for _ in 0..3 {
            assert!(client.admit(&limits, t0).is_ok());
        }
        let wait = client.admit(&limits, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(100));
        assert!(client.admit(&limits, t0 + 99_000).is_err());
        assert!(client.admit(&limits, t0 + 100_000).is_ok());
        assert!(client.admit(&limits, t0 + 100_000).is_err());
        // After a rest as long as the burst, a whole burst again.
        let later = t0 + 2_000_000;
        for _ in 0..3 {
            assert!(client.admit(&limits, later).is_ok());
        }
        assert!(client.admit(&limits, later).is_err());
        assert!(client.admit(&limits.with_rate(None, 1), later).is_ok());
    }

    #[test]
    fn a_client_is_reported_once_every_ten_seconds_with_what_went_unreported() {
        let client = Client::new(ClientKey::Principal("a".into()));
        let t0 = 5_000_000;
        assert_eq!(client.report_due(t0), Some(0));
        for i in 1..=1000 {
            assert_eq!(client.report_due(t0 + i * 1000), None);
        }
        assert_eq!(client.report_due(t0 + 9_999_999), None);
        assert_eq!(client.report_due(t0 + 10_000_000), Some(1001));
        assert_eq!(client.report_due(t0 + 10_000_001), None);
    }

    #[test]
    fn quotas_are_taken_up_to_the_limit_and_given_back_by_drop() {
        let client = Arc::new(Client::new(ClientKey::Principal("a".into())));
        let first = client.take(Quota::Streams, 2).unwrap();
        let second = client.take(Quota::Streams, 2).unwrap();
        assert!(client.take(Quota::Streams, 2).is_none());
        assert!(client.take(Quota::Sessions, 2).is_some(), "kinds apart");
        drop(first);
        assert_eq!(client.holds(Quota::Streams), 1);
        assert!(client.take(Quota::Streams, 2).is_some());
        drop(second);
    }

    #[test]
    fn clients_at_rest_are_forgotten() {
        let clients = Clients::new();
        let held = clients.get(ClientKey::address("10.0.0.1".parse().unwrap()));
        let _ = clients.get(ClientKey::address("10.0.0.2".parse().unwrap()));
        assert!(Arc::ptr_eq(
            &held,
            &clients.get(ClientKey::address("10.0.0.1".parse().unwrap()))
        ));
        clients.sweep();
        assert_eq!(clients.len(), 1, "the held one stays");
        drop(held);
        clients.sweep();
        assert_eq!(clients.len(), 0);
    }

    #[test]
    fn ipv6_clients_are_their_64_and_mapped_v4_is_v4() {
        let a = ClientKey::address("2001:db8:1:2:aaaa::1".parse().unwrap());
        let b = ClientKey::address("2001:db8:1:2:bbbb::2".parse().unwrap());
        let c = ClientKey::address("2001:db8:1:3::1".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(
            ClientKey::address("::ffff:10.0.0.1".parse().unwrap()),
            ClientKey::address("10.0.0.1".parse().unwrap())
        );
        assert_eq!(a.to_string(), "address 2001:db8:1:2::/64");
    }

    #[test]
    fn the_forwarded_client_is_the_rightmost_untrusted_address() {
        let proxy: IpAddr = "10.0.0.9".parse().unwrap();
        let trusted = [proxy];
        let of = |values: &[&str]| forwarded_for(values.iter().map(|v| v.as_bytes()), &trusted);
        assert_eq!(of(&["1.2.3.4"]), Some("1.2.3.4".parse().unwrap()));
        // A client that writes its own header cannot choose who it is.
        assert_eq!(of(&["6.6.6.6, 1.2.3.4"]), Some("1.2.3.4".parse().unwrap()));
        assert_eq!(
            of(&["6.6.6.6", "1.2.3.4, 10.0.0.9"]),
            Some("1.2.3.4".parse().unwrap())
        );
        assert_eq!(of(&["10.0.0.9"]), None);
        assert_eq!(of(&["not an address"]), None);
    }
}
