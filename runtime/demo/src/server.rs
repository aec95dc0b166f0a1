//! The demo server's MCP loop: reads JSON-RPC lines, answers each request in its own task.
//!
//! Three kinds of task cooperate. The reader (the caller of [`serve`]) parses lines and
//! dispatches them. Every request gets its own task, so a slow `sleep` never holds back a fast
//! `echo` and answers come back in whatever order they finish; `notifications/cancelled`
//! aborts that task. One writer task owns the output and takes whole lines from a channel, so
//! lines from concurrent handlers never interleave.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Message, Notification, Outcome, Request};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::{completion, logging, prompts, resources, tools, Options, SUPPORTED_VERSIONS};

/// Lines longer than this are skipped unread, so that a runaway client cannot exhaust memory.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// How many queued lines the writer writes before it flushes.
const MAX_BATCH: usize = 64;

/// How many turns request tasks get, after the input closed, before they are abandoned.
const EOF_YIELDS: usize = 4;

/// How long [`serve`] waits, after its input closed, for already-queued lines to be written.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// How many of the latest `tools/call` requests the `calls` fault tool remembers.
const MAX_RECORDED_CALLS: usize = 1000;

/// Serves MCP over newline-delimited JSON until `reader` reaches EOF.
///
/// At EOF, requests that finish at once (everything but `sleep`, `hang` and `ping_client`)
/// are still answered; slower ones are abandoned, and queued lines get a brief moment to be
/// written. Returns an error if reading or writing fails.
pub async fn serve<R, W>(reader: R, writer: W, options: Options) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (lines, queue) = mpsc::unbounded_channel();
    let mut writer_task = tokio::spawn(write_lines(writer, queue));
    let session = Arc::new(Session::new(options, lines));
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let read_result = loop {
        tokio::select! {
            read = read_line(&mut reader, &mut line) => match read {
                Ok(Line::Complete) => session.dispatch(&line),
                Ok(Line::TooLong(len)) => log(format_args!("skipping a {len}-byte line (limit {MAX_LINE})")),
                Ok(Line::Eof) => break Ok(()),
                Err(e) => break Err(e),
            },
            // The writer only stops on its own when the output is gone: nobody can hear us.
            written = &mut writer_task => {
                session.abort_all();
                return flatten(written);
            }
        }
    };
    // A client that pipes its requests and closes at once should still get the quick answers:
    // let the request tasks already spawned take a turn before the slow ones are abandoned.
    for _ in 0..EOF_YIELDS {
        tokio::task::yield_now().await;
    }
    session.abort_all();
    // The writer ends once every sender is gone: ours here, the aborted handlers' as they drop.
    drop(session);
    match tokio::time::timeout(DRAIN_TIMEOUT, &mut writer_task).await {
        Ok(written) => read_result.and(flatten(written)),
        Err(_) => {
            writer_task.abort();
            read_result
        }
    }
}

fn flatten(joined: Result<io::Result<()>, tokio::task::JoinError>) -> io::Result<()> {
    joined.unwrap_or_else(|e| Err(io::Error::other(e)))
}

/// Logs to stderr, the demo server's only log channel (stdout is reserved for MCP).
pub(super) fn log(args: std::fmt::Arguments<'_>) {
    eprintln!("switchboard-demo: {args}");
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves its data consistent.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

enum Line {
    Complete,
    TooLong(usize),
    Eof,
}

/// Reads one line into `line` (without its `\n` or `\r\n`), skipping lines over [`MAX_LINE`].
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> io::Result<Line> {
    line.clear();
    let mut skipped = 0usize;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            // A last line without a newline still counts.
            return Ok(match (skipped, line.is_empty()) {
                (0, true) => Line::Eof,
                (0, false) => Line::Complete,
                (n, _) => Line::TooLong(n),
            });
        }
        let (chunk, used, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        if skipped == 0 && line.len() + chunk.len() <= MAX_LINE {
            line.extend_from_slice(chunk);
        } else {
            skipped += line.len() + chunk.len();
            line.clear();
        }
        reader.consume(used);
        if done {
            if skipped > 0 {
                return Ok(Line::TooLong(skipped));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Line::Complete);
        }
    }
}

/// Writes queued lines, flushing after each batch, until every sender is gone.
async fn write_lines<W: AsyncWrite + Unpin>(
    writer: W,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
) -> io::Result<()> {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(line) = queue.recv().await {
        writer.write_all(&line).await?;
        writer.write_all(b"\n").await?;
        for _ in 1..MAX_BATCH {
            let Ok(line) = queue.try_recv() else { break };
            writer.write_all(&line).await?;
            writer.write_all(b"\n").await?;
        }
        writer.flush().await?;
    }
    // Tells an in-process peer that we are done; on stdout it is only a flush.
    writer.shutdown().await
}

/// What a request handler wants written in reply.
pub(super) enum Reply {
    /// A normal result.
    Result(Value),
    /// This line instead of an answer (fault tools that answer badly).
    Raw(Vec<u8>),
}

/// The state shared by the reader and the request tasks of one connection.
pub(super) struct Session {
    pub(super) options: Options,
    lines: mpsc::UnboundedSender<Vec<u8>>,
    /// Requests being handled, by id, with a generation so that a reused id cannot make a
    /// finishing task remove its successor's entry.
    in_flight: Mutex<HashMap<Id, (u64, AbortHandle)>>,
    next_generation: AtomicU64,
    /// The params of every `notifications/cancelled` received, for the `cancellations` tool.
    cancellations: Mutex<Vec<Value>>,
    /// The id and tool name of the latest `tools/call` requests received (with `--faults`
    /// only), for the `calls` tool.
    calls: Mutex<VecDeque<Value>>,
    /// Our own requests to the client, waiting for its response.
    client_requests: Mutex<HashMap<Id, oneshot::Sender<Outcome>>>,
    next_client_id: AtomicU64,
    initialized: AtomicBool,
    /// How many requests and notifications of each method arrived, for the `stats` tool.
    methods: Mutex<HashMap<String, u64>>,
    /// Set by the `freeze` tool: from then on every input is ignored (a hung server).
    pub(super) frozen: AtomicBool,
    /// The URIs `resources/subscribe` asked for, which `touch` reports as updated.
    subscriptions: Mutex<HashSet<String>>,
    /// The index in [`logging::LEVELS`] of the least severe level the `log` tool sends.
    log_level: AtomicUsize,
}

impl Session {
    fn new(options: Options, lines: mpsc::UnboundedSender<Vec<u8>>) -> Session {
        Session {
            options,
            lines,
            in_flight: Mutex::default(),
            next_generation: AtomicU64::new(0),
            cancellations: Mutex::default(),
            calls: Mutex::default(),
            client_requests: Mutex::default(),
            next_client_id: AtomicU64::new(1),
            initialized: AtomicBool::new(false),
            methods: Mutex::default(),
            frozen: AtomicBool::new(false),
            subscriptions: Mutex::default(),
            log_level: AtomicUsize::new(logging::DEFAULT),
        }
    }

    /// Queues one line for the writer. Once the writer is gone nobody can hear us, so a failed
    /// send is not an error worth reporting.
    pub(super) fn send_line(&self, line: Vec<u8>) {
        let _ = self.lines.send(line);
    }

    pub(super) fn send_json(&self, message: &Value) {
        // Serializing a Value into a Vec cannot fail.
        self.send_line(serde_json::to_vec(message).unwrap_or_default());
    }

    pub(super) fn notify(&self, method: &str, params: Value) {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a notification without params (the list_changed ones).
    pub(super) fn notify_bare(&self, method: &str) {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method}));
    }

    /// Sends a request to the client and waits for its response, for at most `timeout`.
    pub(super) async fn request_client(
        &self,
        method: &str,
        timeout: Duration,
    ) -> Result<Outcome, String> {
        let n = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let id = Id::String(format!("demo-{n}").into());
        let (tx, rx) = oneshot::channel();
        lock(&self.client_requests).insert(id.clone(), tx);
        // Removes the entry however this ends: answered, timed out or aborted by a cancel.
        struct Forget<'a>(&'a Session, &'a Id);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                lock(&self.0.client_requests).remove(self.1);
            }
        }
        let _forget = Forget(self, &id);
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method}));
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(_)) => Err("the connection closed".to_owned()),
            Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
        }
    }

    pub(super) fn cancellations(&self) -> Vec<Value> {
        lock(&self.cancellations).clone()
    }

    /// The latest `tools/call` requests received, oldest first: `{"id", "name"}` each.
    pub(super) fn calls(&self) -> Vec<Value> {
        lock(&self.calls).iter().cloned().collect()
    }

    /// Remembers a `tools/call` as it is read (so in the order of the input), with `--faults`.
    fn record_call(&self, request: &Request) {
        if !self.options.faults || request.method != "tools/call" {
            return;
        }
        let params = parse_params(request.params.as_deref()).unwrap_or(Value::Null);
        let mut calls = lock(&self.calls);
        if calls.len() == MAX_RECORDED_CALLS {
            calls.pop_front();
        }
        calls.push_back(json!({"id": request.id, "name": params["name"]}));
    }

    /// Requests and notifications received so far, by method.
    pub(super) fn method_counts(&self) -> HashMap<String, u64> {
        lock(&self.methods).clone()
    }

    pub(super) fn subscribe(&self, uri: &str) {
        lock(&self.subscriptions).insert(uri.to_owned());
    }

    pub(super) fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    pub(super) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// The index in [`logging::LEVELS`] of the level set by `logging/setLevel`.
    pub(super) fn log_level(&self) -> usize {
        self.log_level.load(Ordering::Relaxed)
    }

    pub(super) fn set_log_level(&self, level: usize) {
        self.log_level.store(level, Ordering::Relaxed);
    }

    fn abort_all(&self) {
        for (_, (_, task)) in lock(&self.in_flight).drain() {
            task.abort();
        }
    }

    /// Handles one line: a message, or a batch of them (2025-03-26 allowed batches; each
    /// element is answered on its own line, which is enough for a demo).
    fn dispatch(self: &Arc<Self>, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        if line.first() == Some(&b'[') {
            match serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(line) {
                Ok(batch) => batch
                    .iter()
                    .for_each(|m| self.dispatch_one(m.get().as_bytes())),
                Err(e) => log(format_args!("ignoring an unreadable batch: {e}")),
            }
        } else {
            self.dispatch_one(line);
        }
    }

    fn dispatch_one(self: &Arc<Self>, bytes: &[u8]) {
        if self.frozen.load(Ordering::Relaxed) {
            return;
        }
        let message = Message::from_slice(bytes);
        if let Ok(Some(method)) = message.as_ref().map(Message::method) {
            *lock(&self.methods).entry(method.to_owned()).or_default() += 1;
        }
        match message {
            Ok(Message::Request(request)) => {
                self.record_call(&request);
                self.spawn_request(request)
            }
            Ok(Message::Notification(notification)) => self.on_notification(notification),
            Ok(Message::Response(response)) => {
                let waiter = response
                    .id
                    .as_ref()
                    .and_then(|id| lock(&self.client_requests).remove(id));
                match (waiter, response.id) {
                    // The waiter may have just timed out; then nobody wants the answer.
                    (Some(waiter), _) => drop(waiter.send(response.outcome)),
                    (None, Some(id)) => log(format_args!("ignoring a response to unknown id {id}")),
                    (None, None) => log(format_args!("ignoring a response without id")),
                }
            }
            Err(e) => log(format_args!("ignoring an unreadable line: {e}")),
        }
    }

    fn spawn_request(self: &Arc<Self>, request: Request) {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let id = request.id.clone();
        let session = Arc::clone(self);
        // Held across the spawn so that the task's own removal cannot run before the insert.
        let mut in_flight = lock(&self.in_flight);
        let task = tokio::spawn(async move {
            let id = request.id.clone();
            session.answer(request).await;
            let mut in_flight = lock(&session.in_flight);
            if in_flight.get(&id).is_some_and(|(g, _)| *g == generation) {
                in_flight.remove(&id);
            }
        });
        in_flight.insert(id, (generation, task.abort_handle()));
    }

    async fn answer(self: &Arc<Self>, request: Request) {
        let params = match parse_params(request.params.as_deref()) {
            Ok(params) => params,
            Err(e) => return self.send_error(&request.id, e),
        };
        let method = request.method.as_str();
        if !matches!(method, "initialize" | "ping") && !self.initialized.load(Ordering::Relaxed) {
            // Legal to answer, but worth seeing when a client skips the handshake.
            log(format_args!("{method} before notifications/initialized"));
        }
        let page_size = self.options.page_size;
        let outcome = match method {
            "initialize" => Ok(Reply::Result(self.initialize(&params))),
            "ping" => Ok(Reply::Result(json!({}))),
            "logging/setLevel" => logging::set_level(self, &params).map(Reply::Result),
            "tools/list" => page(
                tools::definitions(self.options.faults),
                "tools",
                &params,
                page_size,
            )
            .map(Reply::Result),
            "tools/call" => tools::call(self, &request.id, &params).await,
            // A server without these features does not know the methods at all.
            method if !self.options.server_features && is_server_feature(method) => {
                Err(ErrorObject::new(
                    ErrorObject::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                ))
            }
            "resources/list" => {
                page(resources::definitions(), "resources", &params, page_size).map(Reply::Result)
            }
            "resources/templates/list" => page(
                resources::templates(),
                "resourceTemplates",
                &params,
                page_size,
            )
            .map(Reply::Result),
            "resources/read" => resources::read(self, &params).map(Reply::Result),
            "resources/subscribe" => resources::subscribe(self, &params).map(Reply::Result),
            "resources/unsubscribe" => resources::unsubscribe(self, &params).map(Reply::Result),
            "prompts/list" => {
                page(prompts::definitions(), "prompts", &params, page_size).map(Reply::Result)
            }
            "prompts/get" => prompts::get(&params).map(Reply::Result),
            "completion/complete" => completion::complete(&params).map(Reply::Result),
            method if self.options.exit_on_unknown_method => {
                log(format_args!(
                    "exiting: {method} is not a method this server knows"
                ));
                std::process::exit(1)
            }
            method => Err(ErrorObject::new(
                ErrorObject::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        match outcome {
            Ok(Reply::Result(result)) => {
                self.send_json(&json!({"jsonrpc": "2.0", "id": request.id, "result": result}));
            }
            Ok(Reply::Raw(line)) => self.send_line(line),
            Err(e) => self.send_error(&request.id, e),
        }
    }

    fn send_error(&self, id: &Id, error: ErrorObject) {
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    fn initialize(&self, params: &Value) -> Value {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = match (&self.options.protocol_version, requested) {
            (Some(forced), _) => forced.as_str(),
            (None, Some(v)) if SUPPORTED_VERSIONS.contains(&v) => v,
            (None, _) => SUPPORTED_VERSIONS[0],
        };
        let mut capabilities = json!({"tools": {"listChanged": false}, "logging": {}});
        if self.options.server_features {
            capabilities["resources"] = json!({"subscribe": true, "listChanged": true});
            capabilities["prompts"] = json!({"listChanged": true});
            capabilities["completions"] = json!({});
        }
        json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": self.options.name, "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Switchboard's bundled demo server.",
        })
    }

    fn on_notification(&self, notification: Notification) {
        let params = parse_params(notification.params.as_deref()).unwrap_or(Value::Null);
        match notification.method.as_str() {
            "notifications/initialized" => self.initialized.store(true, Ordering::Relaxed),
            "notifications/cancelled" => {
                lock(&self.cancellations).push(params.clone());
                let task = params
                    .get("requestId")
                    .and_then(id_from_value)
                    .and_then(|id| lock(&self.in_flight).remove(&id));
                match task {
                    Some((_, task)) => task.abort(),
                    // It may simply have finished already: the cancel crossed our answer.
                    None => log(format_args!("cancel for no request in flight: {params}")),
                }
            }
            _ => {}
        }
    }
}

/// The methods of resources, prompts and completion, which `--no-server-features` turns off.
fn is_server_feature(method: &str) -> bool {
    method.starts_with("resources/")
        || method.starts_with("prompts/")
        || method.starts_with("completion/")
}

/// One page of a list result, `{key: [...], "nextCursor"?: ...}`. The cursor is the index of
/// the page's first item, as a string: opaque to clients, and the lists never change.
fn page(all: &[Value], key: &str, params: &Value, page_size: usize) -> Result<Value, ErrorObject> {
    let invalid = || ErrorObject::new(ErrorObject::INVALID_PARAMS, "invalid cursor");
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => match cursor.parse::<usize>() {
            Ok(start) if start > 0 && start < all.len() => start,
            _ => return Err(invalid()),
        },
        Some(_) => return Err(invalid()),
    };
    let end = match page_size {
        0 => all.len(),
        size => start.saturating_add(size).min(all.len()),
    };
    let mut result = json!({ key: &all[start..end] });
    if end < all.len() {
        result["nextCursor"] = json!(end.to_string());
    }
    Ok(result)
}

/// An invalid-params error, the answer to every malformed or unknown name in params.
pub(super) fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorObject::INVALID_PARAMS, message)
}

/// A string field of params, or an invalid-params error naming it.
pub(super) fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, ErrorObject> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_params(format!("missing string param {key:?}")))
}

fn parse_params(raw: Option<&serde_json::value::RawValue>) -> Result<Value, ErrorObject> {
    match raw {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::new(ErrorObject::INVALID_PARAMS, format!("invalid params: {e}"))
        }),
    }
}

fn id_from_value(value: &Value) -> Option<Id> {
    match value {
        Value::Number(n) => n.as_i64().map(Id::Number),
        Value::String(s) => Some(Id::String(s.as_str().into())),
        _ => None,
    }
}
