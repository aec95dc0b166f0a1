//! Typed MCP shapes the runtime interprets: the handshake, tools, tool results, progress,
//! cancellation and logging, for protocol versions 2024-11-05 to 2025-11-25.
//!
//! These are the `params` and `result` payloads carried inside [`jsonrpc`](crate::jsonrpc)
//! envelopes. Every object keeps the fields it does not know in an `extra` map and writes them
//! back on serialization, so a newer peer's additions survive a pass through Switchboard.
//! Field names follow the spec (camelCase on the wire, `_meta` as `meta`).
//!
//! ```
//! use switchboard_codecs::mcp::{CallToolResult, Content};
//!
//! let result: CallToolResult = serde_json::from_str(
//!     r#"{"content":[{"type":"text","text":"42"},{"type":"hologram","x":1}],"isError":false}"#,
//! )?;
//! assert_eq!(result.text(), "42");
//! assert!(!result.is_error());
//! assert!(matches!(result.content[1], Content::Unknown(_)));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::Id;

mod content;

pub use content::{
    Annotations, AudioContent, BlobResourceContents, Content, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, TextContent, TextResourceContents,
};

/// The newest protocol version Switchboard speaks; what it asks for in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol version Switchboard accepts from a server, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

pub mod methods {
    //! Method names of the requests and notifications the runtime sends or handles.

    /// Request: opens a session (`InitializeParams` → `InitializeResult`).
    pub const INITIALIZE: &str = "initialize";
    /// Notification: the client has processed the initialize result.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Request: liveness check; the result is `{}` ([`EmptyResult`](super::EmptyResult)).
    pub const PING: &str = "ping";
    /// Request: lists tools (`ListToolsParams` → `ListToolsResult`).
    pub const TOOLS_LIST: &str = "tools/list";
    /// Request: calls a tool (`CallToolParams` → `CallToolResult`).
    pub const TOOLS_CALL: &str = "tools/call";
    /// Notification: progress of a request (`ProgressNotificationParams`).
    pub const PROGRESS: &str = "notifications/progress";
    /// Notification: a request was cancelled (`CancelledNotificationParams`).
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Notification: a log message from the server (`LoggingMessageParams`).
    pub const MESSAGE: &str = "notifications/message";
    /// Notification: the server's tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
}

/// The name and version of an MCP client or server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// The version.
    pub version: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            ..Default::default()
        }
    }
}

/// What a client offers; each capability is present (an object, often empty) or absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Roots listing (`listChanged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Value>,
    /// Sampling from the client's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// Elicitation of user input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Value>,
    /// Task-augmented requests (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Tools, when the server has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Value>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Log messages (`notifications/message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Task-augmented requests (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Value>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The server's tools capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The params of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The version the client asks for (its latest).
    pub protocol_version: String,
    /// What the client offers.
    #[serde(default)]
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose; the client must support it or disconnect.
    pub protocol_version: String,
    /// What the server offers; read as empty when a server omits it.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server, for a model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `ping` and of other requests that answer `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_input_schema() -> Value {
    Value::Object(Map::from_iter([("type".to_owned(), Value::from("object"))]))
}

/// A tool a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments; `{"type":"object"}` when a server omits it.
    #[serde(default = "default_input_schema")]
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent` (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints about its behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for Tool {
    fn default() -> Self {
        Tool {
            name: String::new(),
            title: None,
            description: None,
            input_schema: default_input_schema(),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

/// Hints about a tool's behaviour. Servers are not trusted to tell the truth.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// It does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// Its modifications may be destructive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The params of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsParams {
    /// Where to resume, from the previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `tools/list`: one page of tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Present when there are more pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The params of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Protocol metadata (`progressToken`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `tools/call`. A tool's own failure is a result with `isError`, not a
/// JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    #[serde(default)]
    pub content: Vec<Content>,
    /// The structured result, matching the tool's output schema (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// Whether the tool reported a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text blocks of the content, joined by `\n`.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// The params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token the request carried in `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with each notification.
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A progress token: a number or a string chosen by the requester.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

/// The params of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request being cancelled.
    #[serde(deserialize_with = "deserialize_id")]
    pub request_id: Id,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Reads an [`Id`] through a `Value`: `Id`'s own `Deserialize` borrows a `RawValue`, which
/// serde cannot provide inside a struct that has a flattened field.
fn deserialize_id<'de, D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(Id::String(s.into())),
        Value::Number(n) => n
            .as_i64()
            .map(Id::Number)
            .ok_or_else(|| D::Error::custom("id is not an integer")),
        _ => Err(D::Error::custom("id is neither a number nor a string")),
    }
}

/// The params of `notifications/message`: a log message from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingMessageParams {
    /// The severity.
    pub level: LoggingLevel,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: a string or any JSON.
    pub data: Value,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A log severity (RFC 5424), ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Informational.
    Info,
    /// Normal but significant.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical condition.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    fn round_trip<T: Serialize + DeserializeOwned>(value: &Value) -> T {
        let parsed: T = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&parsed).unwrap(), value);
        parsed
    }

    #[test]
    fn initialize_result_keeps_unknown_fields() {
        let wire = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {
                "tools": {"listChanged": true, "futureFlag": 1},
                "logging": {},
                "somethingNew": {"x": true}
            },
            "serverInfo": {"name": "fs", "version": "1.2.0", "title": "Files", "vendor": "acme"},
            "instructions": "be nice",
            "extraTopLevel": [1, 2]
        });
        let r: InitializeResult = round_trip(&wire);
        assert_eq!(r.protocol_version, "2025-06-18");
        let tools = r.capabilities.tools.as_ref().unwrap();
        assert_eq!(tools.list_changed, Some(true));
        assert_eq!(tools.extra["futureFlag"], json!(1));
        assert_eq!(r.capabilities.extra["somethingNew"], json!({"x": true}));
        assert_eq!(r.server_info.title.as_deref(), Some("Files"));
        assert_eq!(r.server_info.extra["vendor"], json!("acme"));
        assert_eq!(r.extra["extraTopLevel"], json!([1, 2]));
        assert!(SUPPORTED_PROTOCOL_VERSIONS.contains(&r.protocol_version.as_str()));
    }

    #[test]
    fn initialize_params_serialize() {
        let params = InitializeParams {
            protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
            capabilities: ClientCapabilities::default(),
            client_info: Implementation::new("switchboard", "0.1.0"),
            extra: Map::new(),
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "switchboard", "version": "0.1.0"}
            })
        );
    }

    #[test]
    fn empty_client_capabilities_is_an_empty_object() {
        assert_eq!(
            serde_json::to_string(&ClientCapabilities::default()).unwrap(),
            "{}"
        );
        assert_eq!(
            serde_json::to_string(&EmptyResult::default()).unwrap(),
            "{}"
        );
        let _: EmptyResult = round_trip(&json!({}));
    }

    #[test]
    fn tool_with_all_fields() {
        let wire = json!({
            "name": "read_file",
            "title": "Read file",
            "description": "Reads a file",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {
                "title": "Read",
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            },
            "icons": [{"src": "https://example.com/i.png"}],
            "_meta": {"k": "v"},
            "execution": {"taskSupport": "optional"}
        });
        let tool: Tool = round_trip(&wire);
        let a = tool.annotations.as_ref().unwrap();
        assert_eq!(a.read_only_hint, Some(true));
        assert_eq!(a.destructive_hint, Some(false));
        assert_eq!(tool.meta.as_ref().unwrap()["k"], json!("v"));
        assert_eq!(tool.extra["execution"], json!({"taskSupport": "optional"}));
        assert!(!tool.extra.contains_key("_meta"));
    }

    #[test]
    fn tool_without_input_schema_defaults_to_object() {
        let list: ListToolsResult =
            serde_json::from_value(json!({"tools": [{"name": "t"}], "nextCursor": "2"})).unwrap();
        assert_eq!(list.tools[0].input_schema, json!({"type": "object"}));
        assert_eq!(
            list.tools[0],
            Tool {
                name: "t".into(),
                ..Default::default()
            }
        );
        assert_eq!(list.next_cursor.as_deref(), Some("2"));
    }

    #[test]
    fn call_params_serialize() {
        let params = CallToolParams {
            name: "echo".into(),
            arguments: Some(Map::from_iter([("x".to_owned(), json!(1))])),
            meta: Some(Map::from_iter([("progressToken".to_owned(), json!(7))])),
            extra: Map::new(),
        };
        let _: CallToolParams = round_trip(&json!({
            "name": "echo", "arguments": {"x": 1}, "_meta": {"progressToken": 7}
        }));
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"name": "echo", "arguments": {"x": 1}, "_meta": {"progressToken": 7}})
        );
        assert_eq!(
            serde_json::to_value(ListToolsParams::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn call_result_with_every_block_kind() {
        let wire = json!({
            "content": [
                {"type": "text", "text": "hello", "annotations": {"audience": ["user"], "priority": 0.5}},
                {"type": "image", "data": "aW1n", "mimeType": "image/png", "_meta": {"m": 1}},
                {"type": "audio", "data": "YXU=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain", "size": 12},
                {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "text": "bee"}},
                {"type": "resource", "resource": {"uri": "file:///c", "blob": "Yw=="}},
                {"type": "text", "text": "world"}
            ],
            "structuredContent": {"answer": 42},
            "isError": true,
            "_meta": {"trace": "x"}
        });
        let r: CallToolResult = round_trip(&wire);
        assert!(r.is_error());
        assert_eq!(r.text(), "hello\nworld");
        assert_eq!(r.structured_content, Some(json!({"answer": 42})));
        let [Content::Text(t), Content::Image(i), Content::Audio(a), Content::ResourceLink(l), Content::Resource(e1), Content::Resource(e2), Content::Text(_)] =
            &r.content[..]
        else {
            panic!("block kinds: {:?}", r.content)
        };
        assert_eq!(t.annotations.as_ref().unwrap().priority, Some(0.5));
        assert_eq!(i.mime_type, "image/png");
        assert_eq!(a.data, "YXU=");
        assert_eq!(l.size, Some(12));
        assert!(matches!(&e1.resource, ResourceContents::Text(c) if c.text == "bee"));
        assert!(matches!(&e2.resource, ResourceContents::Blob(c) if c.blob == "Yw=="));
    }

    #[test]
    fn call_result_defaults() {
        let r: CallToolResult = serde_json::from_value(json!({})).unwrap();
        assert!(!r.is_error());
        assert_eq!(r.text(), "");
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"content": []}));
        let r = CallToolResult {
            content: vec![Content::text("a")],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"content": [{"type": "text", "text": "a"}]})
        );
    }

    #[test]
    fn progress_tokens() {
        let p: ProgressNotificationParams = round_trip(&json!({
            "progressToken": "abc", "progress": 0.5, "total": 1.0, "message": "half"
        }));
        assert_eq!(p.progress_token, ProgressToken::String("abc".into()));
        assert_eq!(p.total, Some(1.0));
        let p: ProgressNotificationParams =
            serde_json::from_value(json!({"progressToken": 7, "progress": 3})).unwrap();
        assert_eq!(p.progress_token, ProgressToken::Number(7));
        assert_eq!(p.progress, 3.0);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"progressToken": 7, "progress": 3.0})
        );
    }

    #[test]
    fn cancelled_params() {
        let c: CancelledNotificationParams =
            round_trip(&json!({"requestId": 12, "reason": "timeout", "x": true}));
        assert_eq!(c.request_id, Id::Number(12));
        let c: CancelledNotificationParams = round_trip(&json!({"requestId": "r-1"}));
        assert_eq!(c.request_id, Id::from("r-1"));
        assert!(
            serde_json::from_value::<CancelledNotificationParams>(json!({"requestId": null}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<CancelledNotificationParams>(json!({"requestId": 1.5}))
                .is_err()
        );
    }

    #[test]
    fn logging_message() {
        let m: LoggingMessageParams =
            round_trip(&json!({"level": "warning", "logger": "db", "data": {"msg": "slow"}}));
        assert_eq!(m.level, LoggingLevel::Warning);
        assert!(
            LoggingLevel::Emergency > LoggingLevel::Error
                && LoggingLevel::Debug < LoggingLevel::Info
        );
        assert!(serde_json::from_value::<LoggingMessageParams>(
            json!({"level": "loud", "data": 1})
        )
        .is_err());
    }
}
