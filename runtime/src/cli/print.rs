//! Human-readable renderings of tool results and tool lists, and the one way to stdout.
//!
//! Text blocks print as their text; every other block is summarised on one line, so that a
//! megabyte of base64 never floods a terminal:
//!
//! ```text
//! [image image/png, 1234 bytes base64]
//! [resource file:///a.txt (text, 12 bytes)]
//! ```

use std::fmt::Write as _;
use std::io::Write as _;

use switchboard::model::{CallToolResult, Content, ResourceContents, Tool};

/// Writes to stdout. A reader that went away (`| head`) is not an error worth reporting.
pub(crate) fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// A call result as text: each text block as is, other blocks as one-line summaries, and the
/// structured content as pretty JSON when there is no text block. Ends with a newline unless
/// empty.
pub(crate) fn result(result: &CallToolResult) -> String {
    let mut out = String::new();
    let mut has_text = false;
    for content in &result.content {
        match content {
            Content::Text(t) => {
                has_text = true;
                out.push_str(&t.text);
            }
            other => out.push_str(&block(other)),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if let (false, Some(structured)) = (has_text, &result.structured_content) {
        let pretty =
            serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
        let _ = writeln!(out, "{pretty}");
    }
    out
}

/// A one-line summary of a content block.
pub(crate) fn block(content: &Content) -> String {
    match content {
        Content::Text(t) => format!("[text, {} bytes]", t.text.len()),
        Content::Image(i) => format!("[image {}, {} bytes base64]", i.mime_type, i.data.len()),
        Content::Audio(a) => format!("[audio {}, {} bytes base64]", a.mime_type, a.data.len()),
        Content::ResourceLink(l) => format!("[resource_link {} — {}]", l.uri, l.name),
        Content::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => {
                format!("[resource {} (text, {} bytes)]", t.uri, t.text.len())
            }
            ResourceContents::Blob(b) => {
                format!("[resource {} (blob, {} bytes)]", b.uri, b.blob.len())
            }
        },
        // `Unknown` and any kind a later model version adds: name it by its wire type.
        other => {
            let value = serde_json::to_value(other).unwrap_or_default();
            match value.get("type").and_then(serde_json::Value::as_str) {
                Some(kind) => format!("[{kind}]"),
                None => "[untyped block]".to_owned(),
            }
        }
    }
}

/// `name — description` (the description's first line), or just the name.
pub(crate) fn tool(tool: &Tool) -> String {
    tool_as(&tool.name, tool)
}

/// [`tool`] under another name, such as its catalogue name.
pub(crate) fn tool_as(name: &str, tool: &Tool) -> String {
    match tool
        .description
        .as_deref()
        .and_then(|d| d.lines().next())
        .map(str::trim)
    {
        Some(description) if !description.is_empty() => format!("{name} — {description}"),
        _ => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn every_block_kind() {
        let r = parse(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "aW1n", "mimeType": "image/png"},
            {"type": "audio", "data": "YXU=", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "bee"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "Yw=="}},
            {"type": "hologram", "x": 1},
            {"text": "no type"},
            {"type": "text", "text": "world\n"}
        ], "structuredContent": {"ignored": true}}));
        assert_eq!(
            result(&r),
            "hello\n[image image/png, 4 bytes base64]\n[audio audio/wav, 4 bytes base64]\n\
             [resource_link file:///a — a]\n[resource file:///b (text, 3 bytes)]\n\
             [resource file:///c (blob, 4 bytes)]\n[hologram]\n[untyped block]\nworld\n"
        );
    }

    #[test]
    fn structured_content_without_text() {
        let r = parse(json!({"content": [], "structuredContent": {"sum": 5}}));
        assert_eq!(result(&r), "{\n  \"sum\": 5\n}\n");
        assert_eq!(result(&parse(json!({}))), "");
    }

    #[test]
    fn tool_lines() {
        let t: Tool =
            serde_json::from_value(json!({"name": "t", "description": "Does it.\nDetails."}))
                .unwrap();
        assert_eq!(tool(&t), "t — Does it.");
        let t: Tool = serde_json::from_value(json!({"name": "bare", "description": " "})).unwrap();
        assert_eq!(tool(&t), "bare");
        assert_eq!(tool_as("s__bare", &t), "s__bare");
    }
}
