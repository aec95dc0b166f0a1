//! Interop with a server on the official Python SDK (`mcp` 2.3.0, pinned by `.ci/run`), over
//! stdio: `tests/peers/python_server.py`.
//!
//! Runs only with `SWITCHBOARD_INTEROP=1` and `SWITCHBOARD_PYTHON` set to the interpreter of
//! the venv `.ci/run` creates (`.ci/venv/bin/python`); otherwise each test says why it skips.
//! The SDK answers `initialize` in the handshake era (it speaks 2026-07-28 only to clients
//! that ask for it), so nothing is pinned for the runtime's 2025-11-25.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use switchboard::model::{Content, ResourceContents};
use switchboard::{Error, Liveness, RestartPolicy, Runtime, ServerConfig, ServerHandle};

use crate::interop::enabled;

/// The interpreter to run the server with, or why the test skips.
fn python() -> Option<PathBuf> {
    if !enabled() {
        eprintln!("skipped: set SWITCHBOARD_INTEROP=1 and SWITCHBOARD_PYTHON (`.ci/run` does)");
        return None;
    }
    match std::env::var_os("SWITCHBOARD_PYTHON") {
        Some(python) if !python.is_empty() => Some(PathBuf::from(python)),
        _ => {
            eprintln!(
                "skipped: SWITCHBOARD_PYTHON is unset (the python of a venv with mcp==2.3.0, \
                 as `.ci/run` creates in .ci/venv)"
            );
            None
        }
    }
}

/// A runtime with the Python server (named `python`), ready, and its handle.
async fn python_runtime(python: PathBuf) -> (Runtime, ServerHandle) {
    assert!(
        python.exists(),
        "SWITCHBOARD_PYTHON: no {}",
        python.display()
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/python_server.py");
    let config = ServerConfig::stdio(python)
        .arg(script)
        .restart(RestartPolicy::off())
        .liveness(Liveness::off())
        // A cold interpreter importing pydantic on a busy two-core machine takes seconds.
        .startup_timeout(Duration::from_secs(60))
        .timeout(Duration::from_secs(20));
    let rt = Runtime::builder()
        .server("python", config)
        .build()
        .await
        .unwrap();
    let server = rt.server("python").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("switchboard-python-peer")
    );
    (rt, server)
}

#[tokio::test]
async fn interop_python_sdk_resource_prompt_and_typed_tool_over_stdio() {
    let Some(python) = python() else { return };
    let (rt, server) = python_runtime(python).await;

    let resources = server.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["python://static/greeting"]);
    let read = server
        .read_resource("python://static/greeting")
        .await
        .unwrap();
    match &read.contents[..] {
        [ResourceContents::Text(text)] => {
            assert_eq!(text.text, "Hello from the official Python SDK.");
            assert_eq!(text.mime_type.as_deref(), Some("text/plain"));
        }
        other => panic!("expected one text part, got {other:?}"),
    }
    assert!(matches!(
        server.read_resource("python://static/no-such").await,
        Err(Error::ResourceNotFound { .. })
    ));

    let prompts = server.list_prompts().await.unwrap();
    let prompt = prompts
        .iter()
        .find(|p| p.name == "forecast_request")
        .unwrap_or_else(|| panic!("forecast_request not listed: {prompts:?}"));
    assert_eq!(prompt.required_arguments().collect::<Vec<_>>(), ["city"]);
    let got = server
        .get_prompt("forecast_request", [("city", "Oslo"), ("days", "3")])
        .await
        .unwrap();
    match &got.messages[..] {
        [message] => match &message.content {
            Content::Text(text) => assert_eq!(
                text.text,
                "What will the weather be in Oslo for the next 3 day(s)?"
            ),
            other => panic!("expected text, got {other:?}"),
        },
        other => panic!("expected one message, got {other:?}"),
    }

    let tool = server
        .tools()
        .iter()
        .find(|t| t.name == "forecast")
        .cloned()
        .expect("forecast listed");
    let schema = tool
        .output_schema
        .expect("the return annotation gives an outputSchema");
    assert_eq!(schema["properties"]["temperature_c"]["type"], "number");
    let result = server
        .call_tool("forecast", json!({"city": "Oslo", "days": 2}))
        .await
        .unwrap();
    assert!(!result.is_error(), "{}", result.text());
    assert_eq!(
        result.structured_content,
        Some(json!({"city": "Oslo", "temperature_c": 14.5, "conditions": ["cloudy", "windy"]}))
    );
    assert_eq!(result.output_schema_mismatch, None);
    rt.shutdown().await;
}

#[tokio::test]
async fn interop_python_sdk_output_schema_mismatch_is_reported() {
    let Some(python) = python() else { return };
    let (rt, server) = python_runtime(python).await;
    assert!(server
        .tools()
        .iter()
        .any(|t| t.name == "broken_forecast" && t.output_schema.is_some()));
    // The server publishes Forecast's schema and answers a string temperature: a result all
    // the same, with the mismatch reported.
    let result = server
        .call_tool("broken_forecast", json!({"city": "Oslo"}))
        .await
        .unwrap();
    assert!(!result.is_error(), "{}", result.text());
    assert_eq!(result.text(), "Oslo: cold");
    assert_eq!(
        result
            .structured_content
            .as_ref()
            .map(|s| &s["temperature_c"]),
        Some(&json!("cold"))
    );
    let why = result
        .output_schema_mismatch
        .expect("a structuredContent that does not match the outputSchema is reported");
    assert!(why.contains("temperature_c"), "{why}");
    rt.shutdown().await;
}
