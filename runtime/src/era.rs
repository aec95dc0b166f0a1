//! Protocol eras: which era a server is spoken to in, how it is chosen, and what every
//! request to a stateless (2026-07-28) server carries.
//!
//! A server is configured with a [`Protocol`]: [`Protocol::Auto`] (the default) probes it
//! with `server/discover` when it starts and keeps the verdict (see `verdicts`);
//! [`Protocol::Modern`] and [`Protocol::Legacy`] skip the probe. The verdict, an [`Era`], is
//! shown in [`ServerStatus`](crate::ServerStatus) with the protocol version.
//!
//! For a modern server the actor publishes a [`Modern`] in the server's [`Dialect`] before it
//! lets calls through; every request frame built after that carries `params._meta` with the
//! protocol version, our identity and our capabilities (and the log level a caller chose),
//! through [`frame_request`] or [`ModernMeta`].
//!
//! ```
//! use switchboard::{Protocol, ServerConfig};
//!
//! let config = ServerConfig::stdio("my-server").protocol(Protocol::Legacy);
//! assert_eq!("auto".parse::<Protocol>(), Ok(Protocol::Auto));
//! # let _ = config;
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_codecs::frame;
use switchboard_codecs::mcp::modern::meta;
use switchboard_codecs::mcp::LoggingLevel;
use tokio::sync::watch;

/// Which protocol era to speak to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// Ask with `server/discover` first: a discover result (or `-32022`, the modern
    /// "unsupported version" error) means modern; any other error, or no answer within
    /// the probe's timeout, means legacy, and `initialize` follows.
    #[default]
    Auto,
    /// 2026-07-28 (stateless): `server/discover`, `_meta` on every request, no
    /// `initialize`.
    Modern,
    /// 2024-11-05 … 2025-11-25: the `initialize` handshake.
    Legacy,
}

impl Protocol {
    /// The name used in config files: `auto`, `modern` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Auto => "auto",
            Protocol::Modern => "modern",
            Protocol::Legacy => "legacy",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol setting that is not `auto`, `modern` or `legacy`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?} (expected \"auto\", \"modern\" or \"legacy\")")]
pub struct UnknownProtocol(pub String);

impl FromStr for Protocol {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Protocol::Auto),
            "modern" => Ok(Protocol::Modern),
            "legacy" => Ok(Protocol::Legacy),
            other => Err(UnknownProtocol(other.to_owned())),
        }
    }
}

/// The era a running server is spoken to in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// The handshake era (2024-11-05 … 2025-11-25).
    Legacy,
    /// The stateless era (2026-07-28).
    Modern,
}

impl Era {
    /// `legacy` or `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every request to a modern server carries, fixed for one server process.
#[derive(Debug)]
pub(crate) struct Modern {
    /// The protocol version requests name.
    pub(crate) version: Arc<str>,
    /// Our `clientInfo`.
    pub(crate) client_info: Value,
    /// Our capabilities (those our handlers provide).
    pub(crate) capabilities: Value,
}

/// Where a server's current dialect is published: `Some` while it is spoken to in the
/// modern era. Shared by the actor (which writes it before opening the gate) and handles
/// (which read it when they build a frame).
pub(crate) type Dialect = Arc<ArcSwapOption<Modern>>;

impl Modern {
    pub(crate) fn new(version: &str, capabilities: Value) -> Self {
        Modern {
            version: version.into(),
            client_info: client_info(),
            capabilities,
        }
    }

    /// The same, in another protocol version (after the server refused this one).
    pub(crate) fn with_version(&self, version: &str) -> Modern {
        Modern {
            version: version.into(),
            client_info: self.client_info.clone(),
            capabilities: self.capabilities.clone(),
        }
    }

    /// The `_meta` entries of one request.
    pub(crate) fn meta(&self, level: Option<LoggingLevel>) -> ModernMeta<'_> {
        ModernMeta {
            protocol_version: &self.version,
            client_info: &self.client_info,
            client_capabilities: &self.capabilities,
            log_level: level,
        }
    }

    /// Adds this request's `_meta` entries to `params` (made an object if it is not one),
    /// beside any `_meta` entries already there (a progress token).
    pub(crate) fn add_meta(&self, params: &mut Value, level: Option<LoggingLevel>) {
        if !params.is_object() {
            *params = Value::Object(Map::new());
        }
        let Some(object) = params.as_object_mut() else {
            return;
        };
        let entry = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Some(meta) = entry.as_object_mut() {
            meta.insert(meta::PROTOCOL_VERSION.into(), Value::from(&*self.version));
            meta.insert(meta::CLIENT_INFO.into(), self.client_info.clone());
            meta.insert(meta::CLIENT_CAPABILITIES.into(), self.capabilities.clone());
            if let Some(level) = level {
                if let Ok(level) = serde_json::to_value(level) {
                    meta.insert(meta::LOG_LEVEL.into(), level);
                }
            }
        }
    }
}

/// The `_meta` entries of one modern request, serialized in place (flattened into a
/// `_meta` struct that has other entries, or on its own).
#[derive(Debug, Serialize)]
pub(crate) struct ModernMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    client_info: &'a Value,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: &'a Value,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    log_level: Option<LoggingLevel>,
}

/// The shortest time a stateless server's tool listing counts as fresh, whatever its
/// `ttlMs` (`0` or absent: stale at once): a heuristic the caching rules allow, so that a
/// busy caller does not re-list the tools before every call.
pub(crate) const MIN_FRESH: Duration = Duration::from_secs(1);

/// How fresh one of a stateless server's cached lists is, after its `ttlMs`: shared by the
/// actor, which lists, and callers, which find it stale when they route by it.
///
/// A caller that routes by a stale list has it fetched again first, and waits (within its
/// own deadline) for that one re-list; every caller of the same burst waits for the same
/// one, and the next listing is fresh for at least [`MIN_FRESH`]. A list only looked at (a
/// catalogue read) is re-listed in the background and served stale meanwhile, as the caching
/// rules allow. There is no polling.
#[derive(Debug)]
pub(crate) struct Freshness {
    /// Until when the list is fresh; `None`: no TTL to honour (a legacy server, not listed
    /// yet, or a re-list under way).
    until: ArcSwapOption<Instant>,
    /// Whether a re-list was asked for and has not ended yet: callers wait for it.
    pending: AtomicBool,
    /// Wakes the actor to list again.
    wake: tokio::sync::Notify,
    /// Counts the re-lists that ended (listed, failed or abandoned), for the callers waiting.
    rounds: watch::Sender<u64>,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness {
            until: ArcSwapOption::empty(),
            pending: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            rounds: watch::channel(0).0,
        }
    }
}

impl Freshness {
    /// A listing with `ttl` (`None` when the result had none) is in use now.
    pub(crate) fn listed(&self, ttl: Option<Duration>) {
        let fresh = ttl.unwrap_or_default().max(MIN_FRESH);
        self.until.store(Some(Arc::new(Instant::now() + fresh)));
        self.end_round();
    }

    /// Listing again failed: the last list stays in use, and is tried again once it has
    /// served for [`MIN_FRESH`] more (a failing server is not asked before every call).
    pub(crate) fn failed(&self) {
        self.until.store(Some(Arc::new(Instant::now() + MIN_FRESH)));
        self.end_round();
    }

    /// No TTL applies (a legacy server, or the connection is gone); callers waiting for a
    /// re-list go on.
    pub(crate) fn forget(&self) {
        self.until.store(None);
        self.end_round();
    }

    fn end_round(&self) {
        // After the new `until`: a caller that sees no re-list pending sees the new list.
        if self.pending.swap(false, Ordering::SeqCst) {
            self.rounds.send_modify(|round| *round += 1);
        }
    }

    /// Whether a caller routing by the list at `now` must wait for a re-list: the list is
    /// past its TTL (then the actor is asked, once per burst), or a re-list is under way.
    pub(crate) fn needs_relist(&self, now: Instant) -> bool {
        let stale = self
            .until
            .load()
            .as_deref()
            .is_some_and(|until| now >= *until);
        if !stale {
            return self.pending.load(Ordering::SeqCst);
        }
        // The first caller of a burst asks; the others find it pending.
        if self
            .pending
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.until.store(None);
            self.wake.notify_one();
        }
        true
    }

    /// A caller is about to read the list without routing by it: when it is stale, the
    /// actor is asked to list again, and the caller goes on with the list it has.
    pub(crate) fn touch(&self) {
        self.needs_relist(Instant::now());
    }

    /// Waits for the re-list that [`needs_relist`](Self::needs_relist) found under way, or
    /// until `deadline`; `false` when the deadline passed first.
    pub(crate) async fn relisted(&self, deadline: Option<Instant>) -> bool {
        let mut rounds = self.rounds.subscribe();
        // Subscribed before this check: a round that ends after it wakes the wait below.
        if !self.pending.load(Ordering::SeqCst) {
            return true;
        }
        match deadline {
            Some(at) => tokio::time::timeout_at(at.into(), rounds.changed())
                .await
                .is_ok(),
            // The sender lives as long as `self`: `changed` only returns on a new round.
            None => rounds.changed().await.is_ok(),
        }
    }

    /// Resolves when a caller found the list stale.
    pub(crate) async fn stale(&self) {
        self.wake.notified().await
    }
}

/// How fresh each cached list of a stateless server is: its tools (in the catalogue), and
/// its resources, resource templates and prompts (in its status, where the runtime resolves
/// URIs and prompt names). Each has its own `ttlMs`.
#[derive(Debug, Default)]
pub(crate) struct ListFreshness {
    /// `tools/list`.
    pub(crate) tools: Freshness,
    /// `resources/list` and `resources/templates/list` (the shorter `ttlMs` of the two).
    pub(crate) resources: Freshness,
    /// `prompts/list`.
    pub(crate) prompts: Freshness,
}

impl ListFreshness {
    /// No TTL applies to any list (a new connection, whose era is not known yet).
    pub(crate) fn forget(&self) {
        self.tools.forget();
        self.resources.forget();
        self.prompts.forget();
    }
}

/// The `ttlMs` of a list result's fields, negative read as 0.
pub(crate) fn ttl_ms(extra: &Map<String, Value>) -> Option<i64> {
    extra.get("ttlMs").and_then(Value::as_i64).map(|t| t.max(0))
}

/// The shorter of two `ttlMs`, either absent: a listing of several pages (or lists) is
/// fresh as long as its least fresh part.
pub(crate) fn shortest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Our identity, as `initialize` and modern `_meta` send it.
pub(crate) fn client_info() -> Value {
    serde_json::json!({"name": "switchboard", "version": env!("CARGO_PKG_VERSION")})
}

/// A request frame for `modern` (when the server is modern: params with our `_meta`) or as
/// it is (legacy).
pub(crate) fn frame_request<P: Serialize + ?Sized>(
    modern: Option<&Modern>,
    level: Option<LoggingLevel>,
    id: i64,
    method: &str,
    params: &P,
) -> bytes::Bytes {
    match modern {
        None => frame::request(id, method, params),
        Some(modern) => {
            let mut params = serde_json::to_value(params).unwrap_or(Value::Null);
            modern.add_meta(&mut params, level);
            frame::request(id, method, &params)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expire(freshness: &Freshness) {
        freshness
            .until
            .store(Some(Arc::new(Instant::now() - Duration::from_millis(1))));
    }

    #[test]
    fn a_stale_listing_wakes_the_actor_once_per_burst() {
        use futures_util::FutureExt as _;
        let freshness = Freshness::default();
        let now = Instant::now;
        assert!(!freshness.needs_relist(now()), "no listing, no TTL");
        freshness.listed(Some(Duration::from_secs(60)));
        assert!(!freshness.needs_relist(now()), "still fresh");
        expire(&freshness);
        assert!(freshness.needs_relist(now()), "stale: asks");
        assert!(freshness.stale().now_or_never().is_some(), "the actor woke");
        // The rest of the burst waits for the same re-list and does not ask again.
        assert!(freshness.needs_relist(now()));
        freshness.touch();
        assert!(freshness.stale().now_or_never().is_none(), "once");
        freshness.listed(None);
        assert!(!freshness.needs_relist(now()), "fresh for MIN_FRESH");
    }

    #[tokio::test]
    async fn callers_wait_for_the_relist_and_go_on_when_it_ends_however_it_ends() {
        let freshness = Arc::new(Freshness::default());
        for end in [
            Freshness::listed as fn(&Freshness, Option<Duration>),
            |f, _| f.failed(),
            |f, _| f.forget(),
        ] {
            freshness.listed(Some(Duration::from_secs(60)));
            assert!(!freshness.needs_relist(Instant::now()), "fresh: no wait");
            expire(&freshness);
            let waiting: Vec<_> = (0..3)
                .map(|_| {
                    let f = freshness.clone();
                    tokio::spawn(async move {
                        assert!(f.needs_relist(Instant::now()));
                        f.relisted(None).await
                    })
                })
                .collect();
            freshness.stale().await;
            tokio::task::yield_now().await;
            assert!(waiting.iter().all(|w| !w.is_finished()), "they wait");
            end(&freshness, None);
            for w in waiting {
                assert!(w.await.unwrap());
            }
            assert!(!freshness.needs_relist(Instant::now()));
        }
    }

    #[tokio::test]
    async fn a_caller_waits_no_longer_than_its_deadline() {
        let freshness = Freshness::default();
        freshness.listed(None);
        expire(&freshness);
        let now = Instant::now();
        assert!(freshness.needs_relist(now));
        let deadline = now + Duration::from_millis(50);
        assert!(!freshness.relisted(Some(deadline)).await);
    }

    #[test]
    fn the_shortest_ttl_of_the_pages_counts_and_negative_is_zero() {
        let extra = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(ttl_ms(&extra(serde_json::json!({"ttlMs": -5}))), Some(0));
        assert_eq!(ttl_ms(&extra(serde_json::json!({"ttlMs": "soon"}))), None);
        assert_eq!(shortest(Some(5), Some(3)), Some(3));
        assert_eq!(shortest(None, Some(3)), Some(3));
        assert_eq!(shortest(Some(5), None), Some(5));
        assert_eq!(shortest(None, None), None);
    }

    #[test]
    fn protocol_names_round_trip() {
        for p in [Protocol::Auto, Protocol::Modern, Protocol::Legacy] {
            assert_eq!(p.as_str().parse::<Protocol>(), Ok(p));
        }
        assert!("2026".parse::<Protocol>().is_err());
    }

    #[test]
    fn modern_meta_joins_existing_meta_and_leaves_legacy_frames_alone() {
        let modern = Modern::new("2026-07-28", serde_json::json!({"roots": {}}));
        let params = serde_json::json!({"name": "t", "_meta": {"progressToken": 3}});
        let framed = frame_request(
            Some(&modern),
            Some(LoggingLevel::Info),
            3,
            "tools/call",
            &params,
        );
        let value: Value = serde_json::from_slice(&framed).unwrap();
        let meta = &value["params"]["_meta"];
        assert_eq!(meta["progressToken"], 3);
        assert_eq!(meta[meta::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(
            meta[meta::CLIENT_CAPABILITIES],
            serde_json::json!({"roots": {}})
        );
        assert_eq!(meta[meta::CLIENT_INFO]["name"], "switchboard");
        assert_eq!(meta[meta::LOG_LEVEL], "info");
        assert_eq!(value["params"]["name"], "t");

        let legacy = frame_request(None, Some(LoggingLevel::Info), 3, "tools/call", &params);
        assert_eq!(legacy, frame::request(3, "tools/call", &params));
    }

    #[test]
    fn the_flattened_meta_matches_the_added_one() {
        #[derive(Serialize)]
        struct M<'a> {
            #[serde(rename = "progressToken")]
            token: i64,
            #[serde(flatten)]
            modern: Option<ModernMeta<'a>>,
        }
        let modern = Modern::new("2026-07-28", serde_json::json!({}));
        let flat = serde_json::to_value(M {
            token: 1,
            modern: Some(modern.meta(None)),
        })
        .unwrap();
        let mut added = serde_json::json!({"_meta": {"progressToken": 1}});
        modern.add_meta(&mut added, None);
        assert_eq!(flat, added["_meta"]);
    }
}
