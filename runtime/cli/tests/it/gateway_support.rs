//! What the tests of `switchboard serve --listen` as a real process share: where it listens,
//! 2026-07-28 requests as raw HTTP/1.1 bytes and their answers, and what the process holds
//! (its resident memory and descriptors, read in /proc).

use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use serde_json::{json, Value};

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
    let mut meta = modern_meta();
    if let Some(token) = progress_token {
        meta["progressToken"] = json!(token);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: {ACCEPT}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\n\
         mcp-name: {tool}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
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
