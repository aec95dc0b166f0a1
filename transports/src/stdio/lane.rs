//! The child's stdin, shared by its writer task and the connection's senders: a sender
//! whose message is small, and finds nothing queued before it, writes the line itself.
//!
//! Handing a message to the writer task costs a wake-up of the thread the task runs on,
//! which a caller on another thread (the thread blocking on the runtime, where
//! `#[tokio::main]`'s future runs, or a thread of another runtime) pays on every request:
//! from there a sequential call cost about twice what it cost from a task on the worker.
//! A direct write is one non-blocking `write` on the caller's own thread.
//!
//! Only a lone message goes this way (no request of the connection is waiting for its
//! answer): during a burst the writer task gathers the frames into one write and one
//! wake-up of the server, which per-sender writes would lose.
//!
//! Order is kept: a sender writes only when nothing is queued to the writer task nor left
//! unwritten by it, under a lock it only *tries* (a sender never waits for it; it queues
//! instead), and a line shorter than `PIPE_BUF` goes into a pipe whole or not at all
//! (POSIX), so a line is never interleaved with another. A message that does not fit, or
//! that meets a full pipe, a held lock or a queue, goes through the writer task as before,
//! which batches bursts into one write.

use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::connection::{Direct, Outbound};
use crate::framed::{self, Outstanding};

/// The longest line a sender writes itself: the kernel writes a line up to `PIPE_BUF`
/// bytes into a pipe atomically.
const DIRECT_MAX: usize = libc::PIPE_BUF;

/// The child's stdin and what is on its way into it.
#[derive(Debug)]
pub(super) struct Lane {
    state: Mutex<State>,
    /// Messages in the writer task's queue that it has not taken into `State::pending`.
    queued: AtomicUsize,
    /// Wakes the writer task when a sender left bytes in `pending`.
    wake: Notify,
    outstanding: Outstanding,
}

#[derive(Debug)]
struct State {
    /// `None` once the writer task ended: stdin is closed.
    pipe: Option<Arc<pipe::Sender>>,
    /// Bytes taken for writing and not written yet, oldest first.
    pending: Vec<u8>,
}

impl Lane {
    /// The lane of `stdin`, whose requests `outstanding` counts.
    pub(super) fn new(stdin: pipe::Sender, outstanding: Outstanding) -> Arc<Lane> {
        Arc::new(Lane {
            state: Mutex::new(State {
                pipe: Some(Arc::new(stdin)),
                pending: Vec::new(),
            }),
            queued: AtomicUsize::new(0),
            wake: Notify::new(),
            outstanding,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent at every point a panic could leave it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves `batch` (just taken from the queue) into the bytes to write.
    fn take(&self, batch: &mut Vec<Outbound>) {
        let mut state = self.lock();
        for message in batch.iter() {
            state.pending.extend_from_slice(&message.payload);
            state.pending.push(b'\n');
            self.outstanding.sending(message);
        }
        self.queued.fetch_sub(batch.len(), Ordering::SeqCst);
        batch.clear();
    }

    /// Writes every pending byte, waiting for room in the pipe as needed.
    async fn write_pending(&self) -> io::Result<()> {
        loop {
            let pipe = {
                let mut state = self.lock();
                if state.pending.is_empty() {
                    return Ok(());
                }
                let Some(pipe) = state.pipe.clone() else {
                    return Err(io::ErrorKind::BrokenPipe.into());
                };
                while !state.pending.is_empty() {
                    match pipe.try_write(&state.pending) {
                        Ok(n) => {
                            state.pending.drain(..n);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                if state.pending.is_empty() {
                    return Ok(());
                }
                pipe
            };
            pipe.writable().await?;
        }
    }

    /// Closes stdin: no sender writes after this.
    fn close(&self) {
        self.lock().pipe = None;
    }
}

impl Direct for Lane {
    fn try_write(&self, message: Outbound) -> Result<(), Outbound> {
        let queue = |message| {
            // Counted before it is queued, so no sender writes past it meanwhile.
            self.queued.fetch_add(1, Ordering::SeqCst);
            Err(message)
        };
        let len = message.payload.len() + 1;
        // While requests are outstanding a burst may be under way, whose frames the writer
        // task gathers into one write (and one wake-up of the server): a lone message only.
        if len > DIRECT_MAX || self.outstanding.busy() || self.queued.load(Ordering::SeqCst) != 0 {
            return queue(message);
        }
        let Ok(mut state) = self.state.try_lock() else {
            return queue(message);
        };
        // Looked at again under the lock: what was queued before goes first.
        if !state.pending.is_empty() || self.queued.load(Ordering::SeqCst) != 0 {
            drop(state);
            return queue(message);
        }
        let Some(pipe) = &state.pipe else {
            drop(state);
            return queue(message);
        };
        let line = [IoSlice::new(&message.payload), IoSlice::new(b"\n")];
        // Counted first: the answer can be read on another thread before `write` returns.
        self.outstanding.sending(&message);
        match pipe.try_write_vectored(&line) {
            Ok(n) => {
                if n < len {
                    // Not for a line this short into a pipe; should it happen, the rest
                    // still goes next, before anything else.
                    let rest = message.payload.iter().chain(b"\n").skip(n);
                    state.pending.extend(rest);
                    drop(state);
                    self.wake.notify_one();
                }
                Ok(())
            }
            // A full pipe waits in the writer task; a broken one is its to report.
            Err(_) => {
                self.outstanding.unsent(&message);
                drop(state);
                queue(message)
            }
        }
    }
}

/// Closes the lane however the writer task ends (returned, or aborted with its process).
struct CloseOnDrop(Arc<Lane>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Writes the queued messages (and what senders left pending) into the pipe until every
/// sender is gone or `shutdown` fires; then writes what is already queued and closes stdin.
/// Returns the first write error.
pub(super) fn spawn_writer(
    lane: Arc<Lane>,
    mut outbound: mpsc::UnboundedReceiver<Outbound>,
    mut shutdown: oneshot::Receiver<()>,
) -> JoinHandle<io::Result<()>> {
    tokio::spawn(async move {
        let lane = CloseOnDrop(lane);
        let lane = &*lane.0;
        let mut batch = Vec::with_capacity(framed::WRITE_BATCH);
        loop {
            lane.write_pending().await?;
            let received = tokio::select! {
                biased;
                _ = &mut shutdown => {
                    // A graceful close still delivers what was sent before it.
                    while let Ok(message) = outbound.try_recv() {
                        batch.push(message);
                    }
                    lane.take(&mut batch);
                    return lane.write_pending().await;
                }
                () = lane.wake.notified() => continue,
                n = framed::next_batch(&mut outbound, &mut batch, &lane.outstanding) => n,
            };
            if received == 0 {
                return lane.write_pending().await;
            }
            lane.take(&mut batch);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Facts;
    use tokio::io::AsyncBufReadExt;

    fn message(text: &str) -> Outbound {
        Outbound {
            payload: bytes::Bytes::copy_from_slice(text.as_bytes()),
            facts: Facts::Response,
        }
    }

    /// A lane over a fresh pipe, once the runtime has seen it writable, and the pipe's
    /// other end.
    async fn lane() -> (Arc<Lane>, pipe::Receiver) {
        let (tx, rx) = pipe::pipe().expect("pipe");
        tx.writable().await.expect("writable");
        (Lane::new(tx, Outstanding::default()), rx)
    }

    #[tokio::test]
    async fn a_lone_small_message_is_written_by_its_sender() {
        let (lane, rx) = lane().await;
        assert!(lane.try_write(message("{\"a\":1}")).is_ok());
        let mut lines = tokio::io::BufReader::new(rx).lines();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "{\"a\":1}");
    }

    #[tokio::test]
    async fn a_message_behind_a_queued_one_or_too_long_is_queued() {
        let (lane, _rx) = lane().await;
        let first = message("1");
        lane.queued.fetch_add(1, Ordering::SeqCst);
        assert!(
            lane.try_write(first).is_err(),
            "something is queued before it"
        );
        assert_eq!(lane.queued.load(Ordering::SeqCst), 2);
        lane.queued.store(0, Ordering::SeqCst);
        let long = message(&"x".repeat(DIRECT_MAX));
        assert!(lane.try_write(long).is_err(), "longer than PIPE_BUF");
    }

    #[tokio::test]
    async fn while_a_request_waits_for_its_answer_messages_are_queued_for_the_batch() {
        let (lane, _rx) = lane().await;
        let request = Outbound {
            payload: bytes::Bytes::from_static(b"{}"),
            facts: Facts::Request(crate::connection::RequestFacts {
                id: switchboard_codecs::jsonrpc::Id::Number(1),
                method: "tools/call".into(),
                stateless: None,
            }),
        };
        assert!(lane.try_write(request).is_ok(), "a lone request");
        assert!(
            lane.try_write(message("2")).is_err(),
            "behind an unanswered one"
        );
        lane.outstanding.answered();
        lane.queued.store(0, Ordering::SeqCst);
        assert!(lane.try_write(message("3")).is_ok());
    }

    #[tokio::test]
    async fn a_shutdown_writes_what_was_queued_then_closes_stdin() {
        let (lane, rx) = lane().await;
        let (tx, outbound) = mpsc::unbounded_channel();
        let (shutdown_tx, shutdown) = oneshot::channel();
        for text in ["1", "2", "3"] {
            lane.queued.fetch_add(1, Ordering::SeqCst);
            tx.send(message(text)).unwrap();
        }
        drop(shutdown_tx);
        spawn_writer(lane.clone(), outbound, shutdown)
            .await
            .unwrap()
            .expect("written");
        let mut lines = tokio::io::BufReader::new(rx).lines();
        for text in ["1", "2", "3"] {
            assert_eq!(lines.next_line().await.unwrap().unwrap(), text);
        }
        assert!(lines.next_line().await.unwrap().is_none(), "EOF");
        assert_eq!(lane.queued.load(Ordering::SeqCst), 0);
        assert!(lane.try_write(message("4")).is_err(), "closed: queued");
    }

    #[tokio::test]
    async fn a_held_lock_or_pending_bytes_queue_the_message() {
        let (lane, _rx) = lane().await;
        let held = lane.lock();
        assert!(lane.try_write(message("1")).is_err());
        drop(held);
        lane.lock().pending.extend_from_slice(b"left\n");
        lane.queued.store(0, Ordering::SeqCst);
        assert!(lane.try_write(message("2")).is_err());
    }

    #[tokio::test]
    async fn a_full_pipe_queues_and_the_writer_keeps_the_order() {
        let (lane, rx) = lane().await;
        let (tx, outbound) = mpsc::unbounded_channel();
        let (_shutdown_tx, shutdown) = oneshot::channel();
        let writer = spawn_writer(lane.clone(), outbound, shutdown);
        // Fill the pipe: the reader reads nothing yet.
        let filler = "f".repeat(1000);
        let mut sent = Vec::new();
        for i in 0..200 {
            let text = format!("{i} {filler}");
            let m = message(&text);
            if let Err(m) = lane.try_write(m) {
                tx.send(m).unwrap();
            }
            sent.push(text);
        }
        let mut lines = tokio::io::BufReader::new(rx).lines();
        for text in &sent {
            assert_eq!(&lines.next_line().await.unwrap().unwrap(), text);
        }
        // Every sender gone: the writer ends and closes stdin.
        drop(tx);
        writer.await.unwrap().expect("written");
        assert!(lines.next_line().await.unwrap().is_none(), "EOF");
    }

    /// A request is counted before the server can read it: counted after, an answer read
    /// on another thread first found the count at zero, and the count then stayed one too
    /// high, which turned the direct write off for the connection's life (seen as calls
    /// twice as slow after a burst of calls from the `block_on` thread).
    #[tokio::test]
    async fn a_request_is_counted_before_the_server_can_read_it() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let (lane, rx) = lane().await;
        let file = std::fs::File::from(rx.into_blocking_fd().expect("fd"));
        // Non-blocking, read in a spin: the reader sees a line as soon as it is in the pipe.
        unsafe {
            let fd = file.as_raw_fd();
            libc::fcntl(
                fd,
                libc::F_SETFL,
                libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
            );
        }
        const CALLS: usize = 20_000;
        let (read_tx, read_rx) = std::sync::mpsc::channel::<bool>();
        let outstanding = lane.outstanding.clone();
        let reader = std::thread::spawn(move || {
            let mut file = file;
            let mut buf = [0u8; 256];
            let mut lines = 0;
            while lines < CALLS {
                let n = match file.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => panic!("read: {e}"),
                };
                for _ in buf[..n].iter().filter(|&&b| b == b'\n') {
                    let counted = outstanding.busy();
                    outstanding.answered();
                    lines += 1;
                    read_tx.send(counted).expect("send");
                }
            }
        });
        let mut uncounted = 0;
        for i in 0..CALLS {
            let request = Outbound {
                payload: bytes::Bytes::from(format!("{{\"id\":{i}}}")),
                facts: Facts::Request(crate::connection::RequestFacts {
                    id: switchboard_codecs::jsonrpc::Id::Number(i as i64),
                    method: "tools/call".into(),
                    stateless: None,
                }),
            };
            assert!(
                lane.try_write(request).is_ok(),
                "nothing outstanding: direct"
            );
            if !read_rx.recv().expect("read") {
                uncounted += 1;
            }
            // The answer was read: nothing is outstanding, whatever the order was.
            assert!(!lane.outstanding.busy(), "call {i}: the count stayed high");
        }
        reader.join().expect("reader");
        assert_eq!(uncounted, 0, "requests readable before they were counted");
    }
}
