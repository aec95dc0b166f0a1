//! [`ServerHandle`]: a cheap, cloneable way to call one server from any thread.
//!
//! A handle is the server's [`ServerCore`], which it shares with the server's actor. Every
//! request it sends — [`call_tool`](ServerHandle::call_tool), the typed methods of the
//! server's resources, prompts, completion and logging, and the raw
//! [`request`](ServerHandle::request) — is a thin adapter that builds one request and takes
//! it through the exchange (see `exchange`): the actor is not on a call's path; while the
//! server starts, a call waits for readiness within its own deadline, and it fails at once
//! when the server cannot start.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::core::ServerCore;
use crate::deadline::ToolPolicy;
use crate::error::{ErrorContext, ErrorKind, Result};
use crate::exchange::{exchange, Params, Request};
use crate::model::Tool;
use crate::status::{ServerState, ServerStatus};

/// A handle to one server: `Clone + Send + Sync`, usable from any thread and any tokio
/// runtime (calls use tokio timers for capacity and deadlines, so poll them inside a tokio
/// runtime with its time driver enabled).
#[derive(Clone)]
pub struct ServerHandle {
    pub(crate) core: Arc<ServerCore>,
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("name", &self.core.name)
            .field("state", &self.core.status.borrow().state.as_str())
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The string that stands for the server where its entries are prefixed (catalogue
    /// names, a gateway's skill URIs): the configured prefix, else the server's name.
    pub fn prefix(&self) -> &str {
        self.core
            .config
            .prefix
            .as_deref()
            .unwrap_or(&self.core.name)
    }

    /// Who gets an instance of the server of its own behind a gateway, and the bounds on
    /// its instances (see [`isolation`](crate::isolation)).
    pub fn isolation(&self) -> crate::IsolationPolicy {
        self.core.config.isolation_policy()
    }

    /// Whether the server's config uses per-client values (see
    /// [`client_values`](crate::client_values)): each client's instance is started with its own.
    pub fn per_client(&self) -> bool {
        self.core.config.per_client()
    }

    /// The server's token exchange (config `auth.tokenExchange`), when it has one: a
    /// gateway [presents](crate::oauth::TokenExchange::present) each client's token to it.
    #[cfg(feature = "oauth")]
    pub fn token_exchange(&self) -> Option<&crate::oauth::TokenExchange> {
        self.core.config.exchange()
    }

    /// The values of `values` that an instance of this server started for them would use, in
    /// order, or why it cannot be started for them: two clients (or one client, before and
    /// after its secrets changed) whose values used are equal run the same command.
    pub fn client_values_used(
        &self,
        values: &crate::client_values::ClientValues,
    ) -> Result<Vec<String>, crate::client_values::ClientValueError> {
        self.core.config.values_used(values)
    }

    /// The server's current status.
    pub fn status(&self) -> ServerStatus {
        self.core.status()
    }

    /// The server's tools, as listed by its last handshake (empty until it is ready).
    pub fn tools(&self) -> Arc<[Tool]> {
        self.core.status.borrow().tools.clone()
    }

    /// Waits until no re-listing of the server's tools is due: one the server announced
    /// (`notifications/tools/list_changed`, read but not listed yet) or one a caller found
    /// a stale list needs; returns at once when none is. What [`tools`](Self::tools) shows
    /// then is the server's latest listing, as far as the server has told: for a report of
    /// its tools right after it started (a server may add tools once it is initialized, and
    /// announce them).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub async fn tools_settled(&self) {
        self.core.freshness.tools.names_settled(None).await;
    }

    /// Requests in flight now: submitted and not yet answered, timed out or cancelled.
    pub fn in_flight(&self) -> usize {
        self.core.admission.taken()
    }

    /// Waits until the server has left the `starting` state, and returns its status.
    pub async fn wait_started(&self) -> ServerStatus {
        let mut rx = self.core.status.subscribe();
        let result = rx
            .wait_for(|s| !matches!(s.state, ServerState::Starting))
            .await
            .map(|s| s.clone());
        match result {
            Ok(status) => status,
            // The core is gone with its runtime: its last word is the status.
            Err(_) => self.status(),
        }
    }

    /// Sends any request and returns its raw result, under the server's timeout. A
    /// `_meta` object in `params` is sent beside the runtime's own `_meta` entries.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    pub async fn request(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
    ) -> Result<Box<RawValue>> {
        let params = params.map_or_else(Params::empty, Params::from_value);
        exchange(&self.core, self.plain(method, params)).await
    }

    /// [`request`](Self::request), with `handlers` of its own for what the server asks the
    /// client because of it (see [`Call::client_handlers`](crate::Call::client_handlers)).
    pub async fn request_with_handlers(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
        handlers: crate::client::ClientHandlers,
    ) -> Result<Box<RawValue>> {
        let params = params.map_or_else(Params::empty, Params::from_value);
        let mut request = self.plain(method, params);
        request.scope = Some(Arc::new(crate::call_scope::Scope {
            handlers: Some(handlers),
            logs: None,
        }));
        exchange(&self.core, request).await
    }

    /// One request of `method` (not a tool call) under the server's timeout, from now.
    pub(crate) fn plain(&self, method: &str, params: Params) -> Request {
        let policy = self.core.policy(None, &ToolPolicy::default());
        Request::new(method.into(), params, Instant::now(), policy)
    }

    /// Sends one request under the server's timeout and parses its result as `R`.
    pub(crate) async fn typed<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> Result<R> {
        let raw = exchange(&self.core, self.plain(method, Params::from_value(params))).await?;
        serde_json::from_str(raw.get()).map_err(|e| {
            ErrorContext::of_request(self.core.name.clone(), Arc::from(method), None).error(
                ErrorKind::Protocol {
                    detail: format!("the result is not what `{method}` answers: {e}"),
                },
            )
        })
    }
}
