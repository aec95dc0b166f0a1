//! The bytes of an answer: a response's envelope written by hand around its result, or an
//! error response.

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_codecs::jsonrpc::{ErrorObject, Id};

use crate::handler::TextReply;

#[derive(Serialize)]
struct ErrorFrame<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    error: &'a ErrorObject,
}

/// A response with this result. The envelope is written by hand, the bytes a serializer would
/// write, without its walk over two fixed keys (a result already serialized is copied in).
pub(super) fn result_frame<T: Serialize + ?Sized>(id: &Id, result: &T) -> Bytes {
    result_frame_sized(id, result, 128)
}

/// As [`result_frame`], in a buffer of `capacity` bytes: a frame that fills its buffer
/// exactly becomes `Bytes` without a second allocation for a shared header (and a small
/// one stays in glibc's fast bins, which a 128-byte buffer has outgrown).
fn result_frame_sized<T: Serialize + ?Sized>(id: &Id, result: &T, capacity: usize) -> Bytes {
    frame_around(id, capacity, |frame| serde_json::to_writer(frame, result))
}

/// A response whose result `write` writes, in a buffer of `capacity` bytes.
fn frame_around(
    id: &Id,
    capacity: usize,
    write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> Bytes {
    let mut frame = Vec::with_capacity(capacity);
    frame.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // An id or a result that does not serialize cannot come from a parsed request or a
    // handler's value; were it to, the client hears an internal error, not half a frame.
    let written = serde_json::to_writer(&mut frame, id).and_then(|()| {
        frame.extend_from_slice(br#","result":"#);
        write(&mut frame)
    });
    if written.is_err() {
        let error = ErrorObject::new(ErrorObject::INTERNAL_ERROR, "the result did not serialize");
        return error_frame(id, &error);
    }
    frame.push(b'}');
    Bytes::from(frame)
}

/// The length of a response's envelope, without its id and its result.
const ENVELOPE_LEN: usize = r#"{"jsonrpc":"2.0","id":,"result":}"#.len();

/// A response around a result already serialized. One with a line break between its tokens
/// (pretty-printed) would end a stdio line early, or an event's data line: it is written
/// anew, compact.
pub(super) fn json_result_frame(id: &Id, result: &RawValue) -> Bytes {
    let text = result.get();
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            return result_frame(id, &value);
        }
    }
    result_frame_sized(id, result, ENVELOPE_LEN + id_len(id) + text.len())
}

/// A response around a text result, serialized straight into a buffer of its size.
pub(super) fn text_result_frame(id: &Id, text: &TextReply) -> Bytes {
    let capacity = ENVELOPE_LEN + id_len(id) + text.serialized_len();
    frame_around(id, capacity, |frame| text.write_into(frame))
}

/// The length of `id` serialized: exact for a number, and for a string with nothing to
/// escape.
fn id_len(id: &Id) -> usize {
    match id {
        Id::Number(n) => {
            let digits = n
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |log| log as usize + 1);
            digits + usize::from(*n < 0)
        }
        Id::String(s) => s.len() + 2,
    }
}

pub(super) fn error_frame(id: &Id, error: &ErrorObject) -> Bytes {
    let frame = ErrorFrame {
        jsonrpc: "2.0",
        id,
        error,
    };
    Bytes::from(serde_json::to_vec(&frame).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pretty_printed_result_is_written_on_one_line() {
        let id = switchboard_codecs::jsonrpc::Id::Number(3);
        let raw =
            serde_json::value::RawValue::from_string("{\n  \"a\": [1,\r\n 2]\n}".into()).unwrap();
        let frame = super::json_result_frame(&id, &raw);
        assert_eq!(
            &frame[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"a":[1,2]}}"#
        );
        let compact = serde_json::value::RawValue::from_string(r#"{"b":"x\ny"}"#.into()).unwrap();
        let frame = super::json_result_frame(&id, &compact);
        assert_eq!(
            &frame[..],
            br#"{"jsonrpc":"2.0","id":3,"result":{"b":"x\ny"}}"#
        );
        // The same bytes as a serializer's of the whole response, for either kind of id and
        // either kind of result.
        #[derive(serde::Serialize)]
        struct Response<'a, T: ?Sized> {
            jsonrpc: &'static str,
            id: &'a switchboard_codecs::jsonrpc::Id,
            result: &'a T,
        }
        let serialized = |id: &switchboard_codecs::jsonrpc::Id,
                          result: &serde_json::value::RawValue| {
            serde_json::to_vec(&Response {
                jsonrpc: "2.0",
                id,
                result,
            })
            .unwrap()
        };
        let value: serde_json::Value = serde_json::from_str(compact.get()).unwrap();
        for id in [id, switchboard_codecs::jsonrpc::Id::String("a\"b".into())] {
            let expected = serialized(&id, &compact);
            assert_eq!(&super::json_result_frame(&id, &compact)[..], &expected[..]);
            assert_eq!(&super::result_frame(&id, &value)[..], &expected[..]);
        }
    }

    #[test]
    fn a_text_result_is_written_as_a_serializer_writes_it_in_a_buffer_of_its_size() {
        use crate::handler::Reply;
        use switchboard_codecs::jsonrpc::Id;
        let texts = [
            "",
            "hello",
            "a \"quoted\" \\ path",
            "tab\tline\nbell\u{7}\u{1f}",
            "é ✓ \u{7f}",
        ];
        for text in texts {
            for (reply, is_error) in [(Reply::text(text), false), (Reply::tool_error(text), true)] {
                let Reply::Text(reply) = reply else {
                    panic!("not a text reply")
                };
                let id = Id::Number(12);
                let frame = super::text_result_frame(&id, &reply);
                let mut result = serde_json::json!({"content": [{"type": "text", "text": text}]});
                if is_error {
                    result["isError"] = true.into();
                }
                let expected = serde_json::json!({"jsonrpc": "2.0", "id": 12, "result": result});
                let written: serde_json::Value = serde_json::from_slice(&frame).unwrap();
                assert_eq!(written, expected, "{text:?}");
                // Byte for byte as a compact serializer writes it, keys in the schema's order.
                let exact = format!(
                    r#"{{"jsonrpc":"2.0","id":12,"result":{{"content":[{{"type":"text","text":{}}}]{}}}}}"#,
                    serde_json::to_string(text).unwrap(),
                    if is_error { r#","isError":true"# } else { "" },
                );
                assert_eq!(std::str::from_utf8(&frame).unwrap(), exact);
                assert_eq!(written["result"], reply.to_value(), "{text:?} as a value");
                let envelope = r#"{"jsonrpc":"2.0","id":12,"result":}"#.len();
                assert_eq!(
                    frame.len(),
                    envelope + reply.serialized_len(),
                    "{text:?} measured"
                );
                assert_eq!(
                    crate::handler::escaped_len(text),
                    serde_json::to_string(text).unwrap().len()
                );
            }
        }
        // Structured content is not measured, and is written all the same.
        let Reply::Text(reply) = Reply::structured(serde_json::json!({"n": 1})) else {
            panic!("not a text reply")
        };
        let frame = super::text_result_frame(&Id::Number(1), &reply);
        let written: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(written["result"]["structuredContent"]["n"], 1);
        assert_eq!(written["result"]["content"][0]["text"], r#"{"n":1}"#);
        assert_eq!(written["result"], reply.to_value());
    }

    #[test]
    fn an_id_is_measured_as_it_is_written() {
        use switchboard_codecs::jsonrpc::Id;
        for n in [0, 7, 9, 10, 99, 100, -1, -10, 123_456, i64::MAX, i64::MIN] {
            let id = Id::Number(n);
            assert_eq!(
                super::id_len(&id),
                serde_json::to_vec(&id).unwrap().len(),
                "{n}"
            );
        }
        assert_eq!(super::id_len(&Id::String("abc".into())), 5);
        // A negative id in a frame sized by it.
        let raw = serde_json::value::RawValue::from_string(r#"{"ok":true}"#.into()).unwrap();
        let frame = super::json_result_frame(&Id::Number(-42), &raw);
        assert_eq!(
            &frame[..],
            br#"{"jsonrpc":"2.0","id":-42,"result":{"ok":true}}"#
        );
    }
}
