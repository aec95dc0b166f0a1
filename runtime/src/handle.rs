//! [`ServerHandle`]: a cheap, cloneable way to call one server from any thread.
//!
//! The handle does the per-call work on the caller's thread (resolving the deadline,
//! numbering and serializing the request). While the server is ready on a line-framed
//! connection, it also registers the call on the connection's direct lane, writes the frame
//! and keeps the deadline itself, so the actor is not on the call's path at all (see
//! `actor::lane`); otherwise it hands the request to the actor.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot, watch, Semaphore, TryAcquireError};
use tracing::Instrument as _;

use arc_swap::{ArcSwap, ArcSwapOption};

use crate::actor::lane::{self, Lane, Waiter};
use crate::actor::server::request_frame;
use crate::actor::{Notice, Submit};
use crate::call::{Call, ProgressFn};
use crate::catalogue::tool_allowed;
use crate::deadline::{DeadlinePolicy, ToolPolicy};
use crate::error::{Error, Result};
use crate::metrics::{CancelReason, Recording, ServerMetrics};
use crate::model::Tool;
use crate::status::{ServerState, ServerStatus};
use switchboard_transports::CloseReason;

/// The way into the server's current actor; replaced when a panicked actor is restarted.
pub(crate) struct Channels {
    pub(crate) submits: mpsc::Sender<Submit>,
    pub(crate) cancels: mpsc::UnboundedSender<Notice>,
}

/// What every clone of a server's handle shares; outlives any one actor.
pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) ids: Arc<AtomicI64>,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) max_in_flight: usize,
    pub(crate) channels: ArcSwap<Channels>,
    /// The ready connection's direct lane, when it has one.
    pub(crate) lane: Arc<ArcSwapOption<Lane>>,
    pub(crate) status: watch::Receiver<ServerStatus>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) tools: HashMap<String, ToolPolicy>,
    pub(crate) default_timeout: Duration,
    pub(crate) allow: Vec<String>,
    pub(crate) deny: Vec<String>,
    pub(crate) metrics: Arc<ServerMetrics>,
}

/// A result, and the measurement of its request, which the caller finishes once it knows
/// whether the tool reported an error.
pub(crate) struct Answer {
    pub(crate) raw: Box<RawValue>,
    pub(crate) recording: Recording,
}

/// A handle to one server: `Clone + Send + Sync`, usable from any thread and any tokio
/// runtime (calls use tokio timers for capacity and deadlines, so poll them inside a tokio
/// runtime with its time driver enabled).
#[derive(Clone)]
pub struct ServerHandle {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("name", &self.shared.name)
            .field("state", &self.shared.status.borrow().state.as_str())
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The server's current status.
    pub fn status(&self) -> ServerStatus {
        self.shared.status.borrow().clone()
    }

    /// The server's tools, as listed by its last handshake (empty until it is ready).
    pub fn tools(&self) -> Arc<[Tool]> {
        self.shared.status.borrow().tools.clone()
    }

    /// Requests in flight now: submitted and not yet answered, timed out or cancelled.
    pub fn in_flight(&self) -> usize {
        self.shared.max_in_flight - self.shared.permits.available_permits()
    }

    /// Waits until the server has left the `starting` state, and returns its status.
    pub async fn wait_started(&self) -> ServerStatus {
        let mut rx = self.shared.status.clone();
        let result = rx
            .wait_for(|s| !matches!(s.state, ServerState::Starting))
            .await
            .map(|s| s.clone());
        match result {
            Ok(status) => status,
            // The actor is gone: its last word is the status.
            Err(_) => self.status(),
        }
    }

    /// Starts a `tools/call`; configure it, then `.await` it.
    pub fn call_tool(&self, tool: impl Into<Arc<str>>, arguments: serde_json::Value) -> Call {
        Call {
            handle: Ok(self.clone()),
            tool: tool.into(),
            arguments,
            options: ToolPolicy::default(),
            progress: None,
        }
    }

    /// Sends any request and returns its raw result, under the server's timeout.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    pub async fn request(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
    ) -> Result<Box<RawValue>> {
        let policy = self.policy(None, &ToolPolicy::default());
        let params = params.unwrap_or_else(|| serde_json::json!({}));
        let answer = self
            .send(method.into(), None, policy, None, |id| {
                request_frame(id, method, &params)
            })
            .await?;
        answer.recording.finish(false);
        Ok(answer.raw)
    }

    pub(crate) async fn call_raw(
        &self,
        tool: Arc<str>,
        arguments: &serde_json::Value,
        options: &ToolPolicy,
        progress: Option<ProgressFn>,
    ) -> Result<Answer> {
        if !tool_allowed(&self.shared.allow, &self.shared.deny, &tool) {
            return Err(Error::ToolDenied {
                server: self.shared.name.clone(),
                tool,
            });
        }
        let policy = self.policy(Some(&tool), options);
        let name: &str = &tool;
        self.send(
            "tools/call".into(),
            Some(tool.clone()),
            policy,
            progress,
            |id| {
                request_frame(
                    id,
                    "tools/call",
                    &CallParams {
                        name,
                        arguments,
                        meta: Meta { progress_token: id },
                    },
                )
            },
        )
        .await
    }

    fn policy(&self, tool: Option<&str>, call: &ToolPolicy) -> DeadlinePolicy {
        let shared = &self.shared;
        DeadlinePolicy::resolve(
            call,
            tool.and_then(|t| shared.tools.get(t)),
            shared.timeout,
            shared.default_timeout,
        )
    }

    /// The hot path: take a slot, number and serialize, hand over, await the answer; in a
    /// `debug` span `request` (free when nobody listens), measured from start to answer.
    async fn send(
        &self,
        method: Arc<str>,
        tool: Option<Arc<str>>,
        policy: DeadlinePolicy,
        progress: Option<ProgressFn>,
        frame: impl FnOnce(i64) -> bytes::Bytes,
    ) -> Result<Answer> {
        let span = tracing::debug_span!(
            "request",
            server = %self.shared.name,
            method = %method,
            tool = tool.as_deref(),
            id = tracing::field::Empty,
        );
        let started = Instant::now();
        let recording = Recording::start(
            self.shared.metrics.series(&method, tool.as_deref()),
            started,
        );
        self.send_measured(method, tool, policy, progress, frame, started, recording)
            .instrument(span)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn send_measured(
        &self,
        method: Arc<str>,
        tool: Option<Arc<str>>,
        policy: DeadlinePolicy,
        progress: Option<ProgressFn>,
        frame: impl FnOnce(i64) -> bytes::Bytes,
        started: Instant,
        mut recording: Recording,
    ) -> Result<Answer> {
        let shared = &*self.shared;
        let deadline = tokio::time::Instant::from_std(policy.first(started));
        let overloaded = || Error::Overloaded {
            server: shared.name.clone(),
            method: method.clone(),
            tool: tool.clone(),
            max_in_flight: shared.max_in_flight,
        };
        let gone = || Error::Unavailable {
            server: shared.name.clone(),
            tool: tool.clone(),
            reason: "its actor is not running (the runtime stopped it, or it is being restarted)"
                .into(),
        };
        let permit = match shared.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return Err(recording.fail(gone())),
            Err(TryAcquireError::NoPermits) => {
                match tokio::time::timeout_at(deadline, shared.permits.clone().acquire_owned())
                    .await
                {
                    Ok(Ok(permit)) => permit,
                    Ok(Err(_)) => return Err(recording.fail(gone())),
                    Err(_) => return Err(recording.fail(overloaded())),
                }
            }
        };
        recording.took_slot();
        let id = shared.ids.fetch_add(1, Ordering::Relaxed);
        tracing::Span::current().record("id", id);
        let payload = frame(id);
        let (mut reply, answer) = oneshot::channel();
        let mut permit = permit;
        // Progress that moves a deadline needs the actor; everything else takes the lane
        // while the server is ready on one.
        let direct = progress.is_none() && !policy.reset_on_progress;
        if let Some(lane) = direct.then(|| shared.lane.load_full()).flatten() {
            let waiter = Waiter {
                tx: reply,
                method: method.clone(),
                tool: tool.clone(),
                permit,
            };
            match lane.insert(id, waiter) {
                Ok(()) => {
                    let call = LaneCall {
                        lane,
                        id,
                        method,
                        tool,
                        started,
                        deadline,
                    };
                    return self.via_lane(call, payload, answer, recording).await;
                }
                // The lane closed meanwhile: the actor knows what the server is doing now.
                Err(waiter) => {
                    reply = waiter.tx;
                    permit = waiter.permit;
                }
            }
        }
        let submit = Submit {
            id,
            method: method.clone(),
            tool: tool.clone(),
            payload,
            policy,
            started,
            progress,
            reply,
            permit,
        };
        let channels = shared.channels.load_full();
        let guard = CancelOnDrop {
            id,
            cancels: &channels.cancels,
        };
        match channels.submits.try_send(submit) {
            Ok(()) => {}
            Err(TrySendError::Closed(_)) => return Err(recording.fail(gone())),
            Err(TrySendError::Full(submit)) => {
                match tokio::time::timeout_at(deadline, channels.submits.send(submit)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err(recording.fail(gone())),
                    Err(_) => return Err(recording.fail(overloaded())),
                }
            }
        }
        let result = answer.await;
        std::mem::forget(guard);
        match result {
            Ok(Ok(raw)) => Ok(Answer {
                raw,
                recording: recording.answered(),
            }),
            Ok(Err(error)) => Err(recording.fail(error)),
            // The actor dropped the request without answering: it stopped abnormally.
            Err(_) => Err(recording.fail(Error::Disconnected {
                server: shared.name.clone(),
                method,
                tool,
                reason: Arc::new(CloseReason::aborted(
                    "the server's actor stopped unexpectedly",
                )),
            })),
        }
    }
}

/// A request registered on a direct lane.
struct LaneCall {
    lane: Arc<Lane>,
    id: i64,
    method: Arc<str>,
    tool: Option<Arc<str>>,
    started: Instant,
    deadline: tokio::time::Instant,
}

impl ServerHandle {
    /// Writes a registered request and awaits its answer under its own deadline.
    async fn via_lane(
        &self,
        call: LaneCall,
        payload: bytes::Bytes,
        mut answer: oneshot::Receiver<lane::Answer>,
        recording: Recording,
    ) -> Result<Answer> {
        let lane = &call.lane;
        let dropped_at_start = lane.dropped();
        lane.write(Some(call.id), payload);
        let guard = LaneCancelOnDrop { lane, id: call.id };
        let result = match tokio::time::timeout_at(call.deadline, &mut answer).await {
            Ok(result) => result,
            Err(_) => match lane.take(call.id) {
                Some(waiter) => {
                    std::mem::forget(guard);
                    drop(waiter);
                    return Err(recording.fail(self.lane_timeout(&call, dropped_at_start)));
                }
                // The answer is being delivered right now.
                None => answer.await,
            },
        };
        std::mem::forget(guard);
        match result {
            Ok(Ok(raw)) => Ok(Answer {
                raw,
                recording: recording.answered(),
            }),
            Ok(Err(error)) => Err(recording.fail(error)),
            // The waiter was dropped unanswered: its lane is gone with its connection.
            Err(_) => Err(recording.fail(Error::Disconnected {
                server: self.shared.name.clone(),
                method: call.method,
                tool: call.tool,
                reason: Arc::new(CloseReason::aborted("the connection's tasks stopped")),
            })),
        }
    }

    /// A lane request's deadline passed: tell the server, count a strike, and say so.
    fn lane_timeout(&self, call: &LaneCall, dropped_at_start: u64) -> Error {
        let elapsed = call.started.elapsed();
        let reason = format!("timed out after {} ms", elapsed.as_millis());
        call.lane.cancel(call.id, CancelReason::Timeout, &reason);
        let _ = self.shared.channels.load().cancels.send(Notice::TimedOut);
        Error::Timeout {
            server: self.shared.name.clone(),
            method: call.method.clone(),
            tool: call.tool.clone(),
            request_id: call.id,
            elapsed,
            dropped_frames: call.lane.dropped().saturating_sub(dropped_at_start),
        }
    }
}

/// Cancels a lane request whose caller stopped waiting.
struct LaneCancelOnDrop<'a> {
    lane: &'a Lane,
    id: i64,
}

impl Drop for LaneCancelOnDrop<'_> {
    fn drop(&mut self) {
        // Only if still waiting: an answered or failed request needs no cancel.
        if let Some(waiter) = self.lane.take(self.id) {
            drop(waiter);
            self.lane.cancel(
                self.id,
                CancelReason::Caller,
                "the caller cancelled the request",
            );
        }
    }
}

/// Cancels a request whose caller stopped waiting.
struct CancelOnDrop<'a> {
    id: i64,
    cancels: &'a mpsc::UnboundedSender<Notice>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        // Unbounded by necessity (drop cannot wait) and bounded in practice: at most one
        // cancel per in-flight request.
        let _ = self.cancels.send(Notice::Cancel(self.id));
    }
}

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a serde_json::Value,
    #[serde(rename = "_meta")]
    meta: Meta,
}

#[derive(Serialize)]
struct Meta {
    #[serde(rename = "progressToken")]
    progress_token: i64,
}
