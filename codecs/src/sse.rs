//! Server-Sent Events: the `text/event-stream` framing the HTTP transports read, as a
//! tokio-util [`Decoder`].
//!
//! [`SseCodec`] follows the WHATWG event-stream parsing rules: lines end with `\n`, `\r\n` or
//! `\r`; lines starting with `:` are comments; `data` lines are joined with `\n`; `id` values
//! containing NUL are ignored; `retry` is taken only when it is all ASCII digits; a blank line
//! dispatches the event. A leading UTF-8 byte order mark is skipped and invalid UTF-8 is
//! replaced, as a browser does. An event that has not ended at the end of the input is
//! discarded, again as a browser does.
//!
//! Unlike a browser, the decoder also yields events whose data is empty, as long as they had
//! at least one field: MCP servers open their streams with a *priming* event
//! (`id: x\ndata: \n\n`) and send `retry:` alone, and a client must still record that id
//! (for `Last-Event-ID`) and that delay. A consumer treats an [`SseEvent`] whose
//! [`data`](SseEvent::data) is empty as carrying only [`id`](SseEvent::id) and
//! [`retry`](SseEvent::retry), not as a message.
//!
//! ```
//! use bytes::BytesMut;
//! use switchboard_codecs::sse::{SseCodec, SseFrame};
//! use tokio_util::codec::Decoder;
//!
//! let mut codec = SseCodec::new();
//! let mut buf = BytesMut::from("id: 1\ndata: \n\n: keep-alive\nevent: message\ndata: {}\n\n");
//! let Some(SseFrame::Event(priming)) = codec.decode(&mut buf)? else { panic!() };
//! assert_eq!((priming.id.as_deref(), priming.data.as_str()), (Some("1"), ""));
//! let Some(SseFrame::Event(message)) = codec.decode(&mut buf)? else { panic!() };
//! assert_eq!((message.event.as_deref(), message.data.as_str()), (Some("message"), "{}"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

/// The default largest event, in bytes: 16 MiB.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event` field (the event type); `None` means the default type, `message`.
    pub event: Option<String>,
    /// The `data` lines joined with `\n`. Empty for events that only carry `id` or `retry`.
    pub data: String,
    /// The `id` field, when the event had one (an empty value resets the last event id).
    pub id: Option<String>,
    /// The `retry` field: how long to wait before reconnecting.
    pub retry: Option<Duration>,
}

impl SseEvent {
    /// Whether the event is a message in the sense of the spec: its type is `message` (or
    /// absent) and it has data.
    pub fn is_message(&self) -> bool {
        !self.data.is_empty() && matches!(self.event.as_deref(), None | Some("message"))
    }
}

/// What the decoder yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseFrame {
    /// An event, possibly with empty data (see the [module docs](self)).
    Event(SseEvent),
    /// An event larger than the limit. It is reported once, at the end of the line that
    /// crossed the limit (or at the end of the input, if that line never ends), and the rest
    /// of it is dropped unread up to its blank line; its fields are lost. The bytes of that
    /// line are counted as they arrive, not kept.
    Skipped {
        /// The size of the event up to the end of the line that crossed the limit, counted as
        /// the limit is (comments excluded, one byte per line ending).
        len: usize,
        /// Why it was skipped.
        reason: String,
    },
}

/// A decoder of `text/event-stream` bodies into [`SseFrame`]s, with a bound on event size.
#[derive(Debug)]
pub struct SseCodec {
    max_event_size: usize,
    /// Whether the byte order mark check is done.
    started: bool,
    /// The previous line ended with `\r`: a `\n` right after it belongs to that ending.
    skip_lf: bool,
    /// Where to resume the search for a line ending.
    next_index: usize,
    /// Dropping the rest of an oversized event, up to its blank line.
    discarding_event: bool,
    /// What becomes of the unfinished line at the front of the buffer.
    line: Line,
    /// The bytes of the current event so far (the lines that make it up).
    size: usize,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    retry: Option<Duration>,
    has_field: bool,
}

/// The fate of the line being read. Only [`Line::Kept`] lines are buffered; the others are
/// dropped as their bytes arrive, which keeps memory bounded and makes the outcome the same
/// wherever reads split the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Buffered until its ending, then interpreted.
    Kept,
    /// A comment, or a line of an event already reported as too large: it does not count.
    Dropped,
    /// The line that took its event over the limit; its bytes are counted in `size` so that
    /// the report says how large the event got.
    Oversized,
}

impl Default for SseCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl SseCodec {
    /// A decoder whose largest event is [`DEFAULT_MAX_EVENT_SIZE`].
    pub fn new() -> Self {
        Self::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A decoder whose largest event is `max` bytes (its lines, counted with one byte per
    /// line ending; comments do not count).
    ///
    /// # Security
    ///
    /// The decoder buffers up to about `max` bytes of one event, so `max` bounds the memory a
    /// server can make it use. `usize::MAX` removes the bound: do not use it on untrusted
    /// input.
    pub fn with_max_event_size(max: usize) -> Self {
        SseCodec {
            max_event_size: max,
            started: false,
            skip_lf: false,
            next_index: 0,
            discarding_event: false,
            line: Line::Kept,
            size: 0,
            event: None,
            data: String::new(),
            has_data: false,
            id: None,
            retry: None,
            has_field: false,
        }
    }

    /// The largest event accepted, in bytes.
    pub fn max_event_size(&self) -> usize {
        self.max_event_size
    }

    fn reset_event(&mut self) {
        self.size = 0;
        self.event = None;
        self.data = String::new();
        self.has_data = false;
        self.id = None;
        self.retry = None;
        self.has_field = false;
    }

    fn too_big(&mut self) -> SseFrame {
        let len = self.size;
        self.reset_event();
        self.discarding_event = true;
        SseFrame::Skipped {
            len,
            reason: format!(
                "event larger than the limit of {} bytes",
                self.max_event_size
            ),
        }
    }

    /// Interprets one complete line (without its ending).
    fn push_line(&mut self, line: &[u8]) -> Option<SseFrame> {
        if line.is_empty() {
            if std::mem::take(&mut self.discarding_event) {
                self.reset_event();
                return None;
            }
            if !self.has_field {
                self.reset_event();
                return None;
            }
            let event = SseEvent {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
                id: self.id.take(),
                retry: self.retry.take(),
            };
            self.reset_event();
            return Some(SseFrame::Event(event));
        }
        if self.discarding_event || line[0] == b':' {
            return None;
        }
        self.size = self.size.saturating_add(line.len() + 1);
        if self.size > self.max_event_size {
            return Some(self.too_big());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"event" => {
                self.event = Some(String::from_utf8_lossy(value).into_owned());
                self.has_field = true;
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
                self.has_field = true;
            }
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
                self.has_field = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits: only an overflow can fail, and then the value is useless.
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("x").parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                    self.has_field = true;
                }
            }
            _ => {}
        }
        None
    }
}

/// Decodes events.
///
/// Content never makes decoding fail: `Err` is reserved for I/O errors of the underlying
/// reader. The decoder holds at most about the limit of one event plus one unread chunk.
impl Decoder for SseCodec {
    type Item = SseFrame;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<SseFrame>, io::Error> {
        loop {
            if self.skip_lf {
                match buf.first() {
                    None => return Ok(None),
                    Some(b'\n') => buf.advance(1),
                    Some(_) => {}
                }
                self.skip_lf = false;
            }
            if !self.started {
                let n = buf.len().min(BOM.len());
                if buf[..n] != BOM[..n] {
                    self.started = true;
                } else if n == BOM.len() {
                    buf.advance(n);
                    self.started = true;
                } else {
                    return Ok(None);
                }
            }
            let Some(offset) = memchr::memchr2(b'\n', b'\r', &buf[self.next_index..]) else {
                self.hold_partial_line(buf);
                return Ok(None);
            };
            let end = self.next_index + offset;
            self.next_index = 0;
            let line = buf.split_to(end + 1);
            self.skip_lf = line[end] == b'\r';
            match std::mem::replace(&mut self.line, Line::Kept) {
                Line::Kept => {
                    if let Some(frame) = self.push_line(&line[..end]) {
                        return Ok(Some(frame));
                    }
                }
                Line::Dropped => {}
                Line::Oversized => {
                    self.size = self.size.saturating_add(end + 1);
                    return Ok(Some(self.too_big()));
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<SseFrame>, io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        // An unfinished event (or line) at the end is discarded, as in a browser; one that
        // had already grown past the limit is still reported, as it would be had its line
        // ended.
        let oversized = std::mem::replace(&mut self.line, Line::Kept) == Line::Oversized;
        let frame = oversized.then(|| self.too_big());
        buf.clear();
        self.next_index = 0;
        self.discarding_event = false;
        self.reset_event();
        Ok(frame)
    }
}

impl SseCodec {
    /// Deals with a buffer holding the start of a line but not its end: keeps it while it may
    /// still fit, else drops it, counting its bytes when they count toward the limit.
    ///
    /// Whether a line counts depends only on its first byte and on the event so far, never on
    /// how much of it has arrived, so every chunking of a stream decodes alike.
    fn hold_partial_line(&mut self, buf: &mut BytesMut) {
        if buf.is_empty() {
            return;
        }
        if self.line == Line::Kept {
            if self.discarding_event || buf[0] == b':' {
                // Neither counts, and neither is interpreted: no need to keep its bytes.
                self.line = Line::Dropped;
            } else if self.size.saturating_add(buf.len()) > self.max_event_size {
                self.line = Line::Oversized;
            } else {
                self.next_index = buf.len();
                return;
            }
        }
        if self.line == Line::Oversized {
            self.size = self.size.saturating_add(buf.len());
        }
        buf.clear();
        self.next_index = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut SseCodec, input: &[u8]) -> Vec<SseFrame> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(frame) = codec.decode(&mut buf).unwrap() {
            out.push(frame);
        }
        while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    /// Feeds `input` one byte at a time.
    fn decode_bytewise(codec: &mut SseCodec, input: &[u8]) -> Vec<SseFrame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in input {
            buf.extend_from_slice(&[b]);
            while let Some(frame) = codec.decode(&mut buf).unwrap() {
                out.push(frame);
            }
        }
        while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    fn event(frame: &SseFrame) -> &SseEvent {
        match frame {
            SseFrame::Event(e) => e,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn fields_and_line_endings() {
        let input = b"event: message\r\nid: 7\rdata: a\ndata:b\r\n\r\ndata:  two spaces\n\n";
        for frames in [
            decode_all(&mut SseCodec::new(), input),
            decode_bytewise(&mut SseCodec::new(), input),
        ] {
            assert_eq!(frames.len(), 2);
            let first = event(&frames[0]);
            assert_eq!(first.event.as_deref(), Some("message"));
            assert_eq!(first.id.as_deref(), Some("7"));
            assert_eq!(first.data, "a\nb");
            assert!(first.is_message());
            assert_eq!(event(&frames[1]).data, " two spaces");
            assert_eq!(event(&frames[1]).id, None);
        }
    }

    #[test]
    fn cr_at_a_chunk_boundary_is_one_line_ending() {
        let mut codec = SseCodec::new();
        let mut buf = BytesMut::from("data: x\r");
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(b"\n\r\n");
        assert_eq!(event(&codec.decode(&mut buf).unwrap().unwrap()).data, "x");
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        let frames = decode_all(
            &mut SseCodec::new(),
            b": ping\n\n:another\nfoo: bar\ndata\n\n",
        );
        assert_eq!(frames.len(), 1);
        // `data` without a colon is a data line with an empty value.
        assert_eq!(event(&frames[0]).data, "");
    }

    #[test]
    fn priming_event_and_retry_are_yielded_with_empty_data() {
        let frames = decode_all(
            &mut SseCodec::new(),
            b"id: abc\ndata: \n\nretry: 500\n\nretry: 5x\n\n",
        );
        assert_eq!(frames.len(), 2);
        let priming = event(&frames[0]);
        assert_eq!(
            (priming.id.as_deref(), priming.data.as_str()),
            (Some("abc"), "")
        );
        assert!(!priming.is_message());
        assert_eq!(event(&frames[1]).retry, Some(Duration::from_millis(500)));
    }

    #[test]
    fn id_with_nul_is_ignored() {
        let frames = decode_all(
            &mut SseCodec::new(),
            b"id: a\0b\ndata: x\n\nid\ndata: y\n\n",
        );
        assert_eq!(event(&frames[0]).id, None);
        assert_eq!(event(&frames[1]).id.as_deref(), Some(""));
    }

    #[test]
    fn non_message_event_types() {
        let frames = decode_all(
            &mut SseCodec::new(),
            b"event: endpoint\ndata: /message?sessionId=1\n\n",
        );
        let e = event(&frames[0]);
        assert_eq!(e.event.as_deref(), Some("endpoint"));
        assert!(!e.is_message());
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let frames = decode_bytewise(&mut SseCodec::new(), b"\xEF\xBB\xBFdata: x\n\n");
        assert_eq!(event(&frames[0]).data, "x");
    }

    #[test]
    fn unfinished_event_at_eof_is_discarded() {
        let frames = decode_all(&mut SseCodec::new(), b"data: a\n\ndata: b\n");
        assert_eq!(frames.len(), 1);
        assert_eq!(event(&frames[0]).data, "a");
    }

    #[test]
    fn oversized_event_is_reported_once_and_the_next_is_decoded() {
        let mut codec = SseCodec::with_max_event_size(32);
        let mut input = Vec::new();
        for _ in 0..10 {
            input.extend_from_slice(b"data: 0123456789\n");
        }
        input.extend_from_slice(b"\nid: 2\ndata: ok\n\n");
        for frames in [
            decode_all(&mut codec, &input),
            decode_bytewise(&mut SseCodec::with_max_event_size(32), &input),
        ] {
            assert_eq!(frames.len(), 2, "{frames:?}");
            assert!(matches!(frames[0], SseFrame::Skipped { len, .. } if len > 32));
            assert_eq!(event(&frames[1]).data, "ok");
            assert_eq!(event(&frames[1]).id.as_deref(), Some("2"));
        }
    }

    #[test]
    fn oversized_single_line_in_chunks_stays_bounded() {
        const MAX: usize = 4096;
        let mut codec = SseCodec::with_max_event_size(MAX);
        let mut buf = BytesMut::from("data: ");
        let mut frames = Vec::new();
        for _ in 0..100 {
            buf.extend_from_slice(&[b'a'; 512]);
            while let Some(frame) = codec.decode(&mut buf).unwrap() {
                frames.push(frame);
            }
            assert!(buf.len() <= MAX + 512, "buffer grew to {}", buf.len());
        }
        buf.extend_from_slice(b"aaa\r\n\r\ndata: next\n\n");
        while let Some(frame) = codec.decode(&mut buf).unwrap() {
            frames.push(frame);
        }
        assert_eq!(frames.len(), 2);
        assert!(matches!(frames[0], SseFrame::Skipped { .. }));
        assert_eq!(event(&frames[1]).data, "next");
    }

    #[test]
    fn event_at_the_limit_is_accepted() {
        // "data: xx\n" is 9 bytes.
        let frames = decode_all(&mut SseCodec::with_max_event_size(9), b"data: xx\n\n");
        assert_eq!(event(&frames[0]).data, "xx");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let frames = decode_all(&mut SseCodec::new(), b"data: \xff\n\n");
        assert_eq!(event(&frames[0]).data, "\u{fffd}");
    }

    /// Feeds `input` in the given chunks, decoding after each.
    fn decode_chunks<'a>(max: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseFrame> {
        let mut codec = SseCodec::with_max_event_size(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
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

    /// Streams whose decoding once depended on where reads split them.
    const SPLIT_SENSITIVE: &[&[u8]] = &[
        // A comment longer than what is left of the limit: comments do not count.
        b"data: 0123\n: a comment of thirty bytes or so\ndata: x\n\ndata: next\n\n",
        // A comment longer than the whole limit, then an event.
        b": 0123456789012345678901234567890123456789\ndata: ok\n\n",
        // A field line that crosses the limit, with CRLF and CR endings.
        b"data: 0123456789\r\ndata: 0123456789\r\rdata: ok\r\n\r\n",
        // One endless line at the end of the input, after an event.
        b"id: 1\ndata: a\n\ndata: 0123456789012345678901234567890123",
        b"\xEF\xBB\xBFdata: 01234567890\n:c\r\ndata: 1\n\nretry: 10\n\n",
        b"data: 0123456789\n\n: 01234567890123456789\n\ndata: 0123456789ab\n\n",
    ];

    #[test]
    fn decoding_does_not_depend_on_read_boundaries() {
        const MAX: usize = 24;
        for input in SPLIT_SENSITIVE {
            let whole = decode_chunks(MAX, [*input]);
            for at in 0..=input.len() {
                let (a, b) = input.split_at(at);
                assert_eq!(
                    decode_chunks(MAX, [a, b]),
                    whole,
                    "{:?} split at {at}",
                    String::from_utf8_lossy(input)
                );
            }
            assert_eq!(
                decode_chunks(MAX, input.chunks(1)),
                whole,
                "{:?} byte by byte",
                String::from_utf8_lossy(input)
            );
            // A few random chunkings, from a fixed seed.
            let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ input.len() as u64;
            for _ in 0..20 {
                let mut chunks = Vec::new();
                let mut rest = *input;
                while !rest.is_empty() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let (chunk, tail) =
                        rest.split_at((state % 7 + 1).min(rest.len() as u64) as usize);
                    chunks.push(chunk);
                    rest = tail;
                }
                assert_eq!(decode_chunks(MAX, chunks), whole);
            }
        }
    }

    #[test]
    fn comments_never_count_toward_the_limit() {
        // The event's lines make 19 bytes; the comment alone is longer than the limit.
        let frames = decode_chunks(
            20,
            [&b"data: 0123\n: a comment longer than twenty bytes\ndata: x\n\n"[..]],
        );
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(event(&frames[0]).data, "0123\nx");
        // The same with the comment still incomplete when the decoder first looks.
        let frames = decode_chunks(
            20,
            [
                &b"data: 0123\n: a comment longer"[..],
                b" than twenty bytes\ndata: x\n\n",
            ],
        );
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(event(&frames[0]).data, "0123\nx");
    }
}
