//! The framer: every frame the client sends is built here, with what its transport must know
//! of it, so that no transport parses the runtime's bytes again. Pure: the exchange gives it
//! each round's facts ([`Round`]).
//!
//! A request's params are written as they are, then `_meta`, built one way ([`Meta`]): the
//! progress token of a `tools/call`, the stateless era's entries (protocol version, our
//! identity and capabilities, the log level a caller chose) for a server spoken to in that
//! era, and any `_meta` entries the caller gave. A handshake-era request without a progress
//! token or the caller's `_meta` has none. For a stateless request over Streamable HTTP the
//! framer also says what its headers carry ([`Stateless`]), from the same values as the
//! body: the version, `Mcp-Name` (the tool, prompt or resource) and the tool's
//! `Mcp-Param-{Name}` headers (from the last listing's `x-mcp-header` annotations).

use std::sync::Arc;

use bytes::Bytes;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_codecs::frame;
use switchboard_codecs::jsonrpc::{Id, Message, Outcome, Response};
use switchboard_codecs::mcp::modern::headers::{encode, ParamHeader};
use switchboard_codecs::mcp::LoggingLevel;
use switchboard_codecs::mcp::{methods, tasks};
use switchboard_transports::connection::Stateless;
use switchboard_transports::Outbound;

use crate::era::{Modern, ModernMeta};

/// A request's params, owned.
#[derive(Debug, Clone)]
pub(crate) enum Params {
    /// An object (`{}` when empty); a `_meta` inside it is merged with the request's own.
    Object(Map<String, Value>),
    /// `tools/call`'s `name` and `arguments` (an object), the `_meta` entries the caller
    /// gave (merged with the request's own, as for [`Params::Object`]), and whether the call
    /// asks to run as a task (2025-11-25; decided against the connection each round goes
    /// to, and written as [`Round::task`]).
    ToolCall {
        name: Arc<str>,
        arguments: Arguments,
        meta: Option<Arc<Map<String, Value>>>,
        task: TaskAsk,
    },
}

/// A tool call's arguments: a tree the caller built, or JSON text a caller already had
/// (a gateway passing its client's on), written as it came.
#[derive(Debug, Clone)]
pub(crate) enum Arguments {
    Tree(Value),
    Text(Box<RawValue>),
}

impl Arguments {
    /// What JSON type they are, when not an object (`None` for an object).
    pub(crate) fn not_an_object(&self) -> Option<&'static str> {
        let kind = match self {
            Arguments::Tree(Value::Object(_)) => return None,
            Arguments::Tree(Value::Null) => "null",
            Arguments::Tree(Value::Bool(_)) => "a boolean",
            Arguments::Tree(Value::Number(_)) => "a number",
            Arguments::Tree(Value::String(_)) => "a string",
            Arguments::Tree(Value::Array(_)) => "an array",
            // A raw value is the value's own text, with no whitespace around it.
            Arguments::Text(text) => match text.get().as_bytes().first() {
                Some(b'{') => return None,
                Some(b'n') => "null",
                Some(b't' | b'f') => "a boolean",
                Some(b'"') => "a string",
                Some(b'[') => "an array",
                _ => "a number",
            },
        };
        Some(kind)
    }

    /// Them as a tree; text is read into one (text that is no JSON is `null`).
    fn tree(&self) -> std::borrow::Cow<'_, Value> {
        match self {
            Arguments::Tree(tree) => std::borrow::Cow::Borrowed(tree),
            Arguments::Text(text) => {
                std::borrow::Cow::Owned(serde_json::from_str(text.get()).unwrap_or(Value::Null))
            }
        }
    }
}

impl Serialize for Arguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Arguments::Tree(tree) => tree.serialize(serializer),
            Arguments::Text(text) => text.serialize(serializer),
        }
    }
}

/// A 2025-11-25 task-augmented request's `params.task`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskParams {
    /// The time to live asked for, in ms.
    pub(crate) ttl_ms: Option<u64>,
}

/// What a tool call asks of tasks (2025-11-25), before the connection it goes to says
/// whether it runs as one (see `crate::core::Connected::task_params`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TaskAsk {
    /// The caller asked for a task (a tool that requires one runs as a task anyway).
    pub(crate) asked: bool,
    /// The time to live to ask for, in ms.
    pub(crate) ttl_ms: u64,
}

impl Params {
    /// `{}`.
    pub(crate) fn empty() -> Params {
        Params::Object(Map::new())
    }

    /// `value`'s entries (`null` is none; anything else but an object too).
    pub(crate) fn from_value(value: Value) -> Params {
        match value {
            Value::Object(map) => Params::Object(map),
            _ => Params::empty(),
        }
    }

    /// The string entry `key` (a prompt's `name`, a resource's `uri`).
    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        match self {
            Params::Object(map) => map.get(key).and_then(Value::as_str),
            Params::ToolCall { name, .. } => (key == "name").then_some(&**name),
        }
    }

    /// The `_meta` entries the caller gave.
    fn meta(&self) -> Option<&Map<String, Value>> {
        match self {
            Params::Object(map) => map.get("_meta").and_then(Value::as_object),
            Params::ToolCall { meta, .. } => meta.as_deref(),
        }
    }
}

/// What a stateless server's input-required answer gave a retry to carry.
#[derive(Debug)]
pub(crate) struct Retry {
    /// The answers to its input requests, by its keys.
    pub(crate) input_responses: Option<Map<String, Value>>,
    /// Its state, echoed byte for byte.
    pub(crate) request_state: Option<Box<RawValue>>,
}

/// One round of a request, as the framer needs it.
pub(crate) struct Round<'a> {
    pub(crate) id: i64,
    pub(crate) method: &'a Arc<str>,
    pub(crate) params: &'a Params,
    pub(crate) retry: Option<&'a Retry>,
    /// Whether `_meta.progressToken` is the round's id (as for `tools/call`).
    pub(crate) progress_token: bool,
    /// The stateless era's dialect, for a server spoken to in it.
    pub(crate) dialect: Option<&'a Modern>,
    /// The capabilities a stateless request declares instead of the dialect's (a call with
    /// handlers of its own).
    pub(crate) capabilities: Option<&'a Value>,
    /// The log level a caller chose (sent in a stateless request's `_meta`).
    pub(crate) level: Option<LoggingLevel>,
    /// Whether the transport sends a stateless request's headers (Streamable HTTP).
    pub(crate) sends_headers: bool,
    /// For `tools/call`, the tool's `Mcp-Param-{Name}` headers (from its listing).
    pub(crate) param_headers: &'a [ParamHeader],
    /// For `tools/call`, its `params.task` when it runs as a task.
    pub(crate) task: Option<TaskParams>,
}

/// Frames one round of a request.
pub(crate) fn request(round: Round<'_>) -> Outbound {
    let meta = Meta {
        progress_token: round.progress_token.then_some(round.id),
        modern: round
            .dialect
            .map(|m| m.meta(round.level, round.capabilities)),
        caller: round.params.meta(),
    };
    let body = Body {
        params: round.params,
        retry: round.retry,
        task: round.task,
        meta,
    };
    let payload = frame::request(round.id, round.method, &body);
    let stateless = match round.dialect {
        Some(modern) if round.sends_headers => Some(Arc::new(stateless(&round, modern))),
        _ => None,
    };
    Outbound::request(
        Id::Number(round.id),
        round.method.clone(),
        stateless,
        payload,
    )
}

/// A notification.
pub(crate) fn notification(method: &'static str, params: &(impl Serialize + ?Sized)) -> Outbound {
    Outbound::notification(method.into(), frame::notification(method, params))
}

/// `notifications/cancelled` for request `id`, with a reason for the server's logs.
pub(crate) fn cancel(id: i64, reason: &str) -> Outbound {
    Outbound::cancel(Id::Number(id), frame::cancelled(id, reason))
}

/// The answer to the server's request `id`.
pub(crate) fn response(id: Id, outcome: Outcome) -> Outbound {
    let answer = Message::Response(Response {
        id: Some(id),
        outcome,
    });
    Outbound::response(Bytes::from(answer.to_vec()))
}

/// What the headers of a stateless request say, from the same values as its body.
fn stateless(round: &Round<'_>, modern: &Modern) -> Stateless {
    let mut headers = Stateless::new(modern.version.clone());
    let named = match &**round.method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => round.params.text("name"),
        methods::RESOURCES_READ => round.params.text("uri"),
        // The tasks extension routes a task's requests by its id.
        tasks::TASKS_GET | tasks::TASKS_UPDATE | tasks::TASKS_CANCEL => round.params.text("taskId"),
        _ => None,
    };
    if let Some(name) = named {
        headers = headers.name(encode(name));
    }
    if let (Params::ToolCall { arguments, .. }, false) =
        (round.params, round.param_headers.is_empty())
    {
        // Only a tool with such headers has text arguments read into a tree, once.
        let arguments = arguments.tree();
        for header in round.param_headers {
            if let Some(value) = header.value(&arguments) {
                headers = headers.param(header.header_name(), value);
            }
        }
    }
    headers
}

/// A request's `_meta`.
#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    progress_token: Option<i64>,
    /// A stateless server's entries.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    modern: Option<ModernMeta<'a>>,
    /// What the caller put in its params' `_meta`.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    caller: Option<&'a Map<String, Value>>,
}

impl Meta<'_> {
    fn is_empty(&self) -> bool {
        self.progress_token.is_none()
            && self.modern.is_none()
            && self.caller.map_or(true, |c| c.is_empty())
    }
}

/// A request's params as written: the caller's entries (but `_meta`), a retry's answers and
/// state, then `_meta`.
struct Body<'a> {
    params: &'a Params,
    retry: Option<&'a Retry>,
    task: Option<TaskParams>,
    meta: Meta<'a>,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.params {
            Params::Object(entries) => {
                for (key, value) in entries {
                    if key != "_meta" {
                        map.serialize_entry(key, value)?;
                    }
                }
            }
            Params::ToolCall {
                name, arguments, ..
            } => {
                map.serialize_entry("name", &**name)?;
                map.serialize_entry("arguments", arguments)?;
                if let Some(task) = self.task {
                    let mut fields = Map::new();
                    if let Some(ttl) = task.ttl_ms {
                        fields.insert("ttl".into(), ttl.into());
                    }
                    map.serialize_entry("task", &fields)?;
                }
            }
        }
        if let Some(retry) = self.retry {
            if let Some(responses) = &retry.input_responses {
                map.serialize_entry("inputResponses", responses)?;
            }
            if let Some(state) = &retry.request_state {
                map.serialize_entry("requestState", state)?;
            }
        }
        if !self.meta.is_empty() {
            map.serialize_entry("_meta", &self.meta)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_codecs::mcp::modern::meta as keys;

    fn written(params: &Params, retry: Option<&Retry>, meta: Meta<'_>) -> Value {
        let body = Body {
            params,
            retry,
            task: None,
            meta,
        };
        serde_json::from_slice(&frame::request(3, "m", &body)).unwrap()
    }

    fn no_meta() -> Meta<'static> {
        Meta {
            progress_token: None,
            modern: None,
            caller: None,
        }
    }

    #[test]
    fn a_handshake_era_request_is_its_params_alone() {
        let params = Params::from_value(json!({"cursor": "c"}));
        assert_eq!(
            written(&params, None, no_meta())["params"],
            json!({"cursor": "c"})
        );
        assert_eq!(
            written(&Params::empty(), None, no_meta())["params"],
            json!({})
        );
    }

    #[test]
    fn meta_is_built_one_way_beside_the_callers_entries() {
        let modern = Modern::new("2026-07-28", json!({"roots": {}}));
        let params = Params::from_value(json!({"uri": "x://a", "_meta": {"trace": "t1"}}));
        let caller = params.meta();
        let value = written(
            &params,
            None,
            Meta {
                progress_token: Some(3),
                modern: Some(modern.meta(Some(LoggingLevel::Info), None)),
                caller,
            },
        );
        let meta = &value["params"]["_meta"];
        assert_eq!(value["params"]["uri"], "x://a");
        assert_eq!(meta["progressToken"], 3);
        assert_eq!(meta["trace"], "t1");
        assert_eq!(meta[keys::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(meta[keys::CLIENT_CAPABILITIES], json!({"roots": {}}));
        assert_eq!(meta[keys::CLIENT_INFO]["name"], "switchboard");
        assert_eq!(meta[keys::LOG_LEVEL], "info");
    }

    #[test]
    fn arguments_given_as_text_are_written_byte_for_byte() {
        let written = r#"{ "b" : 1, "a" : "caf\u00e9" }"#;
        let params = Params::ToolCall {
            name: "t".into(),
            arguments: Arguments::Text(RawValue::from_string(written.to_owned()).unwrap()),
            meta: None,
            task: TaskAsk::default(),
        };
        let body = Body {
            params: &params,
            retry: None,
            task: None,
            meta: Meta {
                progress_token: Some(3),
                modern: None,
                caller: None,
            },
        };
        let text = String::from_utf8(frame::request(3, "tools/call", &body).to_vec()).unwrap();
        assert!(
            text.contains(&format!(r#""arguments":{written}"#)),
            "{text}"
        );
    }

    #[test]
    fn a_retry_echoes_the_state_byte_for_byte_beside_the_original_params() {
        let params = Params::ToolCall {
            name: "t".into(),
            arguments: Arguments::Tree(json!({"a": 1})),
            meta: None,
            task: TaskAsk::default(),
        };
        let mut responses = Map::new();
        responses.insert("k".into(), json!({"action": "accept"}));
        let retry = Retry {
            input_responses: Some(responses),
            request_state: Some(
                serde_json::value::RawValue::from_string(r#""s\u00e9\"x""#.to_owned()).unwrap(),
            ),
        };
        let body = Body {
            params: &params,
            retry: Some(&retry),
            task: None,
            meta: Meta {
                progress_token: Some(9),
                modern: None,
                caller: None,
            },
        };
        let text = String::from_utf8(frame::request(9, "tools/call", &body).to_vec()).unwrap();
        assert!(text.contains(r#""requestState":"s\u00e9\"x""#), "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["params"]["name"], "t");
        assert_eq!(value["params"]["arguments"]["a"], 1);
        assert_eq!(value["params"]["inputResponses"]["k"]["action"], "accept");
        assert_eq!(value["params"]["_meta"], json!({"progressToken": 9}));
    }
}

#[cfg(test)]
mod header_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stateless_call_over_http_says_what_its_headers_carry() {
        let tree = Arguments::Tree(json!({"region": "eu 1 ", "x": 2}));
        let text = RawValue::from_string(r#"{"region":"eu 1 ","x":2}"#.to_owned()).unwrap();
        let from_tree = stateless_call(tree);
        let from_text = stateless_call(Arguments::Text(text));
        assert_eq!(
            from_tree.payload, from_text.payload,
            "the same frame from a tree or its text"
        );
    }

    #[test]
    fn arguments_as_text_say_what_they_are_when_not_an_object() {
        let text = |t: &str| Arguments::Text(RawValue::from_string(t.to_owned()).unwrap());
        assert_eq!(text(r#"{"a":[]}"#).not_an_object(), None);
        assert_eq!(Arguments::Tree(json!({})).not_an_object(), None);
        for (t, tree, kind) in [
            ("[1]", json!([1]), "an array"),
            (r#""x""#, json!("x"), "a string"),
            ("null", json!(null), "null"),
            ("false", json!(false), "a boolean"),
            ("-1.5", json!(-1.5), "a number"),
        ] {
            assert_eq!(text(t).not_an_object(), Some(kind), "{t}");
            assert_eq!(Arguments::Tree(tree).not_an_object(), Some(kind), "{t}");
        }
    }

    /// Checks a stateless `tools/call` with `arguments`' headers and body; its frame.
    fn stateless_call(arguments: Arguments) -> Outbound {
        let modern = Modern::new("2026-07-28", json!({}));
        let method: Arc<str> = "tools/call".into();
        let params = Params::ToolCall {
            name: "q".into(),
            arguments,
            meta: None,
            task: TaskAsk::default(),
        };
        let headers = [ParamHeader {
            path: vec!["region".into()],
            name: "Region".into(),
        }];
        let round = |sends_headers| Round {
            id: 1,
            method: &method,
            params: &params,
            retry: None,
            progress_token: true,
            dialect: Some(&modern),
            capabilities: None,
            level: None,
            sends_headers,
            param_headers: &headers,
            task: None,
        };
        let outbound = request(round(true));
        let switchboard_transports::Facts::Request(facts) = &outbound.facts else {
            panic!("a request")
        };
        let stateless = facts.stateless.as_deref().expect("stateless facts");
        assert_eq!(&*stateless.protocol_version, "2026-07-28");
        assert_eq!(stateless.name.as_deref(), Some("q"));
        assert_eq!(
            stateless.params,
            [(
                "Mcp-Param-Region".to_owned(),
                "=?base64?ZXUgMSA=?=".to_owned()
            )]
        );
        let over_stdio = request(round(false));
        let switchboard_transports::Facts::Request(facts) = &over_stdio.facts else {
            panic!("a request")
        };
        assert!(facts.stateless.is_none());
        assert_eq!(
            outbound.payload, over_stdio.payload,
            "the same body either way"
        );
        outbound
    }

    #[test]
    fn a_tasks_request_names_its_task_in_mcp_name() {
        let modern = Modern::new("2026-07-28", json!({}));
        let method: Arc<str> = "tasks/get".into();
        let params = Params::from_value(json!({"taskId": "t-9"}));
        let outbound = request(Round {
            id: 4,
            method: &method,
            params: &params,
            retry: None,
            progress_token: false,
            dialect: Some(&modern),
            capabilities: None,
            level: None,
            sends_headers: true,
            param_headers: &[],
            task: None,
        });
        let switchboard_transports::Facts::Request(facts) = &outbound.facts else {
            panic!("a request")
        };
        let stateless = facts.stateless.as_deref().expect("stateless facts");
        assert_eq!(stateless.name.as_deref(), Some("t-9"));
    }

    #[test]
    fn a_call_as_a_task_carries_params_task() {
        let asked = |task| {
            let params = Params::ToolCall {
                name: "t".into(),
                arguments: Arguments::Tree(json!({})),
                meta: None,
                task: TaskAsk::default(),
            };
            let body = Body {
                params: &params,
                retry: None,
                task,
                meta: Meta {
                    progress_token: None,
                    modern: None,
                    caller: None,
                },
            };
            let value: Value =
                serde_json::from_slice(&frame::request(1, "tools/call", &body)).unwrap();
            value["params"].get("task").cloned()
        };
        assert_eq!(asked(None), None);
        assert_eq!(
            asked(Some(TaskParams { ttl_ms: Some(5000) })),
            Some(json!({"ttl": 5000}))
        );
        assert_eq!(asked(Some(TaskParams { ttl_ms: None })), Some(json!({})));
    }
}
