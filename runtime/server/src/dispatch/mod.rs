//! Serving one message: which era it belongs to, what the protocol answers itself
//! (`initialize`, `ping`, `logging/setLevel`, subscriptions, `server/discover`,
//! `subscriptions/listen`), and what goes to the handler.
//!
//! Every request runs on its own task, registered in its session so that
//! `notifications/cancelled` (or, on HTTP, the client closing the response stream) stops it
//! (`Session::spawn`). The era is read from the request itself: one whose `_meta` names a
//! protocol version is a 2026-07-28 request ([`stateless`]: served without a session's
//! state and answered with `resultType`, the caching hints and the server's identity);
//! anything else belongs to the session `initialize` opened ([`handshake`]). What both eras
//! serve alike (the application's features, a tool call, the answer's frame) is here and
//! in [`frames`], once.

mod frames;
mod handshake;
mod stateless;

use std::future::Future;
use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Notification, Request};
use switchboard_codecs::mcp::modern::{self, meta};
use switchboard_codecs::mcp::skills;
use switchboard_transports::server::{Inbound, Responder};

use crate::arguments::Arguments;
use crate::context::Context;
use crate::error::{HandlerError, RESOURCE_NOT_FOUND};
use crate::handler::{Reply, Seen};
use crate::session::Session;
use crate::shared::Core;
use crate::tool_call::ToolCall;

use frames::{error_frame, json_result_frame, result_frame, text_result_frame};
use handshake::{answer_call, handshake_answer, initialize_within_limit};
use stateless::stateless_answer;

pub(super) fn rpc(code: i64, message: impl Into<String>) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(code, message))
}

pub(super) fn method_not_found(method: &str) -> HandlerError {
    rpc(
        ErrorObject::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
    )
}

pub(super) fn with_data(mut error: ErrorObject, data: Value) -> ErrorObject {
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
            let answering = answer(core.clone(), session.clone(), request, responder.clone());
            session.spawn(id.clone(), serve(id, answering, responder));
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

/// Serves one stdio line itself when it is a handshake-era `tools/call`, read in one pass
/// ([`ToolCall::read_line`]); `false` leaves it to the transport's general reading.
pub(crate) fn receive_line(
    core: &Arc<Core>,
    session: &Arc<Session>,
    line: &[u8],
    responder: &Responder,
) -> bool {
    if session.stateless {
        return false;
    }
    let Some(call) = ToolCall::read_line(line) else {
        return false;
    };
    let seen = Seen::Call {
        id: &call.id,
        name: &call.name,
        arguments: call.arguments.as_deref(),
    };
    if !core.handler.observe(seen) {
        return true;
    }
    let id = call.id.clone();
    let answering = answer_call(core.clone(), session.clone(), call, responder.clone());
    session.spawn(id.clone(), serve(id, answering, responder.clone()));
    true
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
async fn serve<A>(id: Id, answering: A, responder: Responder)
where
    A: Future<Output = Result<Reply, ErrorObject>>,
{
    let answered = tokio::select! {
        // The answer first: most are ready at the first poll, and then the watch on the
        // client is never registered (and unregistered) at all.
        biased;
        answered = answering => answered,
        _ = responder.closed() => return,
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
pub(super) fn params_of(request: &Request) -> Result<Value, ErrorObject> {
    match request.params.as_deref() {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::new(ErrorObject::INVALID_PARAMS, format!("invalid params: {e}"))
        }),
    }
}

async fn answer(
    core: Arc<Core>,
    session: Arc<Session>,
    request: Request,
    responder: Responder,
) -> Result<Reply, ErrorObject> {
    if !session.stateless {
        if let Some(call) = ToolCall::from_request(&request) {
            return answer_call(core, session, call, responder).await;
        }
    }
    let (core, session) = (&core, &session);
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

pub(super) fn into_error(error: HandlerError, stateless: bool) -> ErrorObject {
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
pub(super) fn traceparent(in_meta: Option<&str>, responder: &Responder) -> Option<String> {
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
pub(super) fn meta_traceparent(params: &Value) -> Option<&str> {
    params
        .get("_meta")
        .and_then(|m| m.get("traceparent"))
        .and_then(Value::as_str)
}

pub(super) fn progress_token(params: &Value) -> Option<Value> {
    params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| !t.is_null())
        .cloned()
}
pub(super) fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, HandlerError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| HandlerError::invalid_params(format!("missing string param {key:?}")))
}

/// `arguments` as an object (`{}` when absent).
pub(super) fn arguments(params: &Value) -> Result<Value, HandlerError> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(args @ Value::Object(_)) => Ok(args.clone()),
        Some(_) => Err(HandlerError::invalid_params("arguments must be an object")),
    }
}

/// The methods of the application's features, the same in both eras.
pub(super) async fn feature(
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
                            .is_some_and(|n| principal.may_use_tool(n) || handler.tool_for_all(n))
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
        skills::LIST if info.skills => list(&handler.skills(), "skills"),
        skills::GET if info.skills => {
            let uri = str_param(&params, "uri")?.to_owned();
            let skill = handler.get_skill(uri, ctx).await?;
            Ok(Reply::Result(json!({ "skill": skill })))
        }
        skills::DIRECTORY_READ if info.skills && info.skills_directory_read => {
            let uri = str_param(&params, "uri")?.to_owned();
            let children = handler.read_directory(uri, ctx).await?;
            page(&children, "resources", &params, page_size).map(Reply::Result)
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
pub(super) async fn call_tool(
    core: &Arc<Core>,
    name: String,
    arguments: Arguments,
    ctx: Context,
) -> Result<Reply, HandlerError> {
    if ctx
        .principal()
        .is_some_and(|p| !p.may_use_tool(&name) && !core.handler.tool_for_all(&name))
    {
        core.handler.refused_tool(&name, &ctx);
        // As for a tool that does not exist: its existence is not this client's.
        return Err(HandlerError::unknown_tool(&name));
    }
    // The handler decides what bad arguments mean (an isError result, as MCP wants).
    core.handler.clone().call_tool(name, arguments, ctx).await
}

/// One page of a list, `{key: [...], "nextCursor"?: ...}`. The cursor is the index of the
/// page's first item, as a string: opaque to clients.
pub(super) fn page(
    all: &[Value],
    key: &str,
    params: &Value,
    page_size: usize,
) -> Result<Value, HandlerError> {
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
