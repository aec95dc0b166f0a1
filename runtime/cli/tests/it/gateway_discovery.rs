//! `switchboard serve --discovery` as a real process over HTTP, in 2026-07-28 requests:
//! the meta-tools listed instead of the catalogue (always, or above a threshold), and
//! clients limited to some tools by `--auth` that find and call only those, through the
//! meta-tools as directly.

use serde_json::{json, Value};

use crate::gateway::{config_file_of, Served};
use crate::gateway_auth::post;

const RESOURCE: &str = "http://mcp.test/mcp";
const FULL_KEY: &str = "discovery-full-key-0123456789abcdefghij";
const ECHO_KEY: &str = "discovery-echo-key-0123456789abcdefghij";

/// The demo server's config, and an auth file with a key for every tool and one for `echo`.
fn files() -> (std::path::PathBuf, std::path::PathBuf) {
    let config = config_file_of(
        json!({"mcpServers": {"demo": {"command": crate::cli::BIN, "args": ["demo-server"]}}}),
    );
    let auth = config.with_file_name("auth.json");
    std::fs::write(
        &auth,
        json!({
            "resource": RESOURCE,
            "keys": [
                {"name": "full", "key": FULL_KEY},
                {"name": "echo-only", "key": ECHO_KEY, "tools": ["echo"]}
            ]
        })
        .to_string(),
    )
    .unwrap();
    (config, auth)
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn listed(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The names a `search_tools` call answered, best first.
fn found(answer: &Value) -> Vec<String> {
    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}");
    result["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn search(query: &str) -> Value {
    request(
        2,
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": query, "limit": 50}}),
    )
}

fn call_through(tool: &str, arguments: Value) -> Value {
    request(
        3,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": tool, "arguments": arguments}}),
    )
}

#[tokio::test]
async fn a_client_limited_to_some_tools_finds_and_calls_only_those() {
    let (config, auth) = files();
    let served = Served::start_with(
        &config,
        &[
            "--listen",
            "0",
            "--auth",
            auth.to_str().unwrap(),
            "--discovery",
            "search",
        ],
    );
    let url = served.url.clone();
    let list = || request(1, "tools/list", json!({}));
    for key in [FULL_KEY, ECHO_KEY] {
        let (status, _, _, answer) = post(&url, Some(key), None, list()).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(listed(&answer), ["search_tools", "call_tool"]);
    }

    // Every client finds what it may call; the limited one finds nothing else, whatever
    // it asks for.
    let (_, _, _, answer) = post(&url, Some(FULL_KEY), None, search("add two numbers")).await;
    assert_eq!(found(&answer)[0], "add", "{answer}");
    for query in [
        "add two numbers",
        "return the text unchanged",
        "greet someone by name",
    ] {
        let (_, _, _, answer) = post(&url, Some(ECHO_KEY), None, search(query)).await;
        let names = found(&answer);
        assert!(names.iter().all(|n| n == "echo"), "{query}: {names:?}");
    }
    let (_, _, _, answer) = post(
        &url,
        Some(ECHO_KEY),
        None,
        search("return the text unchanged"),
    )
    .await;
    assert_eq!(found(&answer), ["echo"]);

    // Calling another tool through call_tool is refused as its direct call is.
    let args = json!({"a": 1, "b": 2});
    let (_, _, _, direct) = post(
        &url,
        Some(ECHO_KEY),
        None,
        request(4, "tools/call", json!({"name": "add", "arguments": args})),
    )
    .await;
    let (_, _, _, through) = post(&url, Some(ECHO_KEY), None, call_through("add", args)).await;
    assert_eq!(through["error"]["code"], -32602, "{through}");
    assert_eq!(through["error"], direct["error"], "{through} {direct}");
    // The full key calls it; the limited one calls echo, through call_tool and directly.
    let (_, _, _, sum) = post(
        &url,
        Some(FULL_KEY),
        None,
        call_through("add", json!({"a": 1, "b": 2})),
    )
    .await;
    assert_eq!(
        sum["result"]["structuredContent"],
        json!({"sum": 3}),
        "{sum}"
    );
    let (_, _, _, echoed) = post(
        &url,
        Some(ECHO_KEY),
        None,
        call_through("echo", json!({"text": "hi"})),
    )
    .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    let (_, _, _, echoed) = post(
        &url,
        Some(ECHO_KEY),
        None,
        request(
            5,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
    )
    .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    served.stop();
}

#[tokio::test]
async fn below_its_threshold_the_catalogue_is_listed_and_above_it_the_meta_tools() {
    let (config, _) = files();
    let mut counts = Vec::new();
    for threshold in ["1000", "1"] {
        let served = Served::start_with(&config, &["--listen", "0", "--discovery", threshold]);
        let (status, _, _, answer) =
            post(&served.url, None, None, request(1, "tools/list", json!({}))).await;
        assert_eq!(status, 200, "{answer}");
        counts.push(listed(&answer));
        served.stop();
    }
    assert!(
        counts[0].len() > 2 && counts[0].contains(&"echo".to_owned()),
        "{:?}",
        counts[0]
    );
    assert_eq!(counts[1], ["search_tools", "call_tool"]);
}
