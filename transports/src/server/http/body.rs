//! The body of a response: whole bytes (JSON, an error, nothing), or an event stream fed by
//! a request's (or a session's) queue.
//!
//! The stream pulls one message at a time from its bounded queue only when hyper asks for
//! the next frame, that is when the socket took the last one: a client that stops reading
//! leaves the queue full, and whoever sends into it waits. Dropping the body (the client
//! closed the stream or the connection) drops the queue's receiver, which is how the
//! request's handler learns it was cancelled.
//!
//! An event goes out as the message's own bytes between its `event:`/`data:` prefix and
//! its blank line ([`Chunk`]), never copied: the bytes stay counted against the server's
//! answer budget until the socket has taken them.

use std::fmt;
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;
use tokio::time::Sleep;

use super::super::Outgoing;
use super::connections::InProgress;

const EVENT_PREFIX: &[u8] = b"event: message\ndata: ";
const EVENT_END: &[u8] = b"\n\n";
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One piece of a response body: bytes as they are, or one SSE `message` event around a
/// message's bytes.
pub struct Chunk {
    kind: ChunkKind,
}

enum ChunkKind {
    Bytes(Bytes),
    /// An event: `at` bytes of prefix, data and end written so far.
    Event {
        data: Bytes,
        at: usize,
    },
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunk")
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl Chunk {
    fn bytes(bytes: Bytes) -> Self {
        Chunk {
            kind: ChunkKind::Bytes(bytes),
        }
    }

    /// One `message` event holding `data` (a JSON message, which has no newline).
    pub(crate) fn event(data: Bytes) -> Self {
        Chunk {
            kind: ChunkKind::Event { data, at: 0 },
        }
    }

    /// The three parts of an event, each from where `at` falls.
    fn parts(data: &Bytes, at: usize) -> [&[u8]; 3] {
        let (prefix, data_len) = (EVENT_PREFIX.len(), data.len());
        let skip = |slice: &'static [u8], from: usize| &slice[from.min(slice.len())..];
        [
            skip(EVENT_PREFIX, at),
            &data[at.saturating_sub(prefix).min(data_len)..],
            skip(EVENT_END, at.saturating_sub(prefix + data_len)),
        ]
    }
}

impl Buf for Chunk {
    fn remaining(&self) -> usize {
        match &self.kind {
            ChunkKind::Bytes(bytes) => bytes.remaining(),
            ChunkKind::Event { data, at } => EVENT_PREFIX.len() + data.len() + EVENT_END.len() - at,
        }
    }

    fn chunk(&self) -> &[u8] {
        match &self.kind {
            ChunkKind::Bytes(bytes) => bytes.chunk(),
            ChunkKind::Event { data, at } => Chunk::parts(data, *at)
                .into_iter()
                .find(|part| !part.is_empty())
                .unwrap_or_default(),
        }
    }

    fn advance(&mut self, cnt: usize) {
        match &mut self.kind {
            ChunkKind::Bytes(bytes) => bytes.advance(cnt),
            ChunkKind::Event { data, at } => {
                let total = EVENT_PREFIX.len() + data.len() + EVENT_END.len();
                assert!(*at + cnt <= total, "advanced past the event's end");
                *at += cnt;
            }
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        match &self.kind {
            ChunkKind::Bytes(bytes) => bytes.chunks_vectored(dst),
            ChunkKind::Event { data, at } => {
                let mut n = 0;
                for part in Chunk::parts(data, *at) {
                    if n == dst.len() {
                        break;
                    }
                    if !part.is_empty() {
                        dst[n] = IoSlice::new(part);
                        n += 1;
                    }
                }
                n
            }
        }
    }
}

/// A response body of the MCP endpoint.
pub struct ResponseBody {
    kind: Kind,
    /// The connection's request, in progress until the body is done.
    in_progress: Option<InProgress>,
}

/// Whatever a stream holds until it ends: its request's counts, its client's stream quota.
pub(crate) type Holds = Box<dyn std::any::Any + Send + Sync>;

enum Kind {
    Full(Option<Bytes>),
    Stream {
        first: Option<Outgoing>,
        rx: mpsc::Receiver<Outgoing>,
        /// Ends the stream after the answer (a request's stream), or never (GET).
        ends_with_answer: bool,
        done: bool,
        /// Released when the stream ends or is dropped: the request is no longer in
        /// flight, the client's stream no longer open.
        holds: Option<Holds>,
        /// When a quiet stream says something next, to show it is alive.
        keep_alive: Option<(Duration, Pin<Box<Sleep>>)>,
    },
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Full(_) => "full",
            Kind::Stream { .. } => "stream",
        };
        f.debug_struct("ResponseBody").field("kind", &kind).finish()
    }
}

impl ResponseBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        ResponseBody {
            kind: Kind::Full(Some(bytes.into())),
            in_progress: None,
        }
    }

    pub(crate) fn empty() -> Self {
        ResponseBody {
            kind: Kind::Full(None),
            in_progress: None,
        }
    }

    /// A request's event stream: `first`, then the queue until the answer. A stream that
    /// may stay quiet for long (`subscriptions/listen`) says so with `keep_alive`.
    pub(crate) fn request_stream(
        first: Outgoing,
        rx: mpsc::Receiver<Outgoing>,
        holds: Holds,
        keep_alive: Option<Duration>,
    ) -> Self {
        ResponseBody {
            kind: Kind::Stream {
                first: Some(first),
                rx,
                ends_with_answer: true,
                done: false,
                holds: Some(holds),
                keep_alive: keep_alive.map(|every| (every, Box::pin(tokio::time::sleep(every)))),
            },
            in_progress: None,
        }
    }

    /// A session's GET stream: the queue, until the session ends.
    pub(crate) fn session_stream(
        rx: mpsc::Receiver<Outgoing>,
        holds: Holds,
        keep_alive: Option<Duration>,
    ) -> Self {
        ResponseBody {
            kind: Kind::Stream {
                first: None,
                rx,
                ends_with_answer: false,
                done: false,
                holds: Some(holds),
                keep_alive: keep_alive.map(|every| (every, Box::pin(tokio::time::sleep(every)))),
            },
            in_progress: None,
        }
    }

    /// Keeps the connection's request in progress until this body is done.
    pub(crate) fn hold(&mut self, in_progress: InProgress) {
        self.in_progress = Some(in_progress);
    }
}

impl Body for ResponseBody {
    type Data = Chunk;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Chunk>, Self::Error>>> {
        let this = self.get_mut();
        match &mut this.kind {
            Kind::Full(bytes) => {
                let frame = bytes.take().map(|b| Ok(Frame::data(Chunk::bytes(b))));
                if frame.is_none() {
                    this.in_progress = None;
                }
                Poll::Ready(frame)
            }
            Kind::Stream {
                first,
                rx,
                ends_with_answer,
                done,
                holds,
                keep_alive,
            } => {
                if *done {
                    this.in_progress = None;
                    return Poll::Ready(None);
                }
                let next = match first.take() {
                    Some(first) => first,
                    None => match rx.poll_recv(cx) {
                        Poll::Ready(Some(next)) => next,
                        Poll::Ready(None) => {
                            *done = true;
                            *holds = None;
                            this.in_progress = None;
                            return Poll::Ready(None);
                        }
                        Poll::Pending => {
                            if let Some((every, sleep)) = keep_alive {
                                if sleep.as_mut().poll(cx).is_ready() {
                                    let next = tokio::time::Instant::now() + *every;
                                    sleep.as_mut().reset(next);
                                    let comment = Chunk::bytes(Bytes::from_static(KEEP_ALIVE));
                                    return Poll::Ready(Some(Ok(Frame::data(comment))));
                                }
                            }
                            return Poll::Pending;
                        }
                    },
                };
                if let Some((every, sleep)) = keep_alive {
                    sleep.as_mut().reset(tokio::time::Instant::now() + *every);
                }
                let data = match next {
                    Outgoing::Message(frame) => frame,
                    Outgoing::Answer { frame, .. } => {
                        if *ends_with_answer {
                            *done = true;
                            rx.close();
                            // The answer is delivered: the request is no longer in flight.
                            *holds = None;
                        }
                        frame
                    }
                };
                Poll::Ready(Some(Ok(Frame::data(Chunk::event(data)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(bytes) => bytes.is_none(),
            Kind::Stream { done, .. } => *done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Stream { .. } => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut chunk: Chunk, step: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            let n = piece.len().min(step);
            out.extend_from_slice(&piece[..n]);
            chunk.advance(n);
        }
        out
    }

    #[test]
    fn an_event_is_its_prefix_its_data_and_a_blank_line_however_it_is_written() {
        let data = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let whole = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        for step in [1, 3, 7, 64] {
            assert_eq!(
                drain(Chunk::event(data.clone()), step),
                whole,
                "step {step}"
            );
        }
        let mut chunk = Chunk::event(data);
        assert_eq!(chunk.remaining(), whole.len());
        chunk.advance(5);
        let mut slices = [IoSlice::new(&[]); 4];
        let n = chunk.chunks_vectored(&mut slices);
        let joined: Vec<u8> = slices[..n].iter().flat_map(|s| s.to_vec()).collect();
        assert_eq!(joined, &whole[5..]);
        // Fewer slices than parts: the first ones only, in order.
        let mut one = [IoSlice::new(&[])];
        assert_eq!(chunk.chunks_vectored(&mut one), 1);
        assert_eq!(&*one[0], &whole[5..EVENT_PREFIX.len()]);
        assert_eq!(
            drain(Chunk::event(Bytes::new()), 2),
            b"event: message\ndata: \n\n"
        );
    }
}
