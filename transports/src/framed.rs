//! Shared plumbing for byte-stream transports: a reader task that turns newline-delimited
//! JSON into [`Event`]s and a writer task that batches [`Outbound`] messages into lines.
//!
//! Memory runs one of each per connection; stdio runs the reader and a writer of its own
//! that senders may write past (`stdio::lane`), with the same batching ([`next_batch`]). Neither task sends
//! [`Event::Closed`]: the transport's own task does, after the reader has finished, so the
//! close event always comes after the last message.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::StreamExt;
use switchboard_codecs::jsonrpc::Message;
use switchboard_codecs::lines::{Frame, LinesCodec};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

use crate::connection::{Event, Facts, Inline, Outbound};

/// Capacity of a connection's event queue. A consumer that falls behind stops the reader,
/// and the pipe then stops the server: backpressure instead of memory.
pub(crate) const EVENTS_CAPACITY: usize = 256;

/// Most messages written between two flushes.
pub(crate) const WRITE_BATCH: usize = 64;

/// Longest excerpt of a skipped frame that goes into a log line.
const LOG_EXCERPT: usize = 120;

/// Requests written and not yet answered, as the writer and the reader of one connection
/// count them: the writer's hint that a burst of calls is under way.
///
/// A cancellation counts as the answer to its request, which the server need not send; an
/// answer that still comes finds the count at zero at worst. The count is a hint: off by
/// one, it makes the writer yield once when it need not (or a lone write go out alone),
/// never loses or reorders a frame.
///
/// A request is counted *before* its bytes can reach the server: counted after, its answer
/// may be read first (the reader runs on another thread), find the count at zero, and the
/// late count then stays one too high for the connection's life, which turns the direct
/// write off and makes the writer yield on every message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outstanding(Arc<AtomicUsize>);

impl Outstanding {
    /// `message` is about to be written.
    pub(crate) fn sending(&self, message: &Outbound) {
        match message.facts {
            Facts::Request(_) => {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
            Facts::Cancel { .. } => self.answered(),
            _ => {}
        }
    }

    /// `message`, counted by [`Outstanding::sending`], was not written after all.
    #[cfg(all(unix, feature = "stdio"))]
    pub(crate) fn unsent(&self, message: &Outbound) {
        match message.facts {
            Facts::Request(_) => self.answered(),
            Facts::Cancel { .. } => {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    pub(crate) fn answered(&self) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Whether earlier requests still wait for their answers.
    pub(crate) fn busy(&self) -> bool {
        self.0.load(Ordering::Relaxed) > 0
    }
}

/// How the reader task ended.
#[derive(Debug)]
pub(crate) enum ReadEnd {
    /// The peer closed its output.
    Eof,
    /// Told to stop while no data was waiting.
    Stopped,
    /// Reading failed.
    Failed(io::Error),
}

/// The two tasks of one byte-stream connection.
pub(crate) struct Tasks {
    /// Reads frames into the connection's events.
    pub(crate) reader: JoinHandle<ReadEnd>,
    /// Writes queued messages; returns the first write error.
    pub(crate) writer: JoinHandle<io::Result<()>>,
}

/// Starts the reader (see [`spawn_reader`]) and the writer (see [`spawn_writer`]) of one
/// connection, which share the count of unanswered requests that batches the writes.
pub(crate) fn spawn_tasks<R, W>(
    server: Arc<str>,
    (read, write): (R, W),
    codec: LinesCodec,
    (inline, events): (Inline, mpsc::Sender<Event>),
    outbound: mpsc::UnboundedReceiver<Outbound>,
    stop: oneshot::Receiver<()>,
    shutdown: oneshot::Receiver<()>,
) -> Tasks
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let outstanding = Outstanding::default();
    Tasks {
        reader: spawn_reader(
            server.clone(),
            inline,
            read,
            codec,
            events,
            stop,
            outstanding.clone(),
        ),
        writer: spawn_writer(server, write, outbound, shutdown, outstanding),
    }
}

/// Reads frames from `reader` until EOF, an error, or `stop`, hands each event to `inline`
/// (once the connection's consumer set it) and queues what it hands back into `events`.
///
/// `stop` only wins while a read is pending: whatever the peer already wrote is delivered
/// first, so an answer written just before an exit still arrives. Sending waits for room in
/// `events` (backpressure); once the receiver is gone, frames are read and dropped so the
/// peer never blocks on a full pipe.
pub(crate) fn spawn_reader<R>(
    server: Arc<str>,
    inline: Inline,
    reader: R,
    codec: LinesCodec,
    events: mpsc::Sender<Event>,
    mut stop: oneshot::Receiver<()>,
    outstanding: Outstanding,
) -> JoinHandle<ReadEnd>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    tokio::spawn(async move {
        let mut frames = FramedRead::new(reader, codec);
        let mut receiver_alive = true;
        loop {
            let next = tokio::select! {
                biased;
                next = frames.next() => next,
                _ = &mut stop => return ReadEnd::Stopped,
            };
            let event = match next {
                None => return ReadEnd::Eof,
                Some(Err(e)) => {
                    tracing::debug!(server = %server, error = %e, "reading from the server failed");
                    return ReadEnd::Failed(e);
                }
                Some(Ok(Frame::Message(message))) => {
                    if matches!(message, Message::Response(_)) {
                        outstanding.answered();
                    }
                    Event::Message(message)
                }
                Some(Ok(Frame::Skipped(skipped))) => {
                    tracing::warn!(
                        server = %server,
                        kind = skipped.kind.as_str(),
                        len = skipped.len,
                        excerpt = %short(&skipped.excerpt),
                        "skipped an inbound frame",
                    );
                    Event::Skipped(skipped)
                }
            };
            let Some(event) = inline.handle(event) else {
                continue;
            };
            if receiver_alive && events.send(event).await.is_err() {
                receiver_alive = false;
            }
        }
    })
}

/// Writes each queued message as one line, flushing once per batch.
///
/// The task ends when every [`Sender`](crate::Sender) is gone or `shutdown` fires (or its
/// sender is dropped); it then writes what is already queued, flushes and shuts `writer`
/// down, which closes a child's stdin. It returns the first write error.
fn spawn_writer<W>(
    server: Arc<str>,
    writer: W,
    mut outbound: mpsc::UnboundedReceiver<Outbound>,
    mut shutdown: oneshot::Receiver<()>,
    outstanding: Outstanding,
) -> JoinHandle<io::Result<()>>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    tokio::spawn(async move {
        let mut writer = BufWriter::new(writer);
        let result = write_all(&mut writer, &mut outbound, &mut shutdown, &outstanding).await;
        let result = match result {
            Ok(()) => match writer.flush().await {
                Ok(()) => writer.shutdown().await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            tracing::debug!(server = %server, error = %e, "writing to the server failed");
        }
        result
    })
}

async fn write_all<W>(
    writer: &mut BufWriter<W>,
    outbound: &mut mpsc::UnboundedReceiver<Outbound>,
    shutdown: &mut oneshot::Receiver<()>,
    outstanding: &Outstanding,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    loop {
        let received = tokio::select! {
            biased;
            _ = &mut *shutdown => {
                // A graceful close still delivers what was sent before it (some of it may
                // be in `batch` already, taken by a `next_batch` that was still gathering).
                while let Ok(message) = outbound.try_recv() {
                    batch.push(message);
                }
                for message in batch.drain(..) {
                    write_line(writer, &message).await?;
                }
                return Ok(());
            }
            n = next_batch(outbound, &mut batch, outstanding) => n,
        };
        if received == 0 {
            return Ok(());
        }
        for message in batch.drain(..) {
            // A full buffer writes through: the answer may come before this loop ends.
            outstanding.sending(&message);
            write_line(writer, &message).await?;
        }
        writer.flush().await?;
    }
}

/// Waits for the next messages to write and takes them into `batch` (at most
/// [`WRITE_BATCH`]); 0 once every sender is gone.
pub(crate) async fn next_batch(
    outbound: &mut mpsc::UnboundedReceiver<Outbound>,
    batch: &mut Vec<Outbound>,
    outstanding: &Outstanding,
) -> usize {
    let received = outbound.recv_many(batch, WRITE_BATCH).await;
    if received > 0 && received < WRITE_BATCH && outstanding.busy() {
        // tokio runs a woken task right after the one that woke it, so under a burst of
        // calls the writer would wake once per caller and make one write (and wake the
        // server once) per request. Yielding lets the callers that are ready now queue
        // their frames, and the burst goes out in one write. Not when nothing else is
        // outstanding: a lone call goes out at once (a yield would wake an idle worker).
        tokio::task::yield_now().await;
        while batch.len() < WRITE_BATCH {
            match outbound.try_recv() {
                Ok(message) => batch.push(message),
                Err(_) => break,
            }
        }
    }
    batch.len()
}

async fn write_line<W>(writer: &mut BufWriter<W>, message: &Outbound) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    writer.write_all(&message.payload).await?;
    writer.write_all(b"\n").await
}

/// The first characters of `text`, cut at a character boundary.
fn short(text: &str) -> &str {
    match text.char_indices().nth(LOG_EXCERPT) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// How a control asks its connection's task to close: the task answers on the inner sender
/// once nothing of the connection is left.
pub(crate) type CloseRequest = oneshot::Sender<oneshot::Sender<()>>;

/// Starts a close and returns a future that resolves when it is done. The request goes out
/// before the future is polled, so dropping the future does not stop the close.
pub(crate) fn request_close(
    close: Option<CloseRequest>,
    server: Arc<str>,
    what: &'static str,
) -> crate::connection::BoxFuture<()> {
    let (done_tx, done_rx) = oneshot::channel();
    let requested = close.is_some_and(|close| close.send(done_tx).is_ok());
    Box::pin(async move {
        if requested {
            // An error only means the connection had already ended.
            let _ = done_rx.await;
        }
        tracing::debug!(server = %server, "{what} closed");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_cuts_at_a_char_boundary() {
        let text = "é".repeat(LOG_EXCERPT + 5);
        assert_eq!(short(&text).chars().count(), LOG_EXCERPT);
        assert_eq!(short("abc"), "abc");
    }
}
