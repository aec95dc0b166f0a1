//! The least an async MCP client on tokio does per call, as the floor Switchboard's own cost
//! is measured against: a task per caller, a writer task that writes the queued frames in
//! batches (one flush per batch), a reader task that parses each answer's envelope and hands
//! the raw result to its caller through a `oneshot`, a mutex-guarded map of waiters, and the
//! caller's parse of the result into a typed value.
//!
//! It has nothing a production client must add: no deadline, no cancellation, no in-flight
//! limit, no metrics, no liveness, no check of what the server sends beyond the id. So the
//! difference between it and Switchboard is Switchboard's own cost, and its CPU per call is
//! what a tokio task per caller costs on this machine whatever the client does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, LinesCodec};

/// Most frames written between two flushes.
const BATCH: usize = 64;

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Box<RawValue>>>>>;

/// The client: a child server and the two tasks on its pipes.
#[derive(Debug)]
pub(crate) struct TokioFloor {
    /// Held only to be killed with the client (`kill_on_drop`).
    _child: Child,
    frames: mpsc::UnboundedSender<Bytes>,
    waiters: Waiters,
    next_id: AtomicU64,
}

#[derive(Serialize)]
struct Request<P> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: P,
}

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'static str,
    arguments: &'a serde_json::Value,
    #[serde(rename = "_meta")]
    meta: Meta,
}

#[derive(Serialize)]
struct Meta {
    #[serde(rename = "progressToken")]
    progress_token: u64,
}

#[derive(Deserialize)]
struct Answer {
    id: u64,
    result: Box<RawValue>,
}

/// The typed result the caller gets, as `CallToolResult` is for Switchboard's.
#[derive(Deserialize)]
struct CallResult {
    content: Vec<Block>,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

impl TokioFloor {
    /// Starts the server `command` names on the current runtime and does the handshake.
    pub(crate) async fn spawn(command: std::process::Command) -> Arc<TokioFloor> {
        let mut command = Command::from(command);
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (frames, queued) = mpsc::unbounded_channel();
        tokio::spawn(write_frames(BufWriter::new(stdin), queued));
        let waiters = Waiters::default();
        let read_waiters = waiters.clone();
        tokio::spawn(async move {
            let mut lines = FramedRead::new(stdout, LinesCodec::new());
            while let Some(Ok(line)) = lines.next().await {
                let Ok(answer) = serde_json::from_str::<Answer>(&line) else {
                    continue;
                };
                let waiter = read_waiters.lock().expect("waiters").remove(&answer.id);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(answer.result);
                }
            }
        });
        let client = Arc::new(TokioFloor {
            _child: child,
            frames,
            waiters,
            next_id: AtomicU64::new(1),
        });
        let params = serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "tokio-floor-bench", "version": "0.1.0"},
        });
        let result = client
            .request(client.next_id(), "initialize", &params)
            .await;
        assert!(result.get().contains("\"protocolVersion\""), "{result}");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        client
            .frames
            .send(Bytes::from_static(initialized.as_bytes()))
            .expect("the writer runs");
        client
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn request<P: Serialize>(
        &self,
        id: u64,
        method: &'static str,
        params: P,
    ) -> Box<RawValue> {
        let frame = serde_json::to_vec(&Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
        .expect("a frame");
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().expect("waiters").insert(id, tx);
        self.frames
            .send(Bytes::from(frame))
            .expect("the writer runs");
        rx.await.expect("an answer")
    }

    /// One `tools/call echo` with the arguments every client sends, and its typed result.
    pub(crate) async fn call(self: Arc<Self>) {
        let arguments = super::echo_args();
        // The progress token is the request id, as Switchboard's.
        let id = self.next_id();
        let params = CallParams {
            name: "echo",
            arguments: &arguments,
            meta: Meta { progress_token: id },
        };
        let result = self.request(id, "tools/call", params).await;
        let result: CallResult = serde_json::from_str(result.get()).expect("a tool result");
        assert!(!result.is_error && result.content.len() == 1);
        debug_assert!(result.content[0].kind == "text" && result.content[0].text.is_some());
    }
}

async fn write_frames(
    mut stdin: BufWriter<ChildStdin>,
    mut queued: mpsc::UnboundedReceiver<Bytes>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while queued.recv_many(&mut batch, BATCH).await > 0 {
        for frame in batch.drain(..) {
            if stdin.write_all(&frame).await.is_err() || stdin.write_all(b"\n").await.is_err() {
                return;
            }
        }
        if stdin.flush().await.is_err() {
            return;
        }
    }
}
