//! Tasks against servers nobody here wrote: server-everything's task-only
//! `simulate-research-query` (2025-11-25 tasks), over stdio and Streamable HTTP, plain and
//! `ambiguous` (the task asks the client for a clarification with `elicitation/create` while
//! `tasks/result` is pending), and as a handle whose states are watched; and its `…-async`
//! triggers, where the runtime is the task receiver (in `interop_everything`).
//!
//! `#[ignore = "needs …"]` (see `interop.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::task::{TaskOrResult, TaskShape, TaskStatus};
use switchboard::transport::HttpKind;
use switchboard::{Runtime, ServerConfig};
use tokio_stream::StreamExt;

use crate::interop::{one_server_runtime, HttpPeer};

/// Picks the second interpretation offered (the schema's `oneOf` consts) and records the
/// questions.
#[derive(Debug, Default, Clone)]
struct Clarify {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ElicitationHandler for Clarify {
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let offered = request.requested_schema["properties"]["interpretation"]["oneOf"]
            .as_array()
            .and_then(|o| o.get(1))
            .and_then(|o| o.get("const"))
            .cloned()
            .unwrap_or(Value::Null);
        self.asked.lock().unwrap().push(request.message);
        let mut content = serde_json::Map::new();
        content.insert("interpretation".into(), offered);
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

fn everything_stdio() -> ServerConfig {
    let bin = crate::peers::npm_bin("mcp-server-everything");
    assert!(bin.exists(), "peer not installed at {}", bin.display());
    ServerConfig::stdio(&bin).arg("stdio").into()
}

/// `simulate-research-query`'s stages, as its status messages name them.
const STAGES: [&str; 4] = [
    "Gathering sources",
    "Analyzing content",
    "Synthesizing findings",
    "Generating report",
];

async fn research(rt: &Runtime, clarify: &Clarify) {
    let server = rt.server("everything").unwrap();
    // `simulate-research-query` comes with the conditional tools, after `initialized`.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !server
        .tools()
        .iter()
        .any(|t| t.name == "simulate-research-query")
    {
        assert!(std::time::Instant::now() < deadline, "no research tool");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.task_shape(), Some(TaskShape::Experimental));

    // Plain: the call runs the task (four stages of a second) to its report.
    let plain = server
        .call_tool("simulate-research-query", json!({"topic": "tides"}))
        .await
        .unwrap();
    let text = plain.text();
    assert!(text.contains("# Research Report: tides"), "{text}");
    assert!(clarify.asked.lock().unwrap().is_empty());

    // Ambiguous: the task asks which interpretation; the handler's choice is in the report.
    let ambiguous = server
        .call_tool(
            "simulate-research-query",
            json!({"topic": "tides", "ambiguous": true}),
        )
        .await
        .unwrap();
    let text = ambiguous.text();
    assert!(
        text.contains("# Research Report: tides (historical)"),
        "{text}"
    );
    let asked = clarify.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("multiple interpretations"), "{asked:?}");

    // As a handle: the states the server goes through, then the same report.
    let TaskOrResult::Task(task) = server
        .call_tool("simulate-research-query", json!({"topic": "reefs"}))
        .as_task()
        .await
        .unwrap()
    else {
        panic!("server-everything runs the research as a task")
    };
    let mut updates = task.updates();
    let mut messages = Vec::new();
    let mut last = None;
    while let Some(state) = updates.next().await {
        messages.extend(state.message.clone());
        last = Some(state.status);
    }
    assert_eq!(last, Some(TaskStatus::Completed));
    // The server's stages last a second each and it asks for a poll a second: a poll can
    // land on either side of a stage's change, so which stages are seen is up to timing.
    // What holds is that each one seen is a stage, they come in order, and more than one is.
    let stage = |m: &String| STAGES.iter().position(|s| m.starts_with(s));
    let seen: Vec<usize> = messages
        .iter()
        .map(|m| stage(m).unwrap_or_else(|| panic!("not a stage: {m:?} in {messages:?}")))
        .collect();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{messages:?}");
    assert!(seen.first() < seen.last(), "one stage only: {messages:?}");
    let report = task.result().await.unwrap();
    assert!(report.text().contains("# Research Report: reefs"));
    assert!(server.tasks().is_empty());
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn interop_everything_research_runs_as_a_task_over_stdio() {
    let clarify = Clarify::default();
    let config =
        everything_stdio().client_handlers(ClientHandlers::new().elicitation(clarify.clone()));
    let rt = one_server_runtime(config).await;
    research(&rt, &clarify).await;
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn interop_everything_research_runs_as_a_task_over_streamable_http() {
    let peer = HttpPeer::everything("streamableHttp");
    let clarify = Clarify::default();
    let config = ServerConfig::http(peer.url("/mcp"), HttpKind::StreamableHttp)
        .client_handlers(ClientHandlers::new().elicitation(clarify.clone()));
    let rt = one_server_runtime(config).await;
    research(&rt, &clarify).await;
    rt.shutdown().await;
}
