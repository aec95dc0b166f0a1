//! An in-process duplex connection: the server runs in the same process, on the other end of
//! an in-memory byte pipe.
//!
//! The connection speaks newline-delimited JSON exactly as stdio does, so an embedded server
//! (and every test or benchmark that uses one) exercises the same framing. The caller runs
//! the server on the returned [`DuplexStream`], usually split with [`tokio::io::split`].
//!
//! ```
//! use switchboard_transports::{memory, Event, Outbound};
//! use switchboard_codecs::jsonrpc::Message;
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (mut conn, server) = memory::connect("echo");
//! tokio::spawn(async move {
//!     // A trivial server: every line comes back unchanged.
//!     let (read, mut write) = tokio::io::split(server);
//!     let mut lines = BufReader::new(read).lines();
//!     while let Ok(Some(line)) = lines.next_line().await {
//!         write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
//!     }
//! });
//! let ping = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! conn.sender.send(Outbound::from_message(&ping)).unwrap();
//! assert!(matches!(conn.events.recv().await, Some(Event::Message(_))));
//! conn.control.close().await;
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use switchboard_codecs::lines::LinesCodec;
use tokio::io::DuplexStream;
use tokio::sync::{mpsc, oneshot};

use crate::connection::{
    BoxFuture, CloseCause, CloseReason, Connection, Control, Event, KillHandle, Sender,
};
use crate::framed::{self, ReadEnd};

/// How long [`Control::close`] waits for the server to close its end.
const CLOSE_BOUND: Duration = Duration::from_secs(1);

/// How long a failed write waits for the reader to see the end of the stream (a write
/// fails when the server dropped its end, which is an EOF, not a write problem).
const WRITE_FAILURE_GRACE: Duration = Duration::from_millis(100);

/// Settings of an in-memory connection.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The longest inbound line accepted; longer ones are skipped.
    pub max_frame_length: usize,
    /// The capacity of the in-memory pipe in each direction, in bytes.
    pub buffer_size: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_frame_length: 16 * 1024 * 1024,
            buffer_size: 64 * 1024,
        }
    }
}

impl Config {
    /// The defaults: 16 MiB frames, a 64 KiB pipe.
    pub fn new() -> Self {
        Config::default()
    }

    /// Sets the longest inbound line accepted.
    pub fn max_frame_length(mut self, max: usize) -> Self {
        self.max_frame_length = max;
        self
    }

    /// Sets the pipe capacity in bytes (at least 1).
    pub fn buffer_size(mut self, size: usize) -> Self {
        self.buffer_size = size.max(1);
        self
    }
}

/// Opens an in-memory connection with the default [`Config`] and returns it with the
/// server's end of the pipe.
///
/// `name` names the server in log fields. The events end with one [`Event::Closed`]:
/// [`CloseCause::Eof`] when the server's end is dropped (or shut down for writing),
/// [`CloseCause::Closed`] after [`Control::close`].
///
/// # Panics
///
/// Must be called within a tokio runtime: it spawns the connection's tasks.
pub fn connect(name: &str) -> (Connection, DuplexStream) {
    connect_with(name, &Config::default())
}

/// Opens an in-memory connection with `config`; see [`connect`].
///
/// # Panics
///
/// Must be called within a tokio runtime.
pub fn connect_with(name: &str, config: &Config) -> (Connection, DuplexStream) {
    let server: Arc<str> = name.into();
    let (client, server_end) = tokio::io::duplex(config.buffer_size.max(1));
    let (read, write) = tokio::io::split(client);

    let (events_tx, events_rx) = mpsc::channel(framed::EVENTS_CAPACITY);
    let (outbound_tx, outbound_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let (close_tx, close_rx) = oneshot::channel();

    let codec = LinesCodec::with_max_length(config.max_frame_length);
    let inline = crate::connection::Inline::default();
    let framed::Tasks { reader, writer } = framed::spawn_tasks(
        server.clone(),
        (read, write),
        codec,
        (inline.clone(), events_tx.clone()),
        outbound_rx,
        stop_rx,
        shutdown_rx,
    );
    tokio::spawn(supervise(Tasks {
        reader,
        writer,
        stop: stop_tx,
        shutdown: shutdown_tx,
        close: close_rx,
        events: events_tx,
    }));

    let connection = Connection {
        sender: Sender::new(outbound_tx),
        events: events_rx,
        inline,
        control: Box::new(MemoryControl {
            server,
            close: Some(close_tx),
        }),
    };
    (connection, server_end)
}

struct Tasks {
    reader: tokio::task::JoinHandle<ReadEnd>,
    writer: tokio::task::JoinHandle<std::io::Result<()>>,
    stop: oneshot::Sender<()>,
    shutdown: oneshot::Sender<()>,
    close: oneshot::Receiver<oneshot::Sender<()>>,
    events: mpsc::Sender<Event>,
}

/// Waits for the end of the connection, then sends the one `Closed` event.
async fn supervise(tasks: Tasks) {
    let Tasks {
        mut reader,
        mut writer,
        stop,
        shutdown,
        mut close,
        events,
    } = tasks;
    let mut shutdown = Some(shutdown);
    let mut writer_done = false;
    let mut control_alive = true;
    let mut read_end = None;

    let cause = loop {
        tokio::select! {
            end = &mut reader => {
                read_end = Some(end);
                break eof_cause(read_end.as_ref());
            }
            written = &mut writer, if !writer_done => {
                writer_done = true;
                if let Ok(Err(e)) = written {
                    match tokio::time::timeout(WRITE_FAILURE_GRACE, &mut reader).await {
                        Ok(end) => {
                            read_end = Some(end);
                            break eof_cause(read_end.as_ref());
                        }
                        Err(_) => break CloseCause::WriteFailed(e.to_string()),
                    }
                }
            }
            request = &mut close, if control_alive => {
                control_alive = false;
                // Shutting our write side down is how the server learns we are done.
                drop(shutdown.take());
                if let Ok(done) = request {
                    if let Ok(end) = tokio::time::timeout(CLOSE_BOUND, &mut reader).await {
                        read_end = Some(end);
                    }
                    let _ = done.send(());
                    break CloseCause::Closed;
                }
                // The control was dropped without close: the server still sees our EOF and
                // the connection ends when it closes its end.
            }
        }
    };

    drop(shutdown);
    drop(close);
    if read_end.is_none() {
        // Frames already in the pipe are delivered before the reader stops.
        let _ = stop.send(());
        let _ = reader.await;
    }
    if !writer_done {
        writer.abort();
    }
    let _ = events
        .send(Event::Closed(CloseReason {
            cause,
            stderr_tail: Vec::new(),
        }))
        .await;
}

fn eof_cause(end: Option<&Result<ReadEnd, tokio::task::JoinError>>) -> CloseCause {
    match end {
        Some(Ok(ReadEnd::Failed(e))) => CloseCause::ReadFailed(e.to_string()),
        Some(Err(e)) => CloseCause::ReadFailed(e.to_string()),
        _ => CloseCause::Eof,
    }
}

/// The control of an in-memory connection.
#[derive(Debug)]
struct MemoryControl {
    server: Arc<str>,
    close: Option<crate::framed::CloseRequest>,
}

impl Control for MemoryControl {
    fn set_protocol_version(&mut self, _version: &str) {}

    fn close(mut self: Box<Self>) -> BoxFuture<()> {
        crate::framed::request_close(
            self.close.take(),
            self.server.clone(),
            "in-memory connection",
        )
    }

    fn kill_handle(&self) -> Option<KillHandle> {
        None
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn kind(&self) -> crate::connection::Kind {
        crate::connection::Kind::Memory
    }
}
