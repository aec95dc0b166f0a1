//! A server's side of the lines framing: [`LinesCodec`], with handshake-era `tools/call`
//! requests read from their line in one pass ([`ToolCall::parse`]).

use std::io;

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use super::{find_newline, Frame, LinesCodec};
use crate::mcp::ToolCall;

/// What [`ServerLinesCodec`] yields.
#[derive(Debug)]
pub enum ServerFrame {
    /// A handshake-era `tools/call`, read in one pass.
    Call(ToolCall),
    /// Anything else, as [`LinesCodec`] reads it.
    Frame(Frame),
}

/// [`LinesCodec`] for a server: the same framing, limits and reports, except that a line
/// holding a handshake-era `tools/call` (the request a server serves most) comes out as
/// [`ServerFrame::Call`], read once rather than as an envelope and then its params.
#[derive(Debug)]
pub struct ServerLinesCodec {
    lines: LinesCodec,
}

impl ServerLinesCodec {
    /// A codec whose longest line is `max` bytes (see [`LinesCodec::with_max_length`]).
    pub fn with_max_length(max: usize) -> Self {
        ServerLinesCodec {
            lines: LinesCodec::with_max_length(max),
        }
    }
}

impl Decoder for ServerLinesCodec {
    type Item = ServerFrame;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ServerFrame>, io::Error> {
        let lines = &mut self.lines;
        // Only where a line starts: not amid a batch's rest or an oversized line's tail.
        if lines.pending.is_empty() && !lines.discarding {
            let read_to = buf.len().min(lines.max_length.saturating_add(1));
            let end = find_newline(&buf[lines.next_index..read_to]).map(|at| lines.next_index + at);
            let call = end.and_then(|end| {
                let line = std::str::from_utf8(&buf[..end]).ok()?;
                Some((end, ToolCall::parse(line)?))
            });
            if let Some((end, call)) = call {
                buf.advance(end + 1);
                lines.next_index = 0;
                return Ok(Some(ServerFrame::Call(call)));
            }
        }
        Ok(lines.decode(buf)?.map(ServerFrame::Frame))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<ServerFrame>, io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        Ok(self.lines.decode_eof(buf)?.map(ServerFrame::Frame))
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use tokio_util::codec::Decoder;

    use super::{ServerFrame, ServerLinesCodec};
    use crate::jsonrpc::{Id, Message};
    use crate::lines::{Frame, SkipKind};

    const CALL: &str =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;

    fn all(codec: &mut ServerLinesCodec, buf: &mut BytesMut) -> Vec<ServerFrame> {
        let mut frames = Vec::new();
        while let Some(frame) = codec.decode(buf).unwrap() {
            frames.push(frame);
        }
        frames
    }

    fn is_call(frame: &ServerFrame, id: i64) -> bool {
        matches!(frame, ServerFrame::Call(call) if call.id == Id::Number(id))
    }

    #[test]
    fn calls_come_read_and_the_rest_as_the_lines_codec_reads_it() {
        let mut codec = ServerLinesCodec::with_max_length(200);
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        let input = format!("{CALL}\r\n{ping}\n[{CALL}]\n\n");
        let mut buf = BytesMut::from(input.as_bytes());
        let frames = all(&mut codec, &mut buf);
        assert_eq!(frames.len(), 3, "{frames:?}");
        assert!(is_call(&frames[0], 1), "{frames:?}");
        assert!(
            matches!(&frames[1], ServerFrame::Frame(Frame::Message(Message::Request(r))) if r.method == "ping")
        );
        // A batch's call is one of the batch's messages.
        assert!(
            matches!(&frames[2], ServerFrame::Frame(Frame::Message(Message::Request(r))) if r.method == "tools/call")
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn a_call_split_across_reads_and_one_after_an_oversized_line_are_read() {
        let mut codec = ServerLinesCodec::with_max_length(100);
        let (head, tail) = CALL.split_at(30);
        let mut buf = BytesMut::from(head.as_bytes());
        assert!(all(&mut codec, &mut buf).is_empty());
        buf.extend_from_slice(tail.as_bytes());
        buf.extend_from_slice(b"\n");
        let frames = all(&mut codec, &mut buf);
        assert!(frames.len() == 1 && is_call(&frames[0], 1), "{frames:?}");

        // An oversized line arriving in pieces: its tail is dropped, never read as a line,
        // even when it holds a call's text; the call on the next line is read.
        let mut buf = BytesMut::from(&[b'x'; 150][..]);
        let frames = all(&mut codec, &mut buf);
        assert!(
            matches!(&frames[..], [ServerFrame::Frame(Frame::Skipped(s))] if s.kind == SkipKind::TooLong),
            "{frames:?}"
        );
        buf.extend_from_slice(format!("{CALL}\n{CALL}\n").as_bytes());
        let frames = all(&mut codec, &mut buf);
        // (Read the general way: it came in the same decoding as the dropped tail.)
        assert!(
            matches!(&frames[..], [ServerFrame::Frame(Frame::Message(Message::Request(r)))] if r.method == "tools/call"),
            "{frames:?}"
        );
    }

    #[test]
    fn a_last_call_without_its_newline_is_read_at_eof() {
        let mut codec = ServerLinesCodec::with_max_length(200);
        let mut buf = BytesMut::from(CALL.as_bytes());
        assert!(codec.decode(&mut buf).unwrap().is_none());
        let frame = codec.decode_eof(&mut buf).unwrap();
        assert!(
            matches!(&frame, Some(ServerFrame::Frame(Frame::Message(Message::Request(r)))) if r.method == "tools/call"),
            "{frame:?}"
        );
    }
}
