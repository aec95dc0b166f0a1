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
    pub(super) fn frame<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> (i64, bytes::Bytes) {
        let modern = self.dialect.load();
        self.frame_as(modern.as_deref(), method, params)
    }

    /// A frame for `method` in the given dialect (`None`: legacy), whatever is published:
    /// the era probe speaks modern before the verdict is.
    pub(super) fn frame_as<P: Serialize + ?Sized>(
        &self,
        modern: Option<&crate::era::Modern>,
        method: &str,
        params: &P,
    ) -> (i64, bytes::Bytes) {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let level = self.logging.level();
        (
            id,
            crate::era::frame_request(modern, level, id, method, params),
        )
    }

    /// Sends one request; `None` when the table is closed (the connection is gone).
    pub(super) async fn send(
        &self,
        method: &'static str,
        (id, frame): (i64, bytes::Bytes),
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
        request::send(&self.table, id, frame, &spec, None)
            .await
            .ok()
    }
}
