//! What a handler can do while it serves one request: report progress, send log messages,
//! ask the client for input, and announce changes.
//!
//! Input works the same in both eras from the handler's side: [`Context::input`] returns
//! the client's answer. In the handshake era it sends the request (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) to the client and waits; in 2026-07-28 it takes the
//! answer from the retry's `inputResponses`, or records the request and fails with
//! [`HandlerError::InputRequired`], which the handler passes on with `?`: the server answers
//! an input-required result, and runs the handler again on the client's retry, with every
//! answer so far (they travel sealed in `requestState`, so the client cannot alter them).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Map, Value};
use switchboard_codecs::jsonrpc::{Id, Outcome};
use switchboard_transports::server::{Principal, Responder};

use crate::audience::{Audience, Change};
use crate::client::{ClientInfo, Negotiated};
use crate::error::HandlerError;
use crate::logging;
use crate::session::Session;
use crate::Reply;

/// The first protocol version in which a tool's arguments that do not validate are an
/// `isError` result (for the model to correct) rather than -32602: 2025-11-25, and every
/// version after it.
const INPUT_ERRORS_AS_RESULTS: &str = "2025-11-25";

/// The protocol era a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: a session opened by `initialize`.
    Handshake,
    /// 2026-07-28: the request says everything in its `_meta`.
    Stateless,
}

/// One request's view of the server, handed to every handler call.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    audience: Arc<Audience>,
    /// How long a handshake-era request to the client may take.
    input_timeout: Duration,
    session: Arc<Session>,
    responder: Responder,
    id: Id,
    era: Era,
    /// The version, the client's capabilities and who it is: the session's, or the
    /// stateless request's.
    negotiated: Arc<Negotiated>,
    progress_token: Option<Value>,
    traceparent: Option<String>,
    /// The stateless request's `_meta` log level (none: no log messages at all).
    meta_log_level: Option<usize>,
    inputs: Mutex<Inputs>,
}

/// The input-required bookkeeping of one request.
#[derive(Default)]
pub(crate) struct Inputs {
    /// The client's answers so far, by key.
    pub(crate) answers: Map<String, Value>,
    /// Requests the handler asked for that have no answer yet.
    pub(crate) missing: Map<String, Value>,
    /// What the handler wants back on the retry.
    pub(crate) state: Option<Value>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.inner.id)
            .field("era", &self.inner.era)
            .finish_non_exhaustive()
    }
}

/// What a request brings to its context.
pub(crate) struct Origin {
    pub(crate) id: Id,
    pub(crate) era: Era,
    pub(crate) negotiated: Arc<Negotiated>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) traceparent: Option<String>,
    pub(crate) meta_log_level: Option<usize>,
    pub(crate) inputs: Inputs,
}

impl Context {
    pub(crate) fn new(
        audience: Arc<Audience>,
        input_timeout: Duration,
        session: Arc<Session>,
        responder: Responder,
        origin: Origin,
    ) -> Self {
        Context {
            inner: Arc::new(Inner {
                audience,
                input_timeout,
                session,
                responder,
                id: origin.id,
                era: origin.era,
                negotiated: origin.negotiated,
                progress_token: origin.progress_token,
                traceparent: origin.traceparent,
                meta_log_level: origin.meta_log_level,
                inputs: Mutex::new(origin.inputs),
            }),
        }
    }

    pub(crate) fn take_inputs(&self) -> Inputs {
        std::mem::take(
            &mut *self
                .inner
                .inputs
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &Id {
        &self.inner.id
    }

    /// The era the request came in.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// What a call of tool `tool` answers when its arguments do not validate (`why`): -32602
    /// before 2025-11-25, and from it on (the stateless era too) a result with
    /// `isError: true` for the model to correct, as each version's specification says.
    pub fn invalid_arguments(&self, tool: &str, why: &str) -> Result<Reply, HandlerError> {
        let message = format!("invalid arguments for tool {tool}: {why}");
        if self.protocol_version() >= INPUT_ERRORS_AS_RESULTS {
            Ok(Reply::tool_error(message))
        } else {
            Err(HandlerError::invalid_params(message))
        }
    }

    /// The request's protocol version (the negotiated one in the handshake era).
    pub fn protocol_version(&self) -> &str {
        &self.inner.negotiated.version
    }

    /// The client's capabilities as the server keeps them (`{}` when it declared none):
    /// those the specification defines for a client (`roots`, `sampling`, `elicitation`,
    /// `tasks`), each with only the fields it defines (`sampling.tools`,
    /// `elicitation.url`, `roots.listChanged`, …), a declared one as an object.
    /// `experimental` and `extensions` are not kept: a client may send any amount there,
    /// and a session keeps what it was told for as long as the client wants.
    pub fn client_capabilities(&self) -> &Value {
        &self.inner.negotiated.capabilities
    }

    /// Whether the client declared `capability` (`sampling`, `elicitation`, `roots`,
    /// `tasks`).
    pub fn client_supports(&self, capability: &str) -> bool {
        self.inner
            .negotiated
            .capabilities
            .get(capability)
            .is_some_and(|c| !c.is_null())
    }

    /// Who the client says it is: `clientInfo` from `initialize` (handshake era) or from
    /// the request's `_meta` (2026-07-28), its name and version cut at 128 and 64 bytes;
    /// `None` if it did not say.
    pub fn client_info(&self) -> Option<&ClientInfo> {
        self.inner.negotiated.client.as_ref()
    }

    /// Who sent the request, when the transport authenticates its clients (HTTP with
    /// [`Auth`](switchboard_transports::server::http::Auth)); `None` otherwise.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.session.principal().map(|p| &**p)
    }

    /// The request's session, as a number unique in this process (handshake era: one per
    /// `initialize`, on HTTP one per `Mcp-Session-Id`): for keeping something per session
    /// (a gateway's instance of an isolated server) or telling sessions apart (an audit
    /// trail, hashed). Not the `Mcp-Session-Id` itself, which a client may present as a
    /// credential. `None` for a 2026-07-28 request, which has no session. A sealed session
    /// restored by another replica has another number there.
    pub fn session_key(&self) -> Option<u64> {
        match self.inner.era {
            Era::Handshake => Some(self.inner.session.key),
            _ => None,
        }
    }

    /// Whether the request's session has ended: its client closed it (or its stream), or
    /// it expired.
    pub fn session_closed(&self) -> bool {
        self.inner.session.is_closed()
    }

    /// The request's W3C trace context (`_meta.traceparent`, else the HTTP `traceparent`
    /// header), when well-formed.
    pub fn traceparent(&self) -> Option<&str> {
        self.inner.traceparent.as_deref()
    }

    /// The request's progress token, if it asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.inner.progress_token.as_ref()
    }

    /// Sends a notification about this request (on HTTP, on its event stream), waiting for
    /// room toward the client; `false` if the client is gone.
    pub async fn notify(&self, method: &str, params: Value) -> bool {
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(Bytes::from(serde_json::to_vec(&frame).unwrap_or_default()))
            .await
    }

    /// Sends bytes as they are on this request's stream. For fixtures that misbehave on
    /// purpose; everything else sends messages.
    pub async fn send_raw(&self, frame: Bytes) -> bool {
        self.inner.responder.send(frame).await.is_ok()
    }

    /// Reports progress if the request asked for it; `false` if it did not or the client
    /// is gone.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(token) = &self.inner.progress_token else {
            return false;
        };
        let mut params = json!({"progressToken": token, "progress": number(progress)});
        if let Some(total) = total {
            params["total"] = number(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify("notifications/progress", params).await
    }

    /// The least severe level a log message must have to be sent: the session's
    /// `logging/setLevel` in the handshake era, the request's `_meta` level in 2026-07-28
    /// (`None`: the request asked for no log messages).
    pub fn log_level(&self) -> Option<&'static str> {
        self.level_index().map(|i| logging::LEVELS[i])
    }

    fn level_index(&self) -> Option<usize> {
        match self.inner.era {
            Era::Handshake => Some(self.inner.session.log_level()),
            Era::Stateless => self.inner.meta_log_level,
        }
    }

    /// Sends `notifications/message` if `level` passes the [`log_level`](Self::log_level);
    /// says whether it was sent. An unknown level is sent as `info`.
    pub async fn log(&self, level: &str, logger: Option<&str>, data: Value) -> bool {
        let index = logging::parse(level).unwrap_or(logging::DEFAULT);
        match self.level_index() {
            Some(threshold) if index >= threshold => {}
            _ => return false,
        }
        let mut params = json!({"level": logging::LEVELS[index], "data": data});
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify("notifications/message", params).await
    }

    /// Asks the client for input (`method` is `sampling/createMessage`,
    /// `elicitation/create` or `roots/list`) and returns its result.
    ///
    /// `key` names the request among this handler's inputs; it must be the same on every
    /// run of the handler. Fails with [`HandlerError::MissingCapability`] if the client did
    /// not declare what the method needs, and in 2026-07-28 with
    /// [`HandlerError::InputRequired`] until the client's retry brings the answer.
    pub async fn input(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, HandlerError> {
        let mut answers = self
            .inputs(vec![(key.to_owned(), method.to_owned(), params)])
            .await?;
        Ok(answers.pop().unwrap_or(Value::Null))
    }

    /// Asks for several inputs at once: in 2026-07-28 they travel in one input-required
    /// result; in the handshake era they are asked in turn. The answers come in order.
    pub async fn inputs(
        &self,
        requests: Vec<(String, String, Value)>,
    ) -> Result<Vec<Value>, HandlerError> {
        for (_, method, _) in &requests {
            if let Some(capability) = capability_of(method) {
                if !self.client_supports(capability) {
                    return Err(HandlerError::MissingCapability {
                        capability: capability.to_owned(),
                    });
                }
            }
        }
        match self.inner.era {
            Era::Handshake => {
                let mut answers = Vec::with_capacity(requests.len());
                for (_, method, params) in requests {
                    let timeout = self.inner.input_timeout;
                    match self.request_client(&method, Some(params), timeout).await {
                        Ok(Outcome::Result(raw)) => {
                            answers.push(serde_json::from_str(raw.get()).unwrap_or(Value::Null))
                        }
                        Ok(Outcome::Error(e)) => return Err(HandlerError::Rpc(e)),
                        Err(e) => {
                            return Err(HandlerError::Rpc(
                                switchboard_codecs::jsonrpc::ErrorObject::new(
                                    switchboard_codecs::jsonrpc::ErrorObject::INTERNAL_ERROR,
                                    e,
                                ),
                            ))
                        }
                    }
                }
                Ok(answers)
            }
            Era::Stateless => {
                let mut inputs = self
                    .inner
                    .inputs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let mut answers = Vec::with_capacity(requests.len());
                for (key, method, params) in requests {
                    match inputs.answers.get(&key) {
                        Some(answer) => answers.push(answer.clone()),
                        None => {
                            inputs
                                .missing
                                .insert(key, json!({"method": method, "params": params}));
                        }
                    }
                }
                if inputs.missing.is_empty() {
                    Ok(answers)
                } else {
                    Err(HandlerError::InputRequired)
                }
            }
        }
    }

    /// The state this handler kept with [`set_state`](Self::set_state) on an earlier
    /// round of the same request (2026-07-28), verified as the server sealed it.
    pub fn state(&self) -> Option<Value> {
        self.inner
            .inputs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .state
            .clone()
    }

    /// Keeps `state` for the client's retry of this request (sealed into `requestState`).
    pub fn set_state(&self, state: Value) {
        self.inner
            .inputs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .state = Some(state);
    }

    /// Sends a request to the client and waits for its answer, for at most `timeout`: the
    /// handshake era only (a 2026-07-28 server sends the client no requests; use
    /// [`input`](Self::input)).
    pub async fn request_client(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Outcome, String> {
        if self.inner.era == Era::Stateless {
            return Err("a 2026-07-28 server sends the client no requests".to_owned());
        }
        let (id, rx, _forget) = self.inner.session.expect_answer();
        let mut frame = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            frame["params"] = params;
        }
        if !self
            .send_raw(Bytes::from(serde_json::to_vec(&frame).unwrap_or_default()))
            .await
        {
            return Err("the client is gone".to_owned());
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(_)) => Err("the connection closed".to_owned()),
            Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
        }
    }

    /// Whether this session subscribed to `uri` (handshake era).
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.inner.session.is_subscribed(uri)
    }

    /// Tells every client that the tool list changed.
    pub fn tools_changed(&self) {
        self.inner.audience.announce(Change::Tools);
    }

    /// Tells every client that the resource list changed.
    pub fn resources_changed(&self) {
        self.inner.audience.announce(Change::Resources);
    }

    /// Tells every client that the prompt list changed.
    pub fn prompts_changed(&self) {
        self.inner.audience.announce(Change::Prompts);
    }

    /// Tells the clients subscribed to `uri` that it changed.
    pub fn resource_updated(&self, uri: &str) {
        self.inner
            .audience
            .announce(Change::Resource(uri.to_owned()));
    }
}

/// A whole number as an integer, so that `5` is not sent as `5.0`.
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

/// The client capability a request to the client needs.
fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}
