//! The actor's own requests (the handshake, lists, pings): futures of the actor that go
//! through the connection's call table like any caller's, counted while in flight so that
//! liveness can tell them from callers' work.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use switchboard_codecs::mcp;

use crate::calls::request::{self, Spec};
use crate::calls::table::Table;
use crate::deadline::{DeadlinePolicy, ToolPolicy};
use crate::error::Error;

/// What the actor's own requests need, apart from the actor: they run as futures of its own.
#[derive(Clone)]
pub(super) struct OwnRequests {
    pub(super) table: Arc<Table>,
    pub(super) ids: Arc<AtomicI64>,
    /// The actor's own requests in flight, which liveness does not count as callers'.
    pub(super) outstanding: Arc<AtomicUsize>,
    /// The server's dialect: modern requests carry `_meta`.
    pub(super) dialect: crate::era::Dialect,
    pub(super) logging: Arc<crate::logging::Logging>,
}

/// Counts one of the actor's own requests while it is in flight.
struct Outstanding(Arc<AtomicUsize>);

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl OwnRequests {
    /// A frame for `method` in the dialect published now, under a new id.
    pub(super) fn frame<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> (i64, bytes::Bytes) {
        let modern = self.dialect.load();
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let level = self.logging.level();
        (
            id,
            crate::era::frame_request(modern.as_deref(), level, id, method, params),
        )
    }

    /// Sends one request already framed (its id known to the caller), without deadline
    /// and never again: the `subscriptions/listen` stream.
    pub(super) async fn send_framed(
        &self,
        method: &'static str,
        (id, frame): (i64, bytes::Bytes),
    ) -> Option<Result<Box<RawValue>, Error>> {
        let spec = Spec {
            method: method.into(),
            tool: None,
            started: Instant::now(),
            policy: None,
            progress: None,
            cancellable: true,
            reports_silence: true,
        };
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        let _counted = Outstanding(self.outstanding.clone());
        request::send(&self.table, id, frame, &spec, None)
            .await
            .ok()
    }

    /// Sends one request, framed in the dialect published now; `None` when the table is
    /// closed (the connection is gone).
    pub(super) async fn send(
        &self,
        method: &'static str,
        params: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Option<Result<Box<RawValue>, Error>> {
        let modern = self.dialect.load_full();
        self.send_as(modern, method, params, timeout).await
    }

    /// Sends one request framed in the given dialect (`None`: legacy), whatever is
    /// published: the era probe speaks modern before the verdict is. A request that changes
    /// nothing is sent again, under a new id, when its response broke (see
    /// [`crate::calls::reissue`]), within the same deadline.
    pub(super) async fn send_as(
        &self,
        modern: Option<Arc<crate::era::Modern>>,
        method: &'static str,
        params: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Option<Result<Box<RawValue>, Error>> {
        let spec = Spec {
            method: method.into(),
            tool: None,
            started: Instant::now(),
            policy: timeout
                .map(|t| DeadlinePolicy::resolve(&ToolPolicy::new().timeout(t), None, None, t)),
            progress: None,
            // `initialize` is never cancelled: the startup timeout closes the connection.
            cancellable: method != mcp::methods::INITIALIZE,
            reports_silence: true,
        };
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        let _counted = Outstanding(self.outstanding.clone());
        let reissue = crate::calls::reissue::allowed(method, None, false);
        let mut reissues = 0;
        loop {
            let id = self.ids.fetch_add(1, Ordering::Relaxed);
            let level = self.logging.level();
            let frame = crate::era::frame_request(modern.as_deref(), level, id, method, &params);
            let answer = request::send(&self.table, id, frame, &spec, None)
                .await
                .ok()?;
            match answer {
                Err(Error::StreamBroken { .. })
                    if reissue && reissues < crate::calls::reissue::MAX_REISSUES =>
                {
                    reissues += 1;
                }
                answer => return Some(answer),
            }
        }
    }
}
