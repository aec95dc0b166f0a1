//! Draining a child's stderr: every line goes to `tracing` and into a small ring buffer of
//! the latest lines, which a [`CloseReason`](crate::CloseReason) carries as its tail.
//!
//! The reader's buffer is fixed and each line is capped, so a server that floods stderr,
//! with or without newlines, costs neither memory nor a blocked pipe.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::task::JoinHandle;

/// The target of every stderr log line, so a subscriber can route server output apart.
pub(super) const TARGET: &str = "switchboard::stderr";

/// The longest stderr line kept; the rest of a longer line is dropped.
const MAX_LINE: usize = 4 * 1024;

/// Read buffer size.
const READ_BUFFER: usize = 8 * 1024;

/// The last lines a server wrote to stderr, oldest first.
///
/// A mutex is enough: one writer, and readers only when a connection ends.
#[derive(Debug, Clone)]
pub(super) struct Ring {
    lines: Arc<Mutex<VecDeque<String>>>,
    capacity: usize,
}

impl Ring {
    pub(super) fn new(capacity: usize) -> Self {
        Ring {
            lines: Arc::new(Mutex::new(VecDeque::with_capacity(capacity))),
            capacity,
        }
    }

    fn push(&self, line: String) {
        if self.capacity == 0 {
            return;
        }
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        while lines.len() >= self.capacity {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// A copy of the lines, oldest first.
    pub(super) fn snapshot(&self) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect()
    }
}

/// Reads `stderr` line by line until EOF or an error.
pub(super) fn spawn_drain<R>(server: Arc<str>, stderr: R, ring: Ring) -> JoinHandle<()>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    tokio::spawn(async move {
        let mut reader = BufReader::with_capacity(READ_BUFFER, stderr);
        let mut line = Vec::with_capacity(256);
        let mut truncated = false;
        loop {
            let available = match reader.fill_buf().await {
                Ok(available) => available,
                Err(e) => {
                    tracing::debug!(server = %server, error = %e, "reading stderr failed");
                    break;
                }
            };
            if available.is_empty() {
                break;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let (chunk, consumed) = match newline {
                Some(at) => (&available[..at], at + 1),
                None => (available, available.len()),
            };
            let room = MAX_LINE - line.len();
            if chunk.len() > room {
                line.extend_from_slice(&chunk[..room]);
                truncated = true;
            } else {
                line.extend_from_slice(chunk);
            }
            reader.consume(consumed);
            if newline.is_some() {
                emit(&server, &ring, &line, truncated);
                line.clear();
                truncated = false;
            }
        }
        if !line.is_empty() {
            emit(&server, &ring, &line, truncated);
        }
    })
}

fn emit(server: &str, ring: &Ring, line: &[u8], truncated: bool) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut text = String::from_utf8_lossy(line).into_owned();
    if truncated {
        text.push('…');
    }
    tracing::info!(target: TARGET, server = %server, "{text}");
    ring.push(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_lines_and_caps_long_ones() {
        let ring = Ring::new(2);
        let long = "y".repeat(MAX_LINE * 3);
        let input = format!("one\r\ntwo\n{long}\nlast without newline");
        spawn_drain(
            "t".into(),
            std::io::Cursor::new(input.into_bytes()),
            ring.clone(),
        )
        .await
        .unwrap();
        let tail = ring.snapshot();
        assert_eq!(tail.len(), 2);
        assert_eq!(tail[0].chars().filter(|&c| c == 'y').count(), MAX_LINE);
        assert!(tail[0].ends_with('…'));
        assert_eq!(tail[1], "last without newline");
    }

    #[tokio::test]
    async fn zero_capacity_keeps_nothing() {
        let ring = Ring::new(0);
        spawn_drain("t".into(), &b"a\nb\n"[..], ring.clone())
            .await
            .unwrap();
        assert!(ring.snapshot().is_empty());
    }
}
