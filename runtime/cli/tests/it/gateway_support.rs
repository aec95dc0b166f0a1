//! What the tests of `switchboard serve --listen` as a real process share: where it listens,
//! 2026-07-28 requests as raw HTTP/1.1 bytes and their answers, connections from a chosen
//! loopback address, a handshake-era session as a client holds one, and what the process
//! holds (its resident memory and descriptors, read in /proc).

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::gateway::Served;

pub(crate) const ACCEPT: &str = "application/json, text/event-stream";

/// The gateway's loopback address.
pub(crate) fn addr_of(served: &Served) -> SocketAddr {
    base_of(served)
        .trim_start_matches("http://")
        .parse()
        .unwrap()
}

/// `http://127.0.0.1:PORT`, where the probes answer.
pub(crate) fn base_of(served: &Served) -> String {
    served.url.trim_end_matches("/mcp").to_owned()
}

/// `_meta` of a 2026-07-28 request (no session: every request says who asks).
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A 2026-07-28 stateless `tools/call` of `tool`, as the bytes of an HTTP/1.1 request.
pub(crate) fn modern_call(
    id: u64,
    tool: &str,
    arguments: Value,
    progress_token: Option<&str>,
) -> String {
    let body = modern_call_body(id, tool, arguments, progress_token);
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: {ACCEPT}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\n\
         mcp-name: {tool}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The body of [`modern_call`].
pub(crate) fn modern_call_body(
    id: u64,
    tool: &str,
    arguments: Value,
    progress_token: Option<&str>,
) -> String {
    let mut meta = modern_meta();
    if let Some(token) = progress_token {
        meta["progressToken"] = json!(token);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta}})
    .to_string()
}

/// A request cut off in its body: headers the gateway accepts (so that it waits for the
/// body, not answers 406 and closes), which promise 100 bytes, then 4 of them.
pub(crate) const PARTIAL: &[u8] =
    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
    accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
    mcp-method: tools/call\r\nmcp-name: echo\r\ncontent-length: 100\r\n\r\n{\"js";

/// The JSON-RPC message of an answer, whether it came as JSON or as an event stream (the
/// last event with an id and no method).
pub(crate) fn answer_of(text: &str) -> Value {
    if let Ok(value) = serde_json::from_str(text) {
        return value;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim_start()).ok())
        .rfind(|m| m.get("id").is_some() && m.get("method").is_none())
        .unwrap_or(Value::Null)
}

/// The bytes that arrived on `socket` and were not read.
pub(crate) fn unread(socket: &impl AsRawFd) -> usize {
    let mut bytes: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int, through a pointer to one.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::FIONREAD, &mut bytes) };
    assert_eq!(rc, 0, "FIONREAD: {}", std::io::Error::last_os_error());
    bytes as usize
}

/// A process's resident memory, in bytes.
pub(crate) fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in {status}"));
    kib * 1024
}

/// A process's open file descriptors.
pub(crate) fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// A connection to `to` from `from`. One that will not read (`reads: false`) has a 4 KiB
/// receive buffer and an Ethernet path's segment size (1,460 bytes, not loopback's 64 KiB,
/// from which the gateway's kernel sizes its send buffer at a few MiB): what it does not
/// read waits in the gateway, as over a network.
pub(crate) async fn connect(
    from: IpAddr,
    to: SocketAddr,
    reads: bool,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    if !reads {
        socket.set_recv_buffer_size(4096)?;
        let mss: libc::c_int = 1460;
        // SAFETY: TCP_MAXSEG reads one c_int, through a pointer to one of that size.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_MAXSEG,
                (&mss as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(to).await
}

/// Waits until the peer closes `stream` (EOF or reset), dropping whatever it sends.
pub(crate) async fn closed(stream: &mut TcpStream) {
    let mut sink = [0u8; 4096];
    while let Ok(1..) = stream.read(&mut sink).await {}
}

/// `GET path` from `from` on a connection of its own, as curl does it (HTTP/1.0, 5 s in
/// all): the status and the body.
pub(crate) async fn get(from: IpAddr, to: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let asked = async {
        let mut stream = connect(from, to, true).await?;
        let request = format!("GET {path} HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer = tokio::time::timeout(Duration::from_secs(5), asked)
        .await
        .map_err(|_| format!("GET {path}: no answer within 5 s"))?
        .map_err(|e| format!("GET {path}: {e}"))?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok());
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok((status.unwrap_or(0), body.to_owned()))
}

/// An error and its causes, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// An HTTP client from `from`, each request within 5 s.
pub(crate) fn http_from(from: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(from)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// A handshake-era `initialize` declaring `capabilities`.
pub(crate) fn initialize(capabilities: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "hostile-test", "version": "1"}}})
    .to_string()
}

/// A POST of `body` to the endpoint, in `session` if given.
pub(crate) fn post(
    http: &reqwest::Client,
    url: &str,
    body: String,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body);
    match session {
        Some(id) => request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25"),
        None => request,
    }
}

/// A handshake-era session, as a client that follows the spec holds one.
pub(crate) struct Session {
    pub(crate) http: reqwest::Client,
    url: String,
    pub(crate) id: String,
}

impl Session {
    /// `initialize` and `notifications/initialized` from `from`.
    pub(crate) async fn open(url: &str, from: IpAddr) -> Result<Session, String> {
        let http = http_from(from);
        let answer = post(&http, url, initialize(json!({})), None)
            .send()
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        let status = answer.status();
        let id = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Some(id) = id.filter(|_| status == 200) else {
            let text = answer.text().await.unwrap_or_default();
            return Err(format!("initialize: {status} {text}"));
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let status = post(&http, url, initialized.to_string(), Some(&id))
            .send()
            .await
            .map_err(|e| format!("initialized: {e}"))?
            .status();
        if status != 202 {
            return Err(format!("initialized: {status}"));
        }
        Ok(Session {
            http,
            url: url.to_owned(),
            id,
        })
    }

    /// Calls `tool`: its result, or what went wrong (the status and the answer).
    pub(crate) async fn call(&self, n: u64, tool: &str, arguments: Value) -> Result<Value, String> {
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let answer = post(&self.http, &self.url, call.to_string(), Some(&self.id))
            .send()
            .await
            .map_err(|e| format!("{tool} {n}: {}", chain(&e)))?;
        let status = answer.status();
        let text = answer
            .text()
            .await
            .map_err(|e| format!("{tool} {n}: {}", chain(&e)))?;
        let message = answer_of(&text);
        match message.get("result") {
            Some(result) if status == 200 => Ok(result.clone()),
            _ => {
                let text: String = text.chars().take(300).collect();
                Err(format!("{tool} {n}: {status} {text}"))
            }
        }
    }

    /// Calls `tool`, the demo's `echo`, and checks that its text comes back.
    pub(crate) async fn echo(&self, tool: &str, n: u64) -> Result<(), String> {
        let text = format!("call {n}");
        let result = self.call(n, tool, json!({"text": text})).await?;
        match result["content"][0]["text"].as_str() {
            Some(echoed) if echoed == text => Ok(()),
            _ => Err(format!("echo {n}: {result}")),
        }
    }
}

/// What a process holds at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sample {
    pub(crate) rss: u64,
    pub(crate) fds: usize,
}

impl Sample {
    pub(crate) fn of(pid: u32) -> Sample {
        Sample {
            rss: rss(pid),
            fds: fds(pid),
        }
    }

    fn max(self, other: Sample) -> Sample {
        Sample {
            rss: self.rss.max(other.rss),
            fds: self.fds.max(other.fds),
        }
    }
}

impl std::fmt::Display for Sample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} MiB, {} fds", mib(self.rss), self.fds)
    }
}

/// Bytes in MiB, for printing.
pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The most a process held while it was watched: its memory and descriptors, read every
/// 50 ms on a thread of its own.
pub(crate) struct Peak {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Sample>,
}

impl Peak {
    pub(crate) fn watch(pid: u32) -> Peak {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = Sample::of(pid);
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                peak = peak.max(Sample::of(pid));
            }
            peak.max(Sample::of(pid))
        });
        Peak { stop, thread }
    }

    /// The peak, since [`watch`](Self::watch).
    pub(crate) fn end(self) -> Sample {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}
