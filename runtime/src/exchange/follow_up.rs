//! The exchange's last stage for a stateless (2026-07-28) server: an answer that is not
//! final yet.
//!
//! - **A refused version** (`-32022`): the newest version both sides speak is picked (and
//!   kept for the server's next requests), and the request goes once more.
//! - **Input required** (MRTR): a server may answer `tools/call`, `prompts/get` or
//!   `resources/read` with `resultType: "input_required"` when it needs the user or the
//!   client first, instead of sending requests of its own. Each embedded request is
//!   answered by the same [`ClientHandlers`](crate::client::ClientHandlers) that answer a
//!   handshake-era server's `elicitation/create`, `sampling/createMessage` and
//!   `roots/list`, and the request goes again with `inputResponses` (by the server's keys)
//!   and `requestState` echoed byte for byte. The server may ask again; past
//!   [`ServerConfig::max_input_rounds`](crate::ServerConfig::max_input_rounds) rounds (10
//!   by default) the call fails with [`ErrorKind::InputLoop`]; a request the handlers cannot
//!   answer (no handler, so no capability was declared) with [`ErrorKind::InputUnsupported`].
//!   Each retry is counted in `switchboard_input_rounds_total{server}`.
//! - **Any other result** says what it is with `resultType` (absent means complete); a type
//!   this version does not know is a protocol error.
//!
//! Every round is the same request through the exchange's stages again, under a new id. The
//! caller's deadline covers them all: each round gets what is left of it (with a progress
//! reset, of the hard maximum), and a handler may use no more. Dropping the call drops the
//! round in flight, which cancels it like any request, or the handler's task.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::Map;
use switchboard_codecs::jsonrpc::ErrorObject;
use switchboard_codecs::mcp::methods;
use switchboard_codecs::mcp::modern::{
    InputRequest, InputRequired, ResultType, UnsupportedVersionData,
};

use super::{reissue, Request, Retry};
use crate::core::ServerCore;
use crate::deadline::{saturating_after, DeadlinePolicy};
use crate::era::Dialect;
use crate::error::{Error, ErrorContext, ErrorKind, Result};

/// The follow-ups a request has had.
#[derive(Debug, Default)]
pub(crate) struct Count {
    reissues: u32,
    input_rounds: u32,
    version_retried: bool,
}

impl Count {
    /// Whether `request`, whose response broke, goes again (and counts it): a request that
    /// changes nothing, or a tool call its caller, tool or server said is safe to run twice,
    /// at most [`reissue::MAX_REISSUES`] times.
    pub(crate) fn may_reissue(&mut self, core: &ServerCore, request: &Request) -> bool {
        let policy = request
            .deadline
            .and_then(|(_, p)| p.reissue_on_broken_stream);
        let allowed = reissue::allowed(
            &request.method,
            policy,
            core.config.reissue_on_broken_stream,
        );
        if allowed && self.reissues < reissue::MAX_REISSUES {
            self.reissues += 1;
            return true;
        }
        false
    }
}

/// What comes after an answer.
pub(crate) enum Next {
    /// It is final.
    Done(Result<Box<RawValue>>),
    /// `request` was changed for one more round.
    Again,
}

/// Decides what a stateless server's `answer` to `request` needs; `dialect` is the one a
/// refused version changes (`None` for the era probe, which handles its own).
pub(crate) async fn next(
    core: &ServerCore,
    request: &mut Request,
    dialect: Option<&Dialect>,
    answer: Result<Box<RawValue>>,
    count: &mut Count,
) -> Next {
    let raw = match answer {
        Ok(raw) => raw,
        Err(error) => {
            if let ErrorKind::VersionRejected { supported, .. } = error.kind() {
                if let (false, Some(dialect)) = (count.version_retried, dialect) {
                    count.version_retried = true;
                    if let Some(again) = retry_in_another_version(core, request, dialect, supported)
                    {
                        return again;
                    }
                }
            }
            return Next::Done(Err(error));
        }
    };
    let needs_input = may_need_input(&request.method);
    let detail = match ResultType::of(raw.get()) {
        Ok(ResultType::Complete) => return Next::Done(Ok(raw)),
        // The tasks extension: the call's task, which the call drives (see `crate::task`).
        Ok(ResultType::Task) if &*request.method == methods::TOOLS_CALL => {
            return Next::Done(Ok(raw))
        }
        Ok(ResultType::InputRequired) if needs_input => {
            return match Box::pin(input_round(core, request, &raw, count)).await {
                Ok(()) => Next::Again,
                Err(error) => Next::Done(Err(error)),
            };
        }
        Ok(other) if needs_input => format!("the result type {other:?} is not handled"),
        Ok(other) => format!(
            "`{}` cannot answer with the result type {other:?}",
            request.method
        ),
        Err(unknown) => format!("the result has an {unknown}"),
    };
    Next::Done(Err(protocol_error(core, request, detail)))
}

/// After `-32022`: the newest version both sides speak, kept in `dialect` for the
/// connection's next requests, and `request` set up to go once more; `None` when there is
/// no such version.
fn retry_in_another_version(
    core: &ServerCore,
    request: &mut Request,
    dialect: &Dialect,
    supported: &[String],
) -> Option<Next> {
    let data = UnsupportedVersionData {
        supported: supported.to_vec(),
        requested: None,
    };
    let version = data.pick()?;
    dialect.switch_to(version);
    Some(match remaining(request) {
        Some(deadline) => {
            request.deadline = Some(deadline);
            Next::Again
        }
        None => Next::Done(Err(out_of_time(core, request))),
    })
}

/// Whether `method`'s result may require input (`tools/call`, `prompts/get`,
/// `resources/read`).
pub(crate) fn may_need_input(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    )
}

/// Answers an input-required result's requests and sets `request` up for the retry.
async fn input_round(
    core: &ServerCore,
    request: &mut Request,
    raw: &RawValue,
    count: &mut Count,
) -> Result<()> {
    if count.input_rounds >= core.config.max_input_rounds_value() {
        return Err(ErrorContext::of_request(
            core.name.clone(),
            request.method.clone(),
            request.tool.clone(),
        )
        .error(ErrorKind::InputLoop {
            rounds: count.input_rounds,
        }));
    }
    let input: InputRequired = serde_json::from_str(raw.get()).map_err(|e| {
        protocol_error(core, request, format!("invalid input-required result: {e}"))
    })?;
    let hard_end = hard_end(request);
    let responses = fulfil(
        core,
        &request.method,
        &request.tool,
        input.input_requests.unwrap_or_default(),
        hard_end,
        request.scope.as_deref(),
    )
    .await
    .map_err(|e| e.unwrap_or_else(|| out_of_time(core, request)))?;
    count.input_rounds += 1;
    core.metrics.input_rounds.increment(1);
    let deadline = remaining(request).ok_or_else(|| out_of_time(core, request))?;
    request.deadline = Some(deadline);
    request.retry = Some(Box::new(Retry {
        input_responses: Some(responses),
        request_state: input.request_state,
    }));
    Ok(())
}

/// Answers every embedded request of a request of `method` (and `tool`) with the
/// application's handlers (the call's own `scope`'s, when it has them), one at a time, by
/// `hard_end` (the input requests of an input-required result, or of a task of the tasks
/// extension); `Err(None)` when the time ran out.
pub(crate) async fn fulfil(
    core: &ServerCore,
    method: &Arc<str>,
    tool: &Option<Arc<str>>,
    requests: Map<String, serde_json::Value>,
    hard_end: Instant,
    scope: Option<&crate::call_scope::Scope>,
) -> std::result::Result<Map<String, serde_json::Value>, Option<Error>> {
    let handlers = scope
        .and_then(|s| s.handlers.clone())
        .or_else(|| core.config.handlers.clone())
        .unwrap_or_default();
    if let Some(forward) = &handlers.forward {
        // Handed on whole, under the server's keys: the client asked next answers them.
        let limit = core
            .config
            .handler_timeout_value()
            .min(hard_end.saturating_duration_since(Instant::now()));
        let running = AbortOnDrop(tokio::spawn(forward.forward_inputs(&core.name, requests)));
        let failed = |detail: String| {
            Some(
                ErrorContext::of_request(core.name.clone(), method.clone(), tool.clone()).error(
                    ErrorKind::InputUnsupported {
                        request: None,
                        detail,
                    },
                ),
            )
        };
        return match tokio::time::timeout(limit, running).await {
            Ok(Ok(Ok(responses))) => Ok(responses),
            Ok(Ok(Err(e))) => Err(failed(format!(
                "the client's forwarded handler failed: {e}"
            ))),
            Ok(Err(_)) => Err(failed(
                "the client's forwarded handler panicked or was cancelled".to_owned(),
            )),
            Err(_) => Err(None),
        };
    }
    let mut responses = Map::new();
    for (key, embedded) in requests {
        let unsupported = |embedded: Option<String>, detail: String| {
            Some(
                ErrorContext::of_request(core.name.clone(), method.clone(), tool.clone()).error(
                    ErrorKind::InputUnsupported {
                        request: embedded,
                        detail,
                    },
                ),
            )
        };
        let embedded: InputRequest = serde_json::from_value(embedded)
            .map_err(|e| unsupported(None, format!("input request `{key}` is malformed: {e}")))?;
        let params = embedded.params.unwrap_or(serde_json::Value::Null);
        let (kind, work) = crate::client::serve::prepare(
            &embedded.method,
            Ok(params),
            &handlers,
            core.name.clone(),
        )
        .map_err(|e| {
            let detail = if e.code == ErrorObject::METHOD_NOT_FOUND {
                format!(
                    "input request `{key}` is `{}`, for which no handler (and so no capability) was declared",
                    embedded.method
                )
            } else {
                format!(
                    "input request `{key}` (`{}`) is invalid: {}",
                    embedded.method, e.message
                )
            };
            unsupported(Some(embedded.method.clone()), detail)
        })?;
        let limit = core
            .config
            .handler_timeout_value()
            .min(hard_end.saturating_duration_since(Instant::now()));
        let running = AbortOnDrop(tokio::spawn(work));
        let result = match tokio::time::timeout(limit, running).await {
            Ok(Ok(Ok(result))) => result,
            Ok(Ok(Err(e))) => {
                return Err(unsupported(
                    Some(embedded.method),
                    format!("the client's {kind} handler failed: {e}"),
                ))
            }
            Ok(Err(_)) => {
                return Err(unsupported(
                    Some(embedded.method),
                    format!("the client's {kind} handler panicked or was cancelled"),
                ))
            }
            Err(_) => return Err(None),
        };
        responses.insert(key, result);
    }
    Ok(responses)
}

fn protocol_error(core: &ServerCore, request: &Request, detail: String) -> Error {
    ErrorContext::of_request(
        core.name.clone(),
        request.method.clone(),
        request.tool.clone(),
    )
    .error(ErrorKind::Protocol { detail })
}

/// The call's deadline passed between rounds (while a handler ran).
fn out_of_time(core: &ServerCore, request: &Request) -> Error {
    ErrorContext::of_request(
        core.name.clone(),
        request.method.clone(),
        request.tool.clone(),
    )
    // No request was in flight (the last round's was answered): no request id.
    .error(ErrorKind::Timeout {
        elapsed: request.started.elapsed(),
        dropped_frames: 0,
    })
}

/// When the caller's deadline ends for good: its timeout, or with a progress reset, its
/// hard maximum, from the first round.
fn hard_end(request: &Request) -> Instant {
    match request.deadline {
        Some((since, policy)) => {
            let total = if policy.reset_on_progress {
                policy.max_total
            } else {
                policy.timeout
            };
            saturating_after(since, total)
        }
        // No deadline of its own: the handlers' own timeout bounds each round.
        None => saturating_after(Instant::now(), crate::deadline::HORIZON),
    }
}

/// The deadline rules of the next round: what is left until the hard end, counted from
/// now; `None` when nothing is.
fn remaining(request: &Request) -> Option<(Instant, DeadlinePolicy)> {
    let Some((_, policy)) = request.deadline else {
        return Some((
            Instant::now(),
            DeadlinePolicy::only(crate::deadline::HORIZON),
        ));
    };
    let now = Instant::now();
    let left = hard_end(request).saturating_duration_since(now);
    (left > Duration::ZERO).then(|| {
        (
            now,
            DeadlinePolicy {
                timeout: policy.timeout.min(left),
                reset_on_progress: policy.reset_on_progress,
                max_total: left,
                reissue_on_broken_stream: policy.reissue_on_broken_stream,
            },
        )
    })
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

    fn request_with(policy: DeadlinePolicy, since: Instant) -> Request {
        let mut request = Request::new(
            "tools/call".into(),
            super::super::Params::empty(),
            since,
            policy,
        );
        request.deadline = Some((since, policy));
        request
    }

    #[test]
    fn rounds_get_what_is_left_of_the_deadline() {
        let policy = DeadlinePolicy {
            timeout: Duration::from_secs(5),
            reset_on_progress: false,
            max_total: Duration::from_secs(60),
            reissue_on_broken_stream: None,
        };
        let request = request_with(policy, Instant::now() - Duration::from_secs(3));
        let (_, left) = remaining(&request).unwrap();
        assert!(left.timeout <= Duration::from_secs(2) && left.timeout > Duration::from_secs(1));
        let late = request_with(policy, Instant::now() - Duration::from_secs(6));
        assert!(remaining(&late).is_none());
    }

    #[test]
    fn only_three_methods_may_need_input() {
        for method in ["tools/call", "prompts/get", "resources/read"] {
            assert!(may_need_input(method), "{method}");
        }
        assert!(!may_need_input("tools/list"));
    }
}
