//! `switchboard serve` with servers whose config takes per-client values (`${client.name}`,
//! `${client.claims.NAME}`, `${client.secret.NAME}` from `--credentials`), as a real process
//! over HTTP: server-everything (npm) shows each instance's environment with `get-env`, and
//! server-filesystem (npm) is rooted in each client's own folder.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gateway::{config_file_of, Served};
use crate::gateway_auth::{post, Issuer, ISSUER, RESOURCE};

const ALICE: &str = "values-alice-key-0123456789abcdefghijkl";
const BOB: &str = "values-bob-key-0123456789abcdefghijklmno";
const CAROL: &str = "values-carol-key-0123456789abcdefghijklm";
const ALICE_SECRET: &str = "alice-upstream-token-7f3a9c";
const ALICE_ROTATED: &str = "alice-upstream-token-rotated-41bd";
const BOB_SECRET: &str = "bob-upstream-token-c02e11";

fn peer(bin: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/peers/node_modules/.bin")
        .join(bin);
    assert!(
        path.exists(),
        "{bin} is not installed at {} (run .ci/run once)",
        path.display()
    );
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// An auth file naming Alice, Bob and Carol beside `config`, and JWTs from `issuer`.
fn auth_file(config: &Path, issuer: Option<&Issuer>) -> PathBuf {
    let auth = config.with_file_name("auth.json");
    let mut file = json!({
        "resource": RESOURCE,
        "keys": [{"name": "alice", "key": ALICE}, {"name": "bob", "key": BOB},
                 {"name": "carol", "key": CAROL}]
    });
    if let Some(issuer) = issuer {
        file["jwt"] = json!({"issuer": ISSUER, "jwksUri": issuer.jwks_uri});
    }
    std::fs::write(&auth, file.to_string()).unwrap();
    auth
}

fn write_credentials(path: &Path, alice: &str) {
    // Written whole, then renamed: the watcher never reads half a file.
    let partial = path.with_extension("partial");
    std::fs::write(
        &partial,
        json!({"key:alice": {"TOKEN": alice}, "key:bob": {"TOKEN": BOB_SECRET},
               format!("{ISSUER}#dana"): {"TOKEN": "dana-upstream-token-5e81"}})
        .to_string(),
    )
    .unwrap();
    std::fs::rename(&partial, path).unwrap();
}

async fn call(url: &str, key: &str, tool: &str, arguments: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}});
    let (status, _, _, answer) = post(url, Some(key), None, request).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The environment of `key`'s instance, as its `get-env` says.
async fn env_of(url: &str, key: &str) -> Value {
    let answer = call(url, key, "get-env", json!({})).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"));
    serde_json::from_str(text).unwrap()
}

/// The server-everything processes `serve` runs now (its children).
fn everything_processes(served: &Served) -> usize {
    let parent = served.child.id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            let dir = entry.path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_owned))
                .unwrap_or_default();
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            ppid == parent && String::from_utf8_lossy(&cmdline).contains("mcp-server-everything")
        })
        .count()
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn each_client_runs_with_its_own_values_and_a_missing_one_is_named() {
    let config = config_file_of(json!({"mcpServers": {"everything": {
        "command": peer("mcp-server-everything"), "args": ["stdio"],
        "env": {"WHO": "${client.name}", "UPSTREAM_TOKEN": "${client.secret.TOKEN}",
                "ORG": "${client.claims.org:-no-org}"},
        "listAs": {"name": "catalogue", "secrets": {"TOKEN": "listing-only"}}
    }}}));
    let issuer = Issuer::start();
    let auth = auth_file(&config, Some(&issuer));
    let credentials = config.with_file_name("credentials.json");
    write_credentials(&credentials, ALICE_SECRET);
    let audit = config.with_file_name("audit.jsonl");
    let served = Served::start_with(
        &config,
        &[
            "--listen",
            "0",
            "--auth",
            auth.to_str().unwrap(),
            "--credentials",
            credentials.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
    );
    let url = served.url.clone();
    // The runtime's own instance, which lists the tools, runs with listAs's values.
    assert_eq!(everything_processes(&served), 1);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (_, _, _, tools) = post(&url, Some(ALICE), None, list).await;
    assert!(
        tools.to_string().contains("\"get-env\""),
        "tools listed: {tools}"
    );

    let alice = env_of(&url, ALICE).await;
    assert_eq!(alice["WHO"], "alice");
    assert_eq!(alice["UPSTREAM_TOKEN"], ALICE_SECRET);
    assert_eq!(alice["ORG"], "no-org", "a key has no claims: the default");
    let bob = env_of(&url, BOB).await;
    assert_eq!(bob["WHO"], "bob");
    assert_eq!(bob["UPSTREAM_TOKEN"], BOB_SECRET);
    assert_eq!(everything_processes(&served), 3);

    // Dana comes with a token: her name is its subject, her organisation its claim.
    let dana = issuer.token(json!({"sub": "dana", "org": "acme"}));
    let dana_env = env_of(&url, &dana).await;
    assert_eq!(dana_env["WHO"], "dana");
    assert_eq!(dana_env["ORG"], "acme");
    assert_eq!(dana_env["UPSTREAM_TOKEN"], "dana-upstream-token-5e81");
    assert_eq!(everything_processes(&served), 4);

    // Carol has no secret: her call is refused, naming what is missing, and nothing starts.
    let refused = call(&url, CAROL, "get-env", json!({})).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("${client.secret.TOKEN}") && message.contains("key:carol"),
        "{message}"
    );
    assert_eq!(everything_processes(&served), 4);

    // Alice's token rotates in the file: her next call runs with the new one, in a new
    // instance, and the old one stops.
    write_credentials(&credentials, ALICE_ROTATED);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let alice = env_of(&url, ALICE).await;
        if alice["UPSTREAM_TOKEN"] == ALICE_ROTATED {
            break;
        }
        assert_eq!(alice["UPSTREAM_TOKEN"], ALICE_SECRET);
        assert!(
            Instant::now() < deadline,
            "the rotated secret was not taken"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while everything_processes(&served) != 4 {
        assert!(
            Instant::now() < deadline,
            "{} processes: the replaced instance did not stop",
            everything_processes(&served)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(env_of(&url, BOB).await["UPSTREAM_TOKEN"], BOB_SECRET);

    // The audit log tells whose instance served each call.
    let instances: std::collections::BTreeSet<String> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["name"] == "get-env" && record["outcome"] == "ok")
        .map(|record| record["instance"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        instances.into_iter().collect::<Vec<_>>(),
        [
            format!("everything@{ISSUER}#dana"),
            "everything@key:alice".to_owned(),
            "everything@key:bob".to_owned()
        ]
    );
    let written = std::fs::read_to_string(&audit).unwrap();
    for secret in [ALICE_SECRET, ALICE_ROTATED, BOB_SECRET, "listing-only"] {
        assert!(!written.contains(secret), "a secret in the audit log");
    }

    let log = format!(
        "{}{}",
        served.log,
        String::from_utf8_lossy(&served.later.lock().unwrap())
    );
    for secret in [
        ALICE_SECRET,
        ALICE_ROTATED,
        BOB_SECRET,
        "listing-only",
        ALICE,
    ] {
        assert!(!log.contains(secret), "a secret reached the log: {log}");
    }
    served.stop();
}

#[tokio::test]
#[ignore = "needs server-filesystem in .ci/peers (.ci/run installs it)"]
async fn a_filesystem_server_is_rooted_in_each_clients_folder() {
    let config = config_file_of(json!({"mcpServers": {}}));
    let root = config.with_file_name("homes");
    for who in ["alice", "bob", "catalogue"] {
        std::fs::create_dir_all(root.join(who)).unwrap();
        std::fs::write(root.join(who).join("notes.txt"), format!("{who}'s notes")).unwrap();
    }
    let home = format!("{}/${{client.name}}", root.display());
    std::fs::write(
        &config,
        json!({"mcpServers": {"files": {
            "command": peer("mcp-server-filesystem"), "args": [home],
            "listAs": {"name": "catalogue"}
        }}})
        .to_string(),
    )
    .unwrap();
    let auth = auth_file(&config, None);
    let served = Served::start_with(
        &config,
        &["--listen", "0", "--auth", auth.to_str().unwrap()],
    );
    let url = served.url.clone();
    let read = |who: &str| json!({"path": root.join(who).join("notes.txt")});
    let text = |answer: &Value| {
        answer["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
    };

    let own = call(&url, ALICE, "read_text_file", read("alice")).await;
    assert_eq!(text(&own).as_deref(), Some("alice's notes"), "{own}");
    let other = call(&url, ALICE, "read_text_file", read("bob")).await;
    assert!(
        other["result"]["isError"] == true || other["error"].is_object(),
        "Alice read Bob's notes: {other}"
    );
    assert!(
        !other.to_string().contains("bob's notes"),
        "Alice read Bob's notes: {other}"
    );
    let bob = call(&url, BOB, "read_text_file", read("bob")).await;
    assert_eq!(text(&bob).as_deref(), Some("bob's notes"), "{bob}");
    served.stop();
}

#[tokio::test]
#[ignore = "needs server-memory in .ci/peers (.ci/run installs it)"]
async fn server_memory_keeps_each_clients_graph_apart_and_a_shared_one_is_everyones() {
    // server-memory keeps its graph in a file and reads it on every call: an instance per
    // client is not enough, each needs a file of its own, which `${client.name}` gives.
    for apart in [true, false] {
        let config = config_file_of(json!({"mcpServers": {}}));
        let dir = config.parent().unwrap().to_owned();
        let file = if apart {
            format!("{}/graph-${{client.name}}.jsonl", dir.display())
        } else {
            format!("{}/graph.jsonl", dir.display())
        };
        let mut memory = json!({"command": peer("mcp-server-memory"),
                                "env": {"MEMORY_FILE_PATH": file}});
        if apart {
            memory["listAs"] = json!({"name": "catalogue"});
        }
        std::fs::write(
            &config,
            json!({"mcpServers": {"memory": memory}}).to_string(),
        )
        .unwrap();
        let auth = auth_file(&config, None);
        let served = Served::start_with(
            &config,
            &["--listen", "0", "--auth", auth.to_str().unwrap()],
        );
        let url = served.url.clone();
        for (key, entity) in [(ALICE, "alice-secret-project"), (BOB, "bob-holiday-plans")] {
            let entities = json!({"entities": [{"name": entity, "entityType": "note",
                                                "observations": ["kept"]}]});
            let answer = call(&url, key, "create_entities", entities).await;
            assert!(answer["result"].is_object(), "{answer}");
        }
        for (key, own, other) in [
            (ALICE, "alice-secret-project", "bob-holiday-plans"),
            (BOB, "bob-holiday-plans", "alice-secret-project"),
        ] {
            let graph = call(&url, key, "read_graph", json!({})).await.to_string();
            assert!(graph.contains(own), "{graph}");
            assert_eq!(
                graph.contains(other),
                !apart,
                "apart: {apart}, one client's graph holds the other's entity: {graph}"
            );
        }
        served.stop();
    }
}
