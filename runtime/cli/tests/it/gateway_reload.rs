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
#[cfg(target_os = "linux")]
use crate::gateway_support::fds;

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

/// The gateway's child processes, by the `--name` each demo server was started with.
#[cfg(target_os = "linux")]
fn children_by_name(gateway: u32) -> std::collections::BTreeMap<String, u32> {
    let mut children = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{gateway}/task")) else {
        return children;
    };
    for task in tasks.flatten() {
        let listed = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in listed
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            if crate::process_is_gone(pid) || crate::is_guardian(pid) {
                continue;
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let name = args
                .iter()
                .position(|a| a == "--name")
                .and_then(|at| args.get(at + 1))
                .cloned()
                .unwrap_or_else(|| format!("? {args:?}"));
            children.insert(name, pid);
        }
    }
    children
}

/// Waits until `done` holds of the gateway's children, or fails with `what`.
#[cfg(target_os = "linux")]
async fn children_become(
    gateway: u32,
    what: &str,
    mut done: impl FnMut(&std::collections::BTreeMap<String, u32>) -> bool,
) -> std::collections::BTreeMap<String, u32> {
    let deadline = Instant::now() + WAIT;
    loop {
        let children = children_by_name(gateway);
        if done(&children) {
            return children;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway's children never became {what}: {children:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_under_load_fails_no_call_and_leaves_no_child_behind() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// The servers whose tools the loops call all along: `d` among them is started anew.
    const STAYING: [&str; 3] = ["a__echo", "b__echo", "d__echo"];
    let config = config_file_of(json!({"mcpServers": {
        "a": demo("a"), "b": demo("b"), "c": demo("c"), "d": demo("d")}}));
    // The loops call as fast as the machine goes, which on a quiet one is past the default
    // rate of one client (1,000 a second): a reload is under test here, not the rate limit.
    let served = Served::start_with(&config, &["--listen", "0", "--client-rate", "0"]);
    let gateway = served.child.id();
    let connect = || {
        front(ServerConfig::http(
            served.url.clone(),
            HttpKind::StreamableHttp,
        ))
    };
    let fronts = [connect().await, connect().await];
    tools_become(&fronts[0], &["a__echo", "b__echo", "c__echo", "d__echo"]).await;
    tools_become(&fronts[1], &["a__echo", "b__echo", "c__echo", "d__echo"]).await;
    let first = children_become(gateway, "the four", |c| c.len() == 4).await;

    // Four loops, two on each front client, over the staying servers until told to stop.
    let calling = Arc::new(AtomicBool::new(true));
    let succeeded = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut loops = Vec::new();
    for worker in 0..4 {
        let front = fronts[worker % 2].clone();
        let (calling, succeeded, failures) = (calling.clone(), succeeded.clone(), failures.clone());
        loops.push(tokio::spawn(async move {
            let mut n = worker;
            while calling.load(Ordering::SeqCst) {
                let tool = STAYING[n % STAYING.len()];
                let text = format!("{worker}:{n}");
                match front
                    .call_tool(tool, json!({"text": text}))
                    .timeout(WAIT)
                    .await
                {
                    Ok(answer) if answer.text() == text => {
                        succeeded.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(answer) => failures
                        .lock()
                        .unwrap()
                        .push(format!("{tool}: {:?}", answer.text())),
                    Err(e) => failures.lock().unwrap().push(format!("{tool}: {e}")),
                }
                n += 1;
            }
        }));
    }
    // The baseline, with the loops' connections open.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fds_before = fds(gateway);
    let started = Instant::now();
    let slow = |tool: &'static str| {
        let front = fronts[0].clone();
        tokio::spawn(async move {
            front
                .call_tool(tool, json!({"ms": 1200}))
                .timeout(WAIT)
                .await
        })
    };

    // 1. `e` comes.
    write(
        &config,
        json!({"a": demo("a"), "b": demo("b"), "c": demo("c"), "d": demo("d"), "e": demo("e")}),
    );
    tools_become(
        &fronts[0],
        &["a__echo", "b__echo", "c__echo", "d__echo", "e__echo"],
    )
    .await;
    // 2. `c` goes, with a call in flight there.
    let on_c = slow("c__sleep");
    tokio::time::sleep(Duration::from_millis(300)).await;
    write(
        &config,
        json!({"a": demo("a"), "b": demo("b"), "d": demo("d"), "e": demo("e")}),
    );
    tools_become(&fronts[0], &["a__echo", "b__echo", "d__echo", "e__echo"]).await;
    // 3. `d` is changed (its arguments), with a call in flight on the old one.
    let on_d = slow("d__sleep");
    tokio::time::sleep(Duration::from_millis(300)).await;
    write(
        &config,
        json!({"a": demo("a"), "b": demo("b"), "d": demo("d2"), "e": demo("e")}),
    );
    children_become(gateway, "with d2", |c| c.contains_key("d2")).await;
    // 4. `e` goes and `c` comes back, read at once on SIGHUP.
    let on_e = slow("e__sleep");
    tokio::time::sleep(Duration::from_millis(300)).await;
    write(
        &config,
        json!({"a": demo("a"), "b": demo("b"), "c": demo("c2"), "d": demo("d2")}),
    );
    unsafe { libc::kill(gateway as i32, libc::SIGHUP) };
    tools_become(&fronts[0], &["a__echo", "b__echo", "c__echo", "d__echo"]).await;
    // 5. `d` changed again, while a call is in flight on it.
    let on_d2 = slow("d__sleep");
    tokio::time::sleep(Duration::from_millis(300)).await;
    write(
        &config,
        json!({"a": demo("a"), "b": demo("b"), "c": demo("c2"), "d": demo("d3")}),
    );
    let last = children_become(gateway, "a, b, c2 and d3 only", |c| {
        c.keys().map(String::as_str).eq(["a", "b", "c2", "d3"])
    })
    .await;

    for (what, call) in [
        ("the removed c", on_c),
        ("the replaced d", on_d),
        ("the removed e", on_e),
        ("the replaced d2", on_d2),
    ] {
        let answer = call.await.unwrap();
        assert!(answer.is_ok(), "the call in flight on {what}: {answer:?}");
    }
    // A moment more of calls on the last catalogue, then the loops stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    calling.store(false, Ordering::SeqCst);
    for worker in loops {
        worker.await.unwrap();
    }
    let took = started.elapsed();
    let succeeded = succeeded.load(Ordering::Relaxed);
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} of {} calls failed across the reloads: {failures:?}",
        failures.len(),
        failures.len() + succeeded
    );
    assert!(succeeded >= 300, "only {succeeded} calls were made");

    // The catalogue is what the file says, on both front clients, and each server answers.
    for front in &fronts {
        tools_become(front, &["a__echo", "b__echo", "c__echo", "d__echo"]).await;
        for tool in ["a__echo", "b__echo", "c__echo", "d__echo"] {
            assert_eq!(echo(front, tool).await, "hi");
        }
    }
    // The replaced and removed servers' processes are gone; the two that stayed are the same.
    for name in ["c", "d"] {
        let pid = first[name];
        let deadline = Instant::now() + WAIT;
        while !crate::process_is_gone(pid) {
            assert!(Instant::now() < deadline, "{name}'s process {pid} is left");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(
        (last["a"], last["b"]),
        (first["a"], first["b"]),
        "the servers that stayed were not restarted"
    );
    // And their descriptors with them.
    let deadline = Instant::now() + WAIT;
    let mut fds_after = fds(gateway);
    while fds_after > fds_before + 8 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        fds_after = fds(gateway);
    }
    eprintln!(
        "{succeeded} calls over five reloads in {took:?}; the gateway's fds {fds_before} -> \
         {fds_after}, children {first:?} -> {last:?}"
    );
    assert!(
        fds_after <= fds_before + 8,
        "open descriptors: {fds_before} before, {fds_after} after"
    );
    let [one, two] = fronts;
    one.shutdown().await;
    two.shutdown().await;
    served.stop();
}
