//! The body of a response: whole bytes (JSON, an error, nothing), or an event stream fed by
//! a request's (or a session's) queue.
//!
//! The stream pulls one message at a time from its bounded queue only when hyper asks for
//! the next frame, that is when the socket took the last one: a client that stops reading
//! leaves the queue full, and whoever sends into it waits. Dropping the body (the client
//! closed the stream or the connection) drops the queue's receiver, which is how the
//! request's handler learns it was cancelled.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use super::super::Outgoing;
use super::exchange::Guards;

/// A response body of the MCP endpoint.
pub struct ResponseBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Stream {
        first: Option<Outgoing>,
        rx: mpsc::Receiver<Outgoing>,
        /// Ends the stream after the answer (a request's stream), or never (GET).
        ends_with_answer: bool,
        done: bool,
        /// Released when the stream ends or is dropped: the request is no longer in flight.
        guards: Option<Guards>,
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
        }
    }

    pub(crate) fn empty() -> Self {
        ResponseBody {
            kind: Kind::Full(None),
        }
    }

    /// A request's event stream: `first`, then the queue until the answer.
    pub(crate) fn request_stream(
        first: Outgoing,
        rx: mpsc::Receiver<Outgoing>,
        in_flight: Guards,
    ) -> Self {
        ResponseBody {
            kind: Kind::Stream {
                first: Some(first),
                rx,
                ends_with_answer: true,
                done: false,
                guards: Some(in_flight),
            },
        }
    }

    /// A session's GET stream: the queue, until the session ends.
    pub(crate) fn session_stream(rx: mpsc::Receiver<Outgoing>) -> Self {
        ResponseBody {
            kind: Kind::Stream {
                first: None,
                rx,
                ends_with_answer: false,
                done: false,
                guards: None,
            },
        }
    }
}

/// One `message` event holding `data` (a JSON message, which has no newline).
pub(crate) fn event(data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 24);
    out.put_slice(b"event: message\ndata: ");
    out.put_slice(data);
    out.put_slice(b"\n\n");
    out.freeze()
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match &mut self.get_mut().kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream {
                first,
                rx,
                ends_with_answer,
                done,
                guards,
            } => {
                if *done {
                    return Poll::Ready(None);
                }
                let next = match first.take() {
                    Some(first) => first,
                    None => match rx.poll_recv(cx) {
                        Poll::Ready(Some(next)) => next,
                        Poll::Ready(None) => {
                            *done = true;
                            return Poll::Ready(None);
                        }
                        Poll::Pending => return Poll::Pending,
                    },
                };
                let data = match next {
                    Outgoing::Message(frame) => frame,
                    Outgoing::Answer { frame, .. } => {
                        if *ends_with_answer {
                            *done = true;
                            rx.close();
                            // The answer is delivered: the request is no longer in flight.
                            *guards = None;
                        }
                        frame
                    }
                };
                Poll::Ready(Some(Ok(Frame::data(event(&data)))))
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
