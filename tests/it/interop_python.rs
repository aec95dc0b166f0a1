//! Interop with a server on the official Python SDK (`mcp` 2.3.0, pinned by `.ci/run`), over
//! stdio: `tests/peers/python_server.py`.
//!
//! `#[ignore = "needs …"]`: the interpreter is `SWITCHBOARD_PYTHON`, else the venv `.ci/run`
//! creates (`.ci/venv/bin/python`); a missing one fails the test.
//! The SDK speaks both eras: `auto` (the default) finds 2026-07-28 with `server/discover`,
//! `legacy` runs `initialize` with 2025-11-25; the same checks run in both.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::model::{Content, ResourceContents};
use switchboard::ErrorKind;
use switchboard::{Era, Liveness, Protocol, RestartPolicy, Runtime, ServerConfig, ServerHandle};

use crate::peers::python;

/// A runtime with the Python server (named `python`) spoken to in `protocol`'s era, ready,
/// and its handle.
async fn python_runtime(
    python: PathBuf,
    protocol: Protocol,
    handlers: Option<ClientHandlers>,
) -> (Runtime, ServerHandle) {
    python_runtime_with(python, protocol, handlers, |c| c).await
}

/// [`python_runtime`], with more settings from `tune`.
async fn python_runtime_with(
    python: PathBuf,
    protocol: Protocol,
    handlers: Option<ClientHandlers>,
    tune: impl FnOnce(ServerConfig) -> ServerConfig,
) -> (Runtime, ServerHandle) {
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
        .timeout(Duration::from_secs(20))
        .protocol(protocol);
    let config = match handlers {
        Some(handlers) => config.client_handlers(handlers),
        None => config,
    };
    let config = tune(config.into());
    let rt = Runtime::builder()
        .server("python", config)
        .build()
        .await
        .unwrap();
    let server = rt.server("python").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    let (era, version) = match protocol {
        Protocol::Legacy => (Era::Legacy, "2025-11-25"),
        _ => (Era::Modern, "2026-07-28"),
    };
    assert_eq!(status.era, Some(era));
    assert_eq!(status.protocol_version.as_deref(), Some(version));
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("switchboard-python-peer")
    );
    (rt, server)
}

#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
async fn interop_python_sdk_resource_prompt_and_typed_tool_over_stdio_modern() {
    let python = python();
    let (rt, server) = python_runtime(python, Protocol::Auto, None).await;
    resource_prompt_and_typed_tool(&server).await;
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
async fn interop_python_sdk_resource_prompt_and_typed_tool_over_stdio_legacy() {
    let python = python();
    let (rt, server) = python_runtime(python, Protocol::Legacy, None).await;
    resource_prompt_and_typed_tool(&server).await;
    rt.shutdown().await;
}

async fn resource_prompt_and_typed_tool(server: &ServerHandle) {
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
        Err(e) if matches!(e.kind(), ErrorKind::ResourceNotFound { .. })
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
}

#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
async fn interop_python_sdk_output_schema_mismatch_is_reported() {
    let python = python();
    let (rt, server) = python_runtime(python, Protocol::Auto, None).await;
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

/// Confirms every booking and records the questions.
#[derive(Debug, Clone, Default)]
struct Confirm {
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ElicitationHandler for Confirm {
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        self.asked.lock().unwrap().push(request.message);
        let mut content = serde_json::Map::new();
        content.insert("confirm".into(), json!(true));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

/// The same elicitation handler answers the SDK's input-required round (modern) and its
/// `elicitation/create` request (legacy).
#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
async fn interop_python_sdk_elicitation_in_both_eras() {
    let python = python();
    for protocol in [Protocol::Auto, Protocol::Legacy] {
        let confirm = Confirm::default();
        let handlers = ClientHandlers::new().elicitation(confirm.clone());
        let (rt, server) = python_runtime(python.clone(), protocol, Some(handlers)).await;
        let result = server
            .call_tool("book_trip", json!({"city": "Oslo"}))
            .await
            .unwrap();
        assert_eq!(result.text(), "booked Oslo", "{protocol}");
        assert_eq!(*confirm.asked.lock().unwrap(), ["Book a trip to Oslo?"]);
        rt.shutdown().await;
    }
}

/// Without an elicitation handler the modern SDK refuses with -32021; a cap of no rounds
/// stops at the first input-required result.
#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
async fn interop_python_sdk_modern_typed_errors() {
    let python = python();
    let (rt, server) = python_runtime(python.clone(), Protocol::Modern, None).await;
    let err = server
        .call_tool("book_trip", json!({"city": "Oslo"}))
        .await
        .unwrap_err();
    let ErrorKind::MissingClientCapability { missing, .. } = err.kind() else {
        panic!("{err:?}")
    };
    assert_eq!(&missing[..], ["elicitation"]);
    assert_eq!(err.tool(), Some("book_trip"));
    rt.shutdown().await;

    // A cap of no rounds: the first input-required result is already one too many.
    let handlers = ClientHandlers::new().elicitation(Confirm::default());
    let (rt, server) = python_runtime_with(python, Protocol::Modern, Some(handlers), |c| {
        c.max_input_rounds(0)
    })
    .await;
    let err = server
        .call_tool("book_trip", json!({"city": "Oslo"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InputLoop { rounds: 0 }) && err.tool() == Some("book_trip"),
        "{err:?}"
    );
    rt.shutdown().await;
}

/// 2026-07-28: the SDK serves `subscriptions/listen`; a tools list change and an update of
/// a subscribed resource published by a tool reach the catalogue and the subscriber.
#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
async fn interop_python_sdk_modern_listen_delivers_list_changes_and_resource_updates() {
    let python = python();
    let (rt, server) = python_runtime(python, Protocol::Modern, None).await;
    let mut updates = server.subscribe("python://static/greeting").await.unwrap();
    let touched = server.call_tool("touch_greeting", json!({})).await.unwrap();
    assert_eq!(touched.text(), "touched");
    let update = tokio::time::timeout(Duration::from_secs(20), updates.recv())
        .await
        .expect("an update in time")
        .unwrap();
    assert_eq!(update.uri, "python://static/greeting");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !server.tools().iter().any(|t| t.name == "late_tool") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tools were not listed again after the list change"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    rt.shutdown().await;
}
