//! `sampling/createMessage`: a server asks for a completion from the application's model.

use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::BoxFuture;
use crate::model::{Content, Role, Tool};

/// Answers `sampling/createMessage`.
///
/// The specification asks for a human in the loop: let the user see (and refuse) the request
/// and the completion before either goes anywhere.
pub trait SamplingHandler: Send + Sync + fmt::Debug + 'static {
    /// Samples the model. `Err` answers the server with a JSON-RPC error, and so does a
    /// response without `role`, `content` or `model`.
    fn create_message(
        &self,
        server: &str,
        request: SamplingRequest,
    ) -> BoxFuture<Result<SamplingResponse, String>>;

    /// Whether this handler lets the model use the request's `tools` (2025-11-25); declares
    /// `sampling.tools`. Without it a request that brings `tools` or `toolChoice` is refused
    /// with -32602, as the specification requires.
    fn handles_tools(&self) -> bool {
        false
    }
}

/// The params of a `sampling/createMessage` request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Which model the server would like; advisory.
    #[serde(default)]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the server would like; the client may change or drop it.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Context from MCP servers to attach (soft-deprecated beyond `none`).
    #[serde(default)]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// Sequences that end sampling.
    #[serde(default)]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata to pass through.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Tools the model may use (2025-11-25; only with [`SamplingHandler::handles_tools`]).
    #[serde(default)]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use them (2025-11-25).
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// The params as received.
    #[serde(skip)]
    pub raw: Value,
}

impl SamplingRequest {
    pub(crate) fn from_params(params: Value) -> Result<Self, String> {
        let mut request = SamplingRequest::deserialize(&params)
            .map_err(|e| format!("invalid sampling/createMessage params: {e}"))?;
        request.raw = params;
        Ok(request)
    }

    /// Whether the request brings tools or a tool choice.
    pub(crate) fn uses_tools(&self) -> bool {
        self.tools.is_some() || self.tool_choice.is_some()
    }
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who speaks it.
    pub role: Role,
    /// Its blocks: the wire's single block or array, as a list.
    #[serde(deserialize_with = "one_or_many")]
    pub content: Vec<Content>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default)]
    pub meta: Option<Map<String, Value>>,
}

/// Which model a server would like.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelPreferences {
    /// Model names or families, most wanted first (substrings of model names).
    #[serde(default)]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(default)]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(default)]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(default)]
    pub intelligence_priority: Option<f64>,
}

/// A hint for model selection.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct ModelHint {
    /// A (part of a) model name.
    #[serde(default)]
    pub name: Option<String>,
    /// Keys the specification leaves to the client.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Context from MCP servers a sampling request asks to include.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum IncludeContext {
    /// None (the default).
    None,
    /// From the requesting server.
    ThisServer,
    /// From every server.
    AllServers,
}

/// How the model may use a sampling request's tools (2025-11-25).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct ToolChoice {
    /// The mode; absent means [`ToolChoiceMode::Auto`].
    #[serde(default)]
    pub mode: Option<ToolChoiceMode>,
}

/// Tool use modes of [`ToolChoice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use tools.
    None,
}

/// What a [`SamplingHandler`] answers: the sampled message and the model that wrote it.
///
/// `role`, `content` and `model` are required; [`new`](Self::new) fills them. A response
/// left without one (through [`Default`]) is answered as the handler's error, never sent.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SamplingResponse {
    /// Who speaks (the model: [`Role::Assistant`]).
    pub role: Option<Role>,
    /// The message's blocks (text, image, audio, or `tool_use` blocks with
    /// [`SamplingHandler::handles_tools`]).
    pub content: Vec<Content>,
    /// The model's name.
    pub model: Option<String>,
    /// Why sampling stopped: `endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or the
    /// provider's own.
    pub stop_reason: Option<String>,
    /// Protocol metadata.
    pub meta: Option<Map<String, Value>>,
}

impl SamplingResponse {
    /// The assistant's `content`, written by `model`.
    pub fn new(model: impl Into<String>, content: impl IntoIterator<Item = Content>) -> Self {
        SamplingResponse {
            role: Some(Role::Assistant),
            content: content.into_iter().collect(),
            model: Some(model.into()),
            stop_reason: None,
            meta: None,
        }
    }

    /// Says why sampling stopped.
    pub fn stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// The `CreateMessageResult`, or what the handler left out.
    pub(crate) fn into_result(self) -> Result<Value, String> {
        let role = self
            .role
            .ok_or("the sampling handler's result has no `role`")?;
        let model = self
            .model
            .filter(|m| !m.is_empty())
            .ok_or("the sampling handler's result has no `model`")?;
        // One block goes as an object, as every version reads it; several as the array
        // 2025-11-25 allows.
        let content = match <[Content; 1]>::try_from(self.content) {
            Ok([one]) => serde_json::to_value(one),
            Err(many) if many.is_empty() => {
                return Err("the sampling handler's result has no `content`".into())
            }
            Err(many) => serde_json::to_value(many),
        }
        .map_err(|e| e.to_string())?;
        let mut result = Map::new();
        result.insert(
            "role".into(),
            serde_json::to_value(role).map_err(|e| e.to_string())?,
        );
        result.insert("content".into(), content);
        result.insert("model".into(), Value::String(model));
        if let Some(reason) = self.stop_reason {
            result.insert("stopReason".into(), Value::String(reason));
        }
        if let Some(meta) = self.meta {
            result.insert("_meta".into(), Value::Object(meta));
        }
        Ok(Value::Object(result))
    }
}

/// A block or an array of blocks, as a list.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Content>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<Content>),
        One(Box<Content>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::Many(many) => many,
        OneOrMany::One(one) => vec![*one],
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug)]
    pub(crate) struct Plain;

    impl SamplingHandler for Plain {
        fn create_message(
            &self,
            _: &str,
            _: SamplingRequest,
        ) -> BoxFuture<Result<SamplingResponse, String>> {
            Box::pin(async { Ok(SamplingResponse::new("m", [Content::text("hi")])) })
        }
    }

    #[derive(Debug)]
    pub(crate) struct WithTools;

    impl SamplingHandler for WithTools {
        fn create_message(
            &self,
            _: &str,
            _: SamplingRequest,
        ) -> BoxFuture<Result<SamplingResponse, String>> {
            Box::pin(async { Ok(SamplingResponse::new("m", [Content::text("hi")])) })
        }

        fn handles_tools(&self) -> bool {
            true
        }
    }

    #[test]
    fn every_param_is_typed_and_the_raw_params_kept() {
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "weather?"}},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18C"}]}
                ]}
            ],
            "modelPreferences": {"hints": [{"name": "claude"}], "costPriority": 0.2,
                                 "speedPriority": 0.5, "intelligencePriority": 0.9},
            "systemPrompt": "be brief",
            "includeContext": "thisServer",
            "temperature": 0.3,
            "maxTokens": 100,
            "stopSequences": ["\n\n"],
            "metadata": {"k": "v"},
            "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "required"}
        });
        let r = SamplingRequest::from_params(params.clone()).unwrap();
        assert_eq!(r.messages.len(), 3);
        assert_eq!(r.messages[0].role, Role::User);
        assert_eq!(r.messages[0].content, vec![Content::text("weather?")]);
        assert!(matches!(r.messages[1].content[0], Content::ToolUse(_)));
        assert!(matches!(r.messages[2].content[0], Content::ToolResult(_)));
        let prefs = r.model_preferences.as_ref().unwrap();
        assert_eq!(
            prefs.hints.as_ref().unwrap()[0].name.as_deref(),
            Some("claude")
        );
        assert_eq!(prefs.intelligence_priority, Some(0.9));
        assert_eq!(r.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(r.include_context, Some(IncludeContext::ThisServer));
        assert_eq!(r.temperature, Some(0.3));
        assert_eq!(r.max_tokens, 100);
        assert_eq!(r.stop_sequences.as_deref(), Some(&["\n\n".to_owned()][..]));
        assert_eq!(r.metadata.as_ref().unwrap()["k"], "v");
        assert_eq!(r.tools.as_ref().unwrap()[0].name, "get_weather");
        assert_eq!(
            r.tool_choice.as_ref().unwrap().mode,
            Some(ToolChoiceMode::Required)
        );
        assert!(r.uses_tools());
        assert_eq!(r.raw, params);
    }

    #[test]
    fn malformed_params_are_refused() {
        for params in [
            json!({"messages": "nope", "maxTokens": 1}),
            json!({"messages": []}),
            json!({"messages": [{"role": "robot", "content": {"type": "text", "text": "x"}}], "maxTokens": 1}),
            json!(null),
        ] {
            assert!(
                SamplingRequest::from_params(params.clone()).is_err(),
                "{params}"
            );
        }
    }

    #[test]
    fn a_response_without_role_content_or_model_is_refused() {
        let ok = SamplingResponse::new("m1", [Content::text("a")])
            .stop_reason("endTurn")
            .into_result()
            .unwrap();
        assert_eq!(
            ok,
            json!({"role": "assistant", "content": {"type": "text", "text": "a"},
                   "model": "m1", "stopReason": "endTurn"})
        );
        let two = SamplingResponse::new("m1", [Content::text("a"), Content::text("b")]);
        assert!(two.into_result().unwrap()["content"].is_array());

        let mut no_model = SamplingResponse::new("m1", [Content::text("a")]);
        no_model.model = None;
        assert!(no_model.into_result().unwrap_err().contains("model"));
        let mut no_role = SamplingResponse::new("m1", [Content::text("a")]);
        no_role.role = None;
        assert!(no_role.into_result().unwrap_err().contains("role"));
        let no_content = SamplingResponse::new("m1", []);
        assert!(no_content.into_result().unwrap_err().contains("content"));
    }
}
