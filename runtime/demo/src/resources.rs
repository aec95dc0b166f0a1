//! The demo server's resources: three static ones, one template, the files of its skills
//! (read, not listed: see `skills`), and subscriptions.
//!
//! [`definitions`] and [`templates`] are what `resources/list` and `resources/templates/list`
//! page through; [`read`] resolves a URI against both (and, with `--conformance`, the
//! fixture's). Subscriptions are kept by the server per session; the `touch` tool reports a
//! subscribed URI as updated.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{json, Value};
use switchboard_server::{ErrorObject, HandlerError};

use super::conformance;
use super::demo::Demo;
pub(super) use switchboard_codecs::mcp::modern::headers::base64;

/// The spec's "Resource not found" code, which `--not-found-code` can replace.
pub(super) const NOT_FOUND: i64 = switchboard_server::RESOURCE_NOT_FOUND;

/// The text of `demo://text/readme`.
const README: &str = "# Switchboard demo\n\nA resource in Markdown, for clients to read.\n";

/// The one resource template.
pub(super) const NOTE_TEMPLATE: &str = "demo://note/{id}";

/// What the template's URIs start with; the rest is the note's `id`.
const NOTE_PREFIX: &str = "demo://note/";

/// The static resources, in a stable order (pagination cursors are indices into it).
pub(super) fn definitions(with_conformance: bool) -> Cow<'static, [Value]> {
    let ours = own();
    if with_conformance {
        Cow::Owned(
            ours.iter()
                .cloned()
                .chain(conformance::resources())
                .collect(),
        )
    } else {
        Cow::Borrowed(ours)
    }
}

fn own() -> &'static [Value] {
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
pub(super) fn templates(with_conformance: bool) -> Cow<'static, [Value]> {
    let ours = own_templates();
    if with_conformance {
        Cow::Owned(
            ours.iter()
                .cloned()
                .chain(conformance::templates())
                .collect(),
        )
    } else {
        Cow::Borrowed(ours)
    }
}

fn own_templates() -> &'static [Value] {
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
fn not_found(demo: &Demo, uri: &str) -> HandlerError {
    let mut error = ErrorObject::new(demo.options.not_found_code, "Resource not found");
    error.data = serde_json::value::to_raw_value(&json!({ "uri": uri })).ok();
    HandlerError::Rpc(error)
}

/// Answers `resources/read` (and checks a URI one subscribes to).
pub(super) fn read(demo: &Demo, uri: &str) -> Result<Value, HandlerError> {
    if demo.options.server_features {
        if let Some(read) = super::skills::catalogue().read(uri) {
            return Ok(read);
        }
    }
    let found = contents(uri).or_else(|| {
        demo.options
            .conformance
            .then(|| conformance::read(uri))
            .flatten()
    });
    let contents = found.ok_or_else(|| not_found(demo, uri))?;
    Ok(json!({ "contents": [contents] }))
}
