//! What a typed resource or prompt answers ([`ResourceReply`], [`PromptReply`]), as a typed
//! tool answers a [`Reply`](crate::Reply).

use base64::Engine as _;
use serde_json::{json, Value};

/// A typed resource's contents: text or bytes, with a MIME type if it has one.
///
/// A `String` or a `&str` is text: `Ok("hello")` from a resource function is its contents.
#[derive(Debug, Clone)]
pub struct ResourceReply {
    body: Body,
    mime_type: Option<String>,
}

#[derive(Debug, Clone)]
enum Body {
    Text(String),
    Blob(Vec<u8>),
}

impl ResourceReply {
    /// Text contents.
    pub fn text(text: impl Into<String>) -> Self {
        ResourceReply {
            body: Body::Text(text.into()),
            mime_type: None,
        }
    }

    /// Binary contents (sent as `blob`, in base64).
    pub fn blob(bytes: impl Into<Vec<u8>>) -> Self {
        ResourceReply {
            body: Body::Blob(bytes.into()),
            mime_type: None,
        }
    }

    /// Says what the contents are (`text/markdown`, `image/png`, …).
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The `resources/read` result for `uri`.
    pub(crate) fn into_result(self, uri: String) -> Value {
        let mut contents = json!({ "uri": uri });
        if let Some(mime_type) = self.mime_type {
            contents["mimeType"] = Value::String(mime_type);
        }
        match self.body {
            Body::Text(text) => contents["text"] = Value::String(text),
            Body::Blob(bytes) => {
                let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
                contents["blob"] = Value::String(blob);
            }
        }
        json!({ "contents": [contents] })
    }
}

impl From<String> for ResourceReply {
    fn from(text: String) -> Self {
        ResourceReply::text(text)
    }
}

impl From<&str> for ResourceReply {
    fn from(text: &str) -> Self {
        ResourceReply::text(text)
    }
}

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy)]
enum Role {
    User,
    Assistant,
}

/// One message of a prompt, of text.
#[derive(Debug, Clone)]
pub struct PromptMessage {
    role: Role,
    text: String,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::User,
            text: text.into(),
        }
    }

    /// A message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::Assistant,
            text: text.into(),
        }
    }

    fn to_value(&self) -> Value {
        let role = match self.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        json!({"role": role, "content": {"type": "text", "text": self.text}})
    }
}

/// What a typed prompt answers: its messages, and a description if it has one.
///
/// A `String` or a `&str` is one message from the user; so is a [`PromptMessage`] of its
/// role, and a `Vec` of them is a conversation.
#[derive(Debug, Clone, Default)]
pub struct PromptReply {
    description: Option<String>,
    messages: Vec<PromptMessage>,
}

impl PromptReply {
    /// A prompt of these messages.
    pub fn new(messages: impl IntoIterator<Item = PromptMessage>) -> Self {
        PromptReply {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }

    /// Adds a description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The `prompts/get` result.
    pub(crate) fn into_result(self) -> Value {
        let messages: Vec<Value> = self.messages.iter().map(PromptMessage::to_value).collect();
        let mut result = json!({ "messages": messages });
        if let Some(description) = self.description {
            result["description"] = Value::String(description);
        }
        result
    }
}

impl From<String> for PromptReply {
    fn from(text: String) -> Self {
        PromptReply::new([PromptMessage::user(text)])
    }
}

impl From<&str> for PromptReply {
    fn from(text: &str) -> Self {
        PromptReply::new([PromptMessage::user(text)])
    }
}

impl From<PromptMessage> for PromptReply {
    fn from(message: PromptMessage) -> Self {
        PromptReply::new([message])
    }
}

impl From<Vec<PromptMessage>> for PromptReply {
    fn from(messages: Vec<PromptMessage>) -> Self {
        PromptReply::new(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_its_text_or_its_bytes_in_base64() {
        assert_eq!(
            ResourceReply::from("hi").into_result("a://b".into()),
            json!({"contents": [{"uri": "a://b", "text": "hi"}]})
        );
        let blob = ResourceReply::blob(b"\x00\xffhi".to_vec()).with_mime_type("x/y");
        assert_eq!(
            blob.into_result("a://c".into()),
            json!({"contents": [{"uri": "a://c", "mimeType": "x/y", "blob": "AP9oaQ=="}]})
        );
    }

    #[test]
    fn a_prompt_of_text_is_one_user_message() {
        assert_eq!(
            PromptReply::from("hello").into_result(),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}]})
        );
        let reply = PromptReply::from(vec![
            PromptMessage::user("a"),
            PromptMessage::assistant("b"),
        ])
        .with_description("two");
        let result = reply.into_result();
        assert_eq!(result["description"], "two");
        assert_eq!(result["messages"][1]["role"], "assistant");
    }
}
