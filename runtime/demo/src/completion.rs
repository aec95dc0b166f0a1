//! The demo server's completion: suggestions for `greeting`'s arguments and for the
//! `demo://note/{id}` template's `id`.
//!
//! Suggestions are the fixed candidates that start with the typed value, ignoring case, all
//! on one answer (`hasMore: false`). An unknown reference or argument is -32602.

use serde_json::{json, Value};
use switchboard_server::HandlerError;

use super::resources::NOTE_TEMPLATE;

fn invalid_params(message: impl Into<String>) -> HandlerError {
    HandlerError::invalid_params(message)
}

/// A string field of params, or an invalid-params error naming it.
fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, HandlerError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_params(format!("missing string param {key:?}")))
}

/// Answers `completion/complete`.
pub(super) fn complete(params: &Value) -> Result<Value, HandlerError> {
    let reference = params
        .get("ref")
        .ok_or_else(|| invalid_params("missing param \"ref\""))?;
    let argument = params
        .get("argument")
        .ok_or_else(|| invalid_params("missing param \"argument\""))?;
    let (name, value) = (str_param(argument, "name")?, str_param(argument, "value")?);
    // Values the client already chose for the other arguments.
    let context = |key: &str| params["context"]["arguments"][key].as_str();
    let candidates: &[&str] = match (str_param(reference, "type")?, name) {
        ("ref/prompt", _) => match (str_param(reference, "name")?, name) {
            ("greeting", "name") => &["Ada", "Alan", "Alice", "Grace"],
            // Depends on the name chosen, so that tests can see the context arrive.
            ("greeting", "style") if context("name") == Some("Ada") => &["formal", "pirate"],
            ("greeting", "style") => &["casual"],
            ("greeting", other) => return Err(unknown_argument(other)),
            (prompt, _) => {
                return Err(invalid_params(format!(
                    "no completion for prompt {prompt:?}"
                )))
            }
        },
        ("ref/resource", name) => match str_param(reference, "uri")? {
            NOTE_TEMPLATE if name == "id" => &["1", "2", "42"],
            NOTE_TEMPLATE => return Err(unknown_argument(name)),
            uri => return Err(invalid_params(format!("no completion for {uri:?}"))),
        },
        (other, _) => return Err(invalid_params(format!("unknown ref type {other:?}"))),
    };
    let prefix = value.to_lowercase();
    let values: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.to_lowercase().starts_with(&prefix))
        .collect();
    Ok(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
}

fn unknown_argument(name: &str) -> HandlerError {
    invalid_params(format!("no completion for argument {name:?}"))
}
