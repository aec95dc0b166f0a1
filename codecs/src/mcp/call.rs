//! A handshake-era `tools/call` request read from its line in one pass.
//!
//! A server serves more `tools/call` than anything else, and reading one as an envelope
//! first (its params kept as raw text, so scanned once and copied) and then its params
//! again cost a third of serving an `echo`. [`ToolCall::parse`] reads the line once into
//! what serving the call needs, and answers `None` for anything else, which is then read
//! the general way ([`Message::parse`](crate::jsonrpc::Message::parse)): it never decides
//! that a line is malformed, only that it is the common case.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::jsonrpc::{present, Id, ObjectOnly, Request};
use crate::mcp::modern::meta;

/// Finds the 2026-07-28 `_meta` key; built once, as building its searcher costs more than
/// a search.
static STATELESS_MARKER: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(meta::PROTOCOL_VERSION));

/// A `tools/call` request of the handshake era, as a server serves it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCall {
    /// The request's id.
    pub id: Id,
    /// The tool.
    pub name: String,
    /// Its arguments as the request wrote them; `None` when absent or `null`.
    pub arguments: Option<Box<RawValue>>,
    /// `_meta.progressToken`, when not `null`.
    pub progress_token: Option<Value>,
    /// `_meta.traceparent`.
    pub traceparent: Option<String>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    jsonrpc: &'a RawValue,
    id: Id,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: ObjectOnly<Params<'a>>,
    // Beside a method these make the line an error (or, `null`, a placeholder): the general
    // reading decides which.
    #[serde(default, deserialize_with = "present")]
    result: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<ObjectOnly<Meta<'a>>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "progressToken", default)]
    progress_token: Option<Value>,
    #[serde(default, borrow)]
    traceparent: Option<Cow<'a, str>>,
    /// Present (even as `null`), the request is a 2026-07-28 one.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        deserialize_with = "present"
    )]
    protocol_version: Option<IgnoredAny>,
}

impl ToolCall {
    /// The call `line` holds (one JSON-RPC message, without its `\n`), or `None` when it is
    /// anything else: another method, a 2026-07-28 request, or a line that the general
    /// reading must answer with an error (not JSON-RPC 2.0, a `null` id, a duplicate field,
    /// params it refuses).
    pub fn parse(line: &str) -> Option<ToolCall> {
        // Where a 2026-07-28 request could be, read the general way at once rather than
        // read all of it first: the marker sits at the end of the params.
        if STATELESS_MARKER.find(line.as_bytes()).is_some() {
            return None;
        }
        let ObjectOnly(line) = serde_json::from_str::<ObjectOnly<Line<'_>>>(line).ok()?;
        let well_formed = line.jsonrpc.get() == "\"2.0\""
            && line.method == "tools/call"
            && line.result.is_none()
            && line.error.is_none();
        well_formed.then(|| Self::of(line.id, line.params.0))?
    }

    /// The call `request` is, unless it is another method, a 2026-07-28 request, or has
    /// params the general reading must refuse (not an object, no string `name`, a
    /// duplicate field, a non-string `traceparent`).
    pub fn from_request(request: &Request) -> Option<ToolCall> {
        if request.method != "tools/call" {
            return None;
        }
        let params = request.params.as_deref()?.get();
        let ObjectOnly(params) = serde_json::from_str::<ObjectOnly<Params<'_>>>(params).ok()?;
        Self::of(request.id.clone(), params)
    }

    /// The call as a request, its params written again from what the call keeps.
    pub fn into_request(self) -> Request {
        let mut meta = Map::new();
        if let Some(token) = self.progress_token {
            meta.insert("progressToken".into(), token);
        }
        if let Some(traceparent) = self.traceparent {
            meta.insert("traceparent".into(), Value::String(traceparent));
        }
        let mut params = Map::new();
        params.insert("name".into(), Value::String(self.name));
        if let Some(arguments) = self.arguments {
            // Read from valid JSON text: it reads again.
            let arguments = serde_json::from_str(arguments.get()).unwrap_or(Value::Null);
            params.insert("arguments".into(), arguments);
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        Request {
            id: self.id,
            method: "tools/call".into(),
            params: serde_json::value::to_raw_value(&params).ok(),
        }
    }

    fn of(id: Id, params: Params<'_>) -> Option<ToolCall> {
        let meta = params.meta.map(|ObjectOnly(m)| m);
        if meta.as_ref().is_some_and(|m| m.protocol_version.is_some()) {
            return None;
        }
        let (progress_token, traceparent) = meta
            .map(|m| (m.progress_token, m.traceparent.map(Cow::into_owned)))
            .unwrap_or_default();
        Some(ToolCall {
            id,
            name: params.name.into_owned(),
            arguments: params.arguments,
            progress_token,
            traceparent,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ToolCall;
    use crate::jsonrpc::{Id, Message};
    use crate::mcp::modern::meta;

    /// Both readings of `line`: in one pass, and from the request the general reading made.
    fn both(line: &str) -> [Option<ToolCall>; 2] {
        let request = match Message::parse(line) {
            Ok(Message::Request(request)) => ToolCall::from_request(&request),
            _ => None,
        };
        [ToolCall::parse(line), request]
    }

    #[test]
    fn a_handshake_era_call_is_read_whole() {
        let line = r#"{"jsonrpc":"2.0","id":"a\"1","method":"tools\/call","params":{"name":"ec\u0068o","arguments":{"text":"hi"},"_meta":{"progressToken":7,"traceparent":"t","other":1}},"x":1}"#;
        for call in both(line) {
            let call = call.expect("a handshake-era call");
            assert_eq!(call.id, Id::String("a\"1".into()));
            assert_eq!(call.name, "echo");
            assert_eq!(
                call.arguments.as_deref().map(|a| a.get()),
                Some(r#"{"text":"hi"}"#)
            );
            assert_eq!(call.progress_token, Some(json!(7)));
            assert_eq!(call.traceparent.as_deref(), Some("t"));
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null,"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":null}}}"#,
        ] {
            for call in both(line) {
                let call = call.expect(line);
                assert!(
                    call.arguments.is_none() && call.progress_token.is_none(),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn a_call_goes_back_into_the_request_it_was() {
        let line = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p","traceparent":"t"}}}"#;
        let request = ToolCall::parse(line).expect("a call").into_request();
        let params: serde_json::Value =
            serde_json::from_str(request.params.as_deref().expect("params").get()).unwrap();
        assert_eq!(
            (request.id, request.method.as_str()),
            (Id::Number(3), "tools/call")
        );
        assert_eq!(
            params,
            json!({"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p","traceparent":"t"}})
        );
    }

    #[test]
    fn a_stateless_call_is_left_to_the_general_reading() {
        let key = meta::PROTOCOL_VERSION;
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","_meta":{{"{key}":"2026-07-28"}}}}}}"#
        );
        assert!(both(&line).iter().all(Option::is_none), "{line}");
        let null = line.replace(r#""2026-07-28""#, "null");
        assert!(both(&null).iter().all(Option::is_none), "{null}");
        // Escaped, the key escapes the quick look for it, not the reading.
        let escaped = line.replace("io.modelcontextprotocol/", "io.modelcontextprotocol\\/");
        assert!(both(&escaped).iter().all(Option::is_none), "{escaped}");
    }

    #[test]
    fn params_the_general_reading_must_refuse_are_left_to_it() {
        for params in [
            r#"[1]"#,
            r#"["echo",{}]"#,
            r#"{"arguments":{}}"#,
            r#"{"name":7}"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"name":"echo","_meta":{"traceparent":5}}"#,
            r#"{"name":"echo","_meta":[7]}"#,
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
            assert!(both(&line).iter().all(Option::is_none), "{params}");
        }
    }

    #[test]
    fn lines_that_are_no_plain_call_are_left_to_the_general_reading() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}"#,
            r#"["2.0",1,"tools/call",{"name":"echo"}]"#,
        ] {
            assert!(ToolCall::parse(line).is_none(), "{line}");
        }
    }
}
