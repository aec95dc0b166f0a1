//! Choosing a server's era when its connection opens: the `server/discover` probe (for
//! [`Protocol::Auto`] and [`Protocol::Modern`]) and the modern path to ready.
//!
//! Auto: `server/discover` with our preferred stateless version and a short timeout. A
//! discover result means modern; `-32022` (unsupported version) means modern too, and the
//! probe is sent once more with a version from the server's `supported` list; any other
//! error (legacy servers answer `-32601` or `-32602`, among others) or no answer within the
//! probe timeout means legacy, and `initialize` follows on the same connection. A probe
//! whose answer the network cut off is sent again, then fails the start: it is no verdict.
//! A server process that ends its connection in answer to the probe (rmcp 0.x servers exit)
//! is legacy too: a new process is started at once in the handshake era (see
//! `lifecycle::restart_in_handshake_era`).
//!
//! Verdicts are kept in [`crate::era_memory`]: over HTTP for the origin (a new connection to a
//! known origin skips the probe), over stdio for the command, legacy ones only. A start
//! that fails with a kept verdict, an unreachable origin or an explicit restart forgets it.
//!
//! A modern server is ready once its tools are listed: there is no `initialize` and no
//! `notifications/initialized`; its capabilities, instructions and identity come from the
//! discover result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Context;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::Id;
use switchboard_codecs::mcp::modern::{self, DiscoverResult, UnsupportedVersionData};
use switchboard_codecs::mcp::{self, methods};
use switchboard_transports::CloseReason;

use super::session::Loss;
use super::{Phase, ServerActor};
use crate::client::ClientHandlers;
use crate::core::Gate;
use crate::era::{Dialect, Era, Modern, Protocol};
use crate::era_memory::Verdict;
use crate::error::{Error, ErrorContext, ErrorKind};
use crate::exchange::{exchange, Framing, Origin};
use crate::transport::Transport;

/// The longest the auto probe waits for an answer to `server/discover` before it decides the
/// server is legacy (and at most half of what is left of the startup window, which must
/// leave `initialize` time too: see [`discover_timeout`]). Legacy servers answer the unknown
/// method at once with an error; only one that drops it costs this wait.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `server/discover` waits for its answer when `left` is what remains of the
/// startup window (the startup timeout, counted from the connection's start). The auto
/// probe waits at most [`PROBE_TIMEOUT`] and at most half of `left`, so that `initialize`
/// has the other half; a server forced modern waits what is left, as its discover is its
/// handshake. Never past the window: the startup timeout bounds probe and handshake
/// together, however long opening the connection took.
fn discover_timeout(protocol: Protocol, left: Duration) -> Duration {
    match protocol {
        Protocol::Auto => PROBE_TIMEOUT.min(left / 2),
        Protocol::Modern | Protocol::Legacy => left,
    }
}

impl ServerActor {
    /// The connection is open: find out which era the server speaks (or take it from the
    /// configuration), then run that era's handshake.
    pub(super) fn start_handshake(&mut self, ctx: &mut Context<Self>) {
        // A new process: the last one's verdict does not hold for it.
        self.learnt.dialect = None;
        self.core.freshness.forget();
        self.learnt.era = None;
        let known = self
            .verdict_key()
            .and_then(|key| self.wiring.eras.get(&key));
        match (self.core.config.protocol, known) {
            (Protocol::Legacy, _) | (Protocol::Auto, Some(Verdict::Legacy)) => {
                self.send_initialize(ctx)
            }
            (Protocol::Auto, Some(Verdict::Modern { version, discover })) => {
                tracing::debug!(server = %self.name, %version, "the origin's era is known: no probe");
                self.phase = Phase::Discovering;
                let dialect = Arc::new(Modern::new(
                    &version,
                    modern_capabilities(self.core.config.handlers.as_ref()),
                ));
                self.become_modern(dialect, *discover, ctx);
            }
            (Protocol::Auto | Protocol::Modern, _) => {
                self.send_discover(modern::PROTOCOL_VERSION, true, ctx)
            }
        }
    }

    /// Where this server's era verdict is kept, for an auto server: its origin over HTTP
    /// (shared by every server there), what it runs over stdio, this config in memory.
    fn verdict_key(&self) -> Option<String> {
        if self.core.config.protocol != Protocol::Auto {
            return None;
        }
        match &self.core.config.transport {
            Transport::Http(http) => crate::era_memory::origin(&http.url),
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(stdio) => Some(format!("stdio {:x}", stdio.config.launch_hash())),
            Transport::Memory(memory) => Some(format!(
                "memory {:p}",
                std::sync::Arc::as_ptr(&memory.serve)
            )),
        }
    }

    /// Keeps the verdict the probe reached. A modern verdict is kept for an HTTP origin
    /// only: a new process's `server/discover` is the stateless era's own first request
    /// (it brings that process's capabilities), so for stdio only knowing that a command
    /// is legacy saves anything (the probe, and for a server that exits on it, a process).
    pub(super) fn keep_verdict(&self, verdict: Verdict) {
        let over_http = matches!(self.core.config.transport, Transport::Http(_));
        if matches!(verdict, Verdict::Modern { .. }) && !over_http {
            return;
        }
        if let Some(key) = self.verdict_key() {
            self.wiring.eras.keep(key, verdict);
        }
    }

    /// Forgets the server's verdict: its next connection probes.
    pub(super) fn forget_verdict(&self) {
        if let Some(key) = self.verdict_key() {
            self.wiring.eras.forget(&key);
        }
    }

    /// Whether the connection that just ended was the auto probe's: a server process that
    /// closed, exited or broke its pipes in answer to `server/discover` (rmcp 0.x servers
    /// exit on any first request that is not `initialize`). Such a server is spoken to in
    /// the handshake era on a new process at once.
    pub(super) fn probe_ended_the_process(&self) -> bool {
        matches!(self.phase, Phase::Discovering)
            && self.core.config.protocol == Protocol::Auto
            && !matches!(self.core.config.transport, Transport::Http(_))
    }

    /// `server/discover` in `version`; `first` is false for the one retry after `-32022`.
    fn send_discover(&mut self, version: &'static str, first: bool, ctx: &mut Context<Self>) {
        self.phase = Phase::Discovering;
        let dialect = Arc::new(Modern::new(
            version,
            modern_capabilities(self.core.config.handlers.as_ref()),
        ));
        let left = self
            .core
            .config
            .startup_timeout_value()
            .saturating_sub(self.connect_started.elapsed());
        let timeout = discover_timeout(self.core.config.protocol, left);
        let Some(mut request) = self.own_request(
            modern::SERVER_DISCOVER,
            serde_json::json!({}),
            Some(timeout),
        ) else {
            return;
        };
        if let Origin::Actor { framing, .. } = &mut request.origin {
            *framing = Framing::Probe(dialect.clone());
        }
        let core = self.core.clone();
        let sending = async move { exchange(&core, request).await };
        self.when_same_link(ctx, sending, move |act, answer, ctx| {
            act.on_discover(dialect, first, answer, ctx);
        });
    }

    fn on_discover(
        &mut self,
        dialect: Arc<Modern>,
        first: bool,
        answer: Result<Box<RawValue>, Error>,
        ctx: &mut Context<Self>,
    ) {
        let raw = match answer {
            Ok(raw) => raw,
            Err(e) if matches!(e.kind(), ErrorKind::VersionRejected { .. }) => {
                if let ErrorKind::VersionRejected { supported, .. } = e.kind() {
                    self.repick(&dialect, first, supported, ctx);
                }
                return;
            }
            // Keep a typed 401 as it is: the application can start OAuth from it.
            Err(e) if matches!(e.kind(), ErrorKind::Unauthorized { .. }) => {
                return self.fail_start(e, ctx)
            }
            // The network cut the answer: the server said nothing about its era, and this
            // attempt failed (no 10 s wait, no verdict).
            Err(e) if matches!(e.kind(), ErrorKind::StreamBroken { .. }) => {
                let detail = format!("server/discover was cut off: {e}");
                return self.fail_start(self.handshake_failure(detail, e), ctx);
            }
            // Nothing answered: no verdict either, and no `initialize` on a connection
            // that is ending.
            Err(e)
                if matches!(e.kind(), ErrorKind::Transport { .. }) && self.found_unreachable() =>
            {
                let detail = format!("server/discover could not be sent: {e}");
                return self.fail_start(self.handshake_failure(detail, e), ctx);
            }
            Err(e) if self.core.config.protocol == Protocol::Auto => {
                tracing::debug!(server = %self.name, error = %e, "server/discover refused: a legacy server");
                self.send_initialize(ctx);
                return;
            }
            Err(e) => {
                let error = self.handshake_error(format!("server/discover was refused: {e}"));
                return self.fail_start(error, ctx);
            }
        };
        let discover: DiscoverResult = match serde_json::from_str(raw.get()) {
            Ok(discover) => discover,
            // Some handshake-era servers answer any request with a result; one that is not a
            // discover result (no `supportedVersions`) says nothing about the stateless era.
            Err(e) if self.core.config.protocol == Protocol::Auto => {
                tracing::debug!(server = %self.name, error = %e, "server/discover answered with something else: a legacy server");
                self.send_initialize(ctx);
                return;
            }
            Err(e) => {
                let error = self.handshake_error(format!("invalid server/discover result: {e}"));
                return self.fail_start(error, ctx);
            }
        };
        let speaks = discover
            .supported_versions
            .iter()
            .any(|v| **v == *dialect.version);
        if !speaks {
            let supported = discover.supported_versions.clone();
            self.repick(&dialect, first, &supported, ctx);
            return;
        }
        self.keep_verdict(Verdict::Modern {
            version: dialect.version.to_string(),
            discover: Box::new(discover.clone()),
        });
        self.become_modern(dialect, discover, ctx);
    }

    /// The server is modern but did not take `dialect`'s version: ask again, once, with the
    /// newest version both sides speak; when there is none, or the retry is refused too,
    /// give up.
    fn repick(
        &mut self,
        dialect: &Modern,
        first: bool,
        supported: &[String],
        ctx: &mut Context<Self>,
    ) {
        let data = UnsupportedVersionData {
            supported: supported.to_vec(),
            requested: Some(dialect.version.to_string()),
        };
        match data.pick() {
            // Once, even with the same version: the server may have refused it for now.
            Some(version) if first => self.send_discover(version, false, ctx),
            _ => {
                let error = ErrorContext::of_server(self.name.clone()).error(
                    ErrorKind::UnsupportedVersion {
                        offered: dialect.version.clone(),
                        received: supported.join(", ").into(),
                    },
                );
                self.fail_start(error, ctx);
            }
        }
    }

    fn become_modern(
        &mut self,
        dialect: Arc<Modern>,
        discover: DiscoverResult,
        ctx: &mut Context<Self>,
    ) {
        let server_info = discover.server_info().unwrap_or_default();
        tracing::info!(
            server = %self.name,
            version = %dialect.version,
            peer = %server_info.name,
            transport = %self.link.as_ref().map(|l| l.control.kind().as_str()).unwrap_or(""),
            "server discovered (stateless era)"
        );
        let has_tools = discover.capabilities.tools.is_some();
        self.learnt.init = Some(mcp::InitializeResult {
            protocol_version: dialect.version.to_string(),
            capabilities: discover.capabilities,
            server_info,
            instructions: discover.instructions,
            extra: discover.extra,
        });
        self.learnt.era = Some(Era::Modern);
        // Every frame built for this process from now on carries the `_meta` of this version.
        self.learnt.dialect = Some(Arc::new(Dialect::new(dialect)));
        self.after_handshake(has_tools, ctx);
    }

    pub(super) fn send_initialize(&mut self, ctx: &mut Context<Self>) {
        self.phase = Phase::Initializing;
        let handlers = self.core.config.handlers.as_ref();
        let mut capabilities = ClientHandlers::capabilities(handlers);
        crate::client::tasks::declare(&mut capabilities, handlers);
        let params = serde_json::json!({
            "protocolVersion": mcp::LATEST_PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": crate::era::client_info(),
        });
        self.request(
            ctx,
            methods::INITIALIZE,
            params,
            None,
            |act, answer, ctx| {
                match answer {
                    Ok(raw) => act.on_initialized(&raw, ctx),
                    // Keep a typed 401 as it is: the application can start OAuth from it.
                    Err(e) if matches!(e.kind(), ErrorKind::Unauthorized { .. }) => {
                        act.fail_start(e, ctx)
                    }
                    Err(e) => {
                        let detail = format!("initialize was refused: {e}");
                        act.fail_start(act.handshake_failure(detail, e), ctx)
                    }
                }
            },
        );
    }

    fn on_initialized(&mut self, raw: &RawValue, ctx: &mut Context<Self>) {
        let init: mcp::InitializeResult = match serde_json::from_str(raw.get()) {
            Ok(init) => init,
            Err(e) => {
                let error = self.handshake_error(format!("invalid initialize result: {e}"));
                self.fail_start(error, ctx);
                return;
            }
        };
        if !mcp::SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            let error =
                ErrorContext::of_server(self.name.clone()).error(ErrorKind::UnsupportedVersion {
                    offered: mcp::LATEST_PROTOCOL_VERSION.into(),
                    received: init.protocol_version.as_str().into(),
                });
            self.fail_start(error, ctx);
            return;
        }
        if let Some(link) = &mut self.link {
            link.control.set_protocol_version(&init.protocol_version);
        }
        tracing::info!(
            server = %self.name,
            version = %init.protocol_version,
            peer = %init.server_info.name,
            transport = %self.link.as_ref().map(|l| l.control.kind().as_str()).unwrap_or(""),
            "server initialized"
        );
        let has_tools = init.capabilities.tools.is_some();
        self.learnt.init = Some(init);
        self.learnt.era = Some(Era::Legacy);
        self.keep_verdict(Verdict::Legacy);
        self.notify(methods::INITIALIZED, &serde_json::json!({}));
        self.after_handshake(has_tools, ctx);
    }

    /// The HTTP server forgot our session. Run the handshake again, once, on the same
    /// connection, and resend only the request it rejected (it was never processed, so this
    /// is no replay); everything else pending on the old session fails as disconnected.
    pub(super) fn on_session_expired(&mut self, id: Option<Id>, ctx: &mut Context<Self>) {
        let rejected = match id {
            Some(Id::Number(n)) => Some(n),
            _ => None,
        };
        let keep = match self.session.lost(rejected, self.phase.is_ready()) {
            Loss::Recover { resend } => resend,
            Loss::GiveUp => {
                let why =
                    "the server's session expired again before a new one was ready".to_owned();
                self.abandon(why, ctx);
                return;
            }
        };
        tracing::warn!(server = %self.name, ?id, "the server's session expired; initializing a new one");
        let Some(link) = &self.link else { return };
        // New calls wait for the new session instead of being rejected by the server.
        self.set_gate(Gate::Starting);
        let reason = Arc::new(CloseReason::aborted("the server's session expired"));
        link.table
            .fail_all_except(keep, |waiter| waiter.disconnected(reason.clone()));
        self.strikes.ping_ended();
        self.connect_started = Instant::now();
        self.start_startup_timer(ctx);
        self.send_initialize(ctx);
    }

    /// The server said what it offers (either era): list its tools, then it is ready.
    pub(super) fn after_handshake(&mut self, has_tools: bool, ctx: &mut Context<Self>) {
        if has_tools {
            self.phase = Phase::ListingTools;
            self.relist.handshake();
            self.list_tools(ctx);
        } else {
            self.learnt.tools = Arc::from(Vec::new());
            self.learnt.tool_rules = Arc::default();
            self.become_ready(ctx);
        }
    }

    /// A stateless server's identity from a result's `_meta`, when its discover result
    /// did not give one (handshake-era servers gave theirs in `initialize`).
    pub(super) fn learn_identity(&mut self, info: Option<mcp::Implementation>) {
        let Some(info) = info else { return };
        let modern = self.is_modern();
        if let Some(init) = &mut self.learnt.init {
            if modern && init.server_info.name.is_empty() {
                init.server_info = info;
            }
        }
    }

    /// Whether the transport of the current connection could not reach the server at all.
    fn found_unreachable(&self) -> bool {
        self.link
            .as_ref()
            .is_some_and(|link| link.table.found_unreachable())
    }

    /// Whether requests to the server go in the modern era.
    pub(super) fn is_modern(&self) -> bool {
        self.learnt.era == Some(Era::Modern)
    }
}

/// Our capabilities as the stateless era declares them: those our handlers provide, with
/// `roots` as `{}` (the era has no roots `listChanged`).
fn modern_capabilities(handlers: Option<&ClientHandlers>) -> serde_json::Value {
    let mut capabilities = ClientHandlers::capabilities(handlers);
    if let Some(roots) = capabilities.get_mut("roots") {
        *roots = serde_json::json!({});
    }
    // Every call drives a task the server answers with to its result (see `crate::task`).
    if let Some(caps) = capabilities.as_object_mut() {
        caps.insert(
            "extensions".into(),
            serde_json::json!({ switchboard_codecs::mcp::tasks::EXTENSION: {} }),
        );
    }
    capabilities
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_probe_waits_half_of_what_is_left_of_the_start_and_never_past_it() {
        // The default window, just opened: the probe's own cap.
        assert_eq!(discover_timeout(Protocol::Auto, 30 * S), PROBE_TIMEOUT);
        // A short window: half of it, initialize gets the rest.
        assert_eq!(discover_timeout(Protocol::Auto, 3 * S), S * 3 / 2);
        // Opening the connection took most of the window: half of what is left.
        let left = (3 * S).saturating_sub(S * 5 / 2);
        assert_eq!(discover_timeout(Protocol::Auto, left), S / 4);
        // Nothing left (the startup timer fails the start as well).
        assert_eq!(
            discover_timeout(Protocol::Auto, Duration::ZERO),
            Duration::ZERO
        );
        // Forced modern: discover is the handshake, it has what is left, not a fixed 10 s.
        assert_eq!(discover_timeout(Protocol::Modern, 3 * S), 3 * S);
        assert_eq!(discover_timeout(Protocol::Modern, 30 * S), 30 * S);
        for left in [Duration::ZERO, S / 3, 3 * S, 25 * S, 600 * S] {
            for protocol in [Protocol::Auto, Protocol::Modern] {
                assert!(
                    discover_timeout(protocol, left) <= left,
                    "{protocol} {left:?}"
                );
            }
        }
    }
}
