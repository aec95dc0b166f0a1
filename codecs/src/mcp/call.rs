//! A handshake-era `tools/call` request as a server serves it: its params read by type from
//! the request ([`ToolCall::from_request`]), into the tool's name, its arguments as their
//! text, the progress token and the trace.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::jsonrpc::{present, Id, ObjectOnly, Request};

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

    /// The call `line` holds, read the general way and then by type.
    fn read(line: &str) -> Option<ToolCall> {
        match Message::parse(line) {
            Ok(Message::Request(request)) => ToolCall::from_request(&request),
            _ => None,
        }
    }

    #[test]
    fn a_handshake_era_call_is_read_whole() {
        let line = r#"{"jsonrpc":"2.0","id":"a\"1","method":"tools\/call","params":{"name":"ec\u0068o","arguments":{"text":"hi"},"_meta":{"progressToken":7,"traceparent":"t","other":1}},"x":1}"#;
        let call = read(line).expect("a handshake-era call");
        assert_eq!(call.id, Id::String("a\"1".into()));
        assert_eq!(call.name, "echo");
        assert_eq!(
            call.arguments.as_deref().map(|a| a.get()),
            Some(r#"{"text":"hi"}"#)
        );
        assert_eq!(call.progress_token, Some(json!(7)));
        assert_eq!(call.traceparent.as_deref(), Some("t"));
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null,"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":null}}}"#,
        ] {
            let call = read(line).expect(line);
            assert!(
                call.arguments.is_none() && call.progress_token.is_none(),
                "{line}"
            );
        }
    }

    #[test]
    fn a_stateless_call_is_left_to_the_general_reading() {
        let key = meta::PROTOCOL_VERSION;
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","_meta":{{"{key}":"2026-07-28"}}}}}}"#
        );
        assert!(read(&line).is_none(), "{line}");
        let null = line.replace(r#""2026-07-28""#, "null");
        assert!(read(&null).is_none(), "{null}");
        let escaped = line.replace("io.modelcontextprotocol/", "io.modelcontextprotocol\\/");
        assert!(read(&escaped).is_none(), "{escaped}");
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
            assert!(read(&line).is_none(), "{params}");
        }
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"echo"}}"#;
        assert!(read(list).is_none());
    }
}
