//! A small, fast MCP server for catalogue routing: it runs in this process over the memory
//! transport and lists [`TOOLS`] tools that each answer with their arguments.
//!
//! Unlike the demo server it answers every request inline on one task (no task per request,
//! no writer task), so that its own cost stays small and the same for every server. It
//! speaks newline-delimited JSON: `initialize` (answered with the latest protocol version and
//! `{"tools":{}}`), `tools/list` (every tool on one page), `tools/call` (the arguments,
//! compact JSON, as one text block; `isError` for a tool it does not list) and `ping`;
//! notifications are ignored and other requests get `-32601`.
//!
//! ```ignore
//! let fixture = ToolServer::new("s007_");             // lists s007_tool_00 ... s007_tool_49
//! let config = fixture.config();                       // a `ServerConfig::memory`
//! ```

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{ErrorObject, Message, Outcome, Request, Response};
use switchboard_codecs::mcp::LATEST_PROTOCOL_VERSION;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter, DuplexStream};

/// Tools each server lists.
pub(crate) const TOOLS: usize = 50;

/// One server's tools: `<prefix>tool_00` to `<prefix>tool_49`.
#[derive(Debug)]
pub(crate) struct ToolServer {
    names: HashSet<String>,
    /// The `tools/list` result, serialized once.
    list: Box<RawValue>,
}

impl ToolServer {
    /// A server whose tool names start with `prefix` (`""` for `tool_00` ...).
    pub(crate) fn new(prefix: &str) -> Arc<ToolServer> {
        let names: Vec<String> = (0..TOOLS).map(|i| tool_name(prefix, i)).collect();
        let tools: Vec<serde_json::Value> = names
            .iter()
            .map(|name| {
                serde_json::json!({
                    "name": name,
                    "description": "Answers with its arguments, as JSON text.",
                    "inputSchema": {"type": "object"},
                })
            })
            .collect();
        let list = to_raw(&serde_json::json!({ "tools": tools }));
        Arc::new(ToolServer {
            names: names.into_iter().collect(),
            list,
        })
    }

    /// The tool names, `tool_00` first.
    pub(crate) fn names(prefix: &str) -> impl Iterator<Item = String> + '_ {
        (0..TOOLS).map(move |i| tool_name(prefix, i))
    }

    /// This server as a Switchboard memory server.
    pub(crate) fn config(self: &Arc<Self>) -> switchboard::ServerConfig {
        let server = Arc::clone(self);
        switchboard::ServerConfig::memory(move |io| serve(io, Arc::clone(&server)))
            .max_in_flight(1024)
            .into()
    }

    /// The answer to one line, appended to `out` with its newline; nothing for a
    /// notification, a response or a line that is not JSON-RPC.
    fn answer(&self, line: &[u8], out: &mut Vec<u8>) {
        let Ok(Message::Request(Request { id, method, params })) = Message::from_slice(line) else {
            return;
        };
        let params = params.as_deref().map_or("{}", RawValue::get);
        let outcome = match method.as_str() {
            "initialize" => Outcome::Result(to_raw(&serde_json::json!({
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-tool-server", "version": "0.1.0"},
            }))),
            "tools/list" => Outcome::Result(self.list.clone()),
            "tools/call" => Outcome::Result(self.call(params)),
            "ping" => Outcome::Result(to_raw(&serde_json::json!({}))),
            _ => Outcome::Error(ErrorObject::new(
                ErrorObject::METHOD_NOT_FOUND,
                format!("unknown method {method}"),
            )),
        };
        Message::Response(Response {
            id: Some(id),
            outcome,
        })
        .write_to(out);
        out.push(b'\n');
    }

    /// A `tools/call` result: the arguments as one text block.
    fn call(&self, params: &str) -> Box<RawValue> {
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            name: Cow<'a, str>,
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
        }
        let result = match serde_json::from_str::<Params<'_>>(params) {
            Ok(p) if self.names.contains(p.name.as_ref()) => {
                let text = p.arguments.map_or("{}", RawValue::get);
                serde_json::json!({"content": [{"type": "text", "text": text}]})
            }
            Ok(p) => serde_json::json!({
                "content": [{"type": "text", "text": format!("no tool {}", p.name)}],
                "isError": true,
            }),
            Err(e) => serde_json::json!({
                "content": [{"type": "text", "text": format!("bad params: {e}")}],
                "isError": true,
            }),
        };
        to_raw(&result)
    }
}

fn tool_name(prefix: &str, i: usize) -> String {
    format!("{prefix}tool_{i:02}")
}

fn to_raw(value: &serde_json::Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("a JSON value serializes")
}

/// Answers lines until the client closes; flushes whenever no further request is buffered,
/// so that requests that arrive together are answered with one write.
async fn serve(io: DuplexStream, server: Arc<ToolServer>) {
    // `BufStream`, but with the read buffer in view.
    let mut io = BufReader::new(BufWriter::new(io));
    let mut line = Vec::with_capacity(512);
    let mut out = Vec::with_capacity(512);
    loop {
        line.clear();
        match io.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        out.clear();
        server.answer(&line, &mut out);
        if !out.is_empty() && io.write_all(&out).await.is_err() {
            return;
        }
        if io.buffer().is_empty() && io.flush().await.is_err() {
            return;
        }
    }
}
