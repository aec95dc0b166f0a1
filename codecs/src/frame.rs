//! Outbound frames built straight from their parts: the compact JSON text of a request or a
//! notification, written without an intermediate `serde_json::Value`.
//!
//! A client sends far more requests than it parses, and every one of them is an envelope
//! around parameters the caller already holds; building the text directly saves a tree per
//! call. The output is one line of JSON with no trailing newline, as [`crate::lines`] and the
//! HTTP transports expect.
//!
//! ```
//! use switchboard_codecs::frame;
//! let bytes = frame::request(7, "tools/list", &serde_json::json!({}));
//! assert_eq!(&bytes[..], br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#);
//! ```

use bytes::Bytes;
use serde::Serialize;

use crate::mcp::methods;

/// Room for a typical request or notification, so that building one allocates once (a
/// `tools/call` with short arguments and its `_meta` is about 130 bytes).
const TYPICAL_FRAME: usize = 256;

/// `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}`.
pub fn request(id: i64, method: &str, params: &(impl Serialize + ?Sized)) -> Bytes {
    let mut out = Vec::with_capacity(TYPICAL_FRAME);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    push_json(&mut out, &id);
    out.extend_from_slice(br#","method":"#);
    push_json(&mut out, method);
    out.extend_from_slice(br#","params":"#);
    push_json(&mut out, params);
    out.push(b'}');
    one_line(out)
}

/// `{"jsonrpc":"2.0","method":METHOD,"params":PARAMS}`.
pub fn notification(method: &str, params: &(impl Serialize + ?Sized)) -> Bytes {
    let mut out = Vec::with_capacity(TYPICAL_FRAME);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    push_json(&mut out, method);
    out.extend_from_slice(br#","params":"#);
    push_json(&mut out, params);
    out.push(b'}');
    one_line(out)
}

/// `notifications/cancelled` for request `id`, with a reason for the server's logs.
pub fn cancelled(id: i64, reason: &str) -> Bytes {
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(rename = "requestId")]
        request_id: i64,
        reason: &'a str,
    }
    notification(
        methods::CANCELLED,
        &Params {
            request_id: id,
            reason,
        },
    )
}

/// Raw JSON inside the params (a `RawValue` parsed from pretty-printed text) may carry line
/// breaks, which would split the frame on a line-framed transport; in valid JSON they can
/// only be insignificant whitespace.
fn one_line(mut out: Vec<u8>) -> Bytes {
    crate::jsonrpc::unbreak(&mut out);
    Bytes::from(out)
}

fn push_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Serializing into a Vec fails only for maps with non-string keys, which a caller of
    // this module cannot hand us through `serde_json::Value` or the runtime's own params;
    // `null` keeps the frame well-formed if one ever does.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{Id, Message};

    #[test]
    fn a_request_frame_decodes_as_that_request() {
        let params = serde_json::json!({"name": "echo", "arguments": {"text": "a\"b\n"}});
        let bytes = request(-3, "tools/call", &params);
        let Ok(Message::Request(r)) = Message::from_slice(&bytes) else {
            panic!("not a request: {}", String::from_utf8_lossy(&bytes));
        };
        assert_eq!(r.id, Id::Number(-3));
        assert_eq!(r.method, "tools/call");
        let got: serde_json::Value =
            serde_json::from_str(r.params.expect("params").get()).expect("json");
        assert_eq!(got, params);
        assert!(!bytes.contains(&b'\n'), "one line");
    }

    #[test]
    fn raw_params_with_line_breaks_make_one_line() {
        let pretty =
            serde_json::value::RawValue::from_string("{\n  \"a\": 1\r\n}".into()).expect("json");
        let bytes = request(1, "tools/call", &pretty);
        assert!(!bytes.contains(&b'\n') && !bytes.contains(&b'\r'));
        assert!(matches!(
            Message::from_slice(&bytes),
            Ok(Message::Request(_))
        ));
    }

    #[test]
    fn the_cancelled_frame_is_exact() {
        assert_eq!(
            &cancelled(5, "gone")[..],
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"gone"}}"#
        );
    }
}
