//! Serving over a byte stream, one JSON-RPC message per line: stdin/stdout for a server
//! that a client started as its child, or any in-process stream (tests use
//! [`tokio::io::duplex`]).
//!
//! The reader (the caller of [`serve`]) frames lines with the codecs' [`LineFramer`], offers
//! each to the [`Service`]'s own reading ([`Service::receive_line`]), and reads the others
//! with [`read_line`], handing each message to the service; a line that is no message is answered with a
//! JSON-RPC error (-32700 or -32600, with its id when it was readable) and the stream goes
//! on. One writer task owns the output and takes whole messages from one bounded queue, so
//! lines from concurrent handlers never interleave and a client that stops reading stops
//! the handlers writing to it, not the server's memory. Logs go to stderr, never stdout.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Message};
use switchboard_codecs::lines::{read_line, Frame, LineFramer, RawLine, SkipKind, Skipped};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use super::{Inbound, Notifier, Outgoing, Responder, Service};

/// How a stdio server frames and queues.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The longest line read; longer ones are skipped unread and answered with -32600.
    pub max_line: usize,
    /// How many messages may wait for the writer before handlers wait too.
    pub queue: usize,
    /// How long, after the input closed, queued messages get to be written.
    pub drain: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_line: switchboard_codecs::lines::DEFAULT_MAX_LENGTH,
            queue: 1024,
            drain: Duration::from_millis(500),
        }
    }
}

/// How many queued lines the writer writes before it flushes.
const MAX_BATCH: usize = 64;

/// How many turns request tasks get, after the input closed, before the session closes.
const EOF_YIELDS: usize = 4;

/// Serves `service` over newline-delimited JSON until `reader` reaches EOF or the output
/// fails.
///
/// At EOF, requests that finish at once are still answered, and answers waiting for room
/// in the queue get [`Config::drain`] to enter it; then the session closes (which stops
/// what still runs) and queued messages get [`Config::drain`] to be written. Returns
/// an error if reading or writing fails. Dropping the returned future stops serving.
///
/// The reading runs on a task of its own, so that on a runtime of several workers it runs
/// on one of them even when this is awaited from `block_on` (as `#[tokio::main]`'s `main`
/// does): a request task spawned from a worker waits in that worker's queue, while one
/// spawned from outside the workers goes through the shared queue and wakes a worker each
/// time.
pub async fn serve<S, R, W>(service: Arc<S>, reader: R, writer: W, config: Config) -> io::Result<()>
where
    S: Service,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    struct AbortOnDrop(tokio::task::JoinHandle<io::Result<()>>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut reading = AbortOnDrop(tokio::spawn(read(service, reader, writer, config)));
    match (&mut reading.0).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(io::Error::other(e)),
    }
}

async fn read<S, R, W>(service: Arc<S>, reader: R, writer: W, config: Config) -> io::Result<()>
where
    S: Service,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, queue) = mpsc::channel(config.queue.max(1));
    let mut writer_task = tokio::spawn(write_lines(writer, queue));
    let session = service.open(Notifier::new(tx.clone()), false);
    let mut lines = FramedRead::new(reader, LineFramer::with_max_length(config.max_line));
    // Every request's answer goes to the one output queue.
    let responder = Responder::from_sender(tx.clone());
    let read_result = loop {
        tokio::select! {
            line = lines.next() => match line {
                Some(Ok(RawLine::Line(line))) => {
                    if !service.receive_line(&session, &line, &responder) {
                        for frame in read_line(&line) {
                            let inbound = match frame {
                                Frame::Message(Message::Request(request)) => Inbound::Request {
                                    request,
                                    responder: responder.clone(),
                                },
                                Frame::Message(Message::Notification(n)) => {
                                    Inbound::Notification(n)
                                }
                                Frame::Message(Message::Response(r)) => Inbound::Response(r),
                                Frame::Skipped(skipped) => {
                                    refuse(&tx, &skipped).await;
                                    continue;
                                }
                            };
                            service.receive(&session, inbound);
                        }
                    }
                    // Before reading on, let the writer send what was answered: a reader
                    // that read on while its client kept writing would hold every answer
                    // back until the client, its window full, stopped, and the two would
                    // take turns idling in lock-step batches.
                    if !lines.read_buffer().contains(&b'\n') {
                        take_turns().await;
                    }
                }
                Some(Ok(RawLine::TooLong(skipped))) => refuse(&tx, &skipped).await,
                Some(Err(e)) => break Err(e),
                None => break Ok(()),
            },
            // The writer only stops on its own when the output is gone: nobody can hear us.
            written = &mut writer_task => {
                service.close(&session);
                return flatten(written);
            }
        }
    };
    // A client that pipes its requests and closes at once should still get the quick
    // answers: let the request tasks already spawned take a turn before the session closes.
    for _ in 0..EOF_YIELDS {
        take_turns().await;
    }
    // An answer that waits for room in the queue is an answer already, not work to stop:
    // let the writer take every one (while the client reads, within the drain time) before
    // the close stops what still waits.
    let drained = std::time::Instant::now();
    while tx.capacity() < tx.max_capacity()
        && !writer_task.is_finished()
        && drained.elapsed() < config.drain
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    service.close(&session);
    drop(session);
    // The writer ends once every sender is gone: ours here, the stopped handlers' as they
    // drop.
    drop((tx, responder));
    match tokio::time::timeout(config.drain, &mut writer_task).await {
        Ok(written) => read_result.and(flatten(written)),
        Err(_) => {
            writer_task.abort();
            read_result
        }
    }
}

/// Lets the runtime's other tasks take a turn before the reader goes on.
///
/// The reader wakes itself and goes to the back of its worker's run queue, where another
/// worker may take it. Not tokio's `yield_now`: that keeps the reader aside until this worker
/// has nothing left to run, so a request's handler that blocks this worker (one that
/// computes before its first `.await`) would hold up reading every other request with it.
async fn take_turns() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

/// Serves `service` on this process's stdin and stdout.
///
/// When they are pipes (as when a client started this process), they are read and written
/// through the runtime's I/O driver; otherwise through tokio's `stdin()`
/// and `stdout()`, which hand every read and every write to a blocking-pool thread.
pub async fn serve_stdio<S: Service>(service: Arc<S>, config: Config) -> io::Result<()> {
    let (reader, writer) = std_streams();
    serve(service, reader, writer, config).await
}

type Input = Box<dyn AsyncRead + Unpin + Send>;
type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout as non-blocking pipes, each opened anew through `/proc/self/fd`.
///
/// A pipe must be non-blocking to be driven by the reactor, and `O_NONBLOCK` belongs to the
/// open file description, not to the descriptor: setting it on fd 0 or 1 (or on a `dup` of
/// them, which shares the description) would also make the pipe non-blocking for whoever
/// else holds that description, such as the processes of a shell pipeline that inherited it
/// with us or that run after us, and for anything in this process still using `std::io`
/// on fd 1, each of which would then see `EAGAIN` it does not expect. Opening
/// `/proc/self/fd/N` of a pipe on Linux creates a new description of the same pipe, whose
/// flags are our own; the original descriptors stay as they were. Anything else (a file, a
/// terminal, a socket, no `/proc`, another OS) falls back to tokio's `stdin()`/`stdout()`.
#[cfg(target_os = "linux")]
fn std_streams() -> (Input, Output) {
    use tokio::net::unix::pipe;
    let reader: Input = match pipe::OpenOptions::new().open_receiver("/proc/self/fd/0") {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let writer: Output = match pipe::OpenOptions::new().open_sender("/proc/self/fd/1") {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (reader, writer)
}

#[cfg(not(target_os = "linux"))]
fn std_streams() -> (Input, Output) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

fn flatten(joined: Result<io::Result<()>, tokio::task::JoinError>) -> io::Result<()> {
    joined.unwrap_or_else(|e| Err(io::Error::other(e)))
}

/// Answers a line that is no message, so that its sender hears why.
async fn refuse(tx: &mpsc::Sender<Outgoing>, skipped: &Skipped) {
    tracing::warn!(len = skipped.len, excerpt = %skipped.excerpt, "{}", skipped.reason());
    let code = match skipped.kind {
        SkipKind::NotJson | SkipKind::NotUtf8 => ErrorObject::PARSE_ERROR,
        _ => ErrorObject::INVALID_REQUEST,
    };
    let frame = error_frame(skipped.id.as_ref(), code, &skipped.reason());
    let _ = tx
        .send(Outgoing::Answer {
            frame,
            error: Some(code),
        })
        .await;
}

/// A JSON-RPC error response (`"id": null` when the id could not be read).
pub(crate) fn error_frame(id: Option<&Id>, code: i64, message: &str) -> Bytes {
    let error = ErrorObject::new(code, message);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

/// Writes queued messages, a line each, flushing after each batch, until every sender is
/// gone.
async fn write_lines<W: AsyncWrite + Unpin>(
    writer: W,
    mut queue: mpsc::Receiver<Outgoing>,
) -> io::Result<()> {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(first) = queue.recv().await {
        write_line(&mut writer, first).await?;
        for _ in 1..MAX_BATCH {
            let Ok(next) = queue.try_recv() else { break };
            write_line(&mut writer, next).await?;
        }
        writer.flush().await?;
    }
    // Tells an in-process peer that we are done; on stdout it is only a flush.
    writer.shutdown().await
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &mut W, outgoing: Outgoing) -> io::Result<()> {
    let frame = match outgoing {
        Outgoing::Message(frame) | Outgoing::Answer { frame, .. } => frame,
    };
    writer.write_all(&frame).await?;
    writer.write_all(b"\n").await
}
