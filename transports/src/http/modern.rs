//! The headers of a 2026-07-28 (stateless) request over Streamable HTTP, read from the body
//! it carries so that they always match it: `MCP-Protocol-Version` (the `_meta` version),
//! `Mcp-Method`, `Mcp-Name` (for `tools/call`, `resources/read`, `prompts/get`) and the
//! `Mcp-Param-{Name}` headers of the tool called (from [`Control::set_tool_headers`]).
//!
//! A message is modern when its `params._meta` names a protocol version; handshake-era
//! messages carry no such key and get none of these headers.
//!
//! [`Control::set_tool_headers`]: crate::connection::Control::set_tool_headers

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use switchboard_codecs::mcp::modern::headers::encode;
use switchboard_codecs::mcp::modern::meta;

use switchboard_codecs::jsonrpc::Id;

use crate::connection::ToolHeaders;

/// The `_meta` key whose presence marks a modern message.
const MARK: &[u8] = meta::PROTOCOL_VERSION.as_bytes();

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    method: Option<&'a str>,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    name: Option<String>,
    uri: Option<String>,
    arguments: Option<serde_json::Value>,
    #[serde(rename = "_meta")]
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    // Other `_meta` entries are skipped unread.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<String>,
}

/// Whether `payload` is a stateless-era message (its `_meta` names a protocol version).
pub(crate) fn is_stateless(payload: &[u8]) -> bool {
    // Every POST is scanned: a vectorized search, not a window per byte.
    memchr::memmem::find(payload, MARK).is_some()
}

/// The `requestId` of a `notifications/cancelled`.
pub(crate) fn cancelled_request(payload: &[u8]) -> Option<Id> {
    #[derive(Deserialize)]
    struct Cancelled {
        params: CancelledParams,
    }
    #[derive(Deserialize)]
    struct CancelledParams {
        #[serde(rename = "requestId")]
        request_id: serde_json::Value,
    }
    let cancelled: Cancelled = serde_json::from_slice(payload).ok()?;
    match cancelled.params.request_id {
        serde_json::Value::Number(n) => n.as_i64().map(Id::Number),
        serde_json::Value::String(s) => Some(Id::String(s.into())),
        _ => None,
    }
}

/// The headers `payload` needs as a modern request; empty for a handshake-era message.
pub(crate) fn headers(payload: &[u8], tools: &ToolHeaders) -> HeaderMap {
    let mut headers = HeaderMap::new();
    // Most messages are not modern: a byte search spares them the parse.
    if !is_stateless(payload) {
        return headers;
    }
    let Ok(message) = serde_json::from_slice::<Message<'_>>(payload) else {
        return headers;
    };
    let Some(params) = message.params else {
        return headers;
    };
    let Some(version) = params.meta.and_then(|m| m.protocol_version) else {
        return headers;
    };
    let mut put = |name: &str, value: &str| {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    };
    put("mcp-protocol-version", &version);
    let Some(method) = message.method else {
        return headers;
    };
    put("mcp-method", method);
    let named = match method {
        "tools/call" | "prompts/get" => params.name.as_deref(),
        "resources/read" => params.uri.as_deref(),
        _ => None,
    };
    if let Some(name) = named {
        put("mcp-name", &encode(name));
    }
    if method == "tools/call" {
        let tool = params.name.as_deref().and_then(|name| tools.get(name));
        if let (Some(tool), Some(arguments)) = (tool, &params.arguments) {
            for header in tool {
                if let Some(value) = header.value(arguments) {
                    put(&header.header_name(), &value);
                }
            }
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;
    use switchboard_codecs::mcp::modern::headers::ParamHeader;

    #[test]
    fn a_modern_call_gets_headers_that_match_its_body() {
        let tools: ToolHeaders = Arc::new(HashMap::from([(
            "q".to_owned(),
            vec![ParamHeader {
                path: vec!["region".into()],
                name: "Region".into(),
            }],
        )]));
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q","arguments":{"region":"eu 1 ","x":2},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let h = headers(body, &tools);
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "q");
        assert_eq!(h["mcp-param-region"], "=?base64?ZXUgMSA=?=");

        let read = br#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let h = headers(read, &tools);
        assert_eq!(h["mcp-name"], "file:///a b");
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn a_cancellation_names_its_request() {
        let cancel = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}"#;
        assert_eq!(cancelled_request(cancel), Some(Id::Number(7)));
        assert_eq!(
            cancelled_request(br#"{"jsonrpc":"2.0","method":"x"}"#),
            None
        );
        assert!(!is_stateless(cancel));
    }

    #[test]
    fn handshake_era_messages_get_none() {
        let tools = ToolHeaders::default();
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q","arguments":{}}}"#;
        assert!(headers(body, &tools).is_empty());
        assert!(headers(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            &tools
        )
        .is_empty());
    }
}
