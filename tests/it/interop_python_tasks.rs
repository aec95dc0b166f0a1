//! The 2026-07-28 tasks extension against the official Python SDK: `tests/peers/
//! python_tasks_server.py` is the extension on the SDK's extension mechanism (the SDK has
//! no tasks extension of its own). A call of `research` comes back as a task; the runtime
//! polls it, answers its inline elicitation with `tasks/update`, and returns its inline
//! result; over Streamable HTTP every `tasks/*` request must name the task in `Mcp-Name`
//! (the peer refuses it otherwise).
//!
//! `#[ignore = "needs …"]` (see `interop.rs`).

use std::time::Duration;

use serde_json::json;
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::task::{TaskOrResult, TaskShape};
use switchboard::transport::HttpKind;
use switchboard::ErrorKind;
use switchboard::{Era, Liveness, RestartPolicy, Runtime, ServerConfig};

use crate::peers::{python, python_tasks_script, ListeningPeer};

/// Answers the clarification with `historical`.
#[derive(Debug)]
struct Historical;

impl ElicitationHandler for Historical {
    fn elicit(
        &self,
        _server: &str,
        _request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let mut content = serde_json::Map::new();
        content.insert("interpretation".into(), json!("historical"));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

async fn runtime(config: impl Into<ServerConfig>) -> Runtime {
    let config = config
        .into()
        .client_handlers(ClientHandlers::new().elicitation(Historical))
        .restart(RestartPolicy::off())
        .liveness(Liveness::off())
        // A cold interpreter importing pydantic on a busy two-core machine takes seconds.
        .startup_timeout(Duration::from_secs(60))
        .timeout(Duration::from_secs(20));
    Runtime::builder()
        .server("python", config)
        .build()
        .await
        .unwrap()
}

async fn research(rt: &Runtime) {
    let server = rt.server("python").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert_eq!(server.status().era, Some(Era::Modern));
    assert_eq!(server.task_shape(), Some(TaskShape::Extension));

    let plain = server
        .call_tool("research", json!({"topic": "tides"}))
        .await
        .unwrap();
    assert_eq!(plain.text(), "# Research Report: tides");

    let asked = server
        .call_tool("research", json!({"topic": "tides", "ambiguous": true}))
        .await
        .unwrap();
    assert_eq!(asked.text(), "# Research Report: tides (historical)");

    // As a handle, cancelled: the server acknowledges, and the task ends cancelled.
    let TaskOrResult::Task(task) = server
        .call_tool("research", json!({"topic": "reefs", "ambiguous": true}))
        .as_task()
        .await
        .unwrap()
    else {
        panic!("the extension answers `research` with a task")
    };
    task.cancel().await.unwrap();
    match task.result().await {
        Err(e) if matches!(e.kind(), ErrorKind::TaskCancelled { .. }) => {}
        // The task may have finished between the call and the cancel.
        Ok(report) => assert!(report.text().starts_with("# Research Report: reefs")),
        Err(other) => panic!("expected the task cancelled, got {other:?}"),
    }
}

#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON; .ci/run installs it)"]
async fn interop_python_tasks_extension_over_stdio() {
    let rt = runtime(ServerConfig::stdio(python()).arg(python_tasks_script())).await;
    research(&rt).await;
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the Python SDK in .ci/venv (SWITCHBOARD_PYTHON; .ci/run installs it)"]
async fn interop_python_tasks_extension_over_streamable_http() {
    let port = crate::peers::free_port();
    let mut command = std::process::Command::new(python());
    command
        .arg(python_tasks_script())
        .args(["--http", &port.to_string()]);
    let peer = ListeningPeer::start(command, port, "the Python SDK tasks server");
    let rt = runtime(ServerConfig::http(
        peer.url("/mcp"),
        HttpKind::StreamableHttp,
    ))
    .await;
    research(&rt).await;
    rt.shutdown().await;
}
