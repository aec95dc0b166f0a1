//! Serving one message: which era it belongs to, what the protocol answers itself
//! (`initialize`, `ping`, `logging/setLevel`, subscriptions, `server/discover`,
//! `subscriptions/listen`), and what goes to the handler.
//!
//! Every request runs on its own task, registered in its session so that
//! `notifications/cancelled` (or, on HTTP, the client closing the response stream) stops it
//! (`Session::spawn`). The era is read from the request itself: one whose `_meta` names a
//! protocol version
//! is a 2026-07-28 request, served without a session's state and answered with
//! `resultType`, the caching hints and the server's identity; anything else belongs to the
//! session `initialize` opened.

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Notification, Request};
use switchboard_codecs::mcp::modern::{self, meta};
use switchboard_codecs::mcp::ToolCall;
use switchboard_transports::server::{Inbound, Responder};

use crate::arguments::Arguments;
use crate::audience::Listen;
use crate::client::Negotiated;
use crate::context::{Context, Era, Inputs, Origin};
use crate::error::{HandlerError, RESOURCE_NOT_FOUND};
use crate::handler::{Reply, Seen, TextReply};
use crate::logging;
use crate::session::Session;
use crate::shared::Core;
use crate::HANDSHAKE_VERSIONS;

#[derive(Serialize)]
struct ErrorFrame<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    error: &'a ErrorObject,
}

/// A response with this result. The envelope is written by hand, the bytes a serializer would
/// write, without its walk over two fixed keys (a result already serialized is copied in).
fn result_frame<T: Serialize + ?Sized>(id: &Id, result: &T) -> Bytes {
    result_frame_sized(id, result, 128)
}

/// As [`result_frame`], in a buffer of `capacity` bytes: a frame that fills its buffer
/// exactly becomes `Bytes` without a second allocation for a shared header (and a small
/// one stays in glibc's fast bins, which a 128-byte buffer has outgrown).
fn result_frame_sized<T: Serialize + ?Sized>(id: &Id, result: &T, capacity: usize) -> Bytes {
    frame_around(id, capacity, |frame| serde_json::to_writer(frame, result))
}

/// A response whose result `write` writes, in a buffer of `capacity` bytes.
fn frame_around(
    id: &Id,
    capacity: usize,
    write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> Bytes {
    let mut frame = Vec::with_capacity(capacity);
    frame.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // An id or a result that does not serialize cannot come from a parsed request or a
    // handler's value; were it to, the client hears an internal error, not half a frame.
    let written = serde_json::to_writer(&mut frame, id).and_then(|()| {
        frame.extend_from_slice(br#","result":"#);
        write(&mut frame)
    });
    if written.is_err() {
        let error = ErrorObject::new(ErrorObject::INTERNAL_ERROR, "the result did not serialize");
        return error_frame(id, &error);
    }
    frame.push(b'}');
    Bytes::from(frame)
}

/// The length of a response's envelope, without its id and its result.
const ENVELOPE_LEN: usize = r#"{"jsonrpc":"2.0","id":,"result":}"#.len();

/// A response around a result already serialized. One with a line break between its tokens
/// (pretty-printed) would end a stdio line early, or an event's data line: it is written
/// anew, compact.
fn json_result_frame(id: &Id, result: &RawValue) -> Bytes {
    let text = result.get();
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            return result_frame(id, &value);
        }
    }
    result_frame_sized(id, result, ENVELOPE_LEN + id_len(id) + text.len())
}

/// A response around a text result, serialized straight into a buffer of its size.
fn text_result_frame(id: &Id, text: &TextReply) -> Bytes {
    let capacity = ENVELOPE_LEN + id_len(id) + text.serialized_len();
    frame_around(id, capacity, |frame| text.write_into(frame))
}

/// The length of `id` serialized: exact for a number, and for a string with nothing to
/// escape.
fn id_len(id: &Id) -> usize {
    match id {
        Id::Number(n) => {
            let digits = n
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |log| log as usize + 1);
            digits + usize::from(*n < 0)
        }
        Id::String(s) => s.len() + 2,
    }
}

fn error_frame(id: &Id, error: &ErrorObject) -> Bytes {
    let frame = ErrorFrame {
        jsonrpc: "2.0",
        id,
        error,
    };
    Bytes::from(serde_json::to_vec(&frame).unwrap_or_default())
}

fn rpc(code: i64, message: impl Into<String>) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(code, message))
}

fn method_not_found(method: &str) -> HandlerError {
    rpc(
        ErrorObject::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
    )
}

fn with_data(mut error: ErrorObject, data: Value) -> ErrorObject {
    error.data = serde_json::value::to_raw_value(&data).ok();
    error
}

/// Hands one message to the protocol.
pub(crate) fn receive(core: &Arc<Core>, session: &Arc<Session>, inbound: Inbound) {
    match inbound {
        Inbound::Request { request, responder } => {
            if !core.handler.observe(Seen::Request(&request)) {
                return;
            }
            let id = request.id.clone();
            let task = serve(core.clone(), session.clone(), request, responder);
            session.spawn(id, task);
        }
        // Calls are read in one pass in handshake-era sessions only (stdio's, HTTP's with
        // a session id); were a stateless one to get a call, it is served as the request
        // it is.
        Inbound::Call { call, responder } if session.stateless => {
            let request = call.into_request();
            receive(core, session, Inbound::Request { request, responder });
        }
        Inbound::Call { call, responder } => {
            if !core.handler.observe(Seen::Call(&call)) {
                return;
            }
            let id = call.id.clone();
            let task = serve_call(core.clone(), session.clone(), call, responder);
            session.spawn(id, task);
        }
        Inbound::Notification(notification)
            if core.handler.observe(Seen::Notification(&notification)) =>
        {
            on_notification(session, &notification);
        }
        Inbound::Response(response) => {
            if !core.handler.observe(Seen::Response(&response)) {
                return;
            }
            let settled = response
                .id
                .as_ref()
                .is_some_and(|id| session.answered(id, response.outcome));
            if !settled {
                tracing::debug!(id = ?response.id, "a response to no request in flight");
            }
        }
        // A kind of message this server does not know yet: nothing to answer.
        _ => {}
    }
}

fn on_notification(session: &Session, notification: &Notification) {
    // `notifications/initialized` and the rest need nothing from the server.
    if notification.method != "notifications/cancelled" {
        return;
    }
    let params: Value = notification
        .params
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null);
    let id = match params.get("requestId") {
        Some(Value::Number(n)) => n.as_i64().map(Id::Number),
        Some(Value::String(s)) => Some(Id::String(s.as_str().into())),
        _ => None,
    };
    // Finished already, most likely: the cancel crossed the answer.
    if !id.is_some_and(|id| session.cancel(&id)) {
        tracing::debug!(%params, "a cancel for no request in flight");
    }
}

/// Serves one request on its task: the answer, unless the client goes away first (then
/// the handler is dropped, which is its cancellation).
async fn serve(core: Arc<Core>, session: Arc<Session>, request: Request, responder: Responder) {
    let watch = responder.clone();
    let id = request.id.clone();
    let answered = tokio::select! {
        // The answer first: most are ready at the first poll, and then the watch on the
        // client is never registered (and unregistered) at all.
        biased;
        answered = answer(&core, &session, request, responder.clone()) => answered,
        _ = watch.closed() => return,
    };
    reply(&id, answered, responder).await;
}

/// Serves one `tools/call` read in one pass on its task, as [`serve`] serves a request.
///
/// The same lines as `serve`'s on purpose: a generic `settle(answer)` that both called
/// moved each answer's future into a second one, and cost 650 instructions a call (6 %).
async fn serve_call(core: Arc<Core>, session: Arc<Session>, call: ToolCall, responder: Responder) {
    let watch = responder.clone();
    let id = call.id.clone();
    let answered = tokio::select! {
        biased;
        answered = answer_call(&core, &session, call, responder.clone()) => answered,
        _ = watch.closed() => return,
    };
    reply(&id, answered, responder).await;
}

/// Writes the answer to request `id`.
async fn reply(id: &Id, answered: Result<Reply, ErrorObject>, responder: Responder) {
    let (frame, code) = match answered {
        Ok(Reply::Result(result)) => (result_frame(id, &result), None),
        Ok(Reply::Json(result)) => (json_result_frame(id, &result), None),
        Ok(Reply::Text(text)) => (text_result_frame(id, &text), None),
        Ok(Reply::Raw(bytes)) => (bytes, None),
        Err(error) => {
            let code = error.code;
            (error_frame(id, &error), Some(code))
        }
    };
    responder.answer(frame, code).await;
}

/// The request's params as a value (`null` when absent).
fn params_of(request: &Request) -> Result<Value, ErrorObject> {
    match request.params.as_deref() {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::new(ErrorObject::INVALID_PARAMS, format!("invalid params: {e}"))
        }),
    }
}

async fn answer(
    core: &Arc<Core>,
    session: &Arc<Session>,
    request: Request,
    responder: Responder,
) -> Result<Reply, ErrorObject> {
    if !session.stateless {
        if let Some(call) = ToolCall::from_request(&request) {
            return answer_call(core, session, call, responder).await;
        }
    }
    if request.method == "initialize" {
        initialize_within_limit(core, &request)?;
    }
    let params = params_of(&request)?;
    let stateless = session.stateless
        || params
            .get("_meta")
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .is_some();
    // Boxed: inline, their states would make every request's future (a task's, allocated
    // by `Session::spawn`) as large as the largest of them, and a call, the request that
    // counts, would take a large allocation for space it never uses.
    let answered = if stateless {
        Box::pin(stateless_answer(core, session, &request, params, responder)).await
    } else {
        Box::pin(handshake_answer(core, session, &request, params, responder)).await
    };
    answered.map_err(|error| into_error(error, stateless))
}

/// Refuses `initialize` params over the server's limit, measured as the text they came
/// in: nothing of an oversized one is parsed, let alone kept.
fn initialize_within_limit(core: &Core, request: &Request) -> Result<(), ErrorObject> {
    let limit = core.options.max_initialize_params;
    match request.params.as_deref().map(|raw| raw.get().len()) {
        Some(len) if len > limit => Err(ErrorObject::new(
            ErrorObject::INVALID_PARAMS,
            format!("initialize params of {len} bytes exceed this server's limit of {limit} bytes"),
        )),
        _ => Ok(()),
    }
}

/// A handshake-era `tools/call`: the tool's answer.
async fn answer_call(
    core: &Arc<Core>,
    session: &Arc<Session>,
    call: ToolCall,
    responder: Responder,
) -> Result<Reply, ErrorObject> {
    let (name, arguments, ctx) = handshake_call(core, session, call, responder);
    call_tool(core, name, arguments, ctx)
        .await
        .map_err(|error| into_error(error, false))
}

/// What serving a handshake-era call needs: the tool, its arguments and its context.
///
/// Not inline in [`answer_call`]: every local would stay in the request's future across
/// the call's await, and that future, boxed once per request, grew into a size glibc
/// serves from its large bins.
fn handshake_call(
    core: &Core,
    session: &Arc<Session>,
    call: ToolCall,
    responder: Responder,
) -> (String, Arguments, Context) {
    let traceparent = traceparent(call.traceparent.as_deref(), &responder);
    let ctx = handshake_context(
        core,
        session,
        &call.id,
        call.progress_token,
        traceparent,
        responder,
    );
    // `null`, like no arguments, is `{}`.
    let arguments = call
        .arguments
        .map_or_else(Arguments::default, Arguments::raw);
    (call.name, arguments, ctx)
}

fn into_error(error: HandlerError, stateless: bool) -> ErrorObject {
    match error {
        HandlerError::Rpc(mut error) if stateless && error.code == RESOURCE_NOT_FOUND => {
            // 2026-07-28 says -32602 for a resource that does not exist.
            error.code = ErrorObject::INVALID_PARAMS;
            error
        }
        HandlerError::Rpc(error) => error,
        HandlerError::MissingCapability { capability } => with_data(
            ErrorObject::new(
                modern::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("this request needs the client capability {capability:?}"),
            ),
            json!({"requiredCapabilities": { capability: {} }}),
        ),
        HandlerError::InputRequired => ErrorObject::new(
            ErrorObject::INTERNAL_ERROR,
            "the handler asked for input outside an input-required round",
        ),
    }
}

/// The request's W3C trace context: its `_meta.traceparent`, else what its transport carried
/// (an HTTP `traceparent` header); only a well-formed one (version `00`, non-zero ids).
fn traceparent(in_meta: Option<&str>, responder: &Responder) -> Option<String> {
    in_meta
        .or_else(|| responder.traceparent())
        .filter(|t| well_formed_traceparent(t))
        .map(str::to_owned)
}

fn well_formed_traceparent(t: &str) -> bool {
    let parts: Vec<&str> = t.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    matches!(parts.as_slice(), [version, trace, parent, flags]
        if *version == "00" && hex(trace, 32) && hex(parent, 16) && hex(flags, 2)
            && trace.bytes().any(|b| b != b'0') && parent.bytes().any(|b| b != b'0'))
}

/// `_meta.traceparent`, when it is a string.
fn meta_traceparent(params: &Value) -> Option<&str> {
    params
        .get("_meta")
        .and_then(|m| m.get("traceparent"))
        .and_then(Value::as_str)
}

fn progress_token(params: &Value) -> Option<Value> {
    params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| !t.is_null())
        .cloned()
}

async fn handshake_answer(
    core: &Arc<Core>,
    session: &Arc<Session>,
    request: &Request,
    params: Value,
    responder: Responder,
) -> Result<Reply, HandlerError> {
    let method = request.method.as_str();
    match method {
        "initialize" => return Ok(Reply::Result(initialize(core, session, &params))),
        "ping" => return Ok(Reply::Result(json!({}))),
        "logging/setLevel" => {
            let level = params.get("level").and_then(Value::as_str).unwrap_or("");
            let level = logging::parse(level).ok_or_else(|| {
                HandlerError::invalid_params(format!("unknown log level: {level:?}"))
            })?;
            session.set_log_level(level);
            return Ok(Reply::Result(json!({})));
        }
        "resources/subscribe" | "resources/unsubscribe" if core.info.resources => {
            let uri = str_param(&params, "uri")?;
            if method == "resources/subscribe" {
                core.handler.check_subscription(uri)?;
                session.subscribe(uri);
            } else {
                session.unsubscribe(uri);
            }
            return Ok(Reply::Result(json!({})));
        }
        modern::SERVER_DISCOVER if core.options.discover => {
            return Ok(Reply::Result(decorate(core, method, discover(core))))
        }
        _ => {}
    }
    let traceparent = traceparent(meta_traceparent(&params), &responder);
    let ctx = handshake_context(
        core,
        session,
        &request.id,
        progress_token(&params),
        traceparent,
        responder,
    );
    feature(core, method, params, ctx).await
}

/// What a handshake-era request's handler sees: the session's negotiated version and
/// client capabilities, and the request's own progress token and trace.
fn handshake_context(
    core: &Core,
    session: &Arc<Session>,
    id: &Id,
    progress_token: Option<Value>,
    traceparent: Option<String>,
    responder: Responder,
) -> Context {
    let origin = Origin {
        id: id.clone(),
        era: Era::Handshake,
        negotiated: session.negotiated(),
        progress_token,
        traceparent,
        meta_log_level: None,
        inputs: Inputs::default(),
    };
    Context::new(
        core.audience.clone(),
        core.options.input_timeout,
        session.clone(),
        responder,
        origin,
    )
}

fn initialize(core: &Core, session: &Session, params: &Value) -> Value {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match (&core.options.force_version, requested) {
        (Some(forced), _) => forced.clone(),
        (None, Some(v)) if HANDSHAKE_VERSIONS.contains(&v) => v.to_owned(),
        (None, _) => HANDSHAKE_VERSIONS[0].to_owned(),
    };
    // Only what serving reads, bounded: the params may be anything up to their limit.
    let capabilities = params.get("capabilities").unwrap_or(&Value::Null);
    session.initialize(Negotiated::new(
        version.clone(),
        capabilities,
        params.get("clientInfo"),
    ));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": core.info.capabilities(),
        "serverInfo": core.info.implementation(),
    });
    if let Some(instructions) = core.handler.instructions() {
        result["instructions"] = Value::String(instructions.into_owned());
    }
    result
}

fn discover(core: &Core) -> Value {
    let mut result = json!({
        "supportedVersions": modern::SUPPORTED_VERSIONS,
        "capabilities": core.info.capabilities(),
    });
    if let Some(instructions) = core.handler.instructions() {
        result["instructions"] = Value::String(instructions.into_owned());
    }
    result
}

/// Methods the 2026-07-28 revision removed.
const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Results a 2026-07-28 client may cache, which carry `ttlMs` and `cacheScope`.
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Adds what a 2026-07-28 result carries: `resultType`, caching hints, `serverInfo`.
fn decorate(core: &Core, method: &str, mut result: Value) -> Value {
    let Some(object) = result.as_object_mut() else {
        return result;
    };
    object
        .entry("resultType")
        .or_insert_with(|| json!("complete"));
    if CACHEABLE.contains(&method) {
        object
            .entry("ttlMs")
            .or_insert_with(|| json!(core.options.ttl_ms));
        let scope = if method == "resources/read" {
            "private"
        } else {
            "public"
        };
        object.entry("cacheScope").or_insert_with(|| json!(scope));
    }
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(meta::SERVER_INFO)
            .or_insert_with(|| core.info.implementation());
    }
    result
}

async fn stateless_answer(
    core: &Arc<Core>,
    session: &Arc<Session>,
    request: &Request,
    mut params: Value,
    responder: Responder,
) -> Result<Reply, HandlerError> {
    let method = request.method.as_str();
    let meta = params.get("_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            HandlerError::invalid_params(format!("missing _meta[{:?}]", meta::PROTOCOL_VERSION))
        })?
        .to_owned();
    if !modern::SUPPORTED_VERSIONS.contains(&version.as_str()) {
        return Err(HandlerError::Rpc(with_data(
            ErrorObject::new(
                modern::UNSUPPORTED_PROTOCOL_VERSION,
                format!("unsupported protocol version {version:?}"),
            ),
            json!({"supported": modern::SUPPORTED_VERSIONS, "requested": version}),
        )));
    }
    let capabilities = meta
        .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            HandlerError::invalid_params(format!("missing _meta[{:?}]", meta::CLIENT_CAPABILITIES))
        })?;
    // What the request's context keeps of its client, as a session keeps it: a handler
    // may hold its context for long, and the gateway passes the capabilities upstream.
    let negotiated = Arc::new(Negotiated::new(
        version,
        capabilities,
        meta.and_then(|m| m.get(meta::CLIENT_INFO)),
    ));
    let meta_log_level = meta
        .and_then(|m| m.get(meta::LOG_LEVEL))
        .and_then(Value::as_str)
        .and_then(logging::parse);
    match method {
        modern::SERVER_DISCOVER if core.options.discover => {
            return Ok(Reply::Result(decorate(core, method, discover(core))))
        }
        modern::SERVER_DISCOVER => {
            // The era probe of a client that also speaks the handshake era: refused as a
            // handshake-era server would, which is no error worth logging.
            core.handler.unknown_method(method);
            return Err(method_not_found(method));
        }
        modern::listen::SUBSCRIPTIONS_LISTEN => {
            return listen(core, request, &params, responder).await;
        }
        method if REMOVED.contains(&method) => {
            return Err(rpc(
                ErrorObject::METHOD_NOT_FOUND,
                format!("{method} was removed in {}", negotiated.version),
            ))
        }
        _ => {}
    }
    let mut inputs = Inputs::default();
    let interactive = matches!(method, "tools/call" | "prompts/get" | "resources/read");
    let subject = params
        .get(if method == "resources/read" {
            "uri"
        } else {
            "name"
        })
        .cloned()
        .unwrap_or(Value::Null);
    if interactive {
        if let Some(state) = params.get("requestState") {
            let opened = state.as_str().and_then(|s| core.sealer.open(s));
            let Some(opened) = opened.filter(|o| o["method"] == method && o["subject"] == subject)
            else {
                return Err(HandlerError::invalid_params(
                    "requestState integrity check failed: it is not a state this server sealed for this request",
                ));
            };
            if let Some(answers) = opened.get("answers").and_then(Value::as_object) {
                inputs.answers = answers.clone();
            }
            inputs.state = opened.get("state").filter(|s| !s.is_null()).cloned();
        }
        if let Some(responses) = params.get("inputResponses") {
            let Some(responses) = responses.as_object() else {
                return Err(HandlerError::invalid_params(
                    "inputResponses must be an object",
                ));
            };
            for (key, answer) in responses {
                if !answer.is_object() {
                    return Err(HandlerError::invalid_params(format!(
                        "inputResponses[{key:?}] must be a result object"
                    )));
                }
                inputs.answers.insert(key.clone(), answer.clone());
            }
        }
        if let Some(object) = params.as_object_mut() {
            object.remove("inputResponses");
            object.remove("requestState");
        }
    }
    let origin = Origin {
        id: request.id.clone(),
        era: Era::Stateless,
        negotiated,
        progress_token: progress_token(&params),
        traceparent: traceparent(meta_traceparent(&params), &responder),
        meta_log_level,
        inputs,
    };
    let ctx = Context::new(
        core.audience.clone(),
        core.options.input_timeout,
        session.clone(),
        responder,
        origin,
    );
    match feature(core, method, params, ctx.clone()).await {
        Ok(Reply::Result(result)) => Ok(Reply::Result(decorate(core, method, result))),
        Ok(Reply::Json(result)) => match serde_json::from_str(result.get()) {
            // The 2026-07-28 fields go inside the object: this era builds the tree after all.
            Ok(result) => Ok(Reply::Result(decorate(core, method, result))),
            Err(_) => Ok(Reply::Json(result)),
        },
        Ok(Reply::Text(text)) => Ok(Reply::Result(decorate(core, method, text.to_value()))),
        Ok(raw) => Ok(raw),
        Err(HandlerError::InputRequired) if interactive => {
            let inputs = ctx.take_inputs();
            let state = json!({
                "method": method,
                "subject": subject,
                "answers": inputs.answers,
                "state": inputs.state,
            });
            let result = json!({
                "resultType": "input_required",
                "inputRequests": inputs.missing,
                "requestState": core.sealer.seal(&state),
            });
            Ok(Reply::Result(decorate(core, method, result)))
        }
        Err(e) => Err(e),
    }
}

/// `subscriptions/listen`: acknowledges the subset of the filter the server serves, then
/// carries matching notifications until the client cancels it (or closes the stream).
///
/// A listen of which the server serves nothing would carry nothing for as long as the
/// client keeps it, holding a stream, a task and (on HTTP) a request slot for nothing: it
/// is acknowledged (with no notifications) and then ended at once, with the result that
/// says the server closed it gracefully.
async fn listen(
    core: &Arc<Core>,
    request: &Request,
    params: &Value,
    responder: Responder,
) -> Result<Reply, HandlerError> {
    let wanted = params.get("notifications").cloned().unwrap_or(Value::Null);
    let flag = |key: &str| wanted.get(key).and_then(Value::as_bool).unwrap_or(false);
    let info = &core.info;
    let tools = flag("toolsListChanged") && info.tools_list_changed;
    let prompts = flag("promptsListChanged") && info.prompts_list_changed && info.prompts;
    let resources = flag("resourcesListChanged") && info.resources_list_changed && info.resources;
    let uris: Vec<String> = if info.resources {
        wanted
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|uris| {
                // A URI the handler refuses is not granted (the ack leaves it out).
                uris.iter()
                    .filter_map(Value::as_str)
                    .filter(|uri| core.handler.check_subscription(uri).is_ok())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut granted = Map::new();
    for (key, on) in [
        ("toolsListChanged", tools),
        ("promptsListChanged", prompts),
        ("resourcesListChanged", resources),
    ] {
        if on {
            granted.insert(key.to_owned(), json!(true));
        }
    }
    if !uris.is_empty() {
        granted.insert("resourceSubscriptions".to_owned(), json!(uris));
    }
    let honoured = !granted.is_empty();
    let subscription_id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
    let ack = json!({
        "jsonrpc": "2.0",
        "method": modern::listen::ACKNOWLEDGED,
        "params": {
            "notifications": granted,
            "_meta": { meta::SUBSCRIPTION_ID: subscription_id },
        },
    });
    if !honoured {
        // Acknowledged all the same: the spec has every subscription begin with its
        // acknowledgement, one that ends at once included, and the result then ends it.
        let _ = responder
            .send(Bytes::from(serde_json::to_vec(&ack).unwrap_or_default()))
            .await;
        let closed = json!({"_meta": { meta::SUBSCRIPTION_ID: subscription_id }});
        return Ok(Reply::Result(decorate(
            core,
            modern::listen::SUBSCRIPTIONS_LISTEN,
            closed,
        )));
    }
    let _guard = core.audience.listen(Listen {
        responder: responder.clone(),
        subscription_id,
        tools,
        prompts,
        resources,
        uris,
    });
    if responder
        .send(Bytes::from(serde_json::to_vec(&ack).unwrap_or_default()))
        .await
        .is_err()
    {
        return Ok(Reply::Result(json!({})));
    }
    // Ends by cancellation: the task is aborted, or the stream's close drops it.
    std::future::pending::<()>().await;
    Ok(Reply::Result(json!({})))
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, HandlerError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| HandlerError::invalid_params(format!("missing string param {key:?}")))
}

/// `arguments` as an object (`{}` when absent).
fn arguments(params: &Value) -> Result<Value, HandlerError> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(args @ Value::Object(_)) => Ok(args.clone()),
        Some(_) => Err(HandlerError::invalid_params("arguments must be an object")),
    }
}

/// The methods of the application's features, the same in both eras.
async fn feature(
    core: &Arc<Core>,
    method: &str,
    params: Value,
    ctx: Context,
) -> Result<Reply, HandlerError> {
    let info = &core.info;
    let handler = core.handler.clone();
    let page_size = core.options.page_size;
    let list = |all: &[Value], key: &str| page(all, key, &params, page_size).map(Reply::Result);
    match method {
        "tools/list" => match ctx.principal().filter(|p| p.tools.is_some()) {
            // A principal limited to some tools sees only those.
            Some(principal) => {
                let tools = handler.tools();
                let visible: Vec<Value> = tools
                    .iter()
                    .filter(|t| {
                        t["name"]
                            .as_str()
                            .is_some_and(|n| principal.may_use_tool(n))
                    })
                    .cloned()
                    .collect();
                list(&visible, "tools")
            }
            None => list(&handler.tools(), "tools"),
        },
        "tools/call" => {
            let name = str_param(&params, "name")?.to_owned();
            let mut params = params;
            let args = match params.get_mut("arguments").map(Value::take) {
                None | Some(Value::Null) => Arguments::default(),
                Some(args) => Arguments::from(args),
            };
            call_tool(core, name, args, ctx).await
        }
        "resources/list" if info.resources => list(&handler.resources(), "resources"),
        "resources/templates/list" if info.resources => {
            list(&handler.resource_templates(), "resourceTemplates")
        }
        "resources/read" if info.resources => {
            let uri = str_param(&params, "uri")?.to_owned();
            handler.read_resource(uri, ctx).await.map(Reply::Result)
        }
        "prompts/list" if info.prompts => list(&handler.prompts(), "prompts"),
        "prompts/get" if info.prompts => {
            let name = str_param(&params, "name")?.to_owned();
            let args = arguments(&params)?;
            handler.get_prompt(name, args, ctx).await.map(Reply::Result)
        }
        "completion/complete" if info.completions => {
            handler.complete(params, ctx).await.map(Reply::Result)
        }
        method => {
            handler.unknown_method(method);
            Err(method_not_found(method))
        }
    }
}

/// Runs tool `name`, if the request's principal may use it.
async fn call_tool(
    core: &Arc<Core>,
    name: String,
    arguments: Arguments,
    ctx: Context,
) -> Result<Reply, HandlerError> {
    if ctx.principal().is_some_and(|p| !p.may_use_tool(&name)) {
        // As for a tool that does not exist: its existence is not this client's.
        return Err(HandlerError::invalid_params(format!(
            "unknown tool: {name}"
        )));
    }
    // The handler decides what bad arguments mean (an isError result, as MCP wants).
    core.handler.clone().call_tool(name, arguments, ctx).await
}

/// One page of a list, `{key: [...], "nextCursor"?: ...}`. The cursor is the index of the
/// page's first item, as a string: opaque to clients.
fn page(all: &[Value], key: &str, params: &Value, page_size: usize) -> Result<Value, HandlerError> {
    let invalid = || HandlerError::invalid_params("invalid cursor");
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => match cursor.parse::<usize>() {
            Ok(start) if start > 0 && start < all.len() => start,
            _ => return Err(invalid()),
        },
        Some(_) => return Err(invalid()),
    };
    let end = match page_size {
        0 => all.len(),
        size => start.saturating_add(size).min(all.len()),
    };
    let mut result = json!({ key: &all[start..end] });
    if end < all.len() {
        result["nextCursor"] = json!(end.to_string());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::well_formed_traceparent;

    #[test]
    fn a_pretty_printed_result_is_written_on_one_line() {
        let id = switchboard_codecs::jsonrpc::Id::Number(3);
        let raw =
            serde_json::value::RawValue::from_string("{\n  \"a\": [1,\r\n 2]\n}".into()).unwrap();
        let frame = super::json_result_frame(&id, &raw);
        assert_eq!(
            &frame[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"a":[1,2]}}"#
        );
        let compact = serde_json::value::RawValue::from_string(r#"{"b":"x\ny"}"#.into()).unwrap();
        let frame = super::json_result_frame(&id, &compact);
        assert_eq!(
            &frame[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"b":"x\ny"}}"#
        );
        // The same bytes as a serializer's of the whole response, for either kind of id and
        // either kind of result.
        #[derive(serde::Serialize)]
        struct Response<'a, T: ?Sized> {
            jsonrpc: &'static str,
            id: &'a switchboard_codecs::jsonrpc::Id,
            result: &'a T,
        }
        let serialized = |id: &switchboard_codecs::jsonrpc::Id,
                          result: &serde_json::value::RawValue| {
            serde_json::to_vec(&Response {
                jsonrpc: "2.0",
                id,
                result,
            })
            .unwrap()
        };
        let value: serde_json::Value = serde_json::from_str(compact.get()).unwrap();
        for id in [id, switchboard_codecs::jsonrpc::Id::String("a\"b".into())] {
            let expected = serialized(&id, &compact);
            assert_eq!(&super::json_result_frame(&id, &compact)[..], &expected[..]);
            assert_eq!(&super::result_frame(&id, &value)[..], &expected[..]);
        }
    }

    #[test]
    fn a_text_result_is_written_as_a_serializer_writes_it_in_a_buffer_of_its_size() {
        use crate::handler::Reply;
        use switchboard_codecs::jsonrpc::Id;
        let texts = [
            "",
            "hello",
            "a \"quoted\" \\ path",
            "tab\tline\nbell\u{7}\u{1f}",
            "é ✓ \u{7f}",
        ];
        for text in texts {
            for (reply, is_error) in [(Reply::text(text), false), (Reply::tool_error(text), true)] {
                let Reply::Text(reply) = reply else {
                    panic!("not a text reply")
                };
                let id = Id::Number(12);
                let frame = super::text_result_frame(&id, &reply);
                let mut result = serde_json::json!({"content": [{"type": "text", "text": text}]});
                if is_error {
                    result["isError"] = true.into();
                }
                let expected = serde_json::json!({"jsonrpc": "2.0", "id": 12, "result": result});
                let written: serde_json::Value = serde_json::from_slice(&frame).unwrap();
                assert_eq!(written, expected, "{text:?}");
                // Byte for byte as a compact serializer writes it, keys in the schema's order.
                let exact = format!(
                    r#"{{"jsonrpc":"2.0","id":12,"result":{{"content":[{{"type":"text","text":{}}}]{}}}}}"#,
                    serde_json::to_string(text).unwrap(),
                    if is_error { r#","isError":true"# } else { "" },
                );
                assert_eq!(std::str::from_utf8(&frame).unwrap(), exact);
                assert_eq!(written["result"], reply.to_value(), "{text:?} as a value");
                let envelope = r#"{"jsonrpc":"2.0","id":12,"result":}"#.len();
                assert_eq!(
                    frame.len(),
                    envelope + reply.serialized_len(),
                    "{text:?} measured"
                );
                assert_eq!(
                    crate::handler::escaped_len(text),
                    serde_json::to_string(text).unwrap().len()
                );
            }
        }
        // Structured content is not measured, and is written all the same.
        let Reply::Text(reply) = Reply::structured(serde_json::json!({"n": 1})) else {
            panic!("not a text reply")
        };
        let frame = super::text_result_frame(&Id::Number(1), &reply);
        let written: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(written["result"]["structuredContent"]["n"], 1);
        assert_eq!(written["result"]["content"][0]["text"], r#"{"n":1}"#);
        assert_eq!(written["result"], reply.to_value());
    }

    #[test]
    fn an_id_is_measured_as_it_is_written() {
        use switchboard_codecs::jsonrpc::Id;
        for n in [0, 7, 9, 10, 99, 100, -1, -10, 123_456, i64::MAX, i64::MIN] {
            let id = Id::Number(n);
            assert_eq!(
                super::id_len(&id),
                serde_json::to_vec(&id).unwrap().len(),
                "{n}"
            );
        }
        assert_eq!(super::id_len(&Id::String("abc".into())), 5);
        // A negative id in a frame sized by it.
        let raw = serde_json::value::RawValue::from_string(r#"{"ok":true}"#.into()).unwrap();
        let frame = super::json_result_frame(&Id::Number(-42), &raw);
        assert_eq!(
            &frame[..],
            br#"{"jsonrpc":"2.0","id":-42,"result":{"ok":true}}"#
        );
    }

    #[test]
    fn only_a_well_formed_traceparent_is_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(well_formed_traceparent(good));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert!(!well_formed_traceparent(bad), "{bad}");
        }
    }
}
