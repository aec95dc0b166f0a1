//! The server side against clients nobody here wrote, and against Switchboard's own runtime:
//! the demo server with its conformance fixture (`switchboard demo-server --conformance`),
//! over stdio and over Streamable HTTP, listed and called, with a sampling and an
//! elicitation answered by the client.
//!
//! The clients are the Python SDK (`mcp` 2.3.0 in `.ci/venv`, both eras) and the TypeScript
//! SDK (`@modelcontextprotocol/sdk` in `.ci/peers`), `#[ignore = "needs …"]`; rmcp 3.11's
//! client (a dependency, handshake era) and Switchboard's runtime, which need nothing but
//! this build, run in every `cargo test`. The server is the `switchboard` binary of this
//! build ([`switchboard_bin`] builds it when it is missing or out of date).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
    SamplingHandler, SamplingRequest, SamplingResponse,
};
use switchboard::model::Content;
use switchboard::transport::HttpKind;
use switchboard::{Era, Protocol, RestartPolicy, Runtime, ServerConfig};

use crate::own_binary::switchboard_bin;
use crate::peers::{free_port, python, ListeningPeer};

/// The demo server with the fixture over HTTP, on a free port; stopped on drop.
fn http_demo() -> (ListeningPeer, String) {
    let port = free_port();
    let mut command = Command::new(switchboard_bin());
    command.args([
        "demo-server",
        "--conformance",
        "--http",
        &format!("127.0.0.1:{port}"),
    ]);
    let peer = ListeningPeer::start(command, port, "switchboard demo-server --http");
    (peer, format!("http://127.0.0.1:{port}/mcp"))
}

fn stdio_demo_args(modern: bool) -> Vec<String> {
    let mut args = vec![
        switchboard_bin().display().to_string(),
        "demo-server".to_owned(),
        "--conformance".to_owned(),
    ];
    if modern {
        args.push("--modern".to_owned());
    }
    args
}

/// Runs a client script and returns the JSON document it printed.
pub(crate) fn run_client(mut command: Command, what: &str) -> Value {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{what} printed {stdout:?}: {e}"))
}

/// What every client must have seen.
pub(crate) fn assert_served(seen: &Value, sampled_by: &str, answered_by: &str) {
    let tools = seen["tools"].as_array().expect("tools");
    for name in [
        "echo",
        "test_sampling",
        "test_elicitation",
        "test_simple_text",
    ] {
        assert!(tools.iter().any(|t| t == name), "{name} in {seen}");
    }
    assert_eq!(seen["echo"], "hi", "{seen}");
    assert_eq!(
        seen["sampling"],
        format!("LLM response: {sampled_by}"),
        "{seen}"
    );
    let elicitation = seen["elicitation"].as_str().unwrap_or("");
    assert!(
        elicitation.starts_with("User response: action=accept")
            && elicitation.contains(answered_by),
        "{seen}"
    );
}

fn python_client(mode: &str, target: &[String]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/python_client.py");
    let mut command = Command::new(python());
    command.arg(script).arg(mode).args(target);
    run_client(command, &format!("the Python SDK client ({mode})"))
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
fn the_python_sdk_client_is_served_over_stdio_in_both_eras() {
    for (mode, modern) in [("legacy", false), ("auto", true), ("2026-07-28", true)] {
        let seen = python_client(mode, &stdio_demo_args(modern));
        assert_served(&seen, "sampled by python", "answered by python");
    }
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
fn the_python_sdk_client_is_served_over_http_in_both_eras() {
    let (_server, url) = http_demo();
    for mode in ["legacy", "auto", "2026-07-28"] {
        let seen = python_client(mode, std::slice::from_ref(&url));
        assert_served(&seen, "sampled by python", "answered by python");
    }
}

fn ts_client(target: &[String]) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let modules = root.join(".ci/peers/node_modules");
    let node = modules.join(".bin/node");
    assert!(node.exists(), "no {} (run .ci/run once)", node.display());
    let mut command = Command::new(node);
    command
        .arg(root.join("tests/peers/ts_client.mjs"))
        .arg(&modules)
        .args(target);
    run_client(command, "the TypeScript SDK client")
}

#[test]
#[ignore = "needs the TypeScript SDK in .ci/peers"]
fn the_typescript_sdk_client_is_served_over_stdio_and_http() {
    let seen = ts_client(&stdio_demo_args(false));
    assert_served(&seen, "sampled by typescript", "answered by typescript");
    let (_server, url) = http_demo();
    let seen = ts_client(&[url]);
    assert_served(&seen, "sampled by typescript", "answered by typescript");
}

#[derive(Debug)]
struct Sampler;

impl SamplingHandler for Sampler {
    fn create_message(
        &self,
        _server: &str,
        _request: SamplingRequest,
    ) -> BoxFuture<Result<SamplingResponse, String>> {
        Box::pin(async {
            Ok(SamplingResponse::new(
                "runtime-model",
                [Content::text("sampled by switchboard")],
            ))
        })
    }
}

#[derive(Debug)]
struct Elicit;

impl ElicitationHandler for Elicit {
    fn elicit(
        &self,
        _server: &str,
        _request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let mut content = serde_json::Map::new();
        content.insert("response".to_owned(), json!("answered by switchboard"));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

async fn runtime_is_served(config: ServerConfig, era: Era) {
    let handlers = ClientHandlers::new().sampling(Sampler).elicitation(Elicit);
    let config = config
        .client_handlers(handlers)
        .restart(RestartPolicy::off())
        .timeout(Duration::from_secs(20));
    let rt = Runtime::builder()
        .server("demo", config)
        .build()
        .await
        .expect("a runtime");
    let server = rt.server("demo").expect("the server");
    let status = server.wait_started().await;
    assert_eq!(status.era, Some(era), "{status:?}");
    let tools = server.tools();
    assert!(tools.iter().any(|t| t.name == "test_sampling"), "{tools:?}");
    let echo = server
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "hi");
    let sampled = server
        .call_tool("test_sampling", json!({"prompt": "p"}))
        .await
        .unwrap();
    assert_eq!(sampled.text(), "LLM response: sampled by switchboard");
    let elicited = server
        .call_tool("test_elicitation", json!({"message": "m"}))
        .await
        .unwrap();
    assert!(
        elicited.text().starts_with("User response: action=accept")
            && elicited.text().contains("answered by switchboard"),
        "{}",
        elicited.text()
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn switchboards_runtime_is_served_over_stdio_and_http_in_both_eras() {
    for (protocol, modern, era) in [
        (Protocol::Auto, false, Era::Legacy),
        (Protocol::Auto, true, Era::Modern),
    ] {
        let args = stdio_demo_args(modern);
        let config = ServerConfig::stdio(&args[0])
            .args(&args[1..])
            .protocol(protocol);
        runtime_is_served(config.into(), era).await;
    }
    let (_server, url) = http_demo();
    for (protocol, era) in [
        (Protocol::Legacy, Era::Legacy),
        (Protocol::Auto, Era::Modern),
    ] {
        let config = ServerConfig::http(url.as_str(), HttpKind::StreamableHttp).protocol(protocol);
        runtime_is_served(config.into(), era).await;
    }
}

/// rmcp's client, answering sampling and elicitation.
#[derive(Debug, Clone)]
struct RmcpClient;

// Sampling is deprecated in 2026-07-28, and still served in both eras: the test answers it.
#[allow(deprecated)]
impl rmcp::ClientHandler for RmcpClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        capabilities.elicitation = Some(Default::default());
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("rmcp-interop", "1.0.0"),
        )
    }

    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        Ok(rmcp::model::CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text("sampled by rmcp"),
            "rmcp-model".to_owned(),
        ))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"response": "answered by rmcp"})),
        )
    }
}

pub(crate) async fn rmcp_is_served<T, E, A>(transport: T)
where
    T: rmcp::transport::IntoTransport<rmcp::RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::ServiceExt;
    let client = RmcpClient.serve(transport).await.expect("rmcp's handshake");
    let text = |result: rmcp::model::CallToolResult| {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<String>()
    };
    let call = |name: &str, args: Value| {
        let args = args.as_object().cloned().unwrap_or_default();
        rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(args)
    };
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    let seen = json!({
        "tools": names,
        "echo": text(client.call_tool(call("echo", json!({"text": "hi"}))).await.unwrap()),
        "sampling": text(client.call_tool(call("test_sampling", json!({"prompt": "p"}))).await.unwrap()),
        "elicitation": text(client.call_tool(call("test_elicitation", json!({"message": "m"}))).await.unwrap()),
    });
    assert_served(&seen, "sampled by rmcp", "answered by rmcp");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn rmcps_client_is_served_over_stdio_and_http() {
    let args = stdio_demo_args(false);
    let mut command = tokio::process::Command::new(&args[0]);
    command.args(&args[1..]);
    let child = rmcp::transport::TokioChildProcess::new(command).expect("spawn the demo server");
    rmcp_is_served(child).await;
    let (_server, url) = http_demo();
    let http = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
    rmcp_is_served(http).await;
}
