//! What callers submit: writing requests, cancelling them, and their deadlines.

use std::sync::Arc;

use actix::Context;

use super::{unavailable, Phase, ServerActor};
use crate::actor::pending::{Entry, Reply, Timer};
use crate::actor::Submit;
use crate::error::Error;
use crate::metrics::CancelReason;
use switchboard_transports::CloseReason;

impl ServerActor {
    pub(super) fn on_submit(&mut self, submit: Submit) {
        if submit.reply.is_closed() {
            return;
        }
        let Submit {
            id,
            method,
            tool,
            payload,
            policy,
            started,
            progress,
            reply,
            permit,
        } = submit;
        let ready = self.phase == Phase::Ready;
        if !ready && !self.phase.queues_calls() {
            let reason = self
                .down_reason
                .clone()
                .unwrap_or_else(|| Arc::from("the server is stopping"));
            let _ = reply.send(Err(unavailable(&self.name, tool, reason)));
            return;
        }
        let entry = Entry {
            reply: Reply::Caller(reply),
            method,
            tool,
            started,
            policy: Some(policy),
            progress,
            unsent: if ready { None } else { Some(payload.clone()) },
            frame: Some(payload.clone()),
            dropped_at_start: self.dropped_frames,
            key: None,
            permit: Some(permit),
        };
        self.pending.insert(id, entry, Some(policy.first(started)));
        if ready {
            self.write(Some(id), payload);
        }
    }

    pub(super) fn on_cancel(&mut self, id: i64) {
        let Some(entry) = self.pending.take(id) else {
            return;
        };
        if entry.unsent.is_none() {
            self.send_cancelled(id, CancelReason::Caller, "the caller cancelled the request");
        }
    }

    pub(super) fn send_cancelled(&self, id: i64, why: CancelReason, reason: &str) {
        self.ties.metrics.cancelled(why);
        self.notify(
            switchboard_codecs::mcp::methods::CANCELLED,
            &serde_json::json!({ "requestId": id, "reason": reason }),
        );
    }

    pub(super) fn on_timer(&mut self, timer: Timer, ctx: &mut Context<Self>) {
        match timer {
            Timer::Startup => {
                self.startup = None;
                if self.phase.in_handshake() {
                    let detail = format!(
                        "no complete handshake within the startup timeout of {} ms",
                        self.config.startup_timeout_value().as_millis()
                    );
                    let error = self.handshake_error(detail);
                    self.fail_start(error, ctx);
                }
            }
            Timer::Request(id) => {
                let Some(entry) = self.pending.take_expired(id) else {
                    return;
                };
                let tx = match entry.reply {
                    Reply::Caller(tx) => tx,
                    Reply::Ping => {
                        self.ping_outstanding = false;
                        self.strike(ctx);
                        return;
                    }
                    Reply::ToolsPage(_) => {
                        let detail = "tools/list timed out".to_owned();
                        if self.phase == Phase::ListingTools {
                            let error = self.handshake_error(detail);
                            self.fail_start(error, ctx);
                        } else {
                            self.relist_running = false;
                            tracing::warn!(server = %self.name, "{detail}");
                        }
                        return;
                    }
                    Reply::Initialize => return,
                };
                let error = if entry.unsent.is_some() {
                    let why = self
                        .down_reason
                        .clone()
                        .unwrap_or_else(|| Arc::from("it is starting"));
                    unavailable(
                        &self.name,
                        entry.tool,
                        format!("not ready within the call's deadline: {why}").into(),
                    )
                } else {
                    let elapsed = entry.started.elapsed();
                    let reason = format!("timed out after {} ms", elapsed.as_millis());
                    self.send_cancelled(id, CancelReason::Timeout, &reason);
                    Error::Timeout {
                        server: self.name.clone(),
                        method: entry.method,
                        tool: entry.tool,
                        request_id: id,
                        elapsed,
                        dropped_frames: self.dropped_frames - entry.dropped_at_start,
                    }
                };
                let _ = tx.send(Err(error));
                self.strike(ctx);
            }
        }
    }

    /// Fails every request already written to the server (queued ones stay queued).
    pub(super) fn fail_written(&mut self, error: impl Fn(&Entry) -> Error) {
        for (_, entry) in self.pending.drain_where(|e| e.unsent.is_none()) {
            let e = error(&entry);
            if let Reply::Caller(tx) = entry.reply {
                let _ = tx.send(Err(e));
            }
        }
    }

    /// Fails every written request as disconnected, for `reason`.
    pub(super) fn fail_written_disconnected(&mut self, reason: Arc<CloseReason>) {
        let name = self.name.clone();
        self.fail_written(|entry| Error::Disconnected {
            server: name.clone(),
            method: entry.method.clone(),
            tool: entry.tool.clone(),
            reason: reason.clone(),
        });
    }

    /// Fails every request still waiting for the server to become ready.
    pub(super) fn fail_unsent(&mut self, reason: Arc<str>) {
        for (_, entry) in self.pending.drain_where(|e| e.unsent.is_some()) {
            if let Reply::Caller(tx) = entry.reply {
                let _ = tx.send(Err(unavailable(&self.name, entry.tool, reason.clone())));
            }
        }
    }

    /// Fails everything pending as unavailable.
    pub(super) fn fail_everything(&mut self, reason: Arc<str>) {
        let name = self.name.clone();
        self.fail_written(|entry| unavailable(&name, entry.tool.clone(), reason.clone()));
        self.fail_unsent(reason);
    }

    /// Fails one pending caller; true when there was one.
    pub(super) fn fail_one(
        &mut self,
        id: i64,
        error: impl FnOnce(Arc<str>, &Entry) -> Error,
        ctx: &mut Context<Self>,
    ) -> bool {
        let Some(entry) = self.pending.take(id) else {
            return false;
        };
        let e = error(self.name.clone(), &entry);
        match entry.reply {
            Reply::Caller(tx) => {
                let _ = tx.send(Err(e));
            }
            Reply::Ping => self.ping_outstanding = false,
            Reply::Initialize | Reply::ToolsPage(_) => {
                if self.phase.in_handshake() {
                    // Keep a typed 401 as it is: the application can start OAuth from it.
                    let error = match e {
                        Error::Unauthorized { .. } => e,
                        other => self.handshake_error(other.to_string()),
                    };
                    self.fail_start(error, ctx);
                }
            }
        }
        true
    }
}
