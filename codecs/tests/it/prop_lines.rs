//! Properties of the newline-delimited codec.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{
    ErrorObject, Id, Message, Notification, Outcome, Request, Response,
};
use switchboard_codecs::lines::{Frame, LinesCodec, SkipKind};
use tokio_util::codec::Encoder;

use crate::support::{chunk_sizes, decode_all, json_text, summary};

fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).unwrap()
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<i64>().prop_map(Id::Number),
        any::<String>().prop_map(|s| Id::String(s.into())),
    ]
}

/// Any message, with raw parts possibly pretty-printed.
fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), any::<String>(), prop::option::of(json_text())).prop_map(|(id, method, params)| {
            Message::Request(Request {
                id,
                method,
                params: params.map(raw),
            })
        }),
        (any::<String>(), prop::option::of(json_text())).prop_map(|(method, params)| {
            Message::Notification(Notification {
                method,
                params: params.map(raw),
            })
        }),
        (id(), json_text()).prop_map(|(id, result)| Message::Response(Response {
            id: Some(id),
            outcome: Outcome::Result(raw(result)),
        })),
        (
            prop::option::of(id()),
            any::<i64>(),
            any::<String>(),
            prop::option::of(json_text())
        )
            .prop_map(|(id, code, message, data)| Message::Response(Response {
                id,
                outcome: Outcome::Error(ErrorObject {
                    code,
                    message,
                    data: data.map(raw),
                }),
            })),
    ]
}

/// Decodes `input` fed in the given chunks, then at end of input.
fn decode(codec: &mut LinesCodec, input: &[u8], sizes: &[usize]) -> Vec<Frame> {
    decode_all(codec, input, sizes)
}

/// What a frame says, minus what legitimately depends on chunking (how much of an oversized
/// line had arrived when it was reported).
fn frame_summary(frame: &Frame) -> String {
    match frame {
        Frame::Message(m) => summary(m).to_string(),
        Frame::Skipped(s) if s.kind == SkipKind::TooLong => "too long".to_owned(),
        Frame::Skipped(s) => format!("{:?} {:?} {}", s.kind, s.id, s.excerpt),
    }
}

/// Bytes that look like lines of JSON-RPC often enough to reach past the first check.
fn line_noise() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        any::<u8>().prop_map(|b| vec![b]),
        prop::sample::select(vec![
            &b"\n"[..],
            b"\r\n",
            b"\r",
            b"[",
            b"]",
            b",",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":-0,\"result\":null}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":1,\"message\":\"m\"}}",
            b"[\"2.0\",7,\"tools/call\",{}]",
            b"\xff\xfe",
            b"   ",
        ])
        .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

proptest! {
    /// Any messages, encoded one way or another, come back as the same messages however the
    /// bytes are split.
    #[test]
    fn prop_lines_encode_then_decode_round_trips(
        messages in prop::collection::vec((message(), any::<bool>()), 0..6),
        sizes in chunk_sizes(),
    ) {
        let mut codec = LinesCodec::new();
        let mut wire = BytesMut::new();
        for (msg, as_bytes) in &messages {
            if *as_bytes {
                codec.encode(Bytes::from(msg.to_vec()), &mut wire).unwrap();
            } else {
                codec.encode(msg, &mut wire).unwrap();
            }
        }
        prop_assert_eq!(memchr::memchr_iter(b'\n', &wire).count(), messages.len());
        let frames = decode(&mut LinesCodec::new(), &wire, &sizes);
        let got: Vec<_> = frames
            .iter()
            .map(|f| match f {
                Frame::Message(m) => Ok(summary(m)),
                Frame::Skipped(s) => Err(s.reason()),
            })
            .collect();
        let want: Vec<_> = messages.iter().map(|(m, _)| Ok(summary(m))).collect();
        prop_assert_eq!(got, want);
    }

    /// Arbitrary bytes never panic, never make more frames than lines (plus batch elements),
    /// and decode alike however they are split.
    #[test]
    fn prop_lines_arbitrary_bytes(
        input in line_noise(),
        max in 8..200usize,
        sizes in chunk_sizes(),
    ) {
        let whole = decode(
            &mut LinesCodec::with_max_length(max),
            &input,
            &[input.len().max(1)],
        );
        let split = decode(&mut LinesCodec::with_max_length(max), &input, &sizes);
        let newlines = memchr::memchr_iter(b'\n', &input).count();
        // A batch of n elements holds at least n - 1 commas.
        let commas = memchr::memchr_iter(b',', &input).count();
        prop_assert!(whole.len() <= newlines + 1 + commas);
        if !input.contains(&b'[') {
            prop_assert!(whole.len() <= newlines + 1);
        }
        let whole: Vec<_> = whole.iter().map(frame_summary).collect();
        let split: Vec<_> = split.iter().map(frame_summary).collect();
        prop_assert_eq!(whole, split);
    }
}
