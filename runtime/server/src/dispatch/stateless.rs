//! The stateless era (2026-07-28): `server/discover`, the version and client capabilities
//! in every request's `_meta`, input-required rounds with a sealed `requestState`,
//! `subscriptions/listen`, and what every result of this era carries (`resultType`,
//! `ttlMs`/`cacheScope`, the server's identity).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Map, Value};
use switchboard_codecs::jsonrpc::{ErrorObject, Request};
use switchboard_codecs::mcp::modern::{self, meta};
use switchboard_transports::server::Responder;

use super::{
    feature, meta_traceparent, method_not_found, progress_token, rpc, traceparent, with_data,
};
use crate::audience::Listen;
use crate::client::Negotiated;
use crate::context::{Context, Era, Inputs, Origin};
use crate::error::HandlerError;
use crate::handler::Reply;
use crate::logging;
use crate::session::Session;
use crate::shared::Core;

pub(super) fn discover(core: &Core) -> Value {
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
    // The skills extension's results are cacheable as the lists and reads are.
    "skills/list",
    "skills/get",
];

/// Adds what a 2026-07-28 result carries: `resultType`, caching hints, `serverInfo`.
pub(super) fn decorate(core: &Core, method: &str, mut result: Value) -> Value {
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

pub(super) async fn stateless_answer(
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
