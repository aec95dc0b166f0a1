//! The requests the gateway forwards: a front request in, the upstream's answer out.
//!
//! A tool call goes through [`Runtime::call_tool`] (the catalogue routes it), with the
//! upstream's progress passed on to the front client when the front request asked for it,
//! its log messages at the front's level, and its requests to the client asked of the front
//! client ([`crate::asks`]).
//! Prompts, resources and completion are routed by the runtime to their owner and sent
//! there as they came, the upstream's answer passed back untouched but for being checked as
//! JSON. Dropping any of these futures (the front client cancelled, or closed its HTTP
//! stream) drops the upstream request, which sends the upstream `notifications/cancelled`.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard::client::ClientHandlers;
use switchboard::model::LoggingLevel;
use switchboard::{Progress, Runtime, ServerHandle, ServerLog};
use switchboard_server::{Context, HandlerError, Reply};
use tokio::sync::mpsc;

use crate::asks::{Bridge, FrontWait, Need};
use crate::error::{to_front, unreadable};
use crate::instances::Instances;

/// How many progress notifications and log messages may wait for room toward the front
/// client; past that they are dropped (the next progress says as much as the lost ones did;
/// a lost log line stays in the gateway's own log).
const SAID_QUEUE: usize = 256;

/// What the upstream said about a call before its answer, on its way to the front client.
enum Said {
    Progress(Progress),
    Log(ServerLog),
}

/// A forwarded tool result, and whether it says `"isError": true` (for the metrics).
pub(crate) struct Forwarded {
    pub(crate) reply: Reply,
    pub(crate) is_error: bool,
}

impl crate::metrics::Answer for Forwarded {
    fn is_tool_error(&self) -> bool {
        self.is_error
    }

    fn bytes(&self) -> u64 {
        match &self.reply {
            Reply::Json(raw) => raw.get().len() as u64,
            Reply::Result(value) => crate::audit::json_len(value),
            Reply::Raw(bytes) => bytes.len() as u64,
            // Not made by a forward: its size is not worth building its text for.
            _ => 0,
        }
    }
}

/// Calls catalogue tool `name` and answers its result, an `isError` one included. The
/// upstream's progress and log messages about the call go to the front client, and so do
/// its requests to the client (see [`crate::asks`]).
pub(crate) async fn call_tool(
    runtime: &Runtime,
    instances: &Instances,
    name: &str,
    arguments: Box<RawValue>,
    ctx: &Context,
) -> Result<Forwarded, HandlerError> {
    // An isolated server's call goes to the caller's instance, by the tool's own name.
    let instance = instances.for_tool(runtime, name, ctx).await?;
    let (runtime, name) = match &instance {
        Some((lease, tool)) => (lease.runtime(), tool.as_str()),
        None => (runtime, name),
    };
    let wait = Arc::new(FrontWait::default());
    let bridge = Bridge::new(ctx.clone(), wait.clone());
    let mut call = runtime
        .call_tool_json(name, arguments)
        .client_handlers(ClientHandlers::new().forward(bridge));
    // The front's trace goes on upstream (the front's other `_meta` speaks its own era).
    if let Some(traceparent) = ctx.traceparent() {
        let mut meta = serde_json::Map::new();
        meta.insert("traceparent".into(), Value::String(traceparent.to_owned()));
        call = call.meta(meta);
    }
    // The callbacks run where the upstream is read: they must not wait, so they only queue.
    let (said_tx, mut said) = mpsc::channel::<Said>(SAID_QUEUE);
    if ctx.progress_token().is_some() {
        let tx = said_tx.clone();
        call = call.on_progress(move |p| {
            let _ = tx.try_send(Said::Progress(p));
        });
    }
    if let Some(level) = ctx.log_level().and_then(level_of) {
        let tx = said_tx.clone();
        call = call.on_log(level, move |log| {
            let _ = tx.try_send(Said::Log(log));
        });
    }
    drop(said_tx);
    let sent = call.raw();
    tokio::pin!(sent);
    let answered = loop {
        tokio::select! {
            answered = &mut sent => break Some(answered),
            Some(message) = said.recv() => pass_on(ctx, message).await,
            // The front client must answer first, or cannot: this upstream call is over.
            () = wait.raised() => break None,
        }
    };
    // What the upstream sent before its answer goes out before the answer.
    while let Ok(message) = said.try_recv() {
        pass_on(ctx, message).await;
    }
    let raw = answer_or_need(&wait, answered, name)?;
    let is_error = checked(raw.get(), name)?;
    Ok(Forwarded {
        reply: Reply::Json(raw),
        is_error,
    })
}

/// The upstream's answer for the front client, or what the front client must do first (a
/// need raised while the call ran wins over its answer: the upstream was refused input).
/// `answered` is `None` when the need ended the wait.
fn answer_or_need(
    wait: &FrontWait,
    answered: Option<switchboard::Result<Box<RawValue>>>,
    what: &str,
) -> Result<Box<RawValue>, HandlerError> {
    match (wait.need(), answered) {
        (None, Some(answered)) => answered.map_err(|e| to_front(&e, what)),
        (need, _) => Err(need.unwrap_or(Need::Input).into_error()),
    }
}

async fn pass_on(ctx: &Context, said: Said) {
    match said {
        Said::Progress(p) => {
            ctx.progress(p.progress, p.total, p.message.as_deref())
                .await;
        }
        Said::Log(log) => {
            let level = serde_json::to_value(log.level).unwrap_or(Value::Null);
            ctx.log(
                level.as_str().unwrap_or("info"),
                log.logger.as_deref(),
                log.data,
            )
            .await;
        }
    }
}

/// The runtime's level for the front's level name (read from the name itself: every
/// forwarded call asks, and a tree of one string was an allocation each time).
fn level_of(name: &str) -> Option<LoggingLevel> {
    use serde::de::IntoDeserializer;
    let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
        name.into_deserializer();
    serde::Deserialize::deserialize(name).ok()
}

/// Gets prompt `name` (a prompt catalogue name) from its owner; what the upstream asks the
/// client for it is asked of the front client.
pub(crate) async fn get_prompt(
    runtime: &Runtime,
    instances: &Instances,
    name: &str,
    arguments: Value,
    ctx: &Context,
) -> Result<Value, HandlerError> {
    let (server, prompt) = runtime
        .prompt_owner(name)
        .await
        .map_err(|e| to_front(&e, name))?;
    let instance = instances.lease(runtime, &server, ctx).await?;
    let server = match &instance {
        Some(lease) => lease.server()?,
        None => server,
    };
    let params = json!({"name": prompt, "arguments": arguments});
    asking(
        ctx,
        |handlers| server.request_with_handlers("prompts/get", Some(params), handlers),
        name,
    )
    .await
}

/// Reads `uri` from the one upstream that lists it (or a template matching it).
pub(crate) async fn read_resource(
    runtime: &Runtime,
    instances: &Instances,
    uri: &str,
    ctx: &Context,
) -> Result<Value, HandlerError> {
    let server = runtime
        .resource_owner(uri)
        .await
        .map_err(|e| to_front(&e, uri))?;
    let instance = instances.lease(runtime, &server, ctx).await?;
    let server = match &instance {
        Some(lease) => lease.server()?,
        None => server,
    };
    let raw = server
        .read_resource_raw(uri)
        .await
        .map_err(|e| to_front(&e, uri))?;
    parse(raw.get(), uri)
}

/// Sends the request `send` makes with a bridge to the front client, and answers its result,
/// or that the front client must answer first (see [`crate::asks`]).
async fn asking<F>(
    ctx: &Context,
    send: impl FnOnce(ClientHandlers) -> F,
    what: &str,
) -> Result<Value, HandlerError>
where
    F: std::future::Future<Output = switchboard::Result<Box<serde_json::value::RawValue>>>,
{
    let wait = Arc::new(FrontWait::default());
    let handlers = ClientHandlers::new().forward(Bridge::new(ctx.clone(), wait.clone()));
    let sent = send(handlers);
    tokio::pin!(sent);
    let answered = tokio::select! {
        answered = &mut sent => Some(answered),
        () = wait.raised() => None,
    };
    let raw = answer_or_need(&wait, answered, what)?;
    parse(raw.get(), what)
}

/// Completes an argument of a prompt (by its catalogue name) or of a resource template (by
/// its URI template), at the upstream that offers it.
pub(crate) async fn complete(runtime: &Runtime, mut params: Value) -> Result<Value, HandlerError> {
    // The front request's `_meta` speaks the front client's era, not the upstream's.
    if let Some(params) = params.as_object_mut() {
        params.remove("_meta");
    }
    let reference = &params["ref"];
    let (server, what) = match reference["type"].as_str() {
        Some("ref/prompt") => {
            let name = reference["name"].as_str().unwrap_or_default().to_owned();
            let (server, prompt) = runtime
                .prompt_owner(&name)
                .await
                .map_err(|e| to_front(&e, &name))?;
            params["ref"]["name"] = Value::String(prompt);
            (server, name)
        }
        Some("ref/resource") => {
            let uri = reference["uri"].as_str().unwrap_or_default().to_owned();
            (template_owner(runtime, &uri)?, uri)
        }
        _ => {
            return Err(HandlerError::invalid_params(
                "ref must be a ref/prompt with a name or a ref/resource with a uri",
            ))
        }
    };
    request(&server, "completion/complete", params, &what).await
}

/// The one upstream that offers `uri` as a resource template (or as a resource): ready, or
/// restarting (the request waits for it).
fn template_owner(runtime: &Runtime, uri: &str) -> Result<ServerHandle, HandlerError> {
    let mut owners = runtime.servers().into_iter().filter(|server| {
        let status = server.status();
        status.offers_entries()
            && (status
                .resource_templates
                .iter()
                .any(|t| t.uri_template == uri)
                || status.resources.iter().any(|r| r.uri == uri))
    });
    match (owners.next(), owners.next()) {
        (Some(owner), None) => Ok(owner),
        (None, _) => Err(HandlerError::invalid_params(format!(
            "no server offers the resource template `{uri}`"
        ))),
        (Some(first), Some(second)) => Err(HandlerError::invalid_params(format!(
            "servers `{}` and `{}` both list the resource template `{uri}`",
            first.name(),
            second.name()
        ))),
    }
}

async fn request(
    server: &ServerHandle,
    method: &str,
    params: Value,
    what: &str,
) -> Result<Value, HandlerError> {
    let raw = server
        .request(method, Some(params))
        .await
        .map_err(|e| to_front(&e, what))?;
    parse(raw.get(), what)
}

/// The upstream's raw answer as a value, refused when it is not JSON the front client can
/// read (serde refuses invalid escapes and lone surrogates).
pub(crate) fn parse(raw: &str, what: &str) -> Result<Value, HandlerError> {
    serde_json::from_str(raw).map_err(|e| unreadable(what, &e))
}

/// Refuses what is not valid JSON to pass on as it is: the raw values of the runtime's
/// envelope accept an invalid escape or a lone surrogate, which a strict front client
/// would choke on. Every string is decoded, as a parse into a value would, and nothing is
/// built. Answers, from the same pass, whether the result says `"isError": true`.
fn checked(raw: &str, what: &str) -> Result<bool, HandlerError> {
    strict(raw).map_err(|e| unreadable(what, &e))
}

/// `json`, once read strictly as [`checked`] reads an answer: the front client's text to
/// pass on upstream.
pub(crate) fn valid(json: Box<RawValue>) -> Result<Box<RawValue>, serde_json::Error> {
    strict(json.get()).map(|_| json)
}

/// Reads `raw` strictly ([`Strict`]): whether it is an object whose `isError` is `true`.
fn strict(raw: &str) -> Result<bool, serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_str(raw);
    serde::de::DeserializeSeed::deserialize(Strict { top: true }, &mut reader)
        .and_then(|is_error| reader.end().map(|()| is_error))
}

/// Any JSON value, read strictly and kept nowhere. It yields, at the top, whether the
/// object's `isError` is `true`; below, whether the value is `true` itself.
#[derive(Clone, Copy)]
struct Strict {
    top: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for Strict {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

const BELOW: Strict = Strict { top: false };

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
        Ok(v && !self.top)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    // serde_json decodes a string's escapes before it calls this: a bad one fails there.
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element_seed(BELOW)?.is_some() {}
        Ok(false)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut is_error = false;
        while let Some(flag_key) = map.next_key_seed(IsErrorKey)? {
            let value = map.next_value_seed(BELOW)?;
            is_error |= self.top && flag_key && value;
        }
        Ok(is_error)
    }
}

/// A key, read strictly: whether it is `isError`.
struct IsErrorKey;

impl<'de> serde::de::DeserializeSeed<'de> for IsErrorKey {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for IsErrorKey {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == "isError")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarded_result_with_a_bad_string_anywhere_is_refused() {
        for bad in [
            r#"{"content":[{"type":"text","text":"\ud800"}]}"#,
            r#"{"text":"\q"}"#,
            r#"{"\udfff":1}"#,
            r#"{"a":[1,{"b":"\ud800x"}]}"#,
        ] {
            assert!(checked(bad, "t").is_err(), "{bad}");
        }
        for good in [
            r#"{"content":[{"type":"text","text":"\ud83d\ude00 \n"}],"isError":false}"#,
            r#"{"a":[1,2.5,-3,null,true,{"b":"c"}],"e":{}}"#,
        ] {
            assert!(checked(good, "t").is_ok(), "{good}");
        }
    }

    #[test]
    fn an_error_result_is_told_from_its_flag() {
        let is_error = |raw| checked(raw, "t").unwrap();
        assert!(is_error(r#"{"content":[],"isError":true}"#));
        assert!(!is_error(r#"{"content":[],"isError":false}"#));
        assert!(!is_error(r#"{"content":[]}"#));
        // Only the result's own flag counts.
        assert!(!is_error(
            r#"{"content":[],"structuredContent":{"isError":true}}"#
        ));
        assert!(!is_error("true"));
    }

    #[test]
    fn every_front_level_name_is_the_runtime_s() {
        for name in switchboard_server::logging::LEVELS {
            let level = super::level_of(name).expect(name);
            assert_eq!(serde_json::to_value(level).unwrap(), name);
        }
        assert!(super::level_of("loud").is_none());
    }

    #[test]
    fn an_answer_with_a_lone_surrogate_is_refused() {
        assert!(parse(r#"{"content":[{"type":"text","text":"\ud800"}]}"#, "t").is_err());
        assert!(parse(r#"{"text":"\q"}"#, "t").is_err());
        assert_eq!(parse(r#"{"a":1}"#, "t").unwrap(), json!({"a": 1}));
    }
}
