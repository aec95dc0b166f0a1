//! A small handler for the tests, and a raw line client over an in-process stream.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_server::{
    Arguments, BoxFuture, Context, Handler, HandlerError, Info, Options, Reply, Seen, Server,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Counts the slow handlers that were dropped before they finished.
#[derive(Default)]
pub(crate) struct Probe {
    pub(crate) dropped: AtomicUsize,
    pub(crate) sent: AtomicUsize,
    /// `tools/call`s the handler saw.
    pub(crate) calls: AtomicUsize,
}

struct DropGuard(Arc<Probe>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) struct TestHandler {
    pub(crate) probe: Arc<Probe>,
}

impl Handler for TestHandler {
    fn observe(&self, message: Seen<'_>) -> bool {
        match message {
            Seen::Request(request) if request.method == "tools/call" => {
                self.probe.calls.fetch_add(1, Ordering::SeqCst);
            }
            Seen::Call { .. } => {
                self.probe.calls.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
        true
    }

    fn info(&self) -> Info {
        Info::new("test", "1.0")
            .with_resources()
            .with_prompts()
            .with_list_changed()
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        let object = json!({"type": "object"});
        let mut tools: Vec<Value> = ["echo", "slow", "ask", "changed", "flood", "whoami"]
            .iter()
            .map(|name| json!({"name": name, "inputSchema": object}))
            .collect();
        tools.push(
            json!({"name": "region", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}}),
        );
        Cow::Owned(tools)
    }

    fn call_tool(
        self: Arc<Self>,
        name: String,
        args: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        Box::pin(async move {
            let args = args.into_value().unwrap_or_default();
            match name.as_str() {
                "echo" => Ok(Reply::text(args["text"].as_str().unwrap_or(""))),
                "slow" => {
                    let _guard = DropGuard(self.probe.clone());
                    ctx.progress(1.0, Some(2.0), Some("half")).await;
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    std::mem::forget(_guard);
                    Ok(Reply::text("slept"))
                }
                "ask" => {
                    let schema =
                        json!({"type": "object", "properties": {"name": {"type": "string"}}});
                    let first = ctx
                        .input(
                            "who",
                            "elicitation/create",
                            json!({"message": "who?", "requestedSchema": schema}),
                        )
                        .await?;
                    let second = ctx
                        .input(
                            "model",
                            "sampling/createMessage",
                            json!({"messages": [], "maxTokens": 5}),
                        )
                        .await?;
                    Ok(Reply::text(format!(
                        "{} via {}",
                        first["content"]["name"].as_str().unwrap_or("?"),
                        second["model"].as_str().unwrap_or("?")
                    )))
                }
                "flood" => {
                    // Large messages until the client is gone: how far it gets is how much
                    // the server holds for a client that does not read.
                    let _guard = DropGuard(self.probe.clone());
                    let blob = "x".repeat(16 * 1024);
                    loop {
                        if !ctx
                            .notify(
                                "notifications/message",
                                json!({"level": "info", "data": blob}),
                            )
                            .await
                        {
                            break;
                        }
                        self.probe.sent.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Reply::text("flooded"))
                }
                "region" => Ok(Reply::text(args["region"].as_str().unwrap_or("none"))),
                "whoami" => {
                    let mut whoami = json!({
                        "protocolVersion": ctx.protocol_version(),
                        "capabilities": ctx.client_capabilities(),
                    });
                    if let Some(client) = ctx.client_info() {
                        whoami["clientInfo"] =
                            json!({"name": client.name(), "version": client.version()});
                    }
                    Ok(Reply::structured(whoami))
                }
                "changed" => {
                    ctx.tools_changed();
                    Ok(Reply::text("announced"))
                }
                _ => Err(HandlerError::invalid_params(format!(
                    "unknown tool: {name}"
                ))),
            }
        })
    }

    fn resources(&self) -> Cow<'_, [Value]> {
        Cow::Owned(vec![json!({"uri": "test://a", "name": "a"})])
    }

    fn read_resource(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            match uri.as_str() {
                "test://a" => Ok(json!({"contents": [{"uri": uri, "text": "A"}]})),
                _ => Err(HandlerError::resource_not_found(&uri)),
            }
        })
    }
}

pub(crate) fn server() -> (Server, Arc<Probe>) {
    server_with(Options::default())
}

/// The test handler's server, with `options`.
pub(crate) fn server_with(options: Options) -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let server = Server::with_options(
        TestHandler {
            probe: probe.clone(),
        },
        options,
    );
    (server, probe)
}

/// `_meta` of a 2026-07-28 request.
pub(crate) fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A client speaking raw lines to a server over an in-process stream.
pub(crate) struct LineClient {
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    pub(crate) served: tokio::task::JoinHandle<Result<(), switchboard_server::Error>>,
}

impl LineClient {
    pub(crate) fn start(server: Server) -> LineClient {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (their_reader, their_writer) = tokio::io::split(theirs);
        let served = tokio::spawn(async move { server.serve(their_reader, their_writer).await });
        let (reader, writer) = tokio::io::split(ours);
        LineClient {
            writer,
            reader: BufReader::new(reader),
            served,
        }
    }

    pub(crate) async fn send_raw(&mut self, line: &[u8]) {
        self.writer.write_all(line).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    pub(crate) async fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes()).await;
    }

    pub(crate) async fn recv(&mut self) -> Value {
        let mut line = Vec::new();
        let n = tokio::time::timeout(WAIT, self.reader.read_until(b'\n', &mut line))
            .await
            .expect("the server answers in time")
            .unwrap();
        assert!(n > 0, "the server closed its output");
        serde_json::from_slice(&line).unwrap()
    }

    /// Sends a request and returns its response, skipping what comes before it.
    pub(crate) async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.recv().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    pub(crate) async fn close(mut self) {
        self.writer.shutdown().await.unwrap();
        let served = tokio::time::timeout(WAIT, self.served)
            .await
            .expect("serve returns at EOF");
        assert!(served.unwrap().is_ok());
    }
}

/// An `initialize` request as JSON text, whose capabilities are `capabilities` plus `keys`
/// small `experimental` keys (300,000 of them make 3.8 MB), from `client_info`.
pub(crate) fn initialize_line(
    id: i64,
    version: &str,
    capabilities: &Value,
    keys: usize,
    client_info: &Value,
) -> String {
    use std::fmt::Write;
    let mut experimental = String::with_capacity(keys * 14 + 2);
    experimental.push('{');
    for i in 0..keys {
        if i > 0 {
            experimental.push(',');
        }
        let _ = write!(experimental, r#""k{i}":{{}}"#);
    }
    experimental.push('}');
    let declared = capabilities.to_string();
    let rest = declared
        .strip_prefix('{')
        .expect("capabilities are an object");
    let separator = if rest == "}" { "" } else { "," };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":{},"capabilities":{{"experimental":{experimental}{separator}{rest},"clientInfo":{client_info}}}}}"#,
        json!(version),
    )
}
