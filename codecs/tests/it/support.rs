//! Generators and helpers shared by the properties.

use bytes::BytesMut;
use proptest::prelude::*;
use serde_json::Value;
use switchboard_codecs::jsonrpc::{Message, Outcome};
use tokio_util::codec::Decoder;

/// Any JSON value without floats (they would compare inexactly), strings with any characters.
pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "[a-z\n\r\t\"\\\\ ]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\n]{0,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The JSON text of a value: compact, pretty-printed, or pretty with CRLF line breaks.
pub(crate) fn json_text() -> impl Strategy<Value = String> {
    (json_value(), 0..3u8).prop_map(|(value, style)| match style {
        0 => value.to_string(),
        1 => serde_json::to_string_pretty(&value).unwrap(),
        _ => serde_json::to_string_pretty(&value)
            .unwrap()
            .replace('\n', "\r\n"),
    })
}

/// Splits `bytes` into chunks whose sizes cycle through `sizes` (each at least 1).
pub(crate) fn chunks<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut sizes = sizes.iter().cycle();
    while !rest.is_empty() {
        let size = sizes
            .next()
            .copied()
            .unwrap_or(rest.len())
            .clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(size);
        out.push(chunk);
        rest = tail;
    }
    out
}

/// Everything `codec` decodes from `input` fed in chunks of `sizes`, then at end of input.
pub(crate) fn decode_all<D: Decoder>(codec: &mut D, input: &[u8], sizes: &[usize]) -> Vec<D::Item>
where
    D::Error: std::fmt::Debug,
{
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks(input, sizes) {
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).unwrap() {
            out.push(frame);
        }
    }
    while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
        out.push(frame);
    }
    out
}

/// Chunk sizes, small enough to split most lines.
pub(crate) fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1..24usize, 1..8)
}

/// A message as comparable values: kind, id, method, and raw params, result or error as
/// values (raw JSON may differ in whitespace only).
pub(crate) fn summary(msg: &Message) -> Value {
    let raw = |raw: Option<&serde_json::value::RawValue>| {
        raw.map(|r| serde_json::from_str::<Value>(r.get()).unwrap())
    };
    match msg {
        Message::Request(r) => serde_json::json!({
            "request": r.id.to_string(), "method": r.method, "params": raw(r.params.as_deref()),
        }),
        Message::Notification(n) => serde_json::json!({
            "notification": n.method, "params": raw(n.params.as_deref()),
        }),
        Message::Response(r) => match &r.outcome {
            Outcome::Result(v) => serde_json::json!({
                "response": r.id.as_ref().map(ToString::to_string), "result": raw(Some(v)),
            }),
            Outcome::Error(e) => serde_json::json!({
                "response": r.id.as_ref().map(ToString::to_string), "code": e.code,
                "message": e.message, "data": raw(e.data.as_deref()),
            }),
        },
    }
}
