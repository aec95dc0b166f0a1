//! Unit tests of `lines`.

use super::*;
use crate::jsonrpc::{Outcome, Request};
use futures_util::StreamExt;
use tokio_util::codec::FramedRead;

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

fn decode_all(codec: &mut LinesCodec, buf: &mut BytesMut) -> Vec<Frame> {
    let mut out = Vec::new();
    while let Some(frame) = codec.decode(buf).unwrap() {
        out.push(frame);
    }
    out
}

fn message(frame: &Frame) -> &Message {
    match frame {
        Frame::Message(m) => m,
        Frame::Skipped(s) => panic!("expected a message, got {s:?}"),
    }
}

fn skipped(frame: &Frame) -> &Skipped {
    match frame {
        Frame::Skipped(s) => s,
        Frame::Message(m) => panic!("expected a skip, got {m:?}"),
    }
}

#[test]
fn decodes_lines_and_crlf() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from(format!("{PING}\n{PING}\r\n").as_str());
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 2);
    for f in &frames {
        assert_eq!(message(f).method(), Some("ping"));
    }
    assert!(buf.is_empty());
}

#[test]
fn blank_lines_are_ignored() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from(format!("\n  \r\n\t\n{PING}\n\n").as_str());
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 1);
    message(&frames[0]);
}

#[test]
fn line_split_across_chunks() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::new();
    let line = format!("{PING}\r\n");
    let (a, b) = line.as_bytes().split_at(10);
    buf.extend_from_slice(a);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    let (b1, b2) = b.split_at(b.len() - 1);
    buf.extend_from_slice(b1);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    buf.extend_from_slice(b2);
    assert_eq!(
        message(&codec.decode(&mut buf).unwrap().unwrap()).id(),
        Some(&Id::Number(1))
    );
}

#[test]
fn oversized_line_is_skipped_and_next_decoded() {
    let mut codec = LinesCodec::with_max_length(64);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&[b'x'; 100]);
    buf.extend_from_slice(b"\n");
    buf.extend_from_slice(PING.as_bytes());
    buf.extend_from_slice(b"\n");
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 2);
    let s = skipped(&frames[0]);
    assert_eq!(s.kind, SkipKind::TooLong);
    assert_eq!(s.kind.as_str(), "oversized");
    assert_eq!(s.len, 100);
    assert!(s.reason().contains("64"));
    message(&frames[1]);
}

#[test]
fn line_at_the_limit_is_accepted() {
    let mut codec = LinesCodec::with_max_length(PING.len());
    let mut buf = BytesMut::from(format!("{PING}\n").as_str());
    message(&codec.decode(&mut buf).unwrap().unwrap());
}

#[test]
fn oversized_line_in_chunks_stays_bounded() {
    const MAX: usize = 64 * 1024;
    const CHUNK: usize = 1024;
    let mut codec = LinesCodec::with_max_length(MAX);
    let mut buf = BytesMut::new();
    let chunk = [b'a'; CHUNK];
    let mut reports = Vec::new();
    for _ in 0..(10 * MAX / CHUNK) {
        buf.extend_from_slice(&chunk);
        while let Some(frame) = codec.decode(&mut buf).unwrap() {
            reports.push(frame);
        }
        assert!(buf.len() <= MAX + CHUNK, "buffer grew to {}", buf.len());
    }
    assert_eq!(
        reports.len(),
        1,
        "reported once, as soon as the limit was crossed"
    );
    let s = skipped(&reports[0]);
    assert_eq!(s.kind, SkipKind::TooLong);
    assert!(s.len > MAX && s.len <= MAX + CHUNK);
    assert_eq!(s.excerpt.chars().count(), EXCERPT_CHARS + 1);

    buf.extend_from_slice(b"aaa\n");
    buf.extend_from_slice(PING.as_bytes());
    buf.extend_from_slice(b"\n");
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 1);
    message(&frames[0]);
}

#[test]
fn not_utf8() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from(&b"{\"a\":\"\xff\xfe\"}\n"[..]);
    let frames = decode_all(&mut codec, &mut buf);
    let s = skipped(&frames[0]);
    assert_eq!(s.kind, SkipKind::NotUtf8);
    assert_eq!(s.len, 10);
    assert!(s.excerpt.contains('\u{fffd}'));
}

#[test]
fn garbage_text_is_not_json() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from("Server starting\x1b[0m...\n");
    let s = skipped(&codec.decode(&mut buf).unwrap().unwrap()).clone();
    assert_eq!(s.kind, SkipKind::NotJson);
    assert_eq!(s.excerpt, "Server starting\\u{1b}[0m...");
    assert!(s.reason().starts_with("not JSON: "), "{}", s.reason());
    assert!(!s.detail.is_empty());
}

#[test]
fn json_that_is_not_a_message() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from("42\n{\"a\":1}\n");
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 2);
    for f in &frames {
        let s = skipped(f);
        assert_eq!(s.kind, SkipKind::NotJsonRpc);
        assert_eq!(s.id, None);
    }
}

#[test]
fn malformed_response_keeps_its_id() {
    let mut codec = LinesCodec::new();
    let mut buf =
        BytesMut::from("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"error\":{\"code\":\"x\"}}\n");
    let s = skipped(&codec.decode(&mut buf).unwrap().unwrap()).clone();
    assert_eq!(s.kind, SkipKind::NotJsonRpc);
    assert_eq!(s.id, Some(Id::from("abc")));
}

#[test]
fn batch_yields_elements_in_order() {
    let mut codec = LinesCodec::new();
    let line = concat!(
        r#" [{"jsonrpc":"2.0","id":1,"result":{}},"#,
        r#"{"jsonrpc":"2.0","id":2,"result":"oops","error":{"code":1,"message":"m"}},"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress"},"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
        "\n"
    );
    let mut buf = BytesMut::from(format!("{line}{PING}\n").as_str());
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 5);
    assert!(matches!(
        message(&frames[0]),
        Message::Response(r) if r.id == Some(Id::Number(1)) && matches!(r.outcome, Outcome::Result(_))
    ));
    let s = skipped(&frames[1]);
    assert_eq!(
        (s.kind, s.id.clone()),
        (SkipKind::NotJsonRpc, Some(Id::Number(2)))
    );
    assert!(s.excerpt.starts_with(r#"{"jsonrpc":"2.0","id":2"#));
    assert_eq!(message(&frames[2]).method(), Some("notifications/progress"));
    assert!(matches!(
        message(&frames[3]),
        Message::Request(Request {
            id: Id::Number(3),
            ..
        })
    ));
    assert_eq!(message(&frames[4]).id(), Some(&Id::Number(1)));
}

#[test]
fn batch_is_drained_before_more_input() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from(format!("[{PING},{PING}]\n").as_str());
    message(&codec.decode(&mut buf).unwrap().unwrap());
    assert!(buf.is_empty());
    buf.extend_from_slice(b"nope\n");
    message(&codec.decode(&mut buf).unwrap().unwrap());
    assert_eq!(
        skipped(&codec.decode(&mut buf).unwrap().unwrap()).kind,
        SkipKind::NotJson
    );
}

#[test]
fn bad_batches() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from("[]\n[ ]\r\n[1,\n");
    let frames = decode_all(&mut codec, &mut buf);
    let kinds: Vec<_> = frames.iter().map(|f| skipped(f).kind).collect();
    assert_eq!(
        kinds,
        [SkipKind::BadBatch, SkipKind::BadBatch, SkipKind::NotJson]
    );
    assert_eq!(skipped(&frames[0]).reason(), "invalid batch: empty batch");
}

#[test]
fn final_line_without_newline_at_eof() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from(format!("{PING}\n[{PING},{PING}]").as_str());
    let mut frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 1);
    while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
        frames.push(frame);
    }
    assert_eq!(frames.len(), 3);
    assert!(buf.is_empty());
    assert!(codec.decode_eof(&mut buf).unwrap().is_none());
}

#[test]
fn eof_inside_oversized_line() {
    let mut codec = LinesCodec::with_max_length(8);
    let mut buf = BytesMut::from("0123456789");
    assert_eq!(skipped(&codec.decode(&mut buf).unwrap().unwrap()).len, 10);
    buf.extend_from_slice(b"abc");
    assert!(codec.decode_eof(&mut buf).unwrap().is_none());
    assert!(buf.is_empty());
}

#[test]
fn encodes_messages_and_bytes() {
    let mut codec = LinesCodec::new();
    let mut dst = BytesMut::new();
    let msg = Message::from_slice(br#"{ "jsonrpc": "2.0", "id": 1, "method": "ping" }"#).unwrap();
    codec.encode(&msg, &mut dst).unwrap();
    codec
        .encode(Bytes::from_static(b"{\"a\":\n  1}"), &mut dst)
        .unwrap();
    assert_eq!(&dst[..], format!("{PING}\n{{\"a\":   1}}\n").as_bytes());

    let frames = decode_all(&mut codec, &mut dst);
    assert_eq!(message(&frames[0]).method(), Some("ping"));
}

#[tokio::test]
async fn framed_read_over_a_reader() {
    let input = format!("{PING}\r\n\ngarbage\n{{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}");
    let mut frames = FramedRead::new(input.as_bytes(), LinesCodec::new());
    let mut got = Vec::new();
    while let Some(frame) = frames.next().await {
        got.push(frame.unwrap());
    }
    assert_eq!(got.len(), 3);
    message(&got[0]);
    assert_eq!(skipped(&got[1]).kind, SkipKind::NotJson);
    assert_eq!(message(&got[2]).method(), Some("x"));
}

/// The params (or result) of a message as a value, to compare messages whose raw JSON differs
/// only in whitespace.
fn params_value(msg: &Message) -> serde_json::Value {
    let raw = match msg {
        Message::Request(r) => r.params.as_deref(),
        Message::Notification(n) => n.params.as_deref(),
        Message::Response(r) => match &r.outcome {
            Outcome::Result(raw) => Some(&**raw),
            Outcome::Error(e) => e.data.as_deref(),
        },
    };
    raw.map_or(serde_json::Value::Null, |raw| {
        serde_json::from_str(raw.get()).unwrap()
    })
}

#[test]
fn pretty_printed_params_are_written_as_one_line() {
    let pretty = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\n",
        "  \"name\": \"x\",\r\n",
        "  \"arguments\": {\"text\": \"a\\nb\", \"n\": [1,\n    2]}\n}}"
    );
    let msg = Message::from_slice(pretty.as_bytes()).unwrap();
    let built = Message::Response(crate::jsonrpc::Response {
        id: Some(Id::Number(2)),
        outcome: Outcome::Result(RawValue::from_string("{\r\n\"ok\":\ntrue}".into()).unwrap()),
    });
    for msg in [msg, built] {
        let mut codec = LinesCodec::new();
        let mut dst = BytesMut::new();
        codec.encode(&msg, &mut dst).unwrap();
        assert_eq!(memchr::memchr2_iter(b'\n', b'\r', &dst).count(), 1);
        assert!(dst.ends_with(b"\n"));
        let frames = decode_all(&mut codec, &mut dst);
        assert_eq!(frames.len(), 1, "{frames:?}");
        let back = message(&frames[0]);
        assert_eq!(back.id(), msg.id());
        assert_eq!(back.method(), msg.method());
        assert_eq!(params_value(back), params_value(&msg));
        // The serialized form an `Outbound` carries is one line too.
        assert!(memchr::memchr2(b'\n', b'\r', &msg.to_vec()).is_none());
    }
}

#[test]
fn raw_bytes_are_written_as_one_line() {
    let mut codec = LinesCodec::new();
    let mut dst = BytesMut::new();
    codec
        .encode(
            Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\r\n\"method\":\"x\"\r}"),
            &mut dst,
        )
        .unwrap();
    assert_eq!(&dst[..], b"{\"jsonrpc\":\"2.0\",  \"method\":\"x\" }\n");
    let frames = decode_all(&mut codec, &mut dst);
    assert_eq!(frames.len(), 1);
    assert_eq!(message(&frames[0]).method(), Some("x"));
}

#[test]
fn batch_of_arrays_is_not_a_batch_of_messages() {
    let mut codec = LinesCodec::new();
    let mut buf = BytesMut::from(format!("[[\"2.0\",7,\"tools/call\",{{}}],{PING}]\n").as_str());
    let frames = decode_all(&mut codec, &mut buf);
    assert_eq!(frames.len(), 2);
    assert_eq!(skipped(&frames[0]).kind, SkipKind::NotJsonRpc);
    message(&frames[1]);
}

#[test]
fn the_id_of_an_oversized_answer_is_read_off_its_start() {
    use super::leading_id;
    let id = |s: &str| leading_id(s.as_bytes());
    assert_eq!(
        id(r#"{"jsonrpc":"2.0","id":7,"result":{"content":"#),
        Some(Id::Number(7))
    );
    assert_eq!(
        id(r#" { "id" : -3 , "jsonrpc":"2.0""#),
        Some(Id::Number(-3))
    );
    assert_eq!(
        id(r#"{"jsonrpc":"2.0","id":"a-1","result""#),
        Some(Id::String("a-1".into()))
    );
    // An id inside a nested value, or after one, is not taken.
    assert_eq!(
        id(r#"{"jsonrpc":"2.0","method":"m","params":{"id":7,"#),
        None
    );
    assert_eq!(id(r#"{"jsonrpc":"2.0","result":{"x":1},"id":3}"#), None);
    // A number the prefix cuts off could be longer: not trusted.
    assert_eq!(id(r#"{"jsonrpc":"2.0","id":12"#), None);
    assert_eq!(id("not json at all"), None);
}

#[test]
fn an_oversized_answer_is_skipped_with_its_id() {
    let mut codec = LinesCodec::with_max_length(64);
    let mut line = br#"{"jsonrpc":"2.0","id":42,"result":{"text":""#.to_vec();
    line.extend(std::iter::repeat_n(b'x', 200));
    line.extend_from_slice(b"\"}}\n");
    let mut buf = BytesMut::from(&line[..]);
    match codec.decode(&mut buf).unwrap() {
        Some(Frame::Skipped(skipped)) => {
            assert_eq!(skipped.kind, SkipKind::TooLong);
            assert_eq!(skipped.id, Some(Id::Number(42)));
            assert!(
                skipped.reason().contains("limit of 64 bytes"),
                "{}",
                skipped.reason()
            );
        }
        other => panic!("{other:?}"),
    }
}
