//! The demo server's prompts: one without arguments, one with a required and an optional
//! argument, and one that embeds a resource.
//!
//! [`definitions`] is what `prompts/list` pages through; [`get`] answers `prompts/get`. A
//! missing required argument and an unknown prompt are both -32602, as the spec suggests.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{json, Value};
use switchboard_server::HandlerError;

use super::conformance;

fn invalid_params(message: impl Into<String>) -> HandlerError {
    HandlerError::invalid_params(message)
}

/// The prompts, in a stable order (pagination cursors are indices into it).
pub(super) fn definitions(with_conformance: bool) -> Cow<'static, [Value]> {
    let ours = own();
    if with_conformance {
        Cow::Owned(ours.iter().cloned().chain(conformance::prompts()).collect())
    } else {
        Cow::Borrowed(ours)
    }
}

fn own() -> &'static [Value] {
    static ALL: OnceLock<Vec<Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        vec![
            // No `arguments` at all, so that clients meet the field absent, not only empty.
            json!({
                "name": "simple",
                "title": "Simple",
                "description": "A prompt without arguments.",
            }),
            json!({
                "name": "greeting",
                "title": "Greeting",
                "description": "Asks to greet someone, optionally in a style.",
                "arguments": [
                    {"name": "name", "description": "Who to greet", "required": true},
                    {"name": "style", "description": "How to greet them", "required": false},
                ],
            }),
            json!({
                "name": "with_resource",
                "title": "With a resource",
                "description": "A prompt whose message embeds the demo://text/hello resource.",
            }),
        ]
    })
}

/// Answers `prompts/get`.
pub(super) fn get(name: &str, args: &Value) -> Result<Value, HandlerError> {
    let (description, content) = match name {
        "simple" => ("A prompt without arguments.", text("A simple prompt.")),
        "greeting" => {
            let who = arg(args, "name")?
                .ok_or_else(|| invalid_params("missing required argument \"name\""))?;
            let message = match arg(args, "style")? {
                Some(style) => format!("Say hello to {who} in a {style} style."),
                None => format!("Say hello to {who}."),
            };
            ("Asks to greet someone.", text(&message))
        }
        "with_resource" => (
            "A prompt that embeds a resource.",
            json!({
                "type": "resource",
                "resource": {"uri": "demo://text/hello", "mimeType": "text/plain", "text": "Hello, world!"},
            }),
        ),
        other => return Err(invalid_params(format!("unknown prompt: {other}"))),
    };
    Ok(json!({
        "description": description,
        "messages": [{"role": "user", "content": content}],
    }))
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A prompt argument, which MCP defines as a string.
fn arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, HandlerError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid_params(format!(
            "argument {key:?} must be a string, not {other}"
        ))),
    }
}
