//! Newline-delimited JSON: the framing of MCP's stdio transport, as a tokio-util codec.
//!
//! Each line holds one JSON-RPC message, or a JSON array of them (a batch, allowed by the
//! 2025-03-26 revision). [`LinesCodec`] turns bytes into [`Frame`]s and messages back into
//! lines. A line that is not a message does not end the stream: it comes out as
//! [`Frame::Skipped`], so that the transport can log it, count it and, when its id is
//! readable, fail the request it answers. Lines longer than the limit are dropped without
//! being buffered, so a peer cannot make the decoder hold more than about the limit. The
//! codec is two parts a reader may also use apart: [`LineFramer`] cuts the lines, and
//! [`read_line`] reads one.
//!
//! ```
//! use bytes::BytesMut;
//! use switchboard_codecs::lines::{Frame, LinesCodec, SkipKind};
//! use tokio_util::codec::Decoder;
//!
//! let mut codec = LinesCodec::new();
//! let mut buf = BytesMut::from(&b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\r\nhello\n"[..]);
//! assert!(matches!(codec.decode(&mut buf)?, Some(Frame::Message(_))));
//! let Some(Frame::Skipped(skipped)) = codec.decode(&mut buf)? else { panic!("skipped") };
//! assert_eq!(skipped.kind, SkipKind::NotJson);
//! assert!(codec.decode(&mut buf)?.is_none());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::value::RawValue;
use tokio_util::codec::{Decoder, Encoder};

use crate::jsonrpc::{unbreak, Id, Message, ParseError};

/// The default longest line, in bytes: 16 MiB.
pub const DEFAULT_MAX_LENGTH: usize = 16 * 1024 * 1024;

/// How many characters of a skipped line [`Skipped::excerpt`] keeps.
const EXCERPT_CHARS: usize = 80;

/// A codec for newline-delimited JSON-RPC: decodes [`Frame`]s, encodes [`Message`]s and
/// already serialized JSON ([`Bytes`]).
///
/// A line is the bytes before a `\n`, a trailing `\r` included in its length and then
/// stripped. Lines holding only whitespace are ignored. It is a [`LineFramer`] whose lines
/// are read by [`read_line`].
#[derive(Debug)]
pub struct LinesCodec {
    framer: LineFramer,
    /// The rest of a batch.
    rest: Frames,
}

impl Default for LinesCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl LinesCodec {
    /// A codec whose longest line is [`DEFAULT_MAX_LENGTH`].
    pub fn new() -> Self {
        Self::with_max_length(DEFAULT_MAX_LENGTH)
    }

    /// A codec whose longest line is `max` bytes.
    ///
    /// # Security
    ///
    /// The decoder buffers up to `max` bytes of one line, so `max` bounds the memory a peer
    /// can make it use. `usize::MAX` removes the bound: do not use it on untrusted input.
    pub fn with_max_length(max: usize) -> Self {
        LinesCodec {
            framer: LineFramer::with_max_length(max),
            rest: Frames::default(),
        }
    }

    /// The longest line accepted, in bytes.
    pub fn max_length(&self) -> usize {
        self.framer.max_length
    }
}

/// Frames lines without reading them: each line's bytes, for a reader that reads some lines
/// its own way before [`read_line`] reads the rest (a server's one-pass reading of the
/// requests it serves most).
///
/// A line longer than the limit is reported once, as [`RawLine::TooLong`], as soon as the
/// buffer holds more than the limit without a `\n`; its remaining bytes are then dropped as
/// they arrive, up to and including the `\n`. Content never makes decoding fail: `Err` is
/// reserved for I/O errors of the underlying reader.
#[derive(Debug)]
pub struct LineFramer {
    max_length: usize,
    /// Where to resume the search for `\n` in the buffer, so that a line arriving in many
    /// small chunks is scanned once rather than once per chunk.
    next_index: usize,
    /// Set after an oversized line was reported, until its `\n` is seen.
    discarding: bool,
}

/// What a [`LineFramer`] yields.
#[derive(Debug)]
pub enum RawLine {
    /// A line's bytes, without its `\n` (a `\r` before it kept; blank lines too).
    Line(BytesMut),
    /// A line longer than the limit.
    TooLong(Skipped),
}

impl LineFramer {
    /// A framer whose longest line is `max` bytes (see [`LinesCodec::with_max_length`]).
    pub fn with_max_length(max: usize) -> Self {
        LineFramer {
            max_length: max,
            next_index: 0,
            discarding: false,
        }
    }
}

/// The frames one line (without its `\n`) holds: none for a blank line, one for a message or
/// a line that is not one, one per element of a batch.
///
/// A batch's valid elements are yielded even when others are not; each invalid element is
/// reported as its own [`SkipKind::NotJsonRpc`] (with its id when readable), and an empty
/// array as one [`SkipKind::BadBatch`]. A batch's elements are read one by one, as they are
/// taken.
#[inline]
pub fn read_line(line: &[u8]) -> Frames {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(|&b| is_json_whitespace(b)) {
        return Frames::default();
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            let skipped = Skipped::new(SkipKind::NotUtf8, line, e.to_string(), None);
            return Frames::one(Frame::Skipped(skipped));
        }
    };
    if text
        .trim_start_matches(|c: char| c.is_ascii() && is_json_whitespace(c as u8))
        .starts_with('[')
    {
        read_batch(text)
    } else {
        Frames::one(parse_message(text))
    }
}

fn read_batch(text: &str) -> Frames {
    let elements = match serde_json::from_str::<Vec<Box<RawValue>>>(text) {
        Ok(elements) => elements,
        Err(e) => {
            // Syntax errors mean the line is not JSON at all; anything else is JSON that
            // is not an array of values.
            let kind = if e.is_data() {
                SkipKind::BadBatch
            } else {
                SkipKind::NotJson
            };
            let skipped = Skipped::new(kind, text.as_bytes(), e.to_string(), None);
            return Frames::one(Frame::Skipped(skipped));
        }
    };
    if elements.is_empty() {
        let skipped = Skipped::new(
            SkipKind::BadBatch,
            text.as_bytes(),
            "empty batch".into(),
            None,
        );
        return Frames::one(Frame::Skipped(skipped));
    }
    Frames {
        one: None,
        batch: elements.into_iter(),
    }
}

/// The frames of one line, in order ([`read_line`]).
#[derive(Debug, Default)]
pub struct Frames {
    one: Option<Frame>,
    /// A batch's elements not yet read.
    batch: std::vec::IntoIter<Box<RawValue>>,
}

impl Frames {
    fn one(frame: Frame) -> Frames {
        Frames {
            one: Some(frame),
            batch: Vec::new().into_iter(),
        }
    }
}

impl Iterator for Frames {
    type Item = Frame;

    #[inline]
    fn next(&mut self) -> Option<Frame> {
        match self.one.take() {
            Some(frame) => Some(frame),
            None => self.batch.next().map(|raw| parse_message(raw.get())),
        }
    }
}

/// JSON's four whitespace bytes; other ASCII whitespace (form feed) is not JSON.
fn is_json_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn parse_message(text: &str) -> Frame {
    let bytes = text.as_bytes();
    match Message::parse(text) {
        Ok(msg) => Frame::Message(msg),
        Err(ParseError::NotJson(detail)) => {
            Frame::Skipped(Skipped::new(SkipKind::NotJson, bytes, detail, None))
        }
        Err(ParseError::NotJsonRpc { reason, id }) => {
            Frame::Skipped(Skipped::new(SkipKind::NotJsonRpc, bytes, reason, id))
        }
    }
}

fn find_newline(bytes: &[u8]) -> Option<usize> {
    // memchr scans a word (or a SIMD vector) at a time: the byte loop was most of the cost
    // of framing a large answer.
    memchr::memchr(b'\n', bytes)
}

/// What the decoder yields: a message, or a report of a line it had to skip.
#[derive(Debug)]
pub enum Frame {
    /// A JSON-RPC message (a whole line, or one element of a batch).
    Message(Message),
    /// A line, or a batch element, that is not a message.
    Skipped(Skipped),
}

/// A line (or batch element) the decoder skipped, with enough to log and count it.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// Why it was skipped.
    pub kind: SkipKind,
    /// Its length in bytes. For [`SkipKind::TooLong`], the bytes seen when the limit was
    /// crossed if the line had not ended yet, else the whole line.
    pub len: usize,
    /// Its first 80 characters (then `…` if cut), invalid UTF-8 replaced and control
    /// characters escaped, safe to put in a log line.
    pub excerpt: String,
    /// The message's id, when a malformed message's id was readable: the request it answers
    /// can then be failed rather than left to time out.
    pub id: Option<Id>,
    /// The parser's explanation (e.g. the position of a syntax error).
    pub detail: String,
}

impl Skipped {
    fn new(kind: SkipKind, bytes: &[u8], detail: String, id: Option<Id>) -> Self {
        Skipped {
            kind,
            len: bytes.len(),
            excerpt: excerpt(bytes),
            id,
            detail,
        }
    }

    /// A human-readable explanation, including the parser's detail.
    pub fn reason(&self) -> String {
        let what = match self.kind {
            SkipKind::TooLong => "line too long",
            SkipKind::NotUtf8 => "not UTF-8",
            SkipKind::NotJson => "not JSON",
            SkipKind::NotJsonRpc => "not a JSON-RPC 2.0 message",
            SkipKind::BadBatch => "invalid batch",
        };
        if self.detail.is_empty() {
            what.to_owned()
        } else {
            format!("{what}: {}", self.detail)
        }
    }
}

/// How far into an oversized line its `id` is looked for.
const ID_SNIFF: usize = 512;

/// The `id` of a message whose text starts with `prefix`, when the prefix shows it as a
/// member of the top-level object, before any nested value could be mistaken for it (so an
/// `"id"` inside `params` or `result` is never taken). `None` when it cannot tell.
fn leading_id(prefix: &[u8]) -> Option<Id> {
    let text = std::str::from_utf8(prefix)
        .or_else(|e| std::str::from_utf8(&prefix[..e.valid_up_to()]))
        .ok()?;
    let mut rest = text.trim_start().strip_prefix('{')?;
    loop {
        rest = rest.trim_start();
        let (key, after) = json_string(rest)?;
        rest = after.trim_start().strip_prefix(':')?.trim_start();
        if key == "id" {
            let end = rest
                .find(|c: char| c == ',' || c == '}' || c.is_whitespace())
                .unwrap_or(rest.len());
            let value = &rest[..end];
            if value.starts_with('"') {
                return json_string(value).map(|(s, _)| Id::String(s.into()));
            }
            // An integer id only: what is cut off is not trusted.
            if end == rest.len() {
                return None;
            }
            return value.parse::<i64>().ok().map(Id::Number);
        }
        // Skip a scalar value; a nested value ends the search (a key inside it is no id).
        if rest.starts_with('{') || rest.starts_with('[') {
            return None;
        }
        rest = if rest.starts_with('"') {
            json_string(rest)?.1
        } else {
            let end = rest.find([',', '}'])?;
            &rest[end..]
        };
        rest = rest.trim_start().strip_prefix(',')?;
    }
}

/// A JSON string at the start of `text` (without unescaping: keys and ids in practice have
/// no escapes), and what follows it.
fn json_string(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some((&body[..i], &body[i + 1..])),
            _ => escaped = false,
        }
    }
    None
}

/// The first characters of `bytes`, lossy UTF-8 with control characters escaped and `…` when
/// cut: safe to put in a log line or an error.
pub fn excerpt(bytes: &[u8]) -> String {
    // Four bytes per character at most, plus one partial character the cut may leave.
    let head = &bytes[..bytes.len().min(EXCERPT_CHARS * 4 + 4)];
    let lossy = String::from_utf8_lossy(head);
    let mut out = String::with_capacity(EXCERPT_CHARS + 8);
    let mut chars = lossy.chars();
    for c in chars.by_ref().take(EXCERPT_CHARS) {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if chars.next().is_some() || head.len() < bytes.len() {
        out.push('…');
    }
    out
}

/// Why a line was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipKind {
    /// Longer than the codec's limit.
    TooLong,
    /// Not valid UTF-8.
    NotUtf8,
    /// Not JSON.
    NotJson,
    /// JSON, but not a JSON-RPC 2.0 message.
    NotJsonRpc,
    /// An array that is not a valid batch (empty, or not an array of values).
    BadBatch,
}

impl SkipKind {
    /// A short stable name, fit for a metric label: `oversized`, `not_utf8`, `not_json`,
    /// `not_jsonrpc` or `bad_batch`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SkipKind::TooLong => "oversized",
            SkipKind::NotUtf8 => "not_utf8",
            SkipKind::NotJson => "not_json",
            SkipKind::NotJsonRpc => "not_jsonrpc",
            SkipKind::BadBatch => "bad_batch",
        }
    }
}

impl Decoder for LineFramer {
    type Item = RawLine;
    type Error = io::Error;

    #[inline]
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<RawLine>, io::Error> {
        loop {
            if self.discarding {
                match find_newline(buf) {
                    Some(i) => {
                        buf.advance(i + 1);
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        buf.clear();
                        return Ok(None);
                    }
                }
            }
            // Never look further than one byte past the limit: a `\n` there would already
            // make the line too long.
            let read_to = buf.len().min(self.max_length.saturating_add(1));
            if let Some(offset) = find_newline(&buf[self.next_index..read_to]) {
                let end = self.next_index + offset;
                self.next_index = 0;
                let mut line = buf.split_to(end + 1);
                line.truncate(end);
                return Ok(Some(RawLine::Line(line)));
            }
            if buf.len() <= self.max_length {
                self.next_index = read_to;
                return Ok(None);
            }
            self.next_index = 0;
            // Whose answer is too long is read off the start of the line, so that its caller
            // learns of the limit at once instead of waiting out its deadline.
            // Always the same bytes, whatever the reads buffered: `read_to` is one past the
            // limit here.
            let id = leading_id(&buf[..read_to.min(ID_SNIFF)]);
            // The line may already be complete further on; if so skip just it, else drop
            // what is buffered and the rest of the line as it comes.
            let (len, skipped_excerpt) = match find_newline(&buf[read_to..]) {
                Some(offset) => {
                    let end = read_to + offset;
                    let line = buf.split_to(end + 1);
                    let line = &line[..end];
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    (line.len(), excerpt(line))
                }
                None => {
                    let seen = (buf.len(), excerpt(buf));
                    buf.clear();
                    self.discarding = true;
                    seen
                }
            };
            return Ok(Some(RawLine::TooLong(Skipped {
                kind: SkipKind::TooLong,
                len,
                excerpt: skipped_excerpt,
                id,
                detail: format!("longer than the limit of {} bytes", self.max_length),
            })));
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<RawLine>, io::Error> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        // What is left is a final line without `\n` (or the tail of a discarded one).
        self.next_index = 0;
        if std::mem::take(&mut self.discarding) || buf.is_empty() {
            buf.clear();
            return Ok(None);
        }
        Ok(Some(RawLine::Line(buf.split())))
    }
}

/// Decodes lines into frames, as [`LineFramer`] frames them and [`read_line`] reads them: a
/// batch line yields its elements one per call, in order.
///
/// Content never makes decoding fail: `Err` is reserved for I/O errors of the underlying
/// reader, so a misbehaving peer cannot end the stream by writing garbage.
impl Decoder for LinesCodec {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, io::Error> {
        self.next(buf, false)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, io::Error> {
        self.next(buf, true)
    }
}

impl LinesCodec {
    fn next(&mut self, buf: &mut BytesMut, eof: bool) -> Result<Option<Frame>, io::Error> {
        if let Some(frame) = self.rest.next() {
            return Ok(Some(frame));
        }
        loop {
            let line = if eof {
                self.framer.decode_eof(buf)?
            } else {
                self.framer.decode(buf)?
            };
            match line {
                Some(RawLine::Line(line)) => {
                    let mut frames = read_line(&line);
                    if let Some(frame) = frames.next() {
                        if !frames.batch.as_slice().is_empty() {
                            self.rest = frames;
                        }
                        return Ok(Some(frame));
                    }
                }
                Some(RawLine::TooLong(skipped)) => return Ok(Some(Frame::Skipped(skipped))),
                None => return Ok(None),
            }
        }
    }
}

/// Encodes a message as one line of JSON, as [`Message::to_vec`] writes it: raw line breaks in
/// raw params or results become spaces.
impl Encoder<&Message> for LinesCodec {
    type Error = io::Error;

    fn encode(&mut self, item: &Message, dst: &mut BytesMut) -> Result<(), io::Error> {
        let start = dst.len();
        serde_json::to_writer((&mut *dst).writer(), item)?;
        unbreak(&mut dst[start..]);
        dst.put_u8(b'\n');
        Ok(())
    }
}

/// Encodes an already serialized JSON text as one line.
///
/// A raw `\n` or `\r` in a JSON text can only be whitespace between tokens (strings escape
/// them), so pretty-printed input is made a single line by turning each into a space; the text
/// is otherwise written as given, unchecked. Whatever the bytes, exactly one line is written.
impl Encoder<Bytes> for LinesCodec {
    type Error = io::Error;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), io::Error> {
        dst.reserve(item.len() + 1);
        let start = dst.len();
        dst.extend_from_slice(&item);
        unbreak(&mut dst[start..]);
        dst.put_u8(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests;
