//! The `switchboard` command line, run as a real process against the bundled demo server:
//! output, exit codes (0, 1, 2, 3, 130) and signals.

#![cfg(feature = "cli")]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::process_is_gone;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Runs `switchboard ARGS`.
fn switchboard(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard")
}

/// Runs `switchboard ARGS -- switchboard demo-server --faults`.
fn against_demo(args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--", BIN, "demo-server", "--faults"]);
    switchboard(&all)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit 2 or 3: nothing on stdout, one `switchboard: ...` line on stderr.
fn assert_failed(output: &Output, code: i32) -> String {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stderr: {}",
        stderr(output)
    );
    assert_eq!(stdout(output), "", "stdout must stay empty");
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "one line on stderr: {err:?}");
    assert!(err.starts_with("switchboard: "), "{err:?}");
    err
}

#[test]
fn tools_json_is_one_document() {
    let output = against_demo(&["tools", "--json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    let server = &doc["servers"][0];
    assert_eq!(doc["servers"].as_array().map(Vec::len), Some(1));
    assert_eq!(server["name"], "switchboard");
    assert_eq!(server["state"], "ready");
    assert_eq!(server["error"], Value::Null);
    let names: Vec<&str> = server["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names[..3], ["greet", "add", "echo"]);
    assert!(server["tools"][0]["inputSchema"].is_object());
}

#[test]
fn tools_lists_one_line_per_tool() {
    let output = against_demo(&["tools"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.starts_with("greet — Greets someone by name.\n"),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("hang — ")), "{out}");
}

#[test]
fn call_prints_the_result() {
    let output = against_demo(&["call", "add", r#"{"a":2,"b":3}"#]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "5\n");
}

#[test]
fn call_json_prints_the_raw_result() {
    let output = against_demo(&["call", "add", r#"{"a":2,"b":3}"#, "--json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    assert_eq!(out.lines().count(), 1, "{out}");
    let result: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(result["structuredContent"]["sum"], 5);
}

#[test]
fn tool_error_exits_1_with_the_result() {
    let output = against_demo(&["call", "fail", r#"{"message":"no luck"}"#]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "no luck\n");
}

#[test]
fn unknown_tool_exits_3() {
    let err = assert_failed(&against_demo(&["call", "nosuch"]), 3);
    assert!(
        err.contains("server `switchboard` has no tool `nosuch`"),
        "{err}"
    );
}

#[test]
fn arguments_must_be_a_json_object() {
    for bad in ["[1]", "nope"] {
        let err = assert_failed(&against_demo(&["call", "add", bad]), 2);
        assert!(err.contains("tool `add` on server `switchboard`"), "{err}");
    }
}

#[test]
fn durations_need_a_unit() {
    let output = against_demo(&["call", "hang", "--timeout", "200"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).contains("unit"), "{}", stderr(&output));
}

#[test]
fn call_timeout_exits_3() {
    let started = Instant::now();
    let err = assert_failed(&against_demo(&["call", "hang", "--timeout", "200ms"]), 3);
    assert!(err.contains("timed out"), "{err}");
    assert!(err.contains("tool `hang` on server `switchboard`"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn missing_command_exits_3() {
    let err = assert_failed(&switchboard(&["tools", "--", "/nonexistent/mcp-server"]), 3);
    assert!(
        err.contains("server `mcp-server` could not be started"),
        "{err}"
    );
}

#[test]
fn help_and_version_exit_0() {
    for flag in ["--help", "--version"] {
        let output = switchboard(&[flag]);
        assert_eq!(output.status.code(), Some(0), "{flag}");
        assert!(!output.stdout.is_empty(), "{flag}");
    }
}

#[test]
fn demo_shows_the_timeout_and_the_crash() {
    let started = Instant::now();
    let output = switchboard(&["demo"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    assert!(out.contains("Hello, Switchboard!"), "{out}");
    assert!(out.contains("timed out"), "{out}");
    assert!(out.contains("notifications/cancelled"), "{out}");
    assert!(out.contains("exited with status 3"), "{out}");
    // The three 30 s sleeps failed with the crash, not on their own.
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn sigint_cancels_the_call_and_exits_130() {
    let mut child = Command::new(BIN)
        .args(["call", "hang", "--", BIN, "demo-server", "--faults"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    std::thread::sleep(Duration::from_secs(1));
    let pid = child.id();
    // Linux lists a process's children; elsewhere the server's exit is not checked.
    let servers: Vec<u32> = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "switchboard ignored SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    assert_eq!(
        output.status.code(),
        Some(130),
        "stderr: {}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).contains("interrupted by SIGINT"),
        "{}",
        stderr(&output)
    );
    for server in servers {
        assert!(process_is_gone(server), "server {server} survived");
    }
}
