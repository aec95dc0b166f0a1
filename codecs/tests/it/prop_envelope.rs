//! Properties of the JSON-RPC envelope.

use proptest::prelude::*;
use serde_json::Value;
use switchboard_codecs::jsonrpc::Message;

use crate::support::{json_value, summary};

/// JSON objects shaped like JSON-RPC messages, right or wrong.
fn envelope_like() -> impl Strategy<Value = Value> {
    let member = prop_oneof![
        json_value(),
        Just(Value::from("2.0")),
        Just(serde_json::json!({"code": -32601, "message": "x"})),
        Just(serde_json::json!([-32601, "x"])),
        any::<i64>().prop_map(Value::from),
        Just(serde_json::from_str::<Value>("-0").unwrap()),
    ];
    let key = prop::sample::select(vec![
        "jsonrpc", "id", "method", "params", "result", "error", "other",
    ]);
    prop::collection::vec((key, member), 0..7).prop_map(|members| {
        Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    })
}

/// Decoding `text` never panics; only an object decodes, and what decodes re-encodes to one
/// line that decodes the same.
fn check(text: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(msg) = Message::from_slice(text) {
        let first = text.trim_ascii_start().first();
        prop_assert_eq!(first, Some(&b'{'), "only an object is a message");
        let again = msg.to_vec();
        prop_assert!(memchr::memchr2(b'\n', b'\r', &again).is_none());
        let back = Message::from_slice(&again);
        prop_assert!(
            back.is_ok(),
            "{:?} re-encoded as {:?}: {:?}",
            String::from_utf8_lossy(text),
            String::from_utf8_lossy(&again),
            back
        );
        prop_assert_eq!(summary(&back.unwrap()), summary(&msg));
    }
    Ok(())
}

proptest! {
    /// Any JSON value.
    #[test]
    fn prop_envelope_any_json(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_vec_pretty(&value)
        } else {
            serde_json::to_vec(&value)
        };
        check(&text.unwrap())?;
    }

    /// Objects that are nearly messages, and batches of them.
    #[test]
    fn prop_envelope_message_like(value in envelope_like()) {
        check(value.to_string().as_bytes())?;
        check(Value::Array(vec![value]).to_string().as_bytes())?;
    }

    /// Any bytes.
    #[test]
    fn prop_envelope_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        check(&bytes)?;
    }
}
