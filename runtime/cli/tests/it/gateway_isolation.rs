//! `switchboard serve` with a server isolated per client or per session, as a real process
//! over HTTP in front of server-everything (npm), whose `toggle-simulated-logging` keeps a
//! state in the server's process: the second toggle in one process says "Stopped". Two
//! clients of a `client` server each toggle their own instance; of a `shared` one, each
//! other's. Also: sessions of one client apart with `session`, `maxInstances` reached, an
//! idle instance stopped with its process, and `client` refused without `--auth`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gateway::{config_file_of, Served};
use crate::gateway_auth::post;

const RESOURCE: &str = "http://mcp.test/mcp";
const ALICE: &str = "isolation-alice-key-0123456789abcdefghij";
const BOB: &str = "isolation-bob-key-0123456789abcdefghijkl";
const TOGGLE: &str = "toggle-simulated-logging";

fn everything() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/peers/node_modules/.bin/mcp-server-everything");
    assert!(
        path.exists(),
        "server-everything is not installed at {} (run .ci/run once)",
        path.display()
    );
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// The config of server-everything with `settings`, and an auth file with Alice's and
/// Bob's keys.
fn files(command: &str, settings: Value) -> (PathBuf, PathBuf) {
    let mut server = json!({"command": command, "args": ["stdio"]});
    for (key, value) in settings.as_object().expect("settings") {
        server[key] = value.clone();
    }
    let config = config_file_of(json!({"mcpServers": {"everything": server}}));
    let auth = config.with_file_name("auth.json");
    std::fs::write(
        &auth,
        json!({
            "resource": RESOURCE,
            "keys": [{"name": "alice", "key": ALICE}, {"name": "bob", "key": BOB}]
        })
        .to_string(),
    )
    .unwrap();
    (config, auth)
}

fn serve(settings: Value) -> Served {
    let (config, auth) = files(&everything(), settings);
    Served::start_with(
        &config,
        &["--listen", "0", "--auth", auth.to_str().unwrap()],
    )
}

fn toggle_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": TOGGLE, "arguments": {}}})
}

/// Toggles simulated logging as `key` (in a 2026-07-28 request, or in `session`): the
/// answer's text, or its error.
async fn toggle(url: &str, key: &str, session: Option<&str>) -> Value {
    let (status, _, _, answer) = post(url, Some(key), session, toggle_request()).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

fn started(answer: &Value) -> bool {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"));
    assert!(
        text.starts_with("Started") || text.starts_with("Stopped"),
        "{answer}"
    );
    text.starts_with("Started")
}

/// A handshake-era session opened by `key`.
async fn session(url: &str, key: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "isolation-test", "version": "1"}}});
    let (status, _, session, answer) = post(url, Some(key), None, initialize).await;
    assert_eq!(status, 200, "{answer}");
    session.expect("a session id")
}

/// How many server-everything processes `serve` runs now.
fn instances(served: &Served) -> usize {
    pids(served).len()
}

/// The server-everything processes `serve` runs now (its children).
fn pids(served: &Served) -> Vec<String> {
    let parent = served.child.id().to_string();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, then the parent.
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let ppid = after.split_whitespace().nth(1).unwrap_or_default();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        if ppid == parent && String::from_utf8_lossy(&cmdline).contains("mcp-server-everything") {
            pids.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    pids
}

async fn wait_for_instances(served: &Served, expected: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while instances(served) != expected {
        assert!(
            Instant::now() < deadline,
            "{} server-everything processes, expected {expected}",
            instances(served)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn each_client_has_its_own_instance_and_shared_is_everyones() {
    // Isolated: Alice and Bob each start their own logging; Alice's second toggle stops hers.
    let served = serve(json!({"isolation": "client"}));
    let url = served.url.clone();
    assert!(started(&toggle(&url, ALICE, None).await));
    assert!(
        started(&toggle(&url, BOB, None).await),
        "Bob's instance is not Alice's"
    );
    assert!(!started(&toggle(&url, ALICE, None).await));
    // The listing instance and one per client, all gone with serve.
    wait_for_instances(&served, 3).await;
    let running = pids(&served);
    served.stop();
    for pid in running {
        assert!(
            !std::path::Path::new("/proc").join(&pid).exists(),
            "server-everything {pid} outlived serve"
        );
    }

    // Shared: Bob toggles what Alice started.
    let served = serve(json!({}));
    let url = served.url.clone();
    assert!(started(&toggle(&url, ALICE, None).await));
    assert!(
        !started(&toggle(&url, BOB, None).await),
        "a shared server's state is everyone's"
    );
    assert_eq!(instances(&served), 1);
    served.stop();
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn each_session_has_its_own_instance_and_a_request_without_one_is_refused() {
    let served = serve(json!({"isolation": "session"}));
    let url = served.url.clone();
    let first = session(&url, ALICE).await;
    let second = session(&url, ALICE).await;
    assert!(started(&toggle(&url, ALICE, Some(&first)).await));
    assert!(
        started(&toggle(&url, ALICE, Some(&second)).await),
        "one client's two sessions have an instance each"
    );
    assert!(!started(&toggle(&url, ALICE, Some(&first)).await));
    wait_for_instances(&served, 3).await;
    // A session that ends takes its instance with it.
    let ended = reqwest::Client::new()
        .delete(&url)
        .bearer_auth(ALICE)
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{ended:?}");
    wait_for_instances(&served, 2).await;
    // A 2026-07-28 request has no session to give an instance to.
    let refused = toggle(&url, ALICE, None).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("everything") && message.contains("no session"),
        "{refused}"
    );
    served.stop();
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn instances_are_bounded_and_an_idle_one_is_stopped_with_its_process() {
    let served = serve(json!({"isolation": "client", "maxInstances": 1, "idleTimeout": "1500ms"}));
    let url = served.url.clone();
    assert!(started(&toggle(&url, ALICE, None).await));
    let refused = toggle(&url, BOB, None).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too many instances")),
        "{refused}"
    );
    wait_for_instances(&served, 2).await;
    // Idle past its timeout: Alice's instance is stopped, its process gone, and Bob's turn
    // comes; Alice's state went with her instance.
    wait_for_instances(&served, 1).await;
    assert!(started(&toggle(&url, BOB, None).await));
    served.stop();
}

#[test]
fn client_isolation_without_auth_is_refused_at_start() {
    // Refused before anything starts: the command is never run.
    let (config, _) = files("/nonexistent/server", json!({"isolation": "client"}));
    let out = Command::new(crate::cli::BIN)
        .args(["serve", "-c", config.to_str().unwrap(), "--listen", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("everything") && stderr.contains("--auth"),
        "{stderr}"
    );
}
