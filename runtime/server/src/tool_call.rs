//! A handshake-era `tools/call` as the server serves it, read by type: in one pass from its
//! stdio line ([`ToolCall::read_line`]), or from the params of a request read the general
//! way ([`ToolCall::from_request`]).
//!
//! A server serves more `tools/call` than anything else. Read as an envelope first (its
//! params kept as raw text: scanned and copied) and then its params again, a small `echo`
//! costs the demo server about 1.2 k more instructions than read once (`BENCHMARKS.md`,
//! the server's stdio CPU per call). Both readings answer `None` for anything else, which
//! the general reading then serves: they never decide that a message is malformed, only
//! that it is the common case.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_codecs::jsonrpc::{present, Id, ObjectOnly, Request};

/// A `tools/call` request of the handshake era.
#[derive(Debug)]
pub(crate) struct ToolCall {
    /// The request's id.
    pub(crate) id: Id,
    /// The tool.
    pub(crate) name: String,
    /// Its arguments as the request wrote them; `None` when absent or `null`.
    pub(crate) arguments: Option<Box<RawValue>>,
    /// `_meta.progressToken`, when not `null`.
    pub(crate) progress_token: Option<Value>,
    /// `_meta.traceparent`.
    pub(crate) traceparent: Option<String>,
}

/// A whole line: the envelope and the params in one pass.
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
    /// anything else: another method, a 2026-07-28 request, a batch, or a line that the
    /// general reading must answer with an error (not JSON-RPC 2.0, a `null` id, a
    /// duplicate field, params it refuses, invalid UTF-8).
    pub(crate) fn read_line(line: &[u8]) -> Option<ToolCall> {
        // Checked whole, once: read from bytes, serde_json checks each string it borrows on
        // its own, which costs a small call several times more.
        let line = std::str::from_utf8(line).ok()?;
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
    pub(crate) fn from_request(request: &Request) -> Option<ToolCall> {
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
    use switchboard_codecs::jsonrpc::{Id, Message};
    use switchboard_codecs::mcp::modern::meta;

    use super::ToolCall;

    /// Both readings of `line`: in one pass, and from the request the general reading made.
    fn both(line: &str) -> [Option<ToolCall>; 2] {
        let request = match Message::parse(line) {
            Ok(Message::Request(request)) => ToolCall::from_request(&request),
            _ => None,
        };
        [ToolCall::read_line(line.as_bytes()), request]
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
            "{\"params\":{\"name\":\"echo\",\"arguments\":null,\"_meta\":null},\"method\":\"tools/call\",\"id\":1,\"jsonrpc\":\"2.0\"}\r",
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
    fn a_stateless_call_is_left_to_the_general_reading() {
        let key = meta::PROTOCOL_VERSION;
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","_meta":{{"{key}":"2026-07-28"}}}}}}"#
        );
        let null = line.replace(r#""2026-07-28""#, "null");
        let escaped = line.replace("io.modelcontextprotocol/", "io.modelcontextprotocol\\/");
        for line in [line, null, escaped] {
            assert!(both(&line).iter().all(Option::is_none), "{line}");
        }
    }

    #[test]
    fn what_the_general_reading_must_refuse_is_left_to_it() {
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
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"error":null}"#,
            r#"["jsonrpc","2.0"]"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]"#,
            "",
            "  ",
        ] {
            assert!(ToolCall::read_line(line.as_bytes()).is_none(), "{line}");
        }
        let bad_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"ec\xffho\"}}";
        assert!(ToolCall::read_line(bad_utf8).is_none());
    }
}
