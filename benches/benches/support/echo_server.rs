//! A minimal MCP server with plain blocking std I/O and no async runtime: the server the
//! stdio clients are compared against, so that the numbers measure the clients, not the
//! server. The demo server is a tokio program whose own wake-ups and task hops sit on every
//! call's path; this one reads a line, answers it into a buffer and flushes only once the
//! pipe has nothing more buffered, so pipelined requests are answered in batches.
//!
//! It is this bench binary re-executed with [`ENV_VAR`] set (as the demo server is with
//! `SWITCHBOARD_DEMO_SERVER`): a bench's `main` calls [`main_from_env`] before anything
//! else. The JSON-RPC handling ([`answer`]) is shared with the Streamable HTTP server of
//! the `http` bench.
//!
//! It speaks just enough MCP for a client's handshake and `echo` calls: `initialize`,
//! `tools/list` (one tool, `echo`), `tools/call` of `echo`, `ping`; notifications and
//! answers from the client are ignored, any other method gets -32601.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Set (to anything) in the environment of this bench binary to make it the echo server.
pub(crate) const ENV_VAR: &str = "SWITCHBOARD_BENCH_ECHO";

/// The protocol versions the server accepts; anything else is answered with the newest.
const VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const NEWEST: &str = "2025-11-25";

/// Runs the echo server on stdin/stdout if [`ENV_VAR`] is set, and returns its exit code;
/// `None` otherwise (the caller goes on as the bench).
pub(crate) fn main_from_env() -> Option<ExitCode> {
    std::env::var_os(ENV_VAR)?;
    Some(match serve_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        // The client went away mid-write: the bench is over, nothing to report.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench echo server: {e}");
            ExitCode::FAILURE
        }
    })
}

/// Serves newline-delimited JSON-RPC until stdin closes.
fn serve_stdio() -> io::Result<()> {
    // Own descriptors rather than `io::stdin()`/`io::stdout()`: stdin's lock has a buffer of
    // its own that `BufReader::buffer` cannot see, and stdout is line-buffered, which would
    // flush every answer on its own.
    let input = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let output = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    serve(input, output)
}

/// The loop itself, over any pair of pipes.
fn serve(input: impl io::Read, output: impl Write) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut writer = BufWriter::with_capacity(64 * 1024, output);
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return writer.flush();
        }
        if answer(&line, &mut writer)? != Answered::Nothing {
            writer.write_all(b"\n")?;
        }
        // Flush only when no request is already waiting: a pipelining client gets its
        // answers in one write per batch it sent, a sequential one at once.
        if reader.buffer().is_empty() {
            writer.flush()?;
        }
    }
}

/// What [`answer`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// Nothing: the message was a notification or an answer.
    Nothing,
    /// The answer to `initialize` (an HTTP server starts a session here).
    Initialize,
    /// Any other answer, result or error.
    Other,
}

/// A message from the client, borrowed from its line: only what the server looks at.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InitializeParams<'a> {
    #[serde(borrow, rename = "protocolVersion", default)]
    protocol_version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<EchoArguments<'a>>,
}

#[derive(Deserialize)]
struct EchoArguments<'a> {
    /// Kept as JSON text, so the answer copies the string as sent, escapes and all.
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

/// Writes the answer to one JSON-RPC message (without a line end) to `out`, if it needs
/// one. The request's id is copied verbatim, as the JSON text the client sent.
pub(crate) fn answer(message: &[u8], out: &mut impl Write) -> io::Result<Answered> {
    let incoming: Incoming<'_> = match serde_json::from_slice(message) {
        Ok(incoming) => incoming,
        Err(_) if message.trim_ascii().is_empty() => return Ok(Answered::Nothing),
        Err(_) => {
            error(out, "null", -32700, "parse error")?;
            return Ok(Answered::Other);
        }
    };
    // No id (or a null one): a notification, or the client's answer to a server request.
    let (Some(id), Some(method)) = (incoming.id, incoming.method) else {
        return Ok(Answered::Nothing);
    };
    let id = id.get();
    let params = incoming.params.map_or("{}", RawValue::get);
    match method.as_ref() {
        "tools/call" => {
            let Ok(call) = serde_json::from_str::<CallParams<'_>>(params) else {
                error(out, id, -32602, "invalid tools/call params")?;
                return Ok(Answered::Other);
            };
            let text = call.arguments.and_then(|a| a.text).map(RawValue::get);
            match text {
                Some(text) if call.name == "echo" && text.starts_with('"') => write!(
                    out,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":{text}}}]}}}}"#
                )?,
                _ if call.name == "echo" => {
                    error(out, id, -32602, "echo takes a string argument `text`")?
                }
                _ => error(out, id, -32602, "unknown tool")?,
            }
            Ok(Answered::Other)
        }
        "initialize" => {
            let asked = serde_json::from_str::<InitializeParams<'_>>(params)
                .ok()
                .and_then(|p| p.protocol_version);
            let version = match asked {
                Some(v) if VERSIONS.contains(&v.as_ref()) => v,
                _ => Cow::Borrowed(NEWEST),
            };
            write!(
                out,
                concat!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"{version}","#,
                    r#""capabilities":{{"tools":{{}}}},"#,
                    r#""serverInfo":{{"name":"switchboard-bench-echo","version":"0.1.0"}}}}}}"#
                ),
                id = id,
                version = version
            )?;
            Ok(Answered::Initialize)
        }
        "tools/list" => {
            write!(
                out,
                concat!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"echo","#,
                    r#""description":"Answers with its text","#,
                    r#""inputSchema":{{"type":"object","properties":{{"text":{{"type":"string"}}}},"#,
                    r#""required":["text"]}}}}]}}}}"#
                ),
                id = id
            )?;
            Ok(Answered::Other)
        }
        "ping" => {
            write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)?;
            Ok(Answered::Other)
        }
        _ => {
            error(out, id, -32601, "method not found")?;
            Ok(Answered::Other)
        }
    }
}

fn error(out: &mut impl Write, id: &str, code: i32, message: &str) -> io::Result<()> {
    write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"{message}"}}}}"#
    )
}
