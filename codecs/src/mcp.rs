//! Typed MCP shapes the runtime interprets: the handshake, tools, tool results, resources,
//! prompts, completion, progress, cancellation and logging, for protocol versions
//! 2024-11-05 to 2025-11-25.
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

use std::fmt;

use serde::de::{self, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::Id;

mod content;
mod features;
pub mod modern;
pub mod skills;
pub mod tasks;

pub use content::{
    Annotations, AudioContent, BlobResourceContents, Content, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, TextContent, TextResourceContents, ToolResultContent,
    ToolUseContent,
};
pub use features::{
    CompleteResult, Completion, CompletionReference, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Resource, ResourceTemplate, ResourceUpdatedParams, Role,
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
    /// Lists resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Lists resource templates.
    pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Reads a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Subscribes to a resource's updates.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Ends a subscription.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// A subscribed resource changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// The resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// Lists prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Gets a prompt's messages.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// The prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// Completes an argument.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Sets the server's log level.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Server request: the client's roots (→ `{"roots": [...]}`).
    pub const ROOTS_LIST: &str = "roots/list";
    /// Client notification: the client's roots changed.
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// Server request: sample the client's model.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server request: ask the user (form or URL mode).
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Server notification: a URL-mode elicitation finished out of band (2025-11-25).
    pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
}

/// JSON-RPC error code of a server that needs URL-mode elicitations completed before it can
/// answer (2025-11-25); its `data.elicitations` lists them.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

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
    /// How it may be run (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
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
            execution: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

impl Tool {
    /// Whether the tool can only be run as a task (`execution.taskSupport: "required"`).
    pub fn requires_task(&self) -> bool {
        self.task_support() == TaskSupport::Required
    }

    /// How the tool may be run (absent: [`TaskSupport::Forbidden`]).
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support)
            .unwrap_or(TaskSupport::Forbidden)
    }
}

/// How a tool may be run (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether it supports task-augmented execution (absent: `forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never as a task (the default).
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task.
    Required,
    /// A value this version does not know.
    #[serde(other)]
    Unknown,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// Set by the client, never sent: why `structured_content` does not match the tool's
    /// `outputSchema`. The result is still the server's, so a caller can read what it sent.
    #[serde(skip)]
    pub output_schema_mismatch: Option<String>,
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

// Read by hand: the derived reader of a struct with a `flatten`ed field first copies the whole
// result into a buffer of its own, and every call's answer is read through this.
impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ResultVisitor;
        impl<'de> de::Visitor<'de> for ResultVisitor {
            type Value = CallToolResult;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a CallToolResult object")
            }

            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<CallToolResult, A::Error> {
                let mut result = CallToolResult::default();
                let mut seen = [false; 4];
                while let Some(key) = map.next_key::<ResultKey>()? {
                    if let Some((slot, name)) = key.known() {
                        if std::mem::replace(&mut seen[slot], true) {
                            return Err(A::Error::duplicate_field(name));
                        }
                    }
                    match key {
                        ResultKey::Content => result.content = map.next_value_seed(Blocks)?,
                        ResultKey::StructuredContent => {
                            result.structured_content = map.next_value()?;
                        }
                        ResultKey::IsError => result.is_error = map.next_value()?,
                        ResultKey::Meta => result.meta = map.next_value()?,
                        ResultKey::Other(name) => {
                            result.extra.insert(name, map.next_value()?);
                        }
                    }
                }
                Ok(result)
            }
        }
        d.deserialize_map(ResultVisitor)
    }
}

/// The content blocks of a result, in a vector sized for one block first: serde's own
/// vector reader starts at four, which for blocks this size is an allocation too big for the
/// allocator's per-thread cache, on every call (most results have one block).
struct Blocks;

impl<'de> de::DeserializeSeed<'de> for Blocks {
    type Value = Vec<Content>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Content>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> de::Visitor<'de> for Blocks {
    type Value = Vec<Content>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of content blocks")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Content>, A::Error> {
        // A hint is the peer's word: bounded, like serde's own.
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
        while let Some(block) = seq.next_element()? {
            blocks.push(block);
        }
        Ok(blocks)
    }
}

/// A key of a `CallToolResult`, read without allocating for the known ones.
enum ResultKey {
    Content,
    StructuredContent,
    IsError,
    Meta,
    Other(String),
}

impl ResultKey {
    /// A known field's slot and wire name.
    fn known(&self) -> Option<(usize, &'static str)> {
        match self {
            ResultKey::Content => Some((0, "content")),
            ResultKey::StructuredContent => Some((1, "structuredContent")),
            ResultKey::IsError => Some((2, "isError")),
            ResultKey::Meta => Some((3, "_meta")),
            ResultKey::Other(_) => None,
        }
    }

    fn from_name(name: &str) -> Option<ResultKey> {
        Some(match name {
            "content" => ResultKey::Content,
            "structuredContent" => ResultKey::StructuredContent,
            "isError" => ResultKey::IsError,
            "_meta" => ResultKey::Meta,
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for ResultKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl de::Visitor<'_> for KeyVisitor {
            type Value = ResultKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<ResultKey, E> {
                Ok(ResultKey::from_name(v).unwrap_or_else(|| ResultKey::Other(v.to_owned())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<ResultKey, E> {
                Ok(ResultKey::from_name(&v).unwrap_or(ResultKey::Other(v)))
            }
        }
        d.deserialize_identifier(KeyVisitor)
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

/// A progress token: a number or a string chosen by the requester. A number must be an
/// integer; `-0` is read as `0`, as in [`Id`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(ProgressToken::String(s)),
            Value::Number(n) => integer(&n)
                .map(ProgressToken::Number)
                .ok_or_else(|| D::Error::custom("progress token is not an integer")),
            _ => Err(D::Error::custom(
                "progress token is neither a number nor a string",
            )),
        }
    }
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
        Value::Number(n) => integer(&n)
            .map(Id::Number)
            .ok_or_else(|| D::Error::custom("id is not an integer")),
        _ => Err(D::Error::custom("id is neither a number nor a string")),
    }
}

/// The integer a JSON number holds, reading `-0` as `0` as [`Id`] does. serde_json reads `-0`
/// as the float negative zero, which the text `-0.0` also gives; without the text the two
/// cannot be told apart, so here (unlike in the envelope) both are read as `0`.
fn integer(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| *f == 0.0 && f.is_sign_negative())
            .map(|_| 0)
    })
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
mod tests;
