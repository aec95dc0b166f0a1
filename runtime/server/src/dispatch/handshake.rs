//! The handshake era (2024-11-05 … 2025-11-25): `initialize` and what its session keeps
//! (the negotiated version and capabilities, the log level, subscriptions), `ping`, and a
//! `tools/call` whose params are read by type, once.

use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Request};
use switchboard_codecs::mcp::modern;
use switchboard_transports::server::Responder;

use super::stateless::{decorate, discover};
use super::{
    call_tool, feature, into_error, meta_traceparent, progress_token, str_param, traceparent,
};
use crate::arguments::Arguments;
use crate::client::Negotiated;
use crate::context::{Context, Era, Inputs, Origin};
use crate::error::HandlerError;
use crate::handler::Reply;
use crate::logging;
use crate::session::Session;
use crate::shared::Core;
use crate::tool_call::ToolCall;
use crate::HANDSHAKE_VERSIONS;

/// Refuses `initialize` params over the server's limit, measured as the text they came
/// in: nothing of an oversized one is parsed, let alone kept.
pub(super) fn initialize_within_limit(core: &Core, request: &Request) -> Result<(), ErrorObject> {
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
pub(super) async fn answer_call(
    core: Arc<Core>,
    session: Arc<Session>,
    call: ToolCall,
    responder: Responder,
) -> Result<Reply, ErrorObject> {
    let (name, arguments, ctx) = handshake_call(&core, &session, call, responder);
    drop(session);
    call_tool(&core, name, arguments, ctx)
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

pub(super) async fn handshake_answer(
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
