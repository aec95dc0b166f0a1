//! Tools a server announces (`notifications/tools/list_changed`) are routed to by name as
//! soon as the re-listing the announcement causes is over: a call by a name no list has yet,
//! made while that re-listing is due, waits for it within its own deadline instead of failing
//! with `UnknownTool`; a name the change did not bring fails once the re-listing is over, not
//! at the deadline. This holds for an announcement that arrives while the handshake lists the
//! tools (server-everything adds tools once it is initialized, and announces them), and for
//! one that arrives once the server is ready.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use switchboard::ErrorKind;
use switchboard::ServerConfig;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The scripted server's tools, and what it saw.
#[derive(Default)]
struct State {
    tools: Vec<&'static str>,
    methods: Vec<String>,
}

/// A handshake-era server with `early` and `announce`. Its first `tools/list` is answered with `early`
/// alone, after it announced a change that adds `late` (as a server that registers tools
/// while it answers); a call of `announce` adds `later` and announces it before answering.
fn peer(state: Arc<Mutex<State>>) -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(move |io| {
        let state = state.clone();
        async move {
            state.lock().unwrap().tools = vec!["early", "announce"];
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            let announcement =
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let id = msg["id"].clone();
                let method = msg["method"].as_str().unwrap_or_default().to_owned();
                let result = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
                let out: Vec<Value> = {
                    let mut state = state.lock().unwrap();
                    state.methods.push(method.clone());
                    let listed = |names: &[&str]| {
                        let tools: Vec<Value> = names
                            .iter()
                            .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                            .collect();
                        result(json!({"tools": tools}))
                    };
                    match method.as_str() {
                        "initialize" => vec![result(json!({
                            "protocolVersion": "2025-06-18",
                            "capabilities": {"tools": {"listChanged": true}},
                            "serverInfo": {"name": "late-tools", "version": "1"}
                        }))],
                        "tools/list"
                            if state.methods.iter().filter(|m| *m == "tools/list").count() == 1 =>
                        {
                            let answer = listed(&state.tools);
                            state.tools.push("late");
                            vec![announcement.clone(), answer]
                        }
                        "tools/list" => vec![listed(&state.tools)],
                        "tools/call" if msg["params"]["name"] == "announce" => {
                            state.tools.push("later");
                            vec![
                                announcement.clone(),
                                result(json!({"content": [{"type": "text", "text": "announced"}]})),
                            ]
                        }
                        "tools/call" => {
                            let name = msg["params"]["name"].as_str().unwrap_or_default();
                            vec![result(json!({"content": [{"type": "text", "text": name}]}))]
                        }
                        "ping" => vec![result(json!({}))],
                        // The era probe (`server/discover`) among them: a legacy server.
                        _ if !id.is_null() => vec![json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "Method not found"}})],
                        _ => vec![],
                    }
                };
                for message in out {
                    let mut bytes = message.to_string().into_bytes();
                    bytes.push(b'\n');
                    if writer.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
}

/// The tool lists the server answered.
fn lists(state: &Mutex<State>) -> usize {
    let state = state.lock().unwrap();
    state.methods.iter().filter(|m| *m == "tools/list").count()
}

#[tokio::test]
async fn a_tool_announced_during_the_handshake_is_routed_to_at_once() {
    let state = Arc::new(Mutex::new(State::default()));
    let (rt, _server) =
        crate::support::scripted(peer(state.clone()), Duration::from_secs(30)).await;
    // Called as soon as the runtime is built: the announcement came before the handshake's
    // listing was answered, and that listing did not have `late`.
    let within = Duration::from_secs(20);
    let called = tokio::time::timeout(within, rt.call_tool("late", json!({}))).await;
    let result = called.expect("the call waited no longer than the re-listing");
    assert_eq!(result.expect("routed by the re-listing").text(), "late");
    assert_eq!(lists(&state), 2, "the handshake's listing, then one more");
    assert!(rt.catalogue().get("late").is_some());
    rt.shutdown().await;
}

#[tokio::test]
async fn a_tool_announced_once_ready_is_routed_to_by_the_next_call() {
    let state = Arc::new(Mutex::new(State::default()));
    let (rt, _server) =
        crate::support::scripted(peer(state.clone()), Duration::from_secs(30)).await;
    let within = Duration::from_secs(20);
    let late = tokio::time::timeout(within, rt.call_tool("late", json!({}))).await;
    assert_eq!(late.expect("in time").expect("routed").text(), "late");
    assert!(rt.search_tools("later", 5).is_empty());
    let announced = rt
        .call_tool("announce", json!({}))
        .await
        .expect("announced");
    assert_eq!(announced.text(), "announced");
    // The announcement was read before the answer: the re-listing is due, and this call,
    // made before it is over (the runtime gathers announcements for a moment), waits for it.
    let later = tokio::time::timeout(within, rt.call_tool("later", json!({}))).await;
    assert_eq!(later.expect("in time").expect("routed").text(), "later");
    assert_eq!(lists(&state), 3);
    // The search index follows the re-listing too.
    let found = rt.search_tools("later", 5);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].name, "later");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_name_the_change_did_not_bring_fails_once_the_relisting_is_over() {
    let state = Arc::new(Mutex::new(State::default()));
    let (rt, _server) =
        crate::support::scripted(peer(state.clone()), Duration::from_secs(60)).await;
    rt.call_tool("announce", json!({}))
        .await
        .expect("announced");
    // Well inside the call's 60 s: the re-listing ends the wait.
    let within = Duration::from_secs(20);
    let called = tokio::time::timeout(within, rt.call_tool("nosuch", json!({}))).await;
    match called.expect("failed when the re-listing was over, not at the deadline") {
        Err(e) if matches!(e.kind(), ErrorKind::UnknownTool) => {
            assert_eq!(e.tool(), Some("nosuch"))
        }
        other => panic!("{other:?}"),
    }
    assert!(lists(&state) >= 2, "the announced re-listing ran");
    rt.shutdown().await;
}
