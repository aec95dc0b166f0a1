//! Metrics: what Switchboard measures, under which names, and where the numbers go.
//!
//! Everything goes through the [`metrics`](https://docs.rs/metrics) facade. Every name starts
//! with `switchboard_`, counters end in `_total`, durations are histograms in seconds, and
//! labels come from small sets (server names, methods, tool names, fixed outcome and reason
//! words): never a request id, an argument or an error message.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `switchboard_requests_total` | counter | `server`, `method`, `tool`, `outcome` | requests sent through a handle, by how they ended |
//! | `switchboard_request_duration_seconds` | histogram | `server`, `method`, `tool`, `outcome` | from the call to its answer (or failure) |
//! | `switchboard_requests_in_flight` | gauge | `server` | requests holding one of the server's in-flight slots |
//! | `switchboard_server_up` | gauge | `server` | 1 while the server is ready, else 0 |
//! | `switchboard_server_restarts_total` | counter | `server` | restarts (after a crash, an unresponsive server, a panicked actor, or [`Runtime::restart_server`](crate::Runtime::restart_server)) |
//! | `switchboard_handshake_duration_seconds` | histogram | `server` | from connecting to ready: spawn or connect, `initialize`, every `tools/list` page |
//! | `switchboard_server_tools` | gauge | `server` | tools the server listed in its last handshake |
//! | `switchboard_catalogue_tools` | gauge | — | tools in the runtime's catalogue, across servers |
//! | `switchboard_cancellations_sent_total` | counter | `server`, `reason` | `notifications/cancelled` sent: `reason` is `timeout`, `caller` (the caller dropped its future) or `shutdown` |
//! | `switchboard_unknown_answers_total` | counter | `server` | answers to no pending request (late answers after a timeout, or a confused server) |
//! | `switchboard_output_schema_mismatches_total` | counter | `server` | tool results whose `structuredContent` does not match the tool's `outputSchema` (the call still succeeds) |
//! | `switchboard_skipped_frames_total` | counter | `server`, `kind` | frames that could not be read, by [`SkipKind::as_str`](switchboard_codecs::lines::SkipKind::as_str): `oversized`, `not_utf8`, `not_json`, `not_jsonrpc`, `bad_batch` |
//! | `switchboard_messages_total` | counter | `server`, `direction` | JSON-RPC messages, `direction` = `in` or `out` |
//! | `switchboard_bytes_sent_total` | counter | `server` | bytes of the messages written to the server, as handed to its transport (framing excluded) |
//! | `switchboard_input_rounds_total` | counter | `server` | input-required rounds answered and retried (2026-07-28 servers) |
//! | `switchboard_tasks_started_total` | counter | `server` | tool calls the server runs as tasks, watched by the runtime (either shape) |
//! | `switchboard_tasks_finished_total` | counter | `server`, `outcome` | tasks the runtime stopped watching, by [`TaskOutcome`](crate::task::TaskOutcome): `completed`, `failed`, `cancelled`, `lost`, `timeout`, `detached` or `error` |
//! | `switchboard_tasks_in_flight` | gauge | `server` | tasks the runtime is watching now |
//! | `switchboard_task_polls_total` | counter | `server` | `tasks/get` polls sent |
//!
//! `outcome` is one of `ok`, `tool_error` (a result with `isError: true`), `rpc_error` (a
//! JSON-RPC error answer, or an answer that breaks the protocol), `timeout`, `cancelled` (the
//! caller dropped its future), `disconnected`, `overloaded` or `unavailable` (the server was
//! not running or not ready, or failed to start while the request waited). `tool` is absent
//! for requests other than `tools/call`. Calls refused before they reach a server's handle (an
//! unknown or ambiguous catalogue name, a denied tool, arguments that are not an object) are
//! not requests and are not counted.
//!
//! Bytes are only counted outbound: a transport hands the runtime parsed messages, not their
//! sizes, so inbound traffic is counted in messages.
//!
//! # Where requests are measured
//!
//! Once per caller's request, where every request goes through (the runtime's exchange):
//! the duration is what the caller waited, queueing for a slot included, and a request that
//! took several rounds (a response that broke and was sent again, a stateless server's
//! input rounds) is one request. A `tools/call` result is classified by a scan of the raw
//! result for the key `"isError"` followed by `true`, without parsing it (a nested object
//! with such a key would count as a tool error too). The runtime's own requests to its
//! servers (handshakes, listings, pings) are not counted.
//!
//! The metric handles are resolved once: per server when it is added, and per tool (or
//! method) and outcome the first time one is seen, kept in a copy-on-write map read without a
//! lock. A server keeps at most 256 tool series and 64 method series; tools and methods past
//! that are counted under `tool="_other"` or `method="_other"`, so that callers that name
//! tools at random cannot grow the exposition without bound.
//!
//! # Where metrics go
//!
//! With [`RuntimeBuilder::metrics_listener`](crate::RuntimeBuilder::metrics_listener) (feature
//! `prometheus`) the runtime records into a Prometheus recorder of its own, never installed
//! globally, and serves it at `http://ADDR/metrics`: two runtimes in one process each export
//! their own traffic. With [`RuntimeBuilder::metrics_recorder`](crate::RuntimeBuilder::metrics_recorder)
//! it records into the recorder given. Otherwise it records into the global recorder of the
//! `metrics` facade, as it is when the runtime is built and when a new tool is first called:
//! install yours before building the runtime.
//!
//! ```no_run
//! # async fn f() -> switchboard::Result<()> {
//! let runtime = switchboard::Runtime::builder()
//!     .metrics_listener(([127, 0, 0, 1], 9464).into())
//!     .build()
//!     .await?;
//! println!("scrape http://{}/metrics", runtime.metrics_addr().unwrap());
//! # Ok(()) }
//! ```
//!
//! Tracing: each request runs in a `debug`-level span `request` with fields `server`,
//! `method`, `tool` and `id`; each connection attempt in an `info`-level span `connect` with
//! `server` and `attempt`. Spans that no subscriber wants cost a callsite check.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ::metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder, Unit};
use arc_swap::ArcSwap;

use crate::error::{Error, ErrorKind};

const REQUESTS: &str = "switchboard_requests_total";
const REQUEST_DURATION: &str = "switchboard_request_duration_seconds";
const IN_FLIGHT: &str = "switchboard_requests_in_flight";
const UP: &str = "switchboard_server_up";
const RESTARTS: &str = "switchboard_server_restarts_total";
const HANDSHAKE: &str = "switchboard_handshake_duration_seconds";
const SERVER_TOOLS: &str = "switchboard_server_tools";
const CATALOGUE_TOOLS: &str = "switchboard_catalogue_tools";
const CANCELLATIONS: &str = "switchboard_cancellations_sent_total";
const UNKNOWN_ANSWERS: &str = "switchboard_unknown_answers_total";
const SKIPPED: &str = "switchboard_skipped_frames_total";
const MESSAGES: &str = "switchboard_messages_total";
const BYTES_SENT: &str = "switchboard_bytes_sent_total";
const INPUT_ROUNDS: &str = "switchboard_input_rounds_total";
const OUTPUT_MISMATCHES: &str = "switchboard_output_schema_mismatches_total";
const TASKS_STARTED: &str = "switchboard_tasks_started_total";
const TASKS_FINISHED: &str = "switchboard_tasks_finished_total";
const TASKS_IN_FLIGHT: &str = "switchboard_tasks_in_flight";
const TASK_POLLS: &str = "switchboard_task_polls_total";

/// Most distinct tools, and methods, one server gets series for.
const MAX_TOOL_SERIES: usize = 256;
const MAX_METHOD_SERIES: usize = 64;
/// The label value for tools and methods past those bounds.
const OTHER: &str = "_other";

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// How a request ended, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    ToolError,
    RpcError,
    Timeout,
    Cancelled,
    Disconnected,
    Overloaded,
    Unavailable,
}

impl Outcome {
    const COUNT: usize = 8;

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::RpcError => "rpc_error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Disconnected => "disconnected",
            Outcome::Overloaded => "overloaded",
            Outcome::Unavailable => "unavailable",
        }
    }

    /// The outcome of a request that failed with `error`.
    pub(crate) fn of(error: &Error) -> Self {
        match error.kind() {
            ErrorKind::Rpc { .. }
            | ErrorKind::UrlElicitationRequired { .. }
            | ErrorKind::Protocol { .. } => Outcome::RpcError,
            ErrorKind::Timeout { .. } => Outcome::Timeout,
            ErrorKind::Disconnected { .. } => Outcome::Disconnected,
            ErrorKind::Overloaded { .. } => Outcome::Overloaded,
            // Unavailable, and the start failures (spawn, handshake, crash loop, shutdown)
            // that fail requests waiting for the server.
            _ => Outcome::Unavailable,
        }
    }
}

/// Why the runtime sent `notifications/cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelReason {
    Timeout,
    Caller,
    Shutdown,
}

/// Where a runtime's metrics go.
#[derive(Clone)]
pub(crate) enum Sink {
    /// The `metrics` facade's global recorder (or a no-op one).
    Global,
    /// A recorder of the runtime's own.
    Own(Arc<dyn Recorder + Send + Sync>),
}

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sink::Global => "Global",
            Sink::Own(_) => "Own(..)",
        })
    }
}

impl Sink {
    fn with<T>(&self, f: impl FnOnce(&dyn Recorder) -> T) -> T {
        match self {
            Sink::Global => ::metrics::with_recorder(f),
            Sink::Own(recorder) => f(&**recorder),
        }
    }

    fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        let key = Key::from_parts(name, labels);
        self.with(|r| r.register_counter(&key, &METADATA))
    }

    fn gauge(&self, name: &'static str, labels: Vec<Label>) -> Gauge {
        let key = Key::from_parts(name, labels);
        self.with(|r| r.register_gauge(&key, &METADATA))
    }

    fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        let key = Key::from_parts(name, labels);
        self.with(|r| r.register_histogram(&key, &METADATA))
    }

    /// The HELP lines.
    fn describe(&self) {
        self.with(|r| {
            let counter = |name: &'static str, help: &'static str| {
                r.describe_counter(name.into(), None, help.into())
            };
            counter(REQUESTS, "Requests sent to MCP servers, by outcome.");
            counter(RESTARTS, "Server restarts.");
            counter(CANCELLATIONS, "notifications/cancelled sent, by reason.");
            counter(UNKNOWN_ANSWERS, "Answers to no pending request.");
            counter(SKIPPED, "Unreadable frames skipped, by kind.");
            counter(MESSAGES, "JSON-RPC messages, by direction.");
            counter(TASKS_STARTED, "Tasks started and watched.");
            counter(TASKS_FINISHED, "Tasks no longer watched, by outcome.");
            counter(TASK_POLLS, "tasks/get polls sent.");
            r.describe_counter(
                BYTES_SENT.into(),
                Some(Unit::Bytes),
                "Bytes of messages written to servers.".into(),
            );
            let gauge = |name: &'static str, help: &'static str| {
                r.describe_gauge(name.into(), None, help.into())
            };
            gauge(IN_FLIGHT, "Requests in flight.");
            gauge(UP, "1 while the server is ready, else 0.");
            gauge(TASKS_IN_FLIGHT, "Tasks being watched.");
            gauge(SERVER_TOOLS, "Tools the server listed.");
            gauge(CATALOGUE_TOOLS, "Tools in the catalogue.");
            r.describe_histogram(
                REQUEST_DURATION.into(),
                Some(Unit::Seconds),
                "Time from a request to its answer or failure.".into(),
            );
            r.describe_histogram(
                HANDSHAKE.into(),
                Some(Unit::Seconds),
                "Time from connecting to a server to its being ready.".into(),
            );
        });
    }
}

/// A runtime's metrics: where they go, and the runtime-wide series.
#[derive(Debug)]
pub(crate) struct RuntimeMetrics {
    sink: Sink,
    pub(crate) catalogue_tools: Gauge,
    /// An instance's runtime: the gauges of what it lists and whether it is up stay the
    /// listed server's, which its instances would overwrite.
    instance: bool,
}

impl RuntimeMetrics {
    /// Runs `f` with the recorder the runtime records into.
    pub(crate) fn with_recorder<T>(&self, f: impl FnOnce(&dyn Recorder) -> T) -> T {
        self.sink.with(f)
    }

    pub(crate) fn new(sink: Sink) -> Self {
        sink.describe();
        RuntimeMetrics {
            catalogue_tools: sink.gauge(CATALOGUE_TOOLS, Vec::new()),
            sink,
            instance: false,
        }
    }

    /// The metrics of an instance's runtime (see [`crate::Runtime::start_instance`]).
    pub(crate) fn for_instance(&self) -> RuntimeMetrics {
        RuntimeMetrics {
            catalogue_tools: Gauge::noop(),
            sink: self.sink.clone(),
            instance: true,
        }
    }

    /// Registers a server's series.
    pub(crate) fn server(&self, name: &str) -> ServerMetrics {
        let sink = self.sink.clone();
        let server = || vec![Label::new("server", name.to_owned())];
        let with = |key: &'static str, value: &'static str| {
            let mut labels = server();
            labels.push(Label::new(key, value));
            labels
        };
        ServerMetrics {
            name: name.into(),
            up: if self.instance {
                Gauge::noop()
            } else {
                sink.gauge(UP, server())
            },
            in_flight: sink.gauge(IN_FLIGHT, server()),
            restarts: sink.counter(RESTARTS, server()),
            restarts_seen: AtomicU32::new(0),
            handshake: sink.histogram(HANDSHAKE, server()),
            tools: if self.instance {
                Gauge::noop()
            } else {
                sink.gauge(SERVER_TOOLS, server())
            },
            unknown_answers: sink.counter(UNKNOWN_ANSWERS, server()),
            output_mismatches: sink.counter(OUTPUT_MISMATCHES, server()),
            cancellations: [
                sink.counter(CANCELLATIONS, with("reason", "timeout")),
                sink.counter(CANCELLATIONS, with("reason", "caller")),
                sink.counter(CANCELLATIONS, with("reason", "shutdown")),
            ],
            messages_in: sink.counter(MESSAGES, with("direction", "in")),
            messages_out: sink.counter(MESSAGES, with("direction", "out")),
            bytes_out: sink.counter(BYTES_SENT, server()),
            input_rounds: sink.counter(INPUT_ROUNDS, server()),
            tasks_started: sink.counter(TASKS_STARTED, server()),
            tasks_finished: crate::task_state::TaskOutcome::ALL
                .map(|outcome| sink.counter(TASKS_FINISHED, with("outcome", outcome.as_str()))),
            tasks_in_flight: sink.gauge(TASKS_IN_FLIGHT, server()),
            task_polls: sink.counter(TASK_POLLS, server()),
            skipped: Mutex::new(Vec::new()),
            by_tool: SeriesMap::default(),
            by_method: SeriesMap::default(),
            sink,
        }
    }
}

/// One server's series; shared by its handles and every incarnation of its actor.
pub(crate) struct ServerMetrics {
    sink: Sink,
    name: Arc<str>,
    pub(crate) up: Gauge,
    pub(crate) in_flight: Gauge,
    restarts: Counter,
    /// Restarts already counted (the actor's count survives a panicked actor).
    restarts_seen: AtomicU32,
    pub(crate) handshake: Histogram,
    pub(crate) tools: Gauge,
    pub(crate) unknown_answers: Counter,
    /// Results whose `structuredContent` did not match the tool's `outputSchema`.
    pub(crate) output_mismatches: Counter,
    cancellations: [Counter; 3],
    pub(crate) messages_in: Counter,
    pub(crate) messages_out: Counter,
    pub(crate) bytes_out: Counter,
    /// Input-required rounds answered (2026-07-28 retries).
    pub(crate) input_rounds: Counter,
    /// Tasks watched: started, finished by outcome, watched now, and their polls.
    pub(crate) tasks_started: Counter,
    tasks_finished: [Counter; crate::task_state::TaskOutcome::ALL.len()],
    pub(crate) tasks_in_flight: Gauge,
    pub(crate) task_polls: Counter,
    /// By skip kind; frames are rarely skipped, so a lock is fine.
    skipped: Mutex<Vec<(&'static str, Counter)>>,
    by_tool: SeriesMap,
    by_method: SeriesMap,
}

impl fmt::Debug for ServerMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerMetrics")
            .field("server", &self.name)
            .field("sink", &self.sink)
            .finish_non_exhaustive()
    }
}

impl ServerMetrics {
    /// Counts the restarts in `total` not counted yet.
    pub(crate) fn restarts_now(&self, total: u32) {
        let seen = self.restarts_seen.swap(total, Ordering::Relaxed);
        if total > seen {
            self.restarts.increment(u64::from(total - seen));
        }
    }

    /// Counts a task the runtime stopped watching.
    pub(crate) fn task_finished(&self, outcome: crate::task_state::TaskOutcome) {
        self.tasks_finished[outcome as usize].increment(1);
    }

    pub(crate) fn cancelled(&self, reason: CancelReason) {
        self.cancellations[reason as usize].increment(1);
    }

    pub(crate) fn skipped(&self, kind: &'static str) {
        let Ok(mut counters) = self.skipped.lock() else {
            return;
        };
        if let Some((_, counter)) = counters.iter().find(|(k, _)| *k == kind) {
            counter.increment(1);
            return;
        }
        let counter = self.sink.counter(
            SKIPPED,
            vec![
                Label::new("server", self.name.to_string()),
                Label::new("kind", kind),
            ],
        );
        counter.increment(1);
        counters.push((kind, counter));
    }

    /// The series of requests for `tool` (a `tools/call`) or else `method`.
    pub(crate) fn series(&self, method: &str, tool: Option<&str>) -> Arc<Series> {
        let (map, key, max) = match tool {
            Some(tool) => (&self.by_tool, tool, MAX_TOOL_SERIES),
            None => (&self.by_method, method, MAX_METHOD_SERIES),
        };
        if let Some(series) = map.series.load().get(key) {
            return series.clone();
        }
        self.new_series(map, method, tool, key, max)
    }

    #[cold]
    fn new_series(
        &self,
        map: &SeriesMap,
        method: &str,
        tool: Option<&str>,
        key: &str,
        max: usize,
    ) -> Arc<Series> {
        let _growing = map.grow.lock().unwrap_or_else(|e| e.into_inner());
        let current = map.series.load_full();
        if let Some(series) = current.get(key) {
            return series.clone();
        }
        let full = current.len() >= max;
        let key = if full { OTHER } else { key };
        if let Some(series) = current.get(key) {
            return series.clone();
        }
        let mut labels = vec![Label::new("server", self.name.to_string())];
        match tool {
            Some(_) => {
                labels.push(Label::new("method", method.to_owned()));
                labels.push(Label::new("tool", key.to_owned()));
            }
            None => labels.push(Label::new("method", key.to_owned())),
        }
        let series = Arc::new(Series {
            sink: self.sink.clone(),
            labels,
            outcomes: Default::default(),
        });
        let mut next = HashMap::clone(&current);
        next.insert(Arc::from(key), series.clone());
        map.series.store(Arc::new(next));
        series
    }
}

/// Series by tool or method name: read without a lock, grown under one.
#[derive(Default)]
struct SeriesMap {
    series: ArcSwap<HashMap<Arc<str>, Arc<Series>>>,
    grow: Mutex<()>,
}

/// The counters and histograms of one (server, method, tool), per outcome, registered on
/// first use.
pub(crate) struct Series {
    sink: Sink,
    labels: Vec<Label>,
    outcomes: [OnceLock<(Counter, Histogram)>; Outcome::COUNT],
}

impl Series {
    fn record(&self, outcome: Outcome, elapsed: Duration) {
        let (count, duration) = self.outcomes[outcome as usize].get_or_init(|| {
            let mut labels = self.labels.clone();
            labels.push(Label::new("outcome", outcome.as_str()));
            (
                self.sink.counter(REQUESTS, labels.clone()),
                self.sink.histogram(REQUEST_DURATION, labels),
            )
        });
        count.increment(1);
        duration.record(elapsed.as_secs_f64());
    }
}

/// One caller's request being measured, from the call to its outcome, whatever its rounds.
///
/// # Drop behavior
///
/// Dropped before [`finish`](Self::finish), the request counts as `cancelled`.
pub(crate) struct Recording {
    series: Arc<Series>,
    started: Instant,
    done: bool,
}

impl Recording {
    pub(crate) fn start(series: Arc<Series>, started: Instant) -> Self {
        Recording {
            series,
            started,
            done: false,
        }
    }

    /// Records how the request of `method` ended: a result is `ok`, or `tool_error` for a
    /// `tools/call` result that says `isError: true` (told by a scan, not a parse); an
    /// error by its kind.
    pub(crate) fn finish(
        mut self,
        method: &str,
        result: Result<&serde_json::value::RawValue, &Error>,
    ) {
        self.done = true;
        let outcome = match result {
            Ok(raw)
                if method == switchboard_codecs::mcp::methods::TOOLS_CALL
                    && says_is_error(raw.get()) =>
            {
                Outcome::ToolError
            }
            Ok(_) => Outcome::Ok,
            Err(error) => Outcome::of(error),
        };
        self.series.record(outcome, self.started.elapsed());
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.done {
            self.series
                .record(Outcome::Cancelled, self.started.elapsed());
        }
    }
}

/// Whether a raw `tools/call` result has the key `"isError"` with the value `true`, by a scan
/// rather than a parse. Inside JSON strings quotes are escaped, so only a key can match: the
/// result's own, or (rarely) one of a nested object.
pub(crate) fn says_is_error(raw: &str) -> bool {
    const KEY: &str = "\"isError\"";
    let mut rest = raw;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        if let Some(value) = rest.trim_start().strip_prefix(':') {
            if value.trim_start().starts_with("true") {
                return true;
            }
        }
    }
    false
}

#[cfg(feature = "prometheus")]
pub(crate) use exporter::Exporter;

#[cfg(feature = "prometheus")]
mod exporter;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorContext;

    #[test]
    fn is_error_is_found_as_a_key_only() {
        assert!(says_is_error(r#"{"content":[],"isError":true}"#));
        assert!(says_is_error(r#"{"isError" : true, "content":[]}"#));
        assert!(!says_is_error(r#"{"content":[],"isError":false}"#));
        assert!(!says_is_error(r#"{"content":[]}"#));
        // Inside a string the quotes are escaped.
        assert!(!says_is_error(
            r#"{"content":[{"type":"text","text":"{\"isError\":true}"}]}"#
        ));
        assert!(!says_is_error(
            r#"{"content":[{"type":"text","text":"isError"}]}"#
        ));
    }

    #[test]
    fn outcomes_of_errors() {
        let server: Arc<str> = "s".into();
        let unavailable = ErrorContext::of_server(server.clone()).error(ErrorKind::Unavailable {
            because: crate::error::Unavailability::Stopped,
            reason: "down".into(),
            cause: None,
        });
        assert_eq!(Outcome::of(&unavailable), Outcome::Unavailable);
        let rpc =
            ErrorContext::of_request(server.clone(), "m".into(), None).error(ErrorKind::Rpc {
                code: -1,
                message: String::new(),
                data: None,
            });
        assert_eq!(Outcome::of(&rpc), Outcome::RpcError);
        let overloaded = ErrorContext::of_request(server, "m".into(), None)
            .error(ErrorKind::Overloaded { max_in_flight: 1 });
        assert_eq!(Outcome::of(&overloaded).as_str(), "overloaded");
    }

    #[test]
    fn tool_series_are_bounded() {
        let metrics = RuntimeMetrics::new(Sink::Global).server("s");
        for i in 0..MAX_TOOL_SERIES + 10 {
            metrics.series("tools/call", Some(&format!("t{i}")));
        }
        let map = metrics.by_tool.series.load();
        assert_eq!(map.len(), MAX_TOOL_SERIES + 1);
        assert!(map.contains_key(OTHER));
        let a = metrics.series("tools/call", Some("t0"));
        assert!(Arc::ptr_eq(&a, &metrics.series("tools/call", Some("t0"))));
    }

    #[cfg(feature = "prometheus")]
    #[test]
    fn the_responder_serves_metrics_only() {
        let render = || "x 1\n".to_owned();
        assert_eq!(
            exporter::respond("GET /metrics HTTP/1.1\r\n\r\n", render),
            ("200 OK", "x 1\n".to_owned())
        );
        assert_eq!(
            exporter::respond("GET /metrics?x=1 HTTP/1.1\r\n", render).0,
            "200 OK"
        );
        assert_eq!(
            exporter::respond("GET / HTTP/1.1\r\n", render).0,
            "404 Not Found"
        );
        assert_eq!(
            exporter::respond("POST /metrics HTTP/1.1\r\n", render).0,
            "405 Method Not Allowed"
        );
        assert_eq!(exporter::respond("", render).0, "400 Bad Request");
    }
}
