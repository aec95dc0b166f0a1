//! `switchboard serve`'s hot reload, on the real process: the config file rewritten while
//! calls are in flight (a server removed, one changed, one added), then SIGHUP with a file
//! whose time did not change, then a file that does not parse. No call in flight fails.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::{Runtime, ServerConfig};

use crate::cli::BIN;
use crate::gateway::{config_file_of, front, Served};

/// How long anything awaited may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

fn demo(name: &str) -> Value {
    json!({"command": BIN, "args": ["demo-server", "--faults", "--name", name]})
}

fn write(path: &Path, servers: Value) {
    std::fs::write(path, json!({"mcpServers": servers}).to_string()).unwrap();
}

/// The front client's tool names, once they are `expected` (the gateway announces its
/// catalogue's changes, and the front lists again).
async fn tools_become(front: &Runtime, expected: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut names: Vec<String> = front
            .catalogue()
            .iter()
            .map(|e| e.tool.name.clone())
            .filter(|n| n.ends_with("__echo"))
            .collect();
        names.sort();
        if names == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "tools {names:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What `echo` of a server answers (its text).
async fn echo(front: &Runtime, tool: &str) -> String {
    front
        .call_tool(tool, json!({"text": "hi"}))
        .timeout(WAIT)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
        .text()
}

#[tokio::test]
async fn a_rewritten_config_adds_removes_and_changes_servers_without_failing_a_call_in_flight() {
    let config = config_file_of(json!({"mcpServers": {"one": demo("one"), "two": demo("two")}}));
    let served = Served::start_with(&config, &["--listen", "0"]);
    let front = front(ServerConfig::http(
        served.url.clone(),
        HttpKind::StreamableHttp,
    ))
    .await;
    tools_become(&front, &["one__echo", "two__echo"]).await;

    // Calls in flight on the server to be removed and on the one to be changed.
    let sleeping = |tool: &str| front.call_tool(tool, json!({"ms": 1500})).timeout(WAIT);
    let (on_two, on_one) = (sleeping("two__sleep"), sleeping("one__sleep"));
    let in_flight = tokio::spawn(async move { tokio::join!(on_two, on_one) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // `one` changes (another name), `two` goes, `three` comes.
    write(
        &config,
        json!({"one": demo("one-b"), "three": demo("three")}),
    );
    tools_become(&front, &["one__echo", "three__echo"]).await;
    let (on_two, on_one) = in_flight.await.unwrap();
    assert!(
        on_two.is_ok(),
        "the call in flight on the removed server: {on_two:?}"
    );
    assert!(
        on_one.is_ok(),
        "the call in flight on the changed server: {on_one:?}"
    );
    assert_eq!(echo(&front, "one__echo").await, "hi");
    assert_eq!(echo(&front, "three__echo").await, "hi");
    assert!(front
        .call_tool("two__echo", json!({"text": "hi"}))
        .await
        .is_err());

    // SIGHUP reads the file again even when its time did not change.
    let modified = std::fs::metadata(&config).unwrap().modified().unwrap();
    write(&config, json!({"one": demo("one-b"), "four": demo("four")}));
    std::fs::File::options()
        .write(true)
        .open(&config)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    // Past the poll that might have seen the write before its time was set back.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    unsafe { libc::kill(served.child.id() as i32, libc::SIGHUP) };
    tools_become(&front, &["four__echo", "one__echo"]).await;

    // A file that does not parse changes nothing.
    std::fs::write(&config, "{ not json").unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(echo(&front, "four__echo").await, "hi");
    assert_eq!(echo(&front, "one__echo").await, "hi");
    front.shutdown().await;
    served.stop();
}
