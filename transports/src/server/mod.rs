//! The server side of MCP's transports: a client's messages in, a server's answers out.
//!
//! A server transport turns bytes from clients into [`Inbound`] messages and hands them to a
//! [`Service`] (the protocol layer, `switchboard-server`), together with a [`Responder`] for
//! each request: where the messages about that request (progress, a request to the client,
//! the answer) go. On [`stdio`] every responder writes to stdout; on Streamable HTTP
//! (`http`, feature `server-http`) each POST has its own, and its answer becomes a JSON body
//! or an event stream. Messages that belong to no request (`list_changed`, resource updates)
//! go through the session's [`Notifier`].
//!
//! Everything toward a client is bounded: a responder's queue has a fixed capacity and
//! [`Responder::send`] waits for room, so a client that stops reading slows only the
//! handlers that talk to it, and never grows the server's memory. Nothing here knows MCP
//! beyond what a transport must (which method opens a session, which headers a 2026-07-28
//! request carries).
//!
//! ```
//! use bytes::Bytes;
//! use switchboard_transports::server::{Outgoing, Responder};
//!
//! # tokio_test_block_on(async {
//! let (responder, mut rx) = Responder::channel(4);
//! responder.answer(Bytes::from_static(b"{}"), None).await;
//! assert!(matches!(rx.recv().await, Some(Outgoing::Answer { .. })));
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use switchboard_codecs::jsonrpc::{Notification, Request, Response};
use tokio::sync::mpsc;

#[cfg(feature = "server-http")]
pub mod http;
mod principal;
pub mod stdio;

pub use principal::{PresentedToken, Principal};

/// A message from a client, as the protocol layer receives it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// A request, and where everything about it goes.
    Request {
        /// The request.
        request: Request,
        /// Its answer's way back.
        responder: Responder,
    },
    /// A notification.
    Notification(Notification),
    /// A response to a request the server sent the client.
    Response(Response),
}

/// What a [`Responder`] carries toward the client.
#[derive(Debug)]
pub enum Outgoing {
    /// A message about the request before its answer: a notification, or a request to the
    /// client. One serialized JSON-RPC message, without framing.
    Message(Bytes),
    /// The answer, last. `error` is its JSON-RPC error code when it is an error response,
    /// so that an HTTP transport can choose the status without parsing it again.
    Answer {
        /// One serialized JSON-RPC response (or, from a fault fixture, any bytes).
        frame: Bytes,
        /// The error code of an error response.
        error: Option<i64>,
    },
}

/// The client went away: nothing sent now reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client's stream is closed")]
pub struct Closed;

/// Where the messages about one request go, ending with its answer.
///
/// # Cancel safety
///
/// [`send`](Self::send) waits for room in a bounded queue; dropping its future sends nothing.
///
/// # Drop behavior
///
/// Dropping a responder without [`answer`](Self::answer) leaves the request unanswered: on
/// HTTP its event stream (or body) ends; on stdio nothing is written.
#[derive(Clone)]
pub struct Responder {
    tx: mpsc::Sender<Outgoing>,
    /// The W3C `traceparent` the request's transport carried beside it (an HTTP header).
    traceparent: Option<Arc<str>>,
    /// The HTTP connection whose answer budget what it sends counts against.
    #[cfg(feature = "server-http")]
    charge: Option<Arc<http::connections::Conn>>,
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("closed", &self.tx.is_closed())
            .finish()
    }
}

impl Responder {
    /// A responder over a fresh queue of `capacity` messages, and the queue's receiving end.
    pub fn channel(capacity: usize) -> (Responder, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Responder::from_sender(tx), rx)
    }

    /// What it sends counts against `conn`'s answer budget until written.
    #[cfg(feature = "server-http")]
    pub(crate) fn charged_to(mut self, conn: Arc<http::connections::Conn>) -> Self {
        self.charge = Some(conn);
        self
    }

    /// `frame`, counted against the answer budget when the responder has one.
    fn charge(&self, frame: Bytes) -> Bytes {
        #[cfg(feature = "server-http")]
        if let Some(conn) = &self.charge {
            return conn.charge(frame);
        }
        frame
    }

    /// With the `traceparent` the transport carried beside the request.
    pub fn with_traceparent(mut self, traceparent: Option<Arc<str>>) -> Self {
        self.traceparent = traceparent;
        self
    }

    /// The `traceparent` the transport carried beside the request, if any (unchecked).
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// A responder that writes into an existing queue (stdio's writer).
    pub fn from_sender(tx: mpsc::Sender<Outgoing>) -> Responder {
        Responder {
            tx,
            traceparent: None,
            #[cfg(feature = "server-http")]
            charge: None,
        }
    }

    /// Sends a message about the request (progress, a log message, a request to the
    /// client), waiting for room.
    pub async fn send(&self, message: Bytes) -> Result<(), Closed> {
        self.tx
            .send(Outgoing::Message(self.charge(message)))
            .await
            .map_err(|_| Closed)
    }

    /// Sends a message about the request without waiting; `false` if the queue is full
    /// or the client gone (the message is dropped).
    pub fn try_send(&self, message: Bytes) -> bool {
        self.tx
            .try_send(Outgoing::Message(self.charge(message)))
            .is_ok()
    }

    /// Sends the answer; a client already gone is no error worth reporting.
    pub async fn answer(self, frame: Bytes, error: Option<i64>) {
        let frame = self.charge(frame);
        // Most answers find room at once; the wait for room is boxed so that its state (a
        // few hundred bytes) is not part of every request's future, which a server spawns
        // as a task of its own.
        if let Err(mpsc::error::TrySendError::Full(answer)) =
            self.tx.try_send(Outgoing::Answer { frame, error })
        {
            let _ = Box::pin(self.tx.send(answer)).await;
        }
    }

    /// Resolves once the client can no longer hear this request's answer (on HTTP, when it
    /// closed the response stream: the request's cancellation).
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    /// Whether the client can no longer hear the answer.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Where a session's messages that belong to no request go: stdout on stdio, the GET
/// stream on HTTP (dropped while none is open, as the spec allows).
///
/// Sending never waits: a client whose queue is full loses the message, and on HTTP its
/// stream is closed, so that a client that stops reading never grows the server's memory.
#[derive(Clone, Default)]
pub struct Notifier {
    slot: Arc<Mutex<Option<Responder>>>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("open", &self.is_open())
            .finish()
    }
}

impl Notifier {
    /// A notifier writing into `tx`.
    pub fn new(tx: mpsc::Sender<Outgoing>) -> Notifier {
        let notifier = Notifier::default();
        notifier.attach(tx);
        notifier
    }

    /// Makes `tx` the stream this session's notifications go to, replacing any other.
    pub fn attach(&self, tx: mpsc::Sender<Outgoing>) {
        self.attach_responder(Responder::from_sender(tx));
    }

    /// Makes `stream` the stream this session's notifications go to (an HTTP GET stream,
    /// charged to its connection), replacing any other.
    pub(crate) fn attach_responder(&self, stream: Responder) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(stream);
    }

    /// Forgets the stream (the client closed it, or the session ended).
    pub fn detach(&self) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether a stream is attached.
    pub fn is_open(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|stream| !stream.is_closed())
    }

    /// Queues one serialized message; `false` if it was dropped (no stream, or its queue
    /// full, in which case the stream is closed).
    pub fn notify(&self, message: Bytes) -> bool {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stream) = slot.as_ref() else {
            return false;
        };
        match stream
            .tx
            .try_send(Outgoing::Message(stream.charge(message)))
        {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!("a client is not reading its notifications: closing the stream");
                *slot = None;
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                *slot = None;
                false
            }
        }
    }
}

/// The protocol layer a server transport feeds: it opens a session per connection (stdio)
/// or per handshake-era session (HTTP), receives each message, and hears when a session
/// ends.
pub trait Service: Send + Sync + 'static {
    /// What the protocol keeps per session.
    type Session: Send + Sync + 'static;

    /// A session begins; `notifier` is where its messages that belong to no request go.
    /// `stateless` says the session serves one 2026-07-28 request and ends with it.
    fn open(&self, notifier: Notifier, stateless: bool) -> Arc<Self::Session>;

    /// One message of the session. It must not wait: work is spawned.
    fn receive(&self, session: &Arc<Self::Session>, inbound: Inbound);

    /// One line of a stdio session, before the transport reads it as JSON-RPC: a service
    /// that reads the messages it serves most in one pass of its own (a server its
    /// `tools/call`) serves such a line here, answering through `responder` (a clone), and
    /// returns `true`. `false`, the default, leaves the line to the transport's reading,
    /// which hands what it holds to [`receive`](Self::receive). Like `receive`, it must not
    /// wait.
    ///
    /// `line` is as it came, without its `\n`: possibly blank, not JSON, or a batch.
    fn receive_line(
        &self,
        session: &Arc<Self::Session>,
        line: &[u8],
        responder: &Responder,
    ) -> bool {
        let _ = (session, line, responder);
        false
    }

    /// The input schema of the tool `name`, for the `Mcp-Param-*` header checks of a
    /// 2026-07-28 `tools/call` on HTTP; `None` (the default) checks none.
    fn tool_input_schema(&self, name: &str) -> Option<serde_json::Value> {
        let _ = name;
        None
    }

    /// What a sealed session id carries for `session` once `initialize` is answered (HTTP
    /// with session keys): enough for [`restore`](Self::restore) to rebuild it in another
    /// process. `None` (the default) keeps the session to this process.
    fn session_state(&self, session: &Arc<Self::Session>) -> Option<serde_json::Value> {
        let _ = session;
        None
    }

    /// A session rebuilt from what [`session_state`](Self::session_state) gave, in a process
    /// that did not open it; `None` (the default) if it cannot be.
    fn restore(&self, notifier: Notifier, state: &serde_json::Value) -> Option<Arc<Self::Session>> {
        let _ = (notifier, state);
        None
    }

    /// The session's requests come from `principal` (HTTP with inbound authentication):
    /// told before each of its requests; the default ignores it.
    fn authenticated(&self, session: &Arc<Self::Session>, principal: &Arc<Principal>) {
        let _ = (session, principal);
    }

    /// The session ended (input closed, DELETE, or its one stateless request answered):
    /// whatever still runs for it may stop.
    fn close(&self, session: &Arc<Self::Session>);
}
