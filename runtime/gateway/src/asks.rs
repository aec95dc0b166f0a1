//! The upstream's requests to the client (sampling, elicitation; roots from a stateless
//! upstream), taken to the front
//! client whose call caused them, and its answer back.
//!
//! Each forwarded tool call brings a [`Bridge`] to its front request's [`Context`]: the
//! runtime hands it the upstream's requests about that call (see
//! [`Call::client_handlers`](switchboard::Call::client_handlers) for which ones it can tell),
//! and the bridge asks the front client with [`Context::input`] — a request on the front
//! session in the handshake era, an input-required round in 2026-07-28. In that round the
//! front answers on a retry, which may reach another replica: the gateway keeps nothing, so
//! the retry calls the upstream again and the bridge finds the answers there, asked in the
//! same order under the same keys. A stateless upstream asked again answers with the same
//! input requests; a handshake-era upstream runs its tool again (the upstream call of the
//! first round is cancelled as soon as the front must answer first).
//!
//! What the front client did not declare is never asked. A stateless upstream's input
//! requests are its call's for certain: that front call ends with -32021 (missing
//! capability), as it would have at an upstream that knew the front client's capabilities.
//! A handshake-era upstream's request is a call's only by the one-call rule: it is refused
//! to the upstream, and the front call goes on. A handshake-era upstream connection serves
//! every front client, so it declares sampling and elicitation for all of them
//! ([`upstream_handlers`]), but not roots (a server asks for roots by itself, for its
//! connection, not for a call); a request nobody's call can be told to own is refused with
//! a message saying so.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use switchboard::client::{BoxFuture, ClientHandlers, ForwardHandler};
use switchboard_server::{Context, HandlerError};
use tokio::sync::Notify;

/// The handlers of the gateway's upstream connections: declare what the gateway forwards,
/// and refuse what no front call owns (each forwarded call brings its own bridge to its
/// front client, which answers the rest).
pub fn upstream_handlers() -> ClientHandlers {
    ClientHandlers::new().forward(Unclaimed)
}

/// Refuses a request no front call could be told to own.
#[derive(Debug)]
struct Unclaimed;

impl ForwardHandler for Unclaimed {
    fn forward(&self, server: &str, method: &str, _: Value) -> BoxFuture<Result<Value, String>> {
        let message = format!(
            "the gateway cannot tell which of its clients `{server}`'s {method} is for: it came \
             with no link to a call, while none or several of the calls in flight there could \
             have caused it"
        );
        Box::pin(async move { Err(message) })
    }

    fn forward_inputs(
        &self,
        server: &str,
        _: Map<String, Value>,
    ) -> BoxFuture<Result<Map<String, Value>, String>> {
        // Unreachable from the gateway's own requests, which all bring a bridge.
        let message = format!("the gateway has no client to ask for `{server}`'s input requests");
        Box::pin(async move { Err(message) })
    }

    // Not roots: a handshake-era server asks for them by itself, for its connection, which
    // serves every front client; no one client's roots are the connection's.
    fn capabilities(&self) -> Value {
        json!({
            "sampling": {"tools": {}},
            "elicitation": {"form": {}, "url": {}},
        })
    }
}

/// Why the upstream call cannot go on without the front client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// The front client answers the upstream's request on its retry (2026-07-28).
    Input,
    /// The front client did not declare what the upstream asks for (`sampling`,
    /// `sampling.tools`, `elicitation.url`, …): the front call fails with -32021, as it
    /// would have at an upstream that knew the front client's capabilities.
    Capability(String),
}

impl Need {
    /// The front call's error.
    pub(crate) fn into_error(self) -> HandlerError {
        match self {
            Need::Input => HandlerError::InputRequired,
            Need::Capability(capability) => HandlerError::MissingCapability { capability },
        }
    }
}

/// Raised, once, when the upstream call cannot go on without the front client.
#[derive(Debug, Default)]
pub(crate) struct FrontWait {
    need: std::sync::OnceLock<Need>,
    notify: Notify,
}

impl FrontWait {
    fn raise(&self, need: Need) {
        let _ = self.need.set(need);
        self.notify.notify_one();
    }

    /// What was raised, if anything.
    pub(crate) fn need(&self) -> Option<Need> {
        self.need.get().cloned()
    }

    /// Waits until it is raised.
    pub(crate) async fn raised(&self) {
        if self.need.get().is_none() {
            self.notify.notified().await;
        }
    }
}

/// One forwarded call's way to its front client.
#[derive(Debug)]
pub(crate) struct Bridge {
    ctx: Context,
    /// How many requests the upstream made for this call: each one's key in the front's
    /// input-required round, the same on every retry.
    asked: AtomicUsize,
    wait: Arc<FrontWait>,
}

impl Bridge {
    /// A bridge to `ctx`'s client, raising `wait` when the client must answer first.
    pub(crate) fn new(ctx: Context, wait: Arc<FrontWait>) -> Bridge {
        Bridge {
            ctx,
            asked: AtomicUsize::new(0),
            wait,
        }
    }
}

impl ForwardHandler for Bridge {
    fn forward(
        &self,
        _server: &str,
        method: &str,
        params: Value,
    ) -> BoxFuture<Result<Value, String>> {
        let key = format!("upstream-{}", self.asked.fetch_add(1, Ordering::Relaxed));
        let ctx = self.ctx.clone();
        let wait = self.wait.clone();
        let method = method.to_owned();
        Box::pin(async move {
            // Given to this call by the one-call rule, not by the protocol: what the front
            // client lacks is refused to the upstream, and the front call goes on (the
            // upstream decides what its tool makes of it).
            let lacking =
                |capability: String| format!("the gateway's client did not declare `{capability}`");
            if let Some(capability) = front_lacks(&method, &params, ctx.client_capabilities()) {
                return Err(lacking(capability));
            }
            match ctx.input(&key, &method, params).await {
                Err(HandlerError::MissingCapability { capability }) => Err(lacking(capability)),
                answer => answer.map_err(|error| refused(error, &wait)),
            }
        })
    }

    fn forward_inputs(
        &self,
        _server: &str,
        requests: Map<String, Value>,
    ) -> BoxFuture<Result<Map<String, Value>, String>> {
        let ctx = self.ctx.clone();
        let wait = self.wait.clone();
        Box::pin(async move {
            let mut asked = Vec::with_capacity(requests.len());
            for (key, request) in requests {
                let method = request["method"].as_str().unwrap_or_default().to_owned();
                let params = request.get("params").cloned().unwrap_or(Value::Null);
                if let Some(capability) = front_lacks(&method, &params, ctx.client_capabilities()) {
                    return Err(refused(
                        HandlerError::MissingCapability { capability },
                        &wait,
                    ));
                }
                asked.push((key, method, params));
            }
            let keys: Vec<String> = asked.iter().map(|(key, ..)| key.clone()).collect();
            match ctx.inputs(asked).await {
                Ok(answers) => Ok(keys.into_iter().zip(answers).collect()),
                Err(error) => Err(refused(error, &wait)),
            }
        })
    }

    fn capabilities(&self) -> Value {
        let front = self.ctx.client_capabilities();
        let mut declared = serde_json::Map::new();
        for feature in ["roots", "sampling", "elicitation"] {
            if let Some(entry) = front.get(feature) {
                declared.insert(feature.to_owned(), entry.clone());
            }
        }
        Value::Object(declared)
    }
}

/// What the upstream hears when the front client's answer is not there; raises `wait` when
/// the front call must end (see [`Need`]).
fn refused(error: HandlerError, wait: &FrontWait) -> String {
    match error {
        HandlerError::InputRequired => {
            wait.raise(Need::Input);
            "the gateway's client answers this on its retry".to_owned()
        }
        HandlerError::MissingCapability { capability } => {
            let message = format!("the gateway's client did not declare `{capability}`");
            wait.raise(Need::Capability(capability));
            message
        }
        HandlerError::Rpc(error) => error.message,
        other => format!("{other:?}"),
    }
}

/// The capability the front client lacks for `method` with `params`, beyond the feature
/// itself (which [`Context::input`] checks): sampling with tools, URL-mode elicitation.
fn front_lacks(method: &str, params: &Value, front: &Value) -> Option<String> {
    match method {
        "sampling/createMessage"
            if (params.get("tools").is_some() || params.get("toolChoice").is_some())
                && front.pointer("/sampling/tools").is_none() =>
        {
            Some("sampling.tools".to_owned())
        }
        "elicitation/create"
            if params.get("mode").and_then(Value::as_str) == Some("url")
                && front.pointer("/elicitation/url").is_none() =>
        {
            Some("elicitation.url".to_owned())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_front_did_not_declare_is_refused() {
        let tools = json!({"tools": [], "messages": []});
        let plain = json!({"sampling": {}});
        assert!(front_lacks("sampling/createMessage", &tools, &plain).is_some());
        assert!(front_lacks("sampling/createMessage", &json!({}), &plain).is_none());
        let with_tools = json!({"sampling": {"tools": {}}});
        assert!(front_lacks("sampling/createMessage", &tools, &with_tools).is_none());
        let url = json!({"mode": "url", "url": "https://x"});
        assert!(front_lacks("elicitation/create", &url, &json!({"elicitation": {}})).is_some());
        assert!(front_lacks(
            "elicitation/create",
            &url,
            &json!({"elicitation": {"url": {}}})
        )
        .is_none());
    }
}
