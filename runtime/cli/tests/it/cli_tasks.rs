//! Tasks on the command line, against server-everything's task-only
//! `simulate-research-query` (2025-11-25 tasks): `call` prints status lines while the task
//! runs and its report at the end; Ctrl-C cancels the task with `tasks/cancel`; `call
//! --detach` leaves it running and `tasks` shows it (lost, when asked of a new server process,
//! which does not know it), then forgets it.
//!
//! `#[ignore = "needs …"]`: `.ci/run` installs server-everything into `.ci/peers`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cli::{stderr, stdout, BIN};

fn everything() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/peers/node_modules/.bin/mcp-server-everything");
    assert!(
        path.exists(),
        "server-everything is not installed in .ci/peers"
    );
    path
}

/// A task store of this test's own.
fn store(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "switchboard-cli-tasks-{}-{name}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn command(args: &[&str], store: &PathBuf) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("SWITCHBOARD_CONFIG")
        .env("SWITCHBOARD_TASKS", store)
        .stdin(Stdio::null());
    command
}

fn research(args: &[&str], store: &PathBuf) -> Output {
    let everything = everything();
    let mut all = vec!["call", "simulate-research-query"];
    all.extend(args);
    all.extend(["--", everything.to_str().unwrap(), "stdio"]);
    command(&all, store).output().expect("run switchboard")
}

#[test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
fn call_of_a_task_tool_shows_its_status_and_prints_its_result() {
    let store = store("call");
    let output = research(&[r#"{"topic":"tides"}"#], &store);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("# Research Report: tides"),
        "{}",
        stdout(&output)
    );
    let err = stderr(&output);
    // Not a terminal: one line per change, the task's id and status, the server's words.
    assert!(
        err.lines()
            .any(|l| l.starts_with("task ") && l.contains(": working")),
        "{err}"
    );
    // Each stage lasts a second and the server asks for a poll a second, so which stages a
    // poll lands on is up to timing: what holds is that the lines carry the server's stage
    // names, in order, and more than one.
    let stages = [
        "Gathering sources",
        "Analyzing content",
        "Synthesizing findings",
        "Generating report",
    ];
    let seen: Vec<usize> = err
        .lines()
        .filter_map(|l| l.split_once(": working: "))
        .map(|(_, m)| {
            stages
                .iter()
                .position(|s| m.starts_with(s))
                .unwrap_or_else(|| panic!("not a stage: {m:?} in {err}"))
        })
        .collect();
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{err}");
    assert!(seen.len() > 1, "one stage only: {err}");
    assert!(err.lines().any(|l| l.contains(": completed")), "{err}");
}

#[test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
fn sigint_cancels_the_task_and_exits_130() {
    let store = store("sigint");
    let wire =
        std::env::temp_dir().join(format!("switchboard-cli-tasks-{}-wire", std::process::id()));
    let _ = std::fs::remove_file(&wire);
    let server = r#"tee "$0" | exec "$1" stdio"#;
    let everything = everything();
    let mut child = command(
        &[
            "call",
            "simulate-research-query",
            r#"{"topic":"tides"}"#,
            "--",
            "/bin/sh",
            "-c",
            server,
            wire.to_str().unwrap(),
            everything.to_str().unwrap(),
        ],
        &store,
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn switchboard");
    let sent = |method: &str| {
        std::fs::read_to_string(&wire)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|m| m["method"] == method)
    };
    // Interrupt once the task is being polled.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sent("tasks/get") {
        assert!(Instant::now() < deadline, "the task was never polled");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "switchboard ignored SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert!(
        err.contains("interrupted by SIGINT: cancelled task"),
        "{err}"
    );
    assert!(sent("tasks/cancel"), "no tasks/cancel reached the server");
    let _ = std::fs::remove_file(&wire);
}

#[test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
fn a_detached_task_is_listed_by_tasks_until_it_is_seen_lost() {
    let store = store("detach");
    let output = research(&[r#"{"topic":"tides"}"#, "--detach"], &store);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = stdout(&output).trim().to_owned();
    assert!(!id.is_empty());
    let everything = everything();
    let tasks = || {
        command(
            &["tasks", "--", everything.to_str().unwrap(), "stdio"],
            &store,
        )
        .output()
        .expect("run switchboard")
    };
    // A new server process does not know the task: it is shown lost, once.
    let listed = tasks();
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let out = stdout(&listed);
    let row = out
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains("simulate-research-query") && row.contains("lost"),
        "{row}"
    );
    let again = stdout(&tasks());
    assert!(!again.contains(&id), "{again}");
}
