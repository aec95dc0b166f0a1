//! Human-readable renderings of tool results and tool lists, the escaping of server text,
//! and the one way to stdout.
//!
//! Text blocks print as their text; every other block is summarised on one line, so that a
//! megabyte of base64 never floods a terminal:
//!
//! ```text
//! [image image/png, 1234 bytes base64]
//! [resource file:///a.txt (text, 12 bytes)]
//! ```
//!
//! What a server wrote about itself (names, descriptions, prompt messages, the questions of a
//! form) is shown through [`escape_line`] or [`escape_text`], so that it cannot move the
//! cursor, retitle the window or hide text on the user's terminal. A tool's result and a
//! resource's text are what the user asked for and print as they are, as `cat` would; `--json`
//! output is JSON, whose strings escape control characters anyway.

use std::borrow::Cow;
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

/// A one-line summary of a content block, its server-given strings escaped.
pub(crate) fn block(content: &Content) -> String {
    let e = escape_line;
    match content {
        Content::Text(t) => format!("[text, {} bytes]", t.text.len()),
        Content::Image(i) => format!("[image {}, {} bytes base64]", e(&i.mime_type), i.data.len()),
        Content::Audio(a) => format!("[audio {}, {} bytes base64]", e(&a.mime_type), a.data.len()),
        Content::ResourceLink(l) => format!("[resource_link {} — {}]", e(&l.uri), e(&l.name)),
        Content::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => {
                format!("[resource {} (text, {} bytes)]", e(&t.uri), t.text.len())
            }
            ResourceContents::Blob(b) => {
                format!("[resource {} (blob, {} bytes)]", e(&b.uri), b.blob.len())
            }
        },
        // `Unknown` and any kind a later model version adds: name it by its wire type.
        other => {
            let value = serde_json::to_value(other).unwrap_or_default();
            match value.get("type").and_then(serde_json::Value::as_str) {
                Some(kind) => format!("[{}]", e(kind)),
                None => "[untyped block]".to_owned(),
            }
        }
    }
}

/// A binary resource part as one line: `<blob: 256 bytes, image/png>`. The base64 is decoded
/// only to count its bytes, so that the count is the resource's size, not the encoding's.
pub(crate) fn blob(base64: &str, mime_type: Option<&str>) -> String {
    let size = match decoded_len(base64) {
        Some(1) => "1 byte".to_owned(),
        Some(n) => format!("{n} bytes"),
        None => format!("not valid base64, {} characters", base64.len()),
    };
    match mime_type {
        Some(mime) => format!("<blob: {size}, {}>", escape_line(mime)),
        None => format!("<blob: {size}>"),
    }
}

/// How many bytes standard base64 (RFC 4648, padded or not; whitespace between groups, as
/// some servers wrap lines, is skipped) decodes to; `None` if it is not base64.
fn decoded_len(base64: &str) -> Option<usize> {
    let mut symbols = 0usize;
    let mut padding = 0usize;
    for b in base64.bytes().filter(|b| !b.is_ascii_whitespace()) {
        match b {
            b'=' => padding += 1,
            // A symbol after padding: padding only ends the text.
            _ if padding > 0 => return None,
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => symbols += 1,
            _ => return None,
        }
    }
    let tail = symbols % 4;
    let padded_ok = match padding {
        0 => true,
        // Padding completes the last group of four.
        1 | 2 => (symbols + padding) % 4 == 0,
        _ => false,
    };
    // A lone symbol in the last group carries 6 bits: less than a byte.
    if tail == 1 || !padded_ok {
        return None;
    }
    Some(symbols / 4 * 3 + tail.saturating_sub(1))
}

/// `text` on one line: every control character (C0 with tab and line feed, DEL and C1:
/// escape sequences, carriage returns, backspaces, bells) written out as a Rust escape such
/// as `\u{1b}`; other text as is, borrowed.
pub(crate) fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// [`escape_line`] for text of several lines: line feeds and tabs stay as they are, so that
/// a message keeps its layout, but a carriage return cannot overwrite a line.
pub(crate) fn escape_text(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && !keep(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `name — description` (the description's first line), or just the name.
pub(crate) fn tool(tool: &Tool) -> String {
    tool_as(&tool.name, tool)
}

/// [`tool`] under another name, such as its catalogue name. A tool that can only run as a
/// task (which `call` runs to its result) says so.
pub(crate) fn tool_as(name: &str, tool: &Tool) -> String {
    let line = named(name, tool.description.as_deref());
    if tool.requires_task() {
        format!("{line} [runs as a task]")
    } else {
        line
    }
}

/// `name — description` (the description's first line), or just the name, both escaped.
pub(crate) fn named(name: &str, description: Option<&str>) -> String {
    let name = escape_line(name);
    match description.and_then(|d| d.lines().next()).map(str::trim) {
        Some(description) if !description.is_empty() => {
            format!("{name} — {}", escape_line(description))
        }
        _ => name.into_owned(),
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
        let t: Tool = serde_json::from_value(
            json!({"name": "long", "execution": {"taskSupport": "required"}}),
        )
        .unwrap();
        assert_eq!(tool(&t), "long [runs as a task]");
        let t: Tool = serde_json::from_value(
            json!({"name": "t\u{1b}]0;owned\u{7}", "description": "Clears\u{1b}[2J it."}),
        )
        .unwrap();
        assert_eq!(tool(&t), r"t\u{1b}]0;owned\u{7} — Clears\u{1b}[2J it.");
    }

    #[test]
    fn control_characters_are_escaped() {
        let nasty = "a\tb\nc\rd\x1b[31me\u{7f}f\u{9b}g ünï";
        assert_eq!(
            escape_line(nasty),
            r"a\tb\nc\rd\u{1b}[31me\u{7f}f\u{9b}g ünï"
        );
        assert_eq!(
            escape_text(nasty),
            "a\tb\nc\\rd\\u{1b}[31me\\u{7f}f\\u{9b}g ünï"
        );
        assert!(matches!(escape_line("plain — text"), Cow::Borrowed(_)));
        assert!(matches!(escape_text("two\nlines\t"), Cow::Borrowed(_)));
    }

    #[test]
    fn blobs_are_counted_in_bytes() {
        assert_eq!(blob("", None), "<blob: 0 bytes>");
        assert_eq!(
            blob("Yw==", Some("text/plain")),
            "<blob: 1 byte, text/plain>"
        );
        assert_eq!(blob("YWI=", None), "<blob: 2 bytes>");
        assert_eq!(blob("YWJj", None), "<blob: 3 bytes>");
        assert_eq!(blob("YWJjZA", None), "<blob: 4 bytes>");
        assert_eq!(blob("YWJj\nZGVm\n", None), "<blob: 6 bytes>");
        assert_eq!(
            blob("YWJ", Some("a/b\u{1b}")),
            r"<blob: 2 bytes, a/b\u{1b}>"
        );
        for bad in ["Y", "Y===", "YW=J", "YW!=", "YWJjZ"] {
            assert_eq!(
                blob(bad, None),
                format!("<blob: not valid base64, {} characters>", bad.len()),
                "{bad}"
            );
        }
    }
}
