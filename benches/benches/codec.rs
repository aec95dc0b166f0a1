//! Framing and envelope costs: decoding and encoding typical MCP lines (a `tools/call`
//! request and its answer) of about 100 B, 64 KiB and 1 MiB with
//! [`LinesCodec`](switchboard_codecs::lines::LinesCodec) and
//! [`Message`](switchboard_codecs::jsonrpc::Message), in bytes/s.
//!
//! - `decode`: one line from a buffer to a [`Frame`] (the envelope parsed, params and
//!   results left raw), as the transport reads answers.
//! - `encode/message`: a parsed [`Message`] back to a line, as a server would answer.
//! - `encode/bytes`: an already serialized frame to a line, as the runtime writes requests.
//! - `result`: an answer's raw result to a typed [`CallToolResult`], as `.await` on a call
//!   does (one text block of the size, as in the answers above).
//!
//! A note on a fast path (issue 36). A server reads a handshake-era `tools/call` line in one
//! pass (`runtime/server/src/tool_call.rs`, offered each stdio line through
//! `Service::receive_line`) rather than as an envelope (`decode` above) and then its params
//! by type. It was taken out of the codecs and the transports on 2026-12-04 (then 0.79–0.87×
//! the time of the plain reading per line, with other builds sharing the cores) and came
//! back in the server crate alone on 2026-12-05: 9.63 k instructions per `echo` against
//! 11.82 k for the plain reading (callgrind, the demo server), the demo's CPU per call at 64
//! in flight 1.31–1.48 µs against 1.56–1.74 µs in turns (`benches/HISTORY.md`, "the
//! one-pass reading back").

mod support;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{BatchSize, Criterion, Throughput};
use switchboard_codecs::jsonrpc::Message;
use switchboard_codecs::lines::{Frame, LinesCodec};
use switchboard_codecs::mcp::CallToolResult;
use tokio_util::codec::{Decoder, Encoder};

/// A `tools/call echo` request whose text is `size` bytes.
fn request(size: usize) -> String {
    let text = "x".repeat(size);
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": {"progressToken": 42}},
    })
    .to_string()
}

/// Its answer: one text content block of `size` bytes.
fn answer(size: usize) -> String {
    let text = "x".repeat(size);
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": 42,
        "result": {"content": [{"type": "text", "text": text}], "isError": false},
    })
    .to_string()
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("codec");
    for (label, size) in [("small", 16), ("64KiB", 64 * 1024), ("1MiB", 1024 * 1024)] {
        for (kind, json) in [("request", request(size)), ("answer", answer(size))] {
            let line = Bytes::from(format!("{json}\n"));
            group.throughput(Throughput::Bytes(line.len() as u64));

            let batch = if size < 1024 {
                BatchSize::SmallInput
            } else {
                BatchSize::LargeInput
            };
            let mut codec = LinesCodec::new();
            group.bench_function(format!("decode/{kind}/{label}"), |b| {
                b.iter_batched_ref(
                    || BytesMut::from(&line[..]),
                    |buf| match codec.decode(buf) {
                        Ok(Some(Frame::Message(m))) => m,
                        other => panic!("not a message: {other:?}"),
                    },
                    batch,
                )
            });

            let message = Message::from_slice(json.as_bytes()).expect("a message");
            let mut out = BytesMut::with_capacity(line.len() + 64);
            group.bench_function(format!("encode/message/{kind}/{label}"), |b| {
                b.iter(|| {
                    out.clear();
                    codec.encode(&message, &mut out).expect("encode");
                    out.len()
                })
            });

            if kind == "answer" {
                let raw = match &message {
                    Message::Response(r) => match &r.outcome {
                        switchboard_codecs::jsonrpc::Outcome::Result(raw) => raw.get().to_owned(),
                        other => panic!("not a result: {other:?}"),
                    },
                    other => panic!("not a response: {other:?}"),
                };
                group.throughput(Throughput::Bytes(raw.len() as u64));
                group.bench_function(format!("result/call_tool_result/{label}"), |b| {
                    b.iter(|| {
                        let r: CallToolResult = serde_json::from_str(&raw).expect("a result");
                        r.content.len()
                    })
                });
                group.throughput(Throughput::Bytes(line.len() as u64));
            }

            let frame = Bytes::from(json.clone());
            group.bench_function(format!("encode/bytes/{kind}/{label}"), |b| {
                b.iter(|| {
                    out.clear();
                    codec.encode(frame.clone(), &mut out).expect("encode");
                    out.len()
                })
            });
        }
    }
    group.finish();
}

fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard_demo::main_from_env() {
        return code;
    }
    let mut c = support::criterion(Duration::from_millis(500), Duration::from_secs(2), 30);
    codec(&mut c);
    c.final_summary();
    std::process::ExitCode::SUCCESS
}
