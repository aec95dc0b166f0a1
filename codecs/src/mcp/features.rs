//! The server features besides tools: resources, prompts and argument completion
//! (`schema/2025-11-25/schema.ts`; every field of 2024-11-05 onwards, newer ones optional).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Annotations, Content, ResourceContents};

/// A resource the server can read (`resources/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A display name (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons, raw (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A family of resources named by an RFC 6570 URI template (`resources/templates/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Its programmatic name.
    pub name: String,
    /// A display name (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every resource it names, when they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons, raw (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources of this page.
    pub resources: Vec<Resource>,
    /// Where the next page starts; `None` on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `resources/templates/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates of this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Where the next page starts; `None` on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `resources/read`: one resource may have several parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// Text or base64 blob parts.
    pub contents: Vec<ResourceContents>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The params of `notifications/resources/updated`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUpdatedParams {
    /// The resource that changed (it may be a sub-resource of the one subscribed to).
    pub uri: String,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A prompt template the server offers (`prompts/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Its programmatic name.
    pub name: String,
    /// A display name (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons, raw (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Prompt {
    /// The names of the arguments it requires.
    pub fn required_arguments(&self) -> impl Iterator<Item = &str> {
        self.arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true))
            .map(|a| a.name.as_str())
    }
}

/// One argument of a prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A display name (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `prompts/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts of this page.
    pub prompts: Vec<Prompt>,
    /// Where the next page starts; `None` on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What is said: any content block.
    pub content: Content,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What `completion/complete` completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// An argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// A variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template (or URI).
        uri: String,
    },
}

/// The values `completion/complete` offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 values.
    pub values: Vec<String>,
    /// How many values there are in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The values.
    pub completion: Completion,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_read_result_keeps_text_and_blob_parts_apart() {
        let r: ReadResourceResult = serde_json::from_value(json!({"contents": [
            {"uri": "a://t", "mimeType": "text/plain", "text": "hi"},
            {"uri": "a://b", "blob": "AAE="}
        ]}))
        .unwrap();
        assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text == "hi"));
        assert!(matches!(&r.contents[1], ResourceContents::Blob(b) if b.blob == "AAE="));
    }

    #[test]
    fn prompts_and_their_messages_round_trip_with_unknown_fields() {
        let wire = json!({
            "description": "d",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "x"}},
                {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "a://t", "text": "y"}}, "future": 1}
            ],
            "later": true
        });
        let r: GetPromptResult = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(r.messages[1].role, Role::Assistant);
        assert!(matches!(r.messages[1].content, Content::Resource(_)));
        assert_eq!(serde_json::to_value(&r).unwrap(), wire);
    }

    #[test]
    fn completion_references_are_tagged_as_the_spec_says() {
        let p = CompletionReference::Prompt { name: "g".into() };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"type": "ref/prompt", "name": "g"})
        );
        let r = CompletionReference::Resource {
            uri: "a://{x}".into(),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"type": "ref/resource", "uri": "a://{x}"})
        );
    }

    #[test]
    fn required_arguments_are_listed() {
        let p: Prompt = serde_json::from_value(json!({"name": "g", "arguments": [
            {"name": "a", "required": true}, {"name": "b"}, {"name": "c", "required": false}
        ]}))
        .unwrap();
        assert_eq!(p.required_arguments().collect::<Vec<_>>(), ["a"]);
    }
}
