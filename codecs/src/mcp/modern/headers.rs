//! The HTTP headers a 2026-07-28 request carries beside its body: `Mcp-Method`, `Mcp-Name`
//! and the `Mcp-Param-{Name}` headers a tool's `inputSchema` asks for with `x-mcp-header`.
//!
//! [`ParamHeader::from_schema`] checks a tool's annotations (a tool with an invalid one must
//! be left out of the catalogue); [`ParamHeader::value`] reads an argument for its header;
//! [`encode`] makes any value header-safe with the `=?base64?…?=` sentinel.
//!
//! ```
//! use serde_json::json;
//! use switchboard_codecs::mcp::modern::headers::{encode, ParamHeader};
//!
//! let schema = json!({"type": "object", "properties": {
//!     "region": {"type": "string", "x-mcp-header": "Region"}}});
//! let headers = ParamHeader::from_schema(&schema).unwrap();
//! assert_eq!(headers[0].header_name(), "Mcp-Param-Region");
//! assert_eq!(headers[0].value(&json!({"region": "us-west1"})).as_deref(), Some("us-west1"));
//! assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
//! ```

use serde_json::Value;

/// The schema keyword that names a parameter's header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// What a header value says: the text inside `=?base64?…?=` (which must be valid, padded
/// base64 of UTF-8), or the value itself, trimmed of the spaces HTTP allows around it.
pub fn decode(value: &str) -> Result<String, String> {
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    let bytes = unbase64(inner).ok_or_else(|| format!("invalid base64 in {value:?}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{value:?} is not base64 of UTF-8"))
}

/// Standard, padded base64 (RFC 4648 §4), strictly: no missing padding, no other characters.
fn unbase64(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let digit = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.chunks(4).count();
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = n << 6 | digit(c)?;
        }
        n <<= 6 * pad as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&decoded[..3 - pad]);
    }
    Some(out)
}

/// The largest integer a header may carry (JavaScript's safe range).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One `Mcp-Param-{Name}` header of a tool: where its value is in the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
    /// The `{Name}` part, as the schema spells it.
    pub name: String,
}

impl ParamHeader {
    /// The tool's parameter headers, or why its `x-mcp-header` annotations are invalid: an
    /// empty or non-token name, a name used twice (ignoring case), a parameter that is not
    /// a string, integer or boolean, or an annotation not reachable through `properties`
    /// alone.
    pub fn from_schema(schema: &Value) -> Result<Vec<ParamHeader>, String> {
        let mut found = Vec::new();
        collect(schema, &mut Vec::new(), true, &mut found)?;
        for (i, header) in found.iter().enumerate() {
            if found[..i]
                .iter()
                .any(|other| other.name.eq_ignore_ascii_case(&header.name))
            {
                return Err(format!(
                    "x-mcp-header {:?} is used more than once",
                    header.name
                ));
            }
        }
        Ok(found)
    }

    /// `Mcp-Param-{Name}`.
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.name)
    }

    /// The plain text of `arguments` at this header's path (before [`encode`]); `None` as for
    /// [`value`](Self::value).
    pub fn text(&self, arguments: &Value) -> Option<String> {
        let mut at = arguments;
        for key in &self.path {
            at = at.get(key)?;
        }
        match at {
            Value::String(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            _ => None,
        }
    }

    /// The header value for `arguments`, encoded; `None` when the arguments have no
    /// string, integer or boolean at the path (the header is then left out).
    pub fn value(&self, arguments: &Value) -> Option<String> {
        let mut at = arguments;
        for key in &self.path {
            at = at.get(key)?;
        }
        let text = match at {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
            _ => return None,
        };
        Some(encode(&text))
    }
}

/// Walks `schema`: `reachable` says whether every step so far was a `properties` key.
fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match schema {
        Value::Object(object) => {
            if let Some(name) = object.get(X_MCP_HEADER) {
                if !reachable || path.is_empty() {
                    return Err(format!(
                        "x-mcp-header {name} is not on a property reachable through `properties` alone"
                    ));
                }
                let Some(name) = name.as_str() else {
                    return Err(format!("x-mcp-header {name} is not a string"));
                };
                if name.is_empty() || !name.bytes().all(is_tchar) {
                    return Err(format!("x-mcp-header {name:?} is not an HTTP token"));
                }
                check_primitive(object, name)?;
                found.push(ParamHeader {
                    path: path.clone(),
                    name: name.to_owned(),
                });
            }
            for (key, value) in object {
                if key == "properties" {
                    if let Value::Object(properties) = value {
                        for (property, schema) in properties {
                            path.push(property.clone());
                            let result = collect(schema, path, reachable, found);
                            path.pop();
                            result?;
                        }
                        continue;
                    }
                }
                // Any other keyword (`items`, `oneOf`, `$defs`, …) leaves static reach.
                if key != X_MCP_HEADER {
                    collect(value, path, false, found)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| collect(item, path, false, found)),
        _ => Ok(()),
    }
}

/// The annotated parameter must be a string, an integer (in the safe range) or a boolean.
fn check_primitive(schema: &serde_json::Map<String, Value>, name: &str) -> Result<(), String> {
    let allowed = |t: &str| matches!(t, "string" | "integer" | "boolean");
    let ok = match schema.get("type") {
        Some(Value::String(t)) => allowed(t),
        Some(Value::Array(types)) => {
            !types.is_empty()
                && types
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| allowed(t) || t == "null"))
        }
        _ => false,
    };
    if !ok {
        return Err(format!(
            "x-mcp-header {name:?} is on a parameter that is not a string, integer or boolean"
        ));
    }
    for bound in ["minimum", "maximum"] {
        if let Some(n) = schema.get(bound).and_then(Value::as_i64) {
            if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&n) {
                return Err(format!(
                    "x-mcp-header {name:?} allows integers outside the safe range"
                ));
            }
        }
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `value` as a header value: as it is when it is visible ASCII and spaces without
/// leading or trailing whitespace and does not look like the sentinel; otherwise
/// `=?base64?{Base64 of its UTF-8}?=`.
pub fn encode(value: &str) -> String {
    let visible = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    if visible && !padded && !sentinel {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64(value.as_bytes()))
    }
}

/// Standard Base64 with padding (RFC 4648): the header encoding's, and enough for the
/// demo server's blobs not to need a dependency.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_decode_strictly() {
        assert_eq!(decode("=?base64?SGVsbG8=?=").as_deref(), Ok("Hello"));
        assert_eq!(decode("  plain ").as_deref(), Ok("plain"));
        assert_eq!(
            decode("SGVsbG8=").as_deref(),
            Ok("SGVsbG8="),
            "no sentinel: literal"
        );
        assert!(decode("=?base64?SGVsbG8?=").is_err(), "missing padding");
        assert!(
            decode("=?base64?SGVs!!!bG8=?=").is_err(),
            "not the alphabet"
        );
        assert_eq!(decode(&encode("Hello, 世界")).as_deref(), Ok("Hello, 世界"));
    }

    #[test]
    fn the_spec_examples_encode_as_shown() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b""), "");
    }

    #[test]
    fn nested_properties_are_reached_and_values_converted() {
        let schema = json!({"type": "object", "properties": {
            "db": {"type": "object", "properties": {
                "shard": {"type": "integer", "x-mcp-header": "Shard"}}},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "query": {"type": "string"}}});
        let headers = ParamHeader::from_schema(&schema).unwrap();
        let args = json!({"db": {"shard": 7}, "dry": false, "query": "x"});
        let got: Vec<_> = headers
            .iter()
            .map(|h| (h.header_name(), h.value(&args)))
            .collect();
        assert!(got.contains(&("Mcp-Param-Shard".into(), Some("7".into()))));
        assert!(got.contains(&("Mcp-Param-Dry-Run".into(), Some("false".into()))));
        assert_eq!(headers[0].value(&json!({})), None, "absent: no header");
    }

    #[test]
    fn invalid_annotations_are_refused_with_the_reason() {
        let invalid = [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
                "integer",
            ),
            (
                json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
                "integer",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                      "b": {"type": "string", "x-mcp-header": "x"}}}),
                "more than once",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "reachable",
            ),
            (
                json!({"oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
                "reachable",
            ),
            (
                json!({"type": "object", "x-mcp-header": "Root"}),
                "reachable",
            ),
        ];
        for (schema, why) in invalid {
            let err = ParamHeader::from_schema(&schema).unwrap_err();
            assert!(err.contains(why), "{schema}: {err}");
        }
        assert_eq!(
            ParamHeader::from_schema(&json!({"type": "object"})).unwrap(),
            []
        );
    }
}
