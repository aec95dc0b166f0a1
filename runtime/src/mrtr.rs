//! Input-required retries (MRTR, 2026-07-28): a modern server answers `tools/call`,
//! `prompts/get` or `resources/read` with `resultType: "input_required"` when it needs the
//! user or the client first, instead of sending requests of its own.
//!
//! The runtime then fulfils each embedded request with the same
//! [`ClientHandlers`](crate::client::ClientHandlers) that answer a legacy server's
//! `elicitation/create`, `sampling/createMessage` and `roots/list`, and retries the original
//! request under a new id with the same params plus `inputResponses` (by the server's keys)
//! and `requestState` echoed byte for byte. The server may ask again; past
//! [`ServerConfig::max_input_rounds`](crate::ServerConfig::max_input_rounds) rounds (10 by
//! default) the call fails with [`Error::InputLoop`]. A request for a capability the
//! runtime did not declare (no handler) fails with [`Error::InputUnsupported`].
//!
//! Every round is an ordinary request through the connection's call table. The caller's
//! deadline covers them all: each retry gets what is left of it (with a progress reset, of
//! the hard maximum), and a handler may use no more. Dropping the call drops the round in
//! flight, which cancels it like any request, or the handler's task.
//!
//! Each retry is counted in `switchboard_input_rounds_total{server}`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_codecs::frame;
use switchboard_codecs::mcp::modern::{
    InputRequest, InputRequired, ResultType, UnsupportedVersionData,
};

use crate::actor::server::handlers::prepare;
use crate::calls::ProgressFn;
use crate::deadline::{saturating_after, DeadlinePolicy};
use crate::era::ModernMeta;
use crate::error::{Error, Result};
use crate::handle::{Answer, ServerHandle};

/// Rounds of input a request may ask for by default before the call fails.
pub(crate) const DEFAULT_MAX_INPUT_ROUNDS: u32 = 10;

/// The method, as a static name, when it is one whose result may require input.
pub(crate) fn may_need_input(method: &str) -> Option<&'static str> {
    use switchboard_codecs::mcp::methods;
    [
        methods::TOOLS_CALL,
        methods::PROMPTS_GET,
        methods::RESOURCES_READ,
    ]
    .into_iter()
    .find(|m| *m == method)
}

/// What a request that may need input is, for its retries.
pub(crate) struct Original<'a, P: ?Sized> {
    pub(crate) method: &'a str,
    pub(crate) tool: Option<Arc<str>>,
    /// Its params, without `_meta`.
    pub(crate) params: &'a P,
    pub(crate) policy: DeadlinePolicy,
    pub(crate) started: Instant,
    pub(crate) progress: Option<ProgressFn>,
    /// Whether each round carries its id as `progressToken` (as `tools/call` does).
    pub(crate) progress_token: bool,
}

impl ServerHandle {
    /// What the answer of a request may still need when the server is modern: one new try
    /// after `-32022` ([`after_version_check`](Self::after_version_check)), for
    /// `tools/call`, `prompts/get` and `resources/read` the input rounds
    /// ([`finish_input_rounds`](Self::finish_input_rounds)), and for every result a look at
    /// its `resultType` (absent means complete). A legacy server's answer is returned as it
    /// is.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request in flight (or stops its handler).
    pub(crate) async fn modern_follow_up<P: Serialize + ?Sized>(
        &self,
        original: Original<'_, P>,
        first: Result<Answer>,
    ) -> Result<Answer> {
        if self.shared.dialect.load().is_none() {
            return first;
        }
        let answer = self.after_version_check(&original, first).await?;
        if may_need_input(original.method).is_some() {
            return self.finish_input_rounds(original, answer).await;
        }
        // Every modern result says what it is; only the three requests above may ask for
        // input, and a type this version does not know is invalid.
        let detail = match ResultType::of(answer.raw.get()) {
            Ok(ResultType::Complete) => return Ok(answer),
            Ok(other) => format!(
                "`{}` cannot answer with the result type {other:?}",
                original.method
            ),
            Err(unknown) => format!("the result has an {unknown}"),
        };
        Err(answer
            .recording
            .fail(self.protocol_error(&original, detail)))
    }

    /// Takes the first answer of `original` to its end: a complete result as it is, an
    /// input-required one through as many rounds as the server needs (and the runtime
    /// allows).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the round in flight (or stops its handler).
    async fn finish_input_rounds<P: Serialize + ?Sized>(
        &self,
        original: Original<'_, P>,
        first: Answer,
    ) -> Result<Answer> {
        let mut answer = first;
        let mut rounds = 0u32;
        loop {
            // Legacy servers have no `resultType`: nothing to look at.
            if self.shared.dialect.load().is_none() {
                return Ok(answer);
            }
            let detail = match ResultType::of(answer.raw.get()) {
                Ok(ResultType::Complete) => return Ok(answer),
                Ok(ResultType::InputRequired) => None,
                Ok(other) => Some(format!("the result type {other:?} is not handled")),
                Err(unknown) => Some(format!("the result has an {unknown}")),
            };
            if let Some(detail) = detail {
                return Err(answer
                    .recording
                    .fail(self.protocol_error(&original, detail)));
            }
            if rounds >= self.shared.max_input_rounds {
                let error = Error::InputLoop {
                    server: self.shared.name.clone(),
                    method: original.method.into(),
                    tool: original.tool.clone(),
                    rounds,
                };
                return Err(answer.recording.fail(error));
            }
            let input: InputRequired = match serde_json::from_str(answer.raw.get()) {
                Ok(input) => input,
                Err(e) => {
                    let detail = format!("invalid input-required result: {e}");
                    return Err(answer
                        .recording
                        .fail(self.protocol_error(&original, detail)));
                }
            };
            // This round's request was answered; the next one is measured on its own.
            answer.recording.finish(false);
            let hard_end = hard_end(&original);
            let responses = self
                .fulfil(
                    &original,
                    input.input_requests.unwrap_or_default(),
                    hard_end,
                )
                .await?;
            rounds += 1;
            self.shared.metrics.input_rounds.increment(1);
            let policy =
                remaining(&original.policy, hard_end).ok_or_else(|| self.out_of_time(&original))?;
            answer = self
                .send_retry(
                    &original,
                    policy,
                    Some(&responses),
                    input.request_state.as_deref(),
                )
                .await?;
        }
    }

    /// The first answer of a request to a modern server, past one `-32022`: the server
    /// refused the request's protocol version, so the newest version both sides speak is
    /// picked (and kept for the server's next requests) and the request sent once more
    /// under a new id. Any other answer is returned as it is.
    async fn after_version_check<P: Serialize + ?Sized>(
        &self,
        original: &Original<'_, P>,
        first: Result<Answer>,
    ) -> Result<Answer> {
        let Err(Error::VersionRejected { supported, .. }) = &first else {
            return first;
        };
        let Some(current) = self.shared.dialect.load_full() else {
            return first;
        };
        let data = UnsupportedVersionData {
            supported: supported.to_vec(),
            requested: None,
        };
        let Some(version) = data.pick() else {
            return first;
        };
        if *current.version != *version {
            self.shared
                .dialect
                .store(Some(Arc::new(current.with_version(version))));
        }
        let policy = remaining(&original.policy, hard_end(original))
            .ok_or_else(|| self.out_of_time(original))?;
        self.send_retry(original, policy, None, None).await
    }

    /// Sends `original` again under a new id, with the answers to its input requests and
    /// the server's state, if any.
    async fn send_retry<P: Serialize + ?Sized>(
        &self,
        original: &Original<'_, P>,
        policy: DeadlinePolicy,
        input_responses: Option<&Map<String, Value>>,
        request_state: Option<&RawValue>,
    ) -> Result<Answer> {
        let base = params_object(original.params);
        let method = original.method;
        let token = original.progress_token;
        self.send(
            method.into(),
            original.tool.clone(),
            Instant::now(),
            policy,
            original.progress.clone(),
            |id| {
                let modern = self.shared.dialect.load();
                let level = self.shared.logging.level();
                let retry = Retry {
                    base: &base,
                    input_responses,
                    request_state,
                    meta: RetryMeta {
                        progress_token: token.then_some(id),
                        modern: modern.as_deref().map(|m| m.meta(level)),
                    },
                };
                frame::request(id, method, &retry)
            },
        )
        .await
    }

    /// Answers every embedded request with the application's handlers, one at a time.
    async fn fulfil<P: ?Sized>(
        &self,
        original: &Original<'_, P>,
        requests: Map<String, Value>,
        hard_end: Instant,
    ) -> Result<Map<String, Value>> {
        let handlers = self.shared.handlers.clone().unwrap_or_default();
        let mut responses = Map::new();
        for (key, request) in requests {
            let unsupported = |request: Option<String>, detail: String| Error::InputUnsupported {
                server: self.shared.name.clone(),
                method: original.method.into(),
                tool: original.tool.clone(),
                request,
                detail,
            };
            let request: InputRequest = serde_json::from_value(request).map_err(|e| {
                unsupported(None, format!("input request `{key}` is malformed: {e}"))
            })?;
            let params = request.params.unwrap_or(Value::Null);
            let (kind, work) = prepare(&request.method, Ok(params), &handlers, self.shared.name.clone())
                .map_err(|e| {
                    let detail = if e.code == switchboard_codecs::jsonrpc::ErrorObject::METHOD_NOT_FOUND {
                        format!(
                            "input request `{key}` is `{}`, for which no handler (and so no capability) was declared",
                            request.method
                        )
                    } else {
                        format!("input request `{key}` (`{}`) is invalid: {}", request.method, e.message)
                    };
                    unsupported(Some(request.method.clone()), detail)
                })?;
            let limit = self
                .shared
                .handler_timeout
                .min(hard_end.saturating_duration_since(Instant::now()));
            let running = AbortOnDrop(tokio::spawn(work));
            let result = match tokio::time::timeout(limit, running).await {
                Ok(Ok(Ok(result))) => result,
                Ok(Ok(Err(e))) => {
                    return Err(unsupported(
                        Some(request.method),
                        format!("the client's {kind} handler failed: {e}"),
                    ))
                }
                Ok(Err(_)) => {
                    return Err(unsupported(
                        Some(request.method),
                        format!("the client's {kind} handler panicked or was cancelled"),
                    ))
                }
                Err(_) => return Err(self.out_of_time(original)),
            };
            responses.insert(key, result);
        }
        Ok(responses)
    }

    fn protocol_error<P: ?Sized>(&self, original: &Original<'_, P>, detail: String) -> Error {
        Error::Protocol {
            server: self.shared.name.clone(),
            method: original.method.into(),
            tool: original.tool.clone(),
            detail,
        }
    }

    /// The call's deadline passed between rounds (while a handler ran).
    fn out_of_time<P: ?Sized>(&self, original: &Original<'_, P>) -> Error {
        Error::Timeout {
            server: self.shared.name.clone(),
            method: original.method.into(),
            tool: original.tool.clone(),
            // No request was in flight: the last round's was answered.
            request_id: 0,
            elapsed: original.started.elapsed(),
            dropped_frames: 0,
        }
    }
}

/// When the caller's deadline ends for good: its timeout, or with a progress reset, its hard
/// maximum.
fn hard_end<P: ?Sized>(original: &Original<'_, P>) -> Instant {
    let policy = &original.policy;
    let total = if policy.reset_on_progress {
        policy.max_total
    } else {
        policy.timeout
    };
    saturating_after(original.started, total)
}

/// The deadline rules of a retry: what is left until `hard_end`; `None` when nothing is.
fn remaining(policy: &DeadlinePolicy, hard_end: Instant) -> Option<DeadlinePolicy> {
    let left = hard_end.saturating_duration_since(Instant::now());
    (left > Duration::ZERO).then(|| DeadlinePolicy {
        timeout: policy.timeout.min(left),
        reset_on_progress: policy.reset_on_progress,
        max_total: left,
        reissue_on_broken_stream: policy.reissue_on_broken_stream,
    })
}

/// The original params as an object, without `_meta` (each round writes its own).
fn params_object<P: Serialize + ?Sized>(params: &P) -> Map<String, Value> {
    match serde_json::to_value(params) {
        Ok(Value::Object(mut map)) => {
            map.remove("_meta");
            map
        }
        _ => Map::new(),
    }
}

/// The params of a retry: the original ones, the answers, the state as the server wrote it.
#[derive(Serialize)]
struct Retry<'a> {
    #[serde(flatten)]
    base: &'a Map<String, Value>,
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a Map<String, Value>>,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: RetryMeta<'a>,
}

#[derive(Serialize)]
struct RetryMeta<'a> {
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    progress_token: Option<i64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    modern: Option<ModernMeta<'a>>,
}

/// Aborts a handler's task when the call stops waiting for it.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = std::result::Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_echoes_the_state_byte_for_byte_beside_the_original_params() {
        let base = params_object(
            &serde_json::json!({"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 1}}),
        );
        let state = RawValue::from_string(r#""s\u00e9\"x""#.to_owned()).unwrap();
        let mut responses = Map::new();
        responses.insert("k".into(), serde_json::json!({"action": "accept"}));
        let retry = Retry {
            base: &base,
            input_responses: Some(&responses),
            request_state: Some(&state),
            meta: RetryMeta {
                progress_token: Some(9),
                modern: None,
            },
        };
        let text = serde_json::to_string(&retry).unwrap();
        assert!(text.contains(r#""requestState":"s\u00e9\"x""#), "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["name"], "t");
        assert_eq!(value["arguments"]["a"], 1);
        assert_eq!(value["inputResponses"]["k"]["action"], "accept");
        assert_eq!(value["_meta"], serde_json::json!({"progressToken": 9}));
    }

    #[test]
    fn retries_get_what_is_left_of_the_deadline() {
        let policy = DeadlinePolicy {
            timeout: Duration::from_secs(5),
            reset_on_progress: false,
            max_total: Duration::from_secs(60),
            reissue_on_broken_stream: None,
        };
        let end = Instant::now() + Duration::from_secs(2);
        let left = remaining(&policy, end).unwrap();
        assert!(left.timeout <= Duration::from_secs(2) && left.timeout > Duration::from_secs(1));
        assert!(remaining(&policy, Instant::now()).is_none());
    }
}
