//! `switchboard serve` against clients nobody here wrote: the Python SDK (both eras), the
//! TypeScript SDK and the Rust SDK (rmcp), over stdio and over Streamable HTTP, through the
//! gateway to the demo server's conformance fixture (over stdio, names passed through, in the handshake era, and
//! over HTTP in the stateless one too). The fixture's sampling and elicitation reach the
//! client that called, and its answers go back.
//!
//! The Python SDK (in `.ci/venv`) and the TypeScript SDK (in `.ci/peers`) are
//! `#[ignore = "needs …"]`, as the other interop tests; rmcp's client, a dependency, runs in
//! every `cargo test`. The gateway is the `switchboard` binary of this build
//! ([`switchboard_bin`] builds it when it is missing or out of date).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::interop_server::{assert_served, rmcp_is_served, run_client};
use crate::own_binary::switchboard_bin;
use crate::peers::{free_port, python, ListeningPeer};

/// A config file whose one server is the conformance fixture (handshake era, or stateless
/// with `modern`), in a folder of its own.
fn config_file(name: &str, modern: bool) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-interop-gateway-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("gateway.json");
    let config = match modern {
        false => serde_json::json!({"mcpServers": {"conformance": {
            "command": switchboard_bin(),
            "args": ["demo-server", "--conformance"],
        }}}),
        true => serde_json::json!({"mcpServers": {"conformance": {
            "command": switchboard_bin(),
            "args": ["demo-server", "--conformance", "--modern"],
            "protocol": "modern",
        }}}),
    };
    std::fs::write(&path, config.to_string()).expect("the config file");
    path
}

/// `switchboard serve -c FILE` as a command line, for a client that starts it.
fn stdio_gateway(name: &str) -> Vec<String> {
    vec![
        switchboard_bin().display().to_string(),
        "serve".to_owned(),
        "-c".to_owned(),
        config_file(name, false).display().to_string(),
    ]
}

/// `switchboard serve --listen` on a free port; stopped on drop.
fn http_gateway(name: &str, modern: bool) -> (ListeningPeer, String) {
    let port = free_port();
    let mut command = Command::new(switchboard_bin());
    command
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "-c"])
        .arg(config_file(name, modern));
    let peer = ListeningPeer::start(command, port, "switchboard serve --listen");
    (peer, format!("http://127.0.0.1:{port}/mcp"))
}

/// What every client must have seen through the gateway: the fixture's tools, their
/// results, and its sampling and elicitation answered by this client.
fn assert_forwarded(seen: &Value, client: &str) {
    assert_served(
        seen,
        &format!("sampled by {client}"),
        &format!("answered by {client}"),
    );
    assert_eq!(
        seen["simple"], "This is a simple text response for testing.",
        "{seen}"
    );
}

fn python_client(mode: &str, target: &[String]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/python_client.py");
    let mut command = Command::new(python());
    command.arg(script).arg(mode).args(target);
    run_client(
        command,
        &format!("the Python SDK client ({mode}) through serve"),
    )
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
fn the_python_sdk_client_is_served_through_the_gateway_over_stdio_in_both_eras() {
    for mode in ["legacy", "auto", "2026-07-28"] {
        let seen = python_client(mode, &stdio_gateway(&format!("python-stdio-{mode}")));
        assert_forwarded(&seen, "python");
    }
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
fn the_python_sdk_client_finds_and_calls_through_the_gateways_meta_tools() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/python_discovery_client.py");
    let mut gateway = stdio_gateway("python-discovery");
    gateway.extend(["--discovery".to_owned(), "search".to_owned()]);
    for mode in ["legacy", "2026-07-28"] {
        let mut command = Command::new(python());
        command.arg(&script).arg(mode).args(&gateway);
        let seen = run_client(
            command,
            &format!("the Python SDK client ({mode}) through serve --discovery"),
        );
        assert_eq!(
            seen["tools"],
            serde_json::json!(["search_tools", "call_tool"]),
            "{mode}: {seen}"
        );
        assert_eq!(seen["search_output_schema"], true, "{mode}: {seen}");
        assert_eq!(
            seen["found"]["report progress notifications"][0], "test_tool_with_progress",
            "{mode}: {seen}"
        );
        assert!(
            seen["found"]["elicitation user input request"]
                .as_array()
                .is_some_and(|found| found.iter().any(|n| n == "test_elicitation")),
            "{mode}: {seen}"
        );
        assert_eq!(seen["progress"], 3, "{mode}: {seen}");
        assert_eq!(seen["progress_error"], false, "{mode}: {seen}");
        assert!(
            seen["elicitation"]
                .as_str()
                .is_some_and(|t| t.contains("answered by python")),
            "{mode}: {seen}"
        );
    }
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
fn the_python_sdk_client_is_served_through_the_gateway_over_http_in_both_eras() {
    for upstream_modern in [false, true] {
        let (_gateway, url) =
            http_gateway(&format!("python-http-{upstream_modern}"), upstream_modern);
        for mode in ["legacy", "auto", "2026-07-28"] {
            let seen = python_client(mode, std::slice::from_ref(&url));
            assert_forwarded(&seen, "python");
        }
    }
}

#[test]
#[ignore = "needs the TypeScript SDK in .ci/peers"]
fn the_typescript_sdk_client_is_served_through_the_gateway_over_stdio_and_http() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let modules = root.join(".ci/peers/node_modules");
    let node = modules.join(".bin/node");
    assert!(node.exists(), "no {} (run .ci/run once)", node.display());
    let client = |target: &[String]| {
        let mut command = Command::new(&node);
        command
            .arg(root.join("tests/peers/ts_client.mjs"))
            .arg(&modules)
            .args(target);
        run_client(command, "the TypeScript SDK client through serve")
    };
    assert_forwarded(&client(&stdio_gateway("typescript-stdio")), "typescript");
    let (_gateway, url) = http_gateway("typescript-http", true);
    assert_forwarded(&client(&[url]), "typescript");
}

#[tokio::test]
async fn the_rust_sdk_client_is_served_through_the_gateway_over_stdio_and_http() {
    let stdio = stdio_gateway("rmcp-stdio");
    let mut command = tokio::process::Command::new(&stdio[0]);
    command.args(&stdio[1..]);
    let child = rmcp::transport::TokioChildProcess::new(command).expect("spawn serve");
    rmcp_is_served(child).await;
    for upstream_modern in [false, true] {
        let (_gateway, url) =
            http_gateway(&format!("rmcp-http-{upstream_modern}"), upstream_modern);
        rmcp_is_served(rmcp::transport::StreamableHttpClientTransport::from_uri(
            url,
        ))
        .await;
    }
}
