//! The gateway's front side, measured: every forwarded request, by method and outcome, its
//! duration, and how many are in flight. Recorded where the runtime records (its own
//! exporter with `--metrics`, else the global recorder), beside the upstream series.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `switchboard_front_requests_total` | counter | `method`, `outcome` | forwarded front requests, by how they ended |
//! | `switchboard_front_request_duration_seconds` | histogram | `method` | from the front request to its answer |
//! | `switchboard_front_requests_in_flight` | gauge | — | forwarded front requests not answered yet |
//! | `switchboard_front_rejected_total` | counter | `reason` | connections and requests the HTTP front turned away or cut |
//! | `switchboard_gateway_instances` | gauge | `server` | instances of an isolated server running now (one per client or session) |
//!
//! `method` is `tools/call`, `resources/read`, `prompts/get` or `completion/complete` (the
//! lists are answered from the gateway's snapshot, not forwarded); `outcome` is `ok`,
//! `tool_error` (a result with `isError: true`), `error`, `input_required` (the front client
//! answers first) or `cancelled` (the front went away). `reason` is one of
//! [`Rejection::as_str`]'s names (`head_timeout`, `rate`, `client_sessions`, …). Nothing else
//! is a label: a fixed set of series, whatever the clients send (`server` names a configured
//! server, never a client).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use metrics::{Counter, Gauge, Histogram, Key, Label, Metadata};
use switchboard::Runtime;
use switchboard_server::http::Rejection;
use switchboard_server::HandlerError;

use crate::audit::{self, Ended, Pending};

const REQUESTS: &str = "switchboard_front_requests_total";
const DURATION: &str = "switchboard_front_request_duration_seconds";
const IN_FLIGHT: &str = "switchboard_front_requests_in_flight";
const REJECTED: &str = "switchboard_front_rejected_total";
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// A forwarded method.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Method {
    CallTool = 0,
    ReadResource = 1,
    GetPrompt = 2,
    Complete = 3,
}

const METHODS: [&str; 4] = [
    "tools/call",
    "resources/read",
    "prompts/get",
    "completion/complete",
];

impl Method {
    /// Its MCP method name.
    pub(crate) fn name(self) -> &'static str {
        METHODS[self as usize]
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Ok = 0,
    ToolError = 1,
    Error = 2,
    InputRequired = 3,
    Cancelled = 4,
}

/// Instances of isolated servers running now, by server.
const INSTANCES: &str = "switchboard_gateway_instances";

const OUTCOMES: [&str; 5] = ["ok", "tool_error", "error", "input_required", "cancelled"];

/// Every front series, registered once.
pub(crate) struct FrontMetrics {
    requests: Vec<Counter>,
    durations: Vec<Histogram>,
    in_flight: Gauge,
    /// What `in_flight` says, readable here (a gauge is write-only): for the line a
    /// stopping gateway logs.
    waiting: AtomicUsize,
    /// By [`Rejection::ALL`]'s order.
    rejected: Vec<Counter>,
}

impl std::fmt::Debug for FrontMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontMetrics").finish_non_exhaustive()
    }
}

impl FrontMetrics {
    /// The series, in the recorder `runtime` records into.
    pub(crate) fn new(runtime: &Runtime) -> FrontMetrics {
        runtime.with_metrics_recorder(|recorder| {
            recorder.describe_counter(
                REQUESTS.into(),
                None,
                "Front requests forwarded by the gateway, by outcome.".into(),
            );
            recorder.describe_histogram(
                DURATION.into(),
                Some(metrics::Unit::Seconds),
                "From a forwarded front request to its answer.".into(),
            );
            recorder.describe_gauge(
                IN_FLIGHT.into(),
                None,
                "Forwarded front requests not answered yet.".into(),
            );
            let mut requests = Vec::with_capacity(METHODS.len() * OUTCOMES.len());
            for method in METHODS {
                for outcome in OUTCOMES {
                    let key = Key::from_parts(
                        REQUESTS,
                        vec![Label::new("method", method), Label::new("outcome", outcome)],
                    );
                    requests.push(recorder.register_counter(&key, &METADATA));
                }
            }
            let durations = METHODS
                .iter()
                .map(|method| {
                    let key = Key::from_parts(DURATION, vec![Label::new("method", *method)]);
                    recorder.register_histogram(&key, &METADATA)
                })
                .collect();
            let in_flight = recorder.register_gauge(&Key::from_name(IN_FLIGHT), &METADATA);
            recorder.describe_gauge(
                INSTANCES.into(),
                None,
                "Instances of an isolated server running now.".into(),
            );
            recorder.describe_counter(
                REJECTED.into(),
                None,
                "Connections and requests the HTTP front turned away or cut, by reason.".into(),
            );
            let rejected = Rejection::ALL
                .iter()
                .map(|rejection| {
                    let key =
                        Key::from_parts(REJECTED, vec![Label::new("reason", rejection.as_str())]);
                    recorder.register_counter(&key, &METADATA)
                })
                .collect();
            FrontMetrics {
                requests,
                durations,
                in_flight,
                waiting: AtomicUsize::new(0),
                rejected,
            }
        })
    }

    /// The forwarded requests not answered yet.
    pub(crate) fn in_flight(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Counts one `rejection` of the HTTP front.
    pub(crate) fn rejected(&self, rejection: Rejection) {
        if let Some(i) = Rejection::ALL.iter().position(|r| *r == rejection) {
            self.rejected[i].increment(1);
        }
    }

    /// Runs `request` of `method`, measured, and written to the audit log when `audit` has
    /// begun its record.
    pub(crate) async fn measure<T: Answer>(
        &self,
        method: Method,
        request: impl Future<Output = Result<T, HandlerError>>,
        audit: Option<Pending>,
    ) -> Result<T, HandlerError> {
        let mut measuring = Measuring {
            metrics: self,
            method,
            started: Instant::now(),
            outcome: Outcome::Cancelled,
            audit,
            code: None,
            bytes_out: 0,
        };
        self.in_flight.increment(1.0);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let answer = request.await;
        measuring.outcome = match &answer {
            Ok(result) if result.is_tool_error() => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(HandlerError::InputRequired) => Outcome::InputRequired,
            Err(_) => Outcome::Error,
        };
        // Sized only for the audit log: with it off, nothing is serialized.
        if measuring.audit.is_some() {
            match &answer {
                Ok(result) => measuring.bytes_out = result.bytes(),
                Err(error) => measuring.code = audit::code_of(error),
            }
        }
        answer
    }
}

/// What a forwarded request answers, as the metrics and the audit log read it.
pub(crate) trait Answer {
    /// A tool result that says `"isError": true`.
    fn is_tool_error(&self) -> bool {
        false
    }

    /// Its size as JSON, in bytes.
    fn bytes(&self) -> u64;
}

impl Answer for serde_json::Value {
    fn bytes(&self) -> u64 {
        audit::json_len(self)
    }
}

/// Records a request when it ends, however it ends (dropped: cancelled).
struct Measuring<'a> {
    metrics: &'a FrontMetrics,
    method: Method,
    started: Instant,
    outcome: Outcome,
    audit: Option<Pending>,
    code: Option<i64>,
    bytes_out: u64,
}

impl Drop for Measuring<'_> {
    fn drop(&mut self) {
        let m = self.metrics;
        m.in_flight.decrement(1.0);
        m.waiting.fetch_sub(1, Ordering::Relaxed);
        m.requests[self.method as usize * OUTCOMES.len() + self.outcome as usize].increment(1);
        m.durations[self.method as usize].record(self.started.elapsed().as_secs_f64());
        if let Some(audit) = self.audit.take() {
            audit.finish(Ended {
                outcome: OUTCOMES[self.outcome as usize],
                code: self.code,
                bytes_out: self.bytes_out,
            });
        }
    }
}

/// The gauge of `server`'s running instances (see `instances`).
pub(crate) fn instances(runtime: &Runtime, server: &str, running: usize) {
    runtime.with_metrics_recorder(|recorder| {
        let key = Key::from_parts(INSTANCES, vec![Label::new("server", server.to_owned())]);
        recorder.register_gauge(&key, &METADATA).set(running as f64);
    });
}
