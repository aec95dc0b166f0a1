//! `switchboard serve --listen … --auth FILE --audit FILE` as a real process: a line for
//! each forwarded request, each refused tool call and each request refused at the door (401,
//! 403), with its principal, hashed session,
//! server, outcome and sizes; no key, bearer token or session id in the audit file nor in
//! serve's stderr; arguments only with `--audit-arguments`; rotation at the size given.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::Served;
use crate::gateway_auth::post;

const FULL_KEY: &str = "audit-full-key-0123456789abcdefghijkl";
const ECHO_KEY: &str = "audit-echo-key-0123456789abcdefghijkl";
const WRONG_KEY: &str = "audit-wrong-key-0123456789abcdefghijk";

/// The config, auth file and audit file's path, in a folder of their own.
fn files(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-gateway-audit-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gateway.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"demo": {"command": BIN, "args": ["demo-server", "--faults"]}}})
            .to_string(),
    )
    .unwrap();
    let auth = dir.join("auth.json");
    std::fs::write(
        &auth,
        json!({
            "resource": "http://mcp.test/mcp",
            "keys": [
                {"name": "full", "key": FULL_KEY},
                {"name": "echo-only", "key": ECHO_KEY, "tools": ["echo"]}
            ]
        })
        .to_string(),
    )
    .unwrap();
    (config, auth, dir.join("audit.jsonl"))
}

/// The audit lines of `paths` (oldest file first), once there are `n` of them.
fn lines(paths: &[PathBuf], n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all: Vec<Value> = paths
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        if all.len() >= n {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "{} audit lines of {n}: {all:?}",
            all.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `serve --listen 0 --auth auth --audit audit`, and `more`.
fn serve(config: &Path, auth: &Path, audit: &Path, more: &[&str]) -> Served {
    let (auth, audit) = (auth.to_str().unwrap(), audit.to_str().unwrap());
    let mut args = vec!["--listen", "0", "--auth", auth, "--audit", audit];
    args.extend_from_slice(more);
    Served::start_with(config, &args)
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// The one line of `method` naming `name`.
fn line<'a>(all: &'a [Value], method: &str, name: &str) -> &'a Value {
    let found: Vec<_> = all
        .iter()
        .filter(|l| l["method"] == method && l["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "{method} {name} in {all:#?}");
    found[0]
}

#[tokio::test]
async fn calls_failures_and_refusals_are_audited_without_a_secret() {
    let (config, auth, audit) = files("calls");
    let served = serve(&config, &auth, &audit, &[]);
    let url = served.url.clone();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "audit-test", "version": "1"}}});
    let (status, _, session, _) = post(&url, Some(FULL_KEY), None, initialize).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let s = Some(session.as_str());
    let full = Some(FULL_KEY);

    let (_, _, _, answer) = post(&url, full, s, call(1, "echo", json!({"text": "hi"}))).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    let (_, _, _, answer) = post(&url, full, s, call(2, "fail", json!({}))).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let (_, _, _, answer) = post(&url, full, s, call(3, "no_such_tool", json!({}))).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let read = |id, uri| json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}});
    let (_, _, _, answer) = post(&url, full, s, read(4, "demo://text/hello")).await;
    assert!(answer["result"]["contents"].is_array(), "{answer}");
    let (_, _, _, answer) = post(&url, full, s, read(5, "demo://text/nope")).await;
    assert!(answer["error"].is_object(), "{answer}");
    let prompt =
        json!({"jsonrpc": "2.0", "id": 6, "method": "prompts/get", "params": {"name": "simple"}});
    let (_, _, _, answer) = post(&url, full, s, prompt).await;
    assert!(answer["result"]["messages"].is_array(), "{answer}");
    // Stateless, and limited to echo: `add` is refused as if it did not exist.
    let (_, _, _, answer) = post(
        &url,
        Some(ECHO_KEY),
        None,
        call(7, "add", json!({"a": 1, "b": 2})),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Turned away at the door: a key nobody has (401), another client's session (403).
    let (status, _, _, _) = post(&url, Some(WRONG_KEY), None, call(8, "echo", json!({}))).await;
    assert_eq!(status, 401);
    let (status, _, _, _) = post(&url, Some(ECHO_KEY), s, call(9, "echo", json!({}))).await;
    assert_eq!(status, 403);

    let all = lines(std::slice::from_ref(&audit), 9);
    assert_eq!(all.len(), 9, "{all:#?}");
    let mut door: Vec<_> = all
        .iter()
        .filter(|l| l["method"] == "http")
        .map(|l| {
            (
                l["outcome"].as_str().unwrap(),
                l["reason"].as_str().unwrap(),
            )
        })
        .collect();
    door.sort();
    assert_eq!(
        door,
        [("refused", "forbidden"), ("refused", "unauthenticated")]
    );
    let echo = line(&all, "tools/call", "echo");
    assert_eq!(echo["outcome"], "ok");
    assert_eq!(echo["principal"], "key:full");
    assert_eq!(
        (&echo["server"], &echo["instance"]),
        (&json!("demo"), &json!("demo"))
    );
    assert_eq!(echo["bytes_in"], json!({"text": "hi"}).to_string().len());
    assert!(echo["bytes_out"].as_u64().unwrap() > 0);
    assert!(echo["duration_ms"].as_f64().unwrap() > 0.0);
    assert!(
        echo.get("arguments").is_none(),
        "arguments without --audit-arguments: {echo}"
    );
    let tag = echo["session"].as_str().unwrap();
    assert_eq!(tag.len(), 16);
    assert_eq!(line(&all, "tools/call", "fail")["outcome"], "tool_error");
    let unknown = line(&all, "tools/call", "no_such_tool");
    assert_eq!(
        (&unknown["outcome"], &unknown["reason"]),
        (&json!("refused"), &json!("unknown_tool"))
    );
    assert_eq!(unknown["code"], -32602);
    assert_eq!(
        line(&all, "resources/read", "demo://text/hello")["outcome"],
        "ok"
    );
    let missing = line(&all, "resources/read", "demo://text/nope");
    assert_eq!(missing["outcome"], "error");
    assert!(missing["code"].is_i64(), "{missing}");
    let prompt = line(&all, "prompts/get", "simple");
    assert_eq!(
        (&prompt["outcome"], &prompt["server"]),
        (&json!("ok"), &json!("demo"))
    );
    let refused = line(&all, "tools/call", "add");
    assert_eq!(refused["outcome"], "refused");
    assert_eq!(refused["reason"], "not_permitted");
    assert_eq!(refused["principal"], "key:echo-only");
    assert!(
        refused.get("session").is_none(),
        "a stateless request has no session: {refused}"
    );
    for l in all.iter().filter(|l| l["principal"] == "key:full") {
        assert_eq!(l["session"], tag, "one session, one tag: {l}");
    }

    let (later, before) = (served.later.clone(), served.log.clone());
    served.stop();
    let written = std::fs::read_to_string(&audit).unwrap();
    let logged = before + &String::from_utf8_lossy(&later.lock().unwrap());
    assert!(
        logged.contains("switchboard::audit"),
        "no audit event at info: {logged}"
    );
    for secret in [FULL_KEY, ECHO_KEY, WRONG_KEY, session.as_str()] {
        assert!(!written.contains(secret), "a secret in the audit file");
        assert!(!logged.contains(secret), "a secret in serve's stderr");
    }
}

#[tokio::test]
async fn arguments_are_written_only_when_asked_and_the_file_rotates_at_its_size() {
    let (config, auth, audit) = files("rotation");
    let served = serve(
        &config,
        &auth,
        &audit,
        &[
            "--audit-arguments",
            "--audit-max-size",
            "1KiB",
            "--audit-keep",
            "20",
        ],
    );
    let calls = 12;
    for id in 0..calls {
        let (_, _, _, answer) = post(
            &served.url,
            Some(FULL_KEY),
            None,
            call(id, "echo", json!({"text": format!("call {id}")})),
        )
        .await;
        assert_eq!(
            answer["result"]["content"][0]["text"],
            format!("call {id}"),
            "{answer}"
        );
    }
    let numbered = |n: u32| PathBuf::from(format!("{}.{n}", audit.display()));
    let mut paths: Vec<PathBuf> = (1..=20)
        .rev()
        .map(numbered)
        .filter(|p| p.exists())
        .collect();
    paths.push(audit.clone());
    let all = lines(&paths, calls as usize);
    served.stop();
    assert!(
        paths.len() > 2,
        "no rotation at 1KiB for {calls} lines: {paths:?}"
    );
    for path in &paths {
        let size = std::fs::metadata(path).unwrap().len();
        assert!(size <= 1024, "{} is {size} bytes", path.display());
    }
    // Every line, in order, none split or lost across the files.
    let texts: Vec<_> = all.iter().map(|l| l["arguments"]["text"].clone()).collect();
    let wanted: Vec<_> = (0..calls).map(|id| json!(format!("call {id}"))).collect();
    assert_eq!(texts, wanted);
}

#[tokio::test]
async fn a_call_through_call_tool_with_arguments_its_schema_refuses_is_audited() {
    let (config, auth, audit) = files("discovery");
    let served = serve(&config, &auth, &audit, &["--discovery", "search"]);
    let through = |arguments: Value| {
        call(
            1,
            "call_tool",
            json!({"name": "add", "arguments": arguments}),
        )
    };
    let (_, _, _, answer) = post(
        &served.url,
        Some(FULL_KEY),
        None,
        through(json!({"a": "one"})),
    )
    .await;
    assert!(
        answer["error"]["code"] == -32602 || answer["result"]["isError"] == true,
        "{answer}"
    );
    let (_, _, _, answer) = post(
        &served.url,
        Some(FULL_KEY),
        None,
        through(json!({"a": 1, "b": 2})),
    )
    .await;
    assert!(answer["result"]["content"].is_array(), "{answer}");
    let all = lines(std::slice::from_ref(&audit), 2);
    served.stop();
    let add: Vec<_> = all.iter().filter(|l| l["name"] == "add").collect();
    assert_eq!(add.len(), 2, "{all:#?}");
    assert_eq!(
        (&add[0]["outcome"], &add[0]["reason"], &add[0]["principal"]),
        (
            &json!("refused"),
            &json!("invalid_arguments"),
            &json!("key:full")
        )
    );
    assert_eq!(add[1]["outcome"], "ok");
}
