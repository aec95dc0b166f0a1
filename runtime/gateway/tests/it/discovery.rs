//! Discovery mode seen from front clients: the two meta-tools listed instead of the
//! catalogue, a search that finds, a call through `call_tool` that carries progress, an
//! elicitation and sampling to the front client in both eras and is cancelled as a direct
//! call is, arguments checked against the target's schema, the threshold crossed both ways
//! with `list_changed`, and an upstream tool that has a meta-tool's name. Per-client tool lists need the HTTP front's auth: they are the
//! CLI's tests (`gateway_discovery.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
    SamplingHandler, SamplingRequest, SamplingResponse,
};
use switchboard::model::Content;
use switchboard::{Protocol, Runtime, ServerConfig, ServerHandle};
use switchboard_gateway::discovery::{CALL_TOOL, SEARCH_TOOL};
use switchboard_gateway::{upstream_handlers, Discovery, Front, Gateway};

use crate::support::{demo, in_memory, RawFront, WAIT};

const ERAS: [Protocol; 2] = [Protocol::Legacy, Protocol::Modern];

/// Fills in every form with one name.
#[derive(Debug)]
struct Alice;

impl ElicitationHandler for Alice {
    fn elicit(
        &self,
        _server: &str,
        _request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let mut content = serde_json::Map::new();
        content.insert("response".into(), json!("alice"));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

/// A runtime over `servers`, its upstreams' requests sent to the front clients.
async fn upstream(servers: Vec<(&str, ServerConfig)>) -> Runtime {
    let mut builder = Runtime::builder().client_handlers(upstream_handlers());
    for (name, config) in servers {
        builder = builder.server(name, config);
    }
    builder.build().await.expect("the upstream runtime")
}

/// A front client of `served` in `era`, with `handlers`.
async fn client(
    served: &Front,
    era: Protocol,
    handlers: ClientHandlers,
) -> (Runtime, ServerHandle) {
    crate::support::front_client(served, era, handlers).await
}

fn listed(gateway: &ServerHandle) -> Vec<String> {
    gateway
        .status()
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

/// The matches a search answered, from its `structuredContent`.
async fn search(gateway: &ServerHandle, query: &str) -> Vec<Value> {
    let result = tokio::time::timeout(
        WAIT,
        gateway.call_tool(SEARCH_TOOL, json!({"query": query, "limit": 5})),
    )
    .await
    .expect("in time")
    .expect("a search");
    assert!(!result.is_error(), "{}", result.text());
    let structured = result.structured_content.clone().expect("structured");
    // The text block says the same, for clients that read only text.
    let text: Value = serde_json::from_str(&result.text()).expect("JSON text");
    assert_eq!(text, structured);
    structured["tools"].as_array().expect("tools").clone()
}

/// Waits until the front client, told `list_changed`, has relisted what `want` accepts.
async fn relisted(front: &Runtime, gateway: &ServerHandle, want: impl Fn(&[String]) -> bool) {
    let mut watch = front.watch();
    tokio::time::timeout(WAIT, async {
        while !want(&listed(gateway)) {
            assert!(watch.changed().await, "the front runtime is gone");
        }
    })
    .await
    .expect("the front client heard list_changed and relisted");
}

fn names(matches: &[Value]) -> Vec<&str> {
    matches.iter().filter_map(|m| m["name"].as_str()).collect()
}

#[tokio::test]
async fn a_tool_is_found_then_called_through_call_tool_with_progress_and_an_elicitation() {
    let upstream = upstream(vec![("fixture", demo(&["--conformance"]))]).await;
    let served = Gateway::with_discovery(upstream.clone(), Discovery::Search)
        .serve(switchboard_server::Options::default());
    for era in ERAS {
        let (front, gateway) = client(&served, era, ClientHandlers::new().elicitation(Alice)).await;
        assert_eq!(listed(&gateway), [SEARCH_TOOL, CALL_TOOL], "{era:?}");
        let meta = &gateway.status().tools[0];
        assert!(
            meta.output_schema.is_some(),
            "search_tools has an outputSchema"
        );

        let found = search(&gateway, "report progress notifications").await;
        assert_eq!(names(&found)[0], "test_tool_with_progress", "{found:?}");
        let best = &found[0];
        assert_eq!(best["server"], "fixture");
        assert!(best["score"].as_f64().is_some_and(|s| s > 0.0), "{best}");
        assert_eq!(best["definition"]["name"], "test_tool_with_progress");
        assert!(best["definition"]["inputSchema"].is_object(), "{best}");

        let progress = Arc::new(AtomicUsize::new(0));
        let seen = progress.clone();
        let result = tokio::time::timeout(
            WAIT,
            gateway
                .call_tool(
                    CALL_TOOL,
                    json!({"name": "test_tool_with_progress", "arguments": {}}),
                )
                .on_progress(move |_| {
                    seen.fetch_add(1, Ordering::SeqCst);
                }),
        )
        .await
        .expect("in time")
        .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert!(!result.is_error(), "{era:?}: {}", result.text());
        assert_eq!(progress.load(Ordering::SeqCst), 3, "{era:?}");

        let found = search(&gateway, "elicitation user input request").await;
        assert!(names(&found).contains(&"test_elicitation"), "{found:?}");
        let result = tokio::time::timeout(
            WAIT,
            gateway.call_tool(
                CALL_TOOL,
                json!({"name": "test_elicitation", "arguments": {"message": "who are you?"}}),
            ),
        )
        .await
        .expect("in time")
        .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert!(
            result.text().contains("alice"),
            "{era:?}: {}",
            result.text()
        );

        // A tool that is not listed is still called by its name.
        let echo = gateway
            .call_tool("echo", json!({"text": "direct"}))
            .await
            .unwrap();
        assert_eq!(echo.text(), "direct");
        front.shutdown().await;
    }
    upstream.shutdown().await;
}

#[tokio::test]
async fn arguments_that_do_not_match_the_schema_are_refused_as_a_direct_call_is() {
    let upstream = upstream(vec![("demo", demo(&[]))]).await;
    let served = Gateway::with_discovery(upstream.clone(), Discovery::Search)
        .serve(switchboard_server::Options::default());
    for era in ERAS {
        let (front, gateway) = client(&served, era, ClientHandlers::new()).await;
        // From 2025-11-25 on (and in the stateless era), as an `isError` result that names
        // the tool, as the upstream answers the same arguments called directly.
        let bad = json!({"a": "one", "b": 2});
        let direct = gateway.call_tool("add", bad.clone()).await.unwrap();
        assert!(direct.is_error(), "{era:?}: {}", direct.text());
        let through = gateway
            .call_tool(CALL_TOOL, json!({"name": "add", "arguments": bad}))
            .await
            .unwrap();
        assert!(through.is_error(), "{era:?}: {}", through.text());
        assert!(
            through
                .text()
                .starts_with("invalid arguments for tool add:"),
            "{era:?}: {}",
            through.text()
        );
        // Good ones reach the tool, whose structured result comes back as it answered it.
        let sum = gateway
            .call_tool(
                CALL_TOOL,
                json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
            )
            .await
            .unwrap();
        assert_eq!(
            sum.structured_content.clone().expect("structured"),
            json!({"sum": 3}),
            "{era:?}"
        );
        // The meta-tool's own arguments are checked the same way.
        let nameless = gateway
            .call_tool(CALL_TOOL, json!({"arguments": {}}))
            .await
            .unwrap();
        assert!(
            nameless.is_error()
                && nameless
                    .text()
                    .contains("invalid arguments for tool call_tool"),
            "{era:?}: {}",
            nameless.text()
        );
        // A tool nobody offers is the error its direct call is (the front runtime's message
        // names the tool it called, then what the gateway answered).
        let answered = |e: switchboard::Error| {
            let e = e.to_string();
            e.split_once(" failed: ")
                .map(|(_, a)| a.to_owned())
                .unwrap_or(e)
        };
        let direct = gateway.call_tool("nothing", json!({})).await.unwrap_err();
        let through = gateway
            .call_tool(CALL_TOOL, json!({"name": "nothing"}))
            .await
            .unwrap_err();
        assert_eq!(answered(through), answered(direct), "{era:?}");
        front.shutdown().await;
    }
    // Before 2025-11-25, arguments that do not validate are -32602.
    let mut raw = RawFront::start(served.server().clone());
    let init = raw
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "old", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let refused = raw
        .request(
            1,
            "tools/call",
            json!({"name": CALL_TOOL, "arguments": {"name": "add", "arguments": {"a": "one"}}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    upstream.shutdown().await;
}

#[tokio::test]
async fn the_threshold_switches_the_listing_both_ways_and_clients_hear_of_it() {
    let upstream = upstream(vec![("demo", demo(&[]))]).await;
    let tools = upstream.catalogue().len();
    let served = Gateway::with_discovery(upstream.clone(), Discovery::Above(tools))
        .serve(switchboard_server::Options::default());
    let (front, gateway) = client(&served, Protocol::Legacy, ClientHandlers::new()).await;
    // At the threshold: the catalogue, as without discovery.
    let catalogue = listed(&gateway);
    assert_eq!(catalogue.len(), tools);
    assert!(catalogue.contains(&"echo".to_owned()), "{catalogue:?}");

    // Above it: the meta-tools.
    upstream.add_server("more", demo(&[])).await.unwrap();
    relisted(&front, &gateway, |names| names == [SEARCH_TOOL, CALL_TOOL]).await;
    let found = search(&gateway, "echo text back").await;
    assert!(
        names(&found).iter().any(|n| n.ends_with("echo")),
        "{found:?}"
    );
    // Below it again: the catalogue.
    upstream.remove_server("more").await.unwrap();
    relisted(&front, &gateway, |names| names.iter().any(|n| n == "echo")).await;
    assert_eq!(listed(&gateway).len(), tools);
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn an_upstream_tool_with_a_meta_tools_name_is_reached_through_call_tool() {
    let own = switchboard_server::Server::builder("own", "1.0.0")
        .tool(
            "search_tools",
            "Searches the upstream's own records",
            || async { Ok("the upstream's own search_tools") },
        )
        .build()
        .expect("the upstream");
    let upstream = upstream(vec![("own", in_memory(own))]).await;

    // Discovery on: the name is the meta-tool's; the upstream's tool is found and called
    // through call_tool.
    let served = Gateway::with_discovery(upstream.clone(), Discovery::Search)
        .serve(switchboard_server::Options::default());
    let (front, gateway) = client(&served, Protocol::Legacy, ClientHandlers::new()).await;
    let found = search(&gateway, "search records").await;
    assert_eq!(names(&found), ["search_tools"], "{found:?}");
    assert_eq!(found[0]["server"], "own");
    let called = gateway
        .call_tool(CALL_TOOL, json!({"name": "search_tools"}))
        .await
        .unwrap();
    assert_eq!(called.text(), "the upstream's own search_tools");
    front.shutdown().await;
    drop(served);

    // Below the threshold, the catalogue is listed and the name is the upstream's.
    let served = Gateway::with_discovery(upstream.clone(), Discovery::Above(10))
        .serve(switchboard_server::Options::default());
    let (front, gateway) = client(&served, Protocol::Legacy, ClientHandlers::new()).await;
    assert_eq!(listed(&gateway), ["search_tools"]);
    let direct = gateway.call_tool("search_tools", json!({})).await.unwrap();
    assert_eq!(direct.text(), "the upstream's own search_tools");
    front.shutdown().await;
    upstream.shutdown().await;
}

/// Answers every sampling request with one text.
#[derive(Debug)]
struct Model;

impl SamplingHandler for Model {
    fn create_message(
        &self,
        _server: &str,
        _request: SamplingRequest,
    ) -> BoxFuture<Result<SamplingResponse, String>> {
        Box::pin(async {
            Ok(SamplingResponse::new(
                "front-model",
                [Content::text("sampled by the front")],
            ))
        })
    }
}

#[tokio::test]
async fn a_call_through_call_tool_is_sampled_and_cancelled_as_a_direct_call_is() {
    let upstream = upstream(vec![
        ("fixture", demo(&["--conformance"])),
        ("faults", demo(&["--faults"])),
    ])
    .await;
    let served = Gateway::with_discovery(upstream.clone(), Discovery::Search)
        .serve(switchboard_server::Options::default());
    for era in ERAS {
        let (front, gateway) = client(&served, era, ClientHandlers::new().sampling(Model)).await;
        let sampled = tokio::time::timeout(
            WAIT,
            gateway.call_tool(
                CALL_TOOL,
                json!({"name": "fixture__test_sampling", "arguments": {"prompt": "q"}}),
            ),
        )
        .await
        .expect("in time")
        .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert_eq!(
            sampled.text(),
            "LLM response: sampled by the front",
            "{era:?}"
        );
        front.shutdown().await;
    }

    // The front cancels (its timeout): the gateway drops the upstream call, which tells the
    // upstream.
    let (front, gateway) = client(&served, Protocol::Legacy, ClientHandlers::new()).await;
    let hung = gateway
        .call_tool(CALL_TOOL, json!({"name": "faults__hang"}))
        .timeout(std::time::Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(hung.is_timeout(), "{hung}");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = upstream
            .call_tool("faults__cancellations", json!({}))
            .await
            .unwrap();
        let cancelled = seen.structured_content.unwrap_or_default()["cancelled"].clone();
        if cancelled.as_array().is_some_and(|c| !c.is_empty()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream heard no cancel"
        );
        tokio::task::yield_now().await;
    }
    front.shutdown().await;
    upstream.shutdown().await;
}
