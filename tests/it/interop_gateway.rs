//! `switchboard serve` against clients nobody here wrote: the Python SDK (both eras) and the
//! TypeScript SDK, over stdio and over Streamable HTTP, through the gateway to the demo
//! server's conformance fixture (over stdio, names passed through). The tools that ask the
//! client for input are left out: the gateway does not forward such requests yet.
//!
//! `#[ignore = "needs …"]`, as the other interop tests: the Python SDK in `.ci/venv`, the
//! TypeScript SDK in `.ci/peers`; the gateway is the `switchboard` binary of this build.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::interop_server::{run_client, switchboard_bin};
use crate::peers::{free_port, python, ListeningPeer};

/// A config file whose one server is the conformance fixture, in a folder of its own.
fn config_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-interop-gateway-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("gateway.json");
    let config = serde_json::json!({"mcpServers": {"conformance": {
        "command": switchboard_bin(),
        "args": ["demo-server", "--conformance"],
    }}});
    std::fs::write(&path, config.to_string()).expect("the config file");
    path
}

/// `switchboard serve -c FILE` as a command line, for a client that starts it.
fn stdio_gateway(name: &str) -> Vec<String> {
    vec![
        switchboard_bin().display().to_string(),
        "serve".to_owned(),
        "-c".to_owned(),
        config_file(name).display().to_string(),
    ]
}

/// `switchboard serve --listen` on a free port; stopped on drop.
fn http_gateway(name: &str) -> (ListeningPeer, String) {
    let port = free_port();
    let mut command = Command::new(switchboard_bin());
    command
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "-c"])
        .arg(config_file(name));
    let peer = ListeningPeer::start(command, port, "switchboard serve --listen");
    (peer, format!("http://127.0.0.1:{port}/mcp"))
}

/// What every client must have seen through the gateway.
fn assert_forwarded(seen: &Value) {
    let tools = seen["tools"].as_array().expect("tools");
    for name in ["echo", "test_simple_text", "test_sampling"] {
        assert!(tools.iter().any(|t| t == name), "{name} in {seen}");
    }
    assert_eq!(seen["echo"], "hi", "{seen}");
    assert_eq!(
        seen["simple"], "This is a simple text response for testing.",
        "{seen}"
    );
}

fn python_client(mode: &str, target: &[String]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/python_client.py");
    let mut command = Command::new(python());
    command.arg(script).arg("--no-input").arg(mode).args(target);
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
        assert_forwarded(&seen);
    }
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON)"]
fn the_python_sdk_client_is_served_through_the_gateway_over_http_in_both_eras() {
    let (_gateway, url) = http_gateway("python-http");
    for mode in ["legacy", "auto", "2026-07-28"] {
        let seen = python_client(mode, std::slice::from_ref(&url));
        assert_forwarded(&seen);
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
            .arg("--no-input")
            .args(target);
        run_client(command, "the TypeScript SDK client through serve")
    };
    assert_forwarded(&client(&stdio_gateway("typescript-stdio")));
    let (_gateway, url) = http_gateway("typescript-http");
    assert_forwarded(&client(&[url]));
}
