//! The audit trail (`serve --audit FILE|-`): one JSON line per forwarded request and per
//! refusal, and the same record as a `tracing` event at info (target `switchboard::audit`),
//! so an operator sees calls without `-v`.
//!
//! A record is built only here, by `Pending` (a forwarded request, finished when it ends
//! however it ends) and `Audit::refused`/`Audit::rejected`: it has no field for a header, a token, a
//! key or a raw session id, so none can be written. The session is a salted SHA-256 prefix
//! of the server's session number ([`session_tag`]; the salt is drawn once per process):
//! lines of one session go together, nothing in them opens or names it elsewhere.
//! Arguments are written only when the audit was started with `arguments`
//! (`--audit-arguments`), and never in the `tracing` event.
//!
//! Lines go through a bounded queue ([`QUEUE`] lines) to a writer thread, so no async worker
//! waits on the disk. When the queue is full the line is dropped, not waited for: counted in
//! `switchboard_audit_dropped_total` and [`Audit::dropped`], and warned about at most every
//! [`WARN_EVERY`]. An audit trail that stalled every call behind a slow disk would turn a
//! logging problem into an outage; the `tracing` event of a dropped line is still emitted.
//!
//! Rotation is by size ([`Rotation`]), not by a reopen on SIGHUP (which `serve` already
//! takes for a reload): the writer renames `FILE` to `FILE.1` (older ones shifted up to
//! `FILE.keep`, the oldest removed) before the line that would take it past the size, and
//! opens a new `FILE`, so a line is never split between two files.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;
use switchboard::timestamp::rfc3339;
use switchboard_server::{Context, HandlerError};

/// The method of a tool call.
const CALL: &str = "tools/call";
/// The outcome of a refusal.
const REFUSED: &str = "refused";
/// The reason of a call of a tool no server offers.
const UNKNOWN_TOOL: &str = "unknown_tool";
/// The reason of a call of a tool the principal may not use.
pub(crate) const NOT_PERMITTED: &str = "not_permitted";
/// The reason of a call through `call_tool` whose arguments do not match the tool's schema.
pub(crate) const INVALID_ARGUMENTS: &str = "invalid_arguments";

/// Lines waiting for the writer; past this many, a new line is dropped and counted.
pub const QUEUE: usize = 4096;

/// The least time between two warnings about dropped lines.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Where audit lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sink {
    /// A file, created or appended to, rotated by size.
    File(PathBuf),
    /// Standard output (`--audit -`): only when standard output is not the stdio front.
    Stdout,
}

/// Size rotation of a [`Sink::File`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// The size a file is kept under (a single longer line is written alone); `None`
    /// never rotates.
    pub max_bytes: Option<u64>,
    /// How many rotated files (`FILE.1` … `FILE.keep`) are kept.
    pub keep: u32,
}

impl Default for Rotation {
    fn default() -> Self {
        Rotation {
            max_bytes: None,
            keep: 5,
        }
    }
}

/// The audit file could not be opened, or its writer not started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The file did not open for appending.
    #[error("cannot open the audit file {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The writer thread did not start.
    #[error("cannot start the audit writer: {0}")]
    Writer(io::Error),
}

/// One audit line: what a request was, who sent it, how it ended and what it cost.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Record {
    /// RFC 3339, UTC, milliseconds.
    time: String,
    /// The `--auth` key's name or the token's subject; absent without `--auth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    /// The session, hashed ([`session_tag`]); absent for a stateless request.
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    method: &'static str,
    /// The tool, prompt or resource URI the request names.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The upstream that serves it; absent when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    /// The upstream instance: the server's name for a shared server; for one isolated per
    /// client, `SERVER@PRINCIPAL`, and per session, `SERVER@session:TAG` (the session's tag):
    /// whose instance served it.
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<String>,
    /// `ok`, `tool_error`, `error`, `input_required`, `cancelled` or `refused`.
    outcome: &'static str,
    /// The JSON-RPC error code of an `error` or a `refused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<i64>,
    /// Why a request was refused (`not_permitted`, `unknown_tool`, or for method `http` the
    /// HTTP front's rejection: `rate`, `client_sessions`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    duration_ms: f64,
    /// The request's arguments as JSON, in bytes.
    bytes_in: u64,
    /// The answer's result as JSON, in bytes (0 for an error or a cancel).
    bytes_out: u64,
    /// Only with `--audit-arguments`.
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Value>,
}

impl Record {
    /// The info-level `tracing` event of this record, without its arguments.
    fn trace(&self) {
        tracing::info!(
            target: "switchboard::audit",
            principal = self.principal.as_deref(),
            session = self.session.as_deref(),
            method = self.method,
            name = self.name.as_deref(),
            server = self.server.as_deref(),
            outcome = self.outcome,
            code = self.code,
            reason = self.reason,
            duration_ms = self.duration_ms,
            bytes_in = self.bytes_in,
            bytes_out = self.bytes_out,
            "{} {}",
            self.method,
            self.outcome,
        );
    }
}

/// A session number as written: the first 16 hex digits of SHA-256 over a per-process
/// random salt and the number.
pub fn session_tag(session: u64) -> String {
    static SALT: OnceLock<[u8; 16]> = OnceLock::new();
    let salt = SALT.get_or_init(|| {
        let mut salt = [0u8; 16];
        // Without randomness the tag is still one-way; it only stops being unlinkable
        // across processes.
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut salt);
        salt
    });
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    digest.update(salt);
    digest.update(&session.to_be_bytes());
    digest.finish().as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A forwarded request being audited: who, what and where, finished by [`Pending::finish`].
#[derive(Debug)]
pub(crate) struct Pending {
    audit: Audit,
    record: Record,
    started: Instant,
}

/// How a forwarded request ended, for its record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ended {
    pub(crate) outcome: &'static str,
    pub(crate) code: Option<i64>,
    pub(crate) bytes_out: u64,
}

impl Pending {
    /// Writes the record of the request, `ended` now.
    pub(crate) fn finish(mut self, ended: Ended) {
        self.record.time = rfc3339(SystemTime::now(), true);
        self.record.outcome = ended.outcome;
        // A call the catalogue had no server for, answered with an error: the runtime
        // refused it as unknown. (One listed meanwhile is served, and written as served.)
        if ended.outcome == "error" && self.record.server.is_none() && self.record.method == CALL {
            self.record.outcome = REFUSED;
            self.record.reason = Some(UNKNOWN_TOOL);
        }
        self.record.code = ended.code;
        self.record.bytes_out = ended.bytes_out;
        // Microseconds are what a duration here can tell.
        let micros = self.started.elapsed().as_micros() as f64;
        self.record.duration_ms = micros / 1000.0;
        self.audit.write(self.record);
    }
}

/// What a request names and carries, for its record.
pub(crate) struct Request<'a> {
    pub(crate) method: &'static str,
    pub(crate) name: &'a str,
    pub(crate) server: Option<&'a str>,
    /// The server's isolation, when it is known: which instance serves the request.
    pub(crate) isolation: Option<switchboard::Isolation>,
    /// The principal's subject.
    pub(crate) principal: Option<&'a str>,
    /// The session's number ([`Context::session_key`]), hashed into the record.
    pub(crate) session: Option<u64>,
    pub(crate) bytes_in: u64,
    /// Read only with `--audit-arguments`.
    pub(crate) arguments: &'a dyn Fn() -> Option<Value>,
}

/// Which instance of `server` serves a request of `principal` in `session`.
fn instance_of(
    server: &str,
    isolation: Option<switchboard::Isolation>,
    principal: Option<&str>,
    session: Option<u64>,
) -> String {
    match (isolation, principal, session) {
        (Some(switchboard::Isolation::Client), Some(principal), _) => {
            format!("{server}@{principal}")
        }
        (Some(switchboard::Isolation::Session), _, Some(session)) => {
            format!("{server}@session:{}", session_tag(session))
        }
        _ => server.to_owned(),
    }
}

/// Who sent the request of `ctx`, and its session's number, for a [`Request`].
pub(crate) fn sender(ctx: &Context) -> (Option<&str>, Option<u64>) {
    (
        ctx.principal().map(|p| p.subject.as_str()),
        ctx.session_key(),
    )
}

/// The size of `value` written as JSON, counted without keeping the text.
pub(crate) fn json_len(value: &Value) -> u64 {
    struct Count(u64);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// The JSON-RPC code of a handler error, for a record.
pub(crate) fn code_of(error: &HandlerError) -> Option<i64> {
    match error {
        HandlerError::Rpc(e) => Some(e.code),
        HandlerError::MissingCapability { .. } => Some(-32021),
        _ => None,
    }
}

/// The audit log: cheap to clone; the gateway's forwarded requests and refusals
/// write to it, never waiting.
#[derive(Debug, Clone)]
pub struct Audit {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    lines: SyncSender<String>,
    arguments: bool,
    dropped: AtomicU64,
    warned: Mutex<Option<Instant>>,
}

impl Audit {
    /// Opens `sink` and starts its writer thread; `arguments` writes each request's
    /// arguments (`--audit-arguments`).
    pub fn start(sink: Sink, rotation: Rotation, arguments: bool) -> Result<Audit, AuditError> {
        Audit::with_queue(sink, rotation, arguments, QUEUE)
    }

    fn with_queue(
        sink: Sink,
        rotation: Rotation,
        arguments: bool,
        queue: usize,
    ) -> Result<Audit, AuditError> {
        let mut writer = Writer::open(sink, rotation)?;
        let (lines, rx) = mpsc::sync_channel::<String>(queue);
        std::thread::Builder::new()
            .name("switchboard-audit".into())
            .spawn(move || {
                for line in rx {
                    if let Err(error) = writer.write(&line) {
                        tracing::warn!(%error, "audit line not written");
                    }
                }
            })
            .map_err(AuditError::Writer)?;
        Ok(Audit {
            inner: Arc::new(Inner {
                lines,
                arguments,
                dropped: AtomicU64::new(0),
                warned: Mutex::new(None),
            }),
        })
    }

    /// How many lines were dropped because the writer was behind.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Starts the record of a forwarded request.
    pub(crate) fn begin(&self, request: &Request<'_>) -> Pending {
        let mut record = self.record(request);
        record.bytes_in = request.bytes_in;
        Pending {
            audit: self.clone(),
            record,
            started: Instant::now(),
        }
    }

    /// Writes the refusal of `request` (answered as an unknown tool), for `reason`.
    pub(crate) fn refused(&self, request: &Request<'_>, reason: &'static str) {
        let mut record = self.record(request);
        record.outcome = REFUSED;
        record.reason = Some(reason);
        record.code = code_of(&HandlerError::unknown_tool(request.name));
        record.bytes_in = request.bytes_in;
        self.write(record);
    }

    /// Writes that the HTTP front turned a connection or request away, or cut it, for
    /// `reason` (a [`Rejection`](switchboard_server::http::Rejection)'s name): method `http`,
    /// no principal (the front refuses before it authenticates).
    pub(crate) fn rejected(&self, reason: &'static str) {
        let mut record = self.record(&Request {
            method: "http",
            name: "",
            server: None,
            isolation: None,
            principal: None,
            session: None,
            bytes_in: 0,
            arguments: &|| None,
        });
        record.name = None;
        record.outcome = REFUSED;
        record.reason = Some(reason);
        self.write(record);
    }

    /// The one place a record is made.
    fn record(&self, request: &Request<'_>) -> Record {
        let server = request.server.map(str::to_owned);
        Record {
            time: rfc3339(SystemTime::now(), true),
            principal: request.principal.map(str::to_owned),
            session: request.session.map(session_tag),
            method: request.method,
            name: Some(request.name.to_owned()),
            instance: server.as_deref().map(|server| {
                instance_of(
                    server,
                    request.isolation,
                    request.principal,
                    request.session,
                )
            }),
            server,
            outcome: "cancelled",
            code: None,
            reason: None,
            duration_ms: 0.0,
            bytes_in: 0,
            bytes_out: 0,
            arguments: if self.inner.arguments {
                (request.arguments)()
            } else {
                None
            },
        }
    }

    /// Traces `record` and queues its line for the writer; a full queue drops the line.
    fn write(&self, record: Record) {
        record.trace();
        let Ok(mut line) = serde_json::to_string(&record) else {
            return;
        };
        line.push('\n');
        if self.inner.lines.try_send(line).is_err() {
            self.lost();
        }
    }

    fn lost(&self) {
        let total = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        ::metrics::counter!("switchboard_audit_dropped_total").increment(1);
        let now = Instant::now();
        let mut warned = self
            .inner
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !warned.is_some_and(|at| now.duration_since(at) < WARN_EVERY) {
            *warned = Some(now);
            tracing::warn!(dropped = total, "audit writer behind: lines dropped");
        }
    }
}

/// The writer thread's end: the open file and its size.
struct Writer {
    sink: Sink,
    rotation: Rotation,
    file: Option<File>,
    size: u64,
}

impl Writer {
    fn open(sink: Sink, rotation: Rotation) -> Result<Writer, AuditError> {
        let (file, size) = match &sink {
            Sink::File(path) => {
                let opened = append(path).and_then(|f| Ok((f.metadata()?.len(), f)));
                let (size, file) = opened.map_err(|source| AuditError::Open {
                    path: path.clone(),
                    source,
                })?;
                (Some(file), size)
            }
            Sink::Stdout => (None, 0),
        };
        Ok(Writer {
            sink,
            rotation,
            file,
            size,
        })
    }

    fn write(&mut self, line: &str) -> io::Result<()> {
        let Sink::File(path) = &self.sink else {
            return io::stdout().lock().write_all(line.as_bytes());
        };
        if let Some(max) = self.rotation.max_bytes {
            if self.size > 0 && self.size + line.len() as u64 > max {
                self.file = None;
                rotate(path, self.rotation.keep)?;
                self.size = 0;
            }
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(append(path)?),
        };
        file.write_all(line.as_bytes())?;
        self.size += line.len() as u64;
        Ok(())
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Shifts `FILE.n` to `FILE.n+1` (the one past `keep` removed) and `FILE` to `FILE.1`.
fn rotate(path: &Path, keep: u32) -> io::Result<()> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    if keep == 0 {
        return fs::remove_file(path);
    }
    match fs::remove_file(numbered(keep)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    for n in (1..keep).rev() {
        let from = numbered(n);
        if from.exists() {
            fs::rename(&from, numbered(n + 1))?;
        }
    }
    fs::rename(path, numbered(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sb-audit-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir.join("audit.jsonl")
    }

    /// The lines of `paths`, oldest first, once there are `n`.
    fn settle(paths: &[PathBuf], n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let all: Vec<Value> = paths
                .iter()
                .flat_map(|p| {
                    let text = fs::read_to_string(p).unwrap_or_default();
                    text.lines()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect::<Vec<Value>>()
                })
                .collect();
            if all.len() >= n {
                return all;
            }
            assert!(Instant::now() < deadline, "{} lines of {n}", all.len());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn echo<'a>(arguments: &'a dyn Fn() -> Option<Value>) -> Request<'a> {
        Request {
            method: "tools/call",
            name: "echo",
            server: Some("demo"),
            isolation: None,
            principal: Some("alice"),
            session: Some(7),
            bytes_in: 13,
            arguments,
        }
    }

    #[test]
    fn the_session_is_hashed_and_stable() {
        let tag = session_tag(7);
        assert_eq!(tag.len(), 16);
        assert!(tag.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(tag, session_tag(7));
        assert_ne!(tag, session_tag(8));
    }

    #[test]
    fn a_forwarded_line_has_every_field_and_arguments_only_when_asked() {
        let arguments = || Some(serde_json::json!({"text": "hi"}));
        let (without, with) = (scratch("plain"), scratch("arguments"));
        for (path, asked) in [(&without, false), (&with, true)] {
            let audit = Audit::start(Sink::File(path.clone()), Rotation::default(), asked).unwrap();
            audit.begin(&echo(&arguments)).finish(Ended {
                outcome: "ok",
                code: None,
                bytes_out: 120,
            });
        }
        let line = settle(std::slice::from_ref(&without), 1).remove(0);
        let raw = fs::read_to_string(&without).unwrap();
        assert!(raw.starts_with("{\"time\":\""), "time first: {raw}");
        let mut keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "bytes_in",
                "bytes_out",
                "duration_ms",
                "instance",
                "method",
                "name",
                "outcome",
                "principal",
                "server",
                "session",
                "time",
            ]
        );
        assert_eq!(line["principal"], "alice");
        assert_eq!(line["session"], session_tag(7));
        assert_eq!(
            (&line["server"], &line["instance"]),
            (&line["server"], &Value::from("demo"))
        );
        assert_eq!(
            (&line["bytes_in"], &line["bytes_out"]),
            (&Value::from(13), &Value::from(120))
        );
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
        let line = settle(&[with], 1).remove(0);
        assert_eq!(line["arguments"], serde_json::json!({"text": "hi"}));
    }

    #[test]
    fn a_refusal_names_its_reason_and_code() {
        let path = scratch("refusal");
        let audit = Audit::start(Sink::File(path.clone()), Rotation::default(), true).unwrap();
        let mut request = echo(&|| None);
        request.principal = None;
        request.session = None;
        audit.refused(&request, "not_permitted");
        let line = settle(&[path], 1).remove(0);
        assert_eq!(line["outcome"], "refused");
        assert_eq!(line["reason"], "not_permitted");
        assert_eq!(line["code"], -32602);
        assert!(line.get("principal").is_none() && line.get("session").is_none());
        assert!(line.get("arguments").is_none());
    }

    #[test]
    fn an_http_rejection_is_a_refusal_of_method_http() {
        let path = scratch("rejection");
        let audit = Audit::start(Sink::File(path.clone()), Rotation::default(), true).unwrap();
        audit.rejected("rate");
        let line = settle(&[path], 1).remove(0);
        assert_eq!(line["method"], "http");
        assert_eq!(
            (&line["outcome"], &line["reason"]),
            (&Value::from("refused"), &Value::from("rate"))
        );
        for absent in [
            "name",
            "principal",
            "session",
            "server",
            "code",
            "arguments",
        ] {
            assert!(line.get(absent).is_none(), "{absent} in {line}");
        }
    }

    #[test]
    fn a_call_no_server_offers_that_fails_is_refused_as_unknown() {
        let path = scratch("unknown");
        let audit = Audit::start(Sink::File(path.clone()), Rotation::default(), false).unwrap();
        let mut request = echo(&|| None);
        request.server = None;
        audit.begin(&request).finish(Ended {
            outcome: "error",
            code: Some(-32602),
            bytes_out: 0,
        });
        let line = settle(&[path], 1).remove(0);
        assert_eq!(
            (&line["outcome"], &line["reason"]),
            (&Value::from("refused"), &Value::from("unknown_tool"))
        );
        assert_eq!(line["code"], -32602);
    }

    #[test]
    fn a_file_rotates_before_a_line_would_pass_its_size_and_keeps_keep() {
        let path = scratch("rotation");
        let rotation = Rotation {
            max_bytes: Some(600),
            keep: 2,
        };
        let audit = Audit::start(Sink::File(path.clone()), rotation, false).unwrap();
        for n in 0..20 {
            audit.begin(&echo(&|| None)).finish(Ended {
                outcome: "ok",
                code: None,
                bytes_out: n,
            });
        }
        let numbered = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
        // 20 lines of about 250 bytes, two a file: the last two files and the current one.
        let deadline = Instant::now() + Duration::from_secs(20);
        while settle(std::slice::from_ref(&path), 0)
            .last()
            .map(|l| l["bytes_out"].clone())
            != Some(Value::from(19))
        {
            assert!(Instant::now() < deadline, "the last line never came");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!numbered(3).exists());
        let kept = settle(&[numbered(2), numbered(1), path.clone()], 1);
        let outs: Vec<u64> = kept
            .iter()
            .map(|l| l["bytes_out"].as_u64().unwrap())
            .collect();
        let first = outs[0];
        assert_eq!(outs, (first..20).collect::<Vec<_>>(), "in order, none lost");
        for p in [numbered(2), numbered(1), path] {
            assert!(fs::metadata(&p).unwrap().len() <= 600, "{}", p.display());
        }
    }
}
