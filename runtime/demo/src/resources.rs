//! The demo server's resources: three static ones, one template, and subscriptions.
//!
//! [`definitions`] and [`templates`] are what `resources/list` and `resources/templates/list`
//! page through; [`read`] resolves a URI against both. Subscriptions are recorded in the
//! [`Session`]; the `touch` tool reports a subscribed URI as updated.

use std::sync::OnceLock;

use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::ErrorObject;

use super::server::{str_param, Session};
pub(super) use switchboard_codecs::mcp::modern::headers::base64;

/// The spec's "Resource not found" code, which `--not-found-code` can replace.
pub(super) const NOT_FOUND: i64 = -32002;

/// The text of `demo://text/readme`.
const README: &str = "# Switchboard demo\n\nA resource in Markdown, for clients to read.\n";

/// The one resource template.
pub(super) const NOTE_TEMPLATE: &str = "demo://note/{id}";

/// What the template's URIs start with; the rest is the note's `id`.
const NOTE_PREFIX: &str = "demo://note/";

/// The static resources, in a stable order (pagination cursors are indices into it).
pub(super) fn definitions() -> &'static [Value] {
    static ALL: OnceLock<Vec<Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        vec![
            json!({
                "uri": "demo://text/hello",
                "name": "hello",
                "title": "Hello",
                "description": "A short plain-text greeting.",
                "mimeType": "text/plain",
                "size": "Hello, world!".len(),
            }),
            json!({
                "uri": "demo://blob/bytes",
                "name": "bytes",
                "title": "Every byte",
                "description": "The 256 bytes 0 to 255, in order, as a base64 blob.",
                "mimeType": "application/octet-stream",
                "size": 256,
            }),
            json!({
                "uri": "demo://text/readme",
                "name": "readme",
                "title": "Readme",
                "description": "A few lines of Markdown.",
                "mimeType": "text/markdown",
                "size": README.len(),
            }),
        ]
    })
}

/// The resource templates.
pub(super) fn templates() -> &'static [Value] {
    static ALL: OnceLock<Vec<Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        vec![json!({
            "uriTemplate": NOTE_TEMPLATE,
            "name": "note",
            "title": "Note",
            "description": "A note by id; demo://note/42 reads \"note 42\".",
            "mimeType": "text/plain",
        })]
    })
}

/// The contents of `uri`, if it is a listed resource or matches the template.
fn contents(uri: &str) -> Option<Value> {
    let text = |mime: &str, text: &str| json!({"uri": uri, "mimeType": mime, "text": text});
    match uri {
        "demo://text/hello" => Some(text("text/plain", "Hello, world!")),
        "demo://text/readme" => Some(text("text/markdown", README)),
        "demo://blob/bytes" => {
            let bytes: Vec<u8> = (0..=255).collect();
            Some(
                json!({"uri": uri, "mimeType": "application/octet-stream", "blob": base64(&bytes)}),
            )
        }
        _ => {
            // `{id}` expands to one path segment (RFC 6570 simple expansion): not empty, no '/'.
            let id = uri.strip_prefix(NOTE_PREFIX)?;
            (!id.is_empty() && !id.contains('/')).then(|| text("text/plain", &format!("note {id}")))
        }
    }
}

/// The error for a URI that is neither listed nor matches the template.
fn not_found(session: &Session, uri: &str) -> ErrorObject {
    let mut error = ErrorObject::new(session.options.not_found_code, "Resource not found");
    error.data = serde_json::value::to_raw_value(&json!({ "uri": uri })).ok();
    error
}

/// Answers `resources/read`.
pub(super) fn read(session: &Session, params: &Value) -> Result<Value, ErrorObject> {
    let uri = str_param(params, "uri")?;
    let contents = contents(uri).ok_or_else(|| not_found(session, uri))?;
    Ok(json!({ "contents": [contents] }))
}

/// Answers `resources/subscribe`. Only a URI that could be read can be subscribed to.
pub(super) fn subscribe(session: &Session, params: &Value) -> Result<Value, ErrorObject> {
    let uri = str_param(params, "uri")?;
    if contents(uri).is_none() {
        return Err(not_found(session, uri));
    }
    session.subscribe(uri);
    Ok(json!({}))
}

/// Answers `resources/unsubscribe`; unsubscribing from a URI never subscribed to is no error.
pub(super) fn unsubscribe(session: &Session, params: &Value) -> Result<Value, ErrorObject> {
    session.unsubscribe(str_param(params, "uri")?);
    Ok(json!({}))
}
