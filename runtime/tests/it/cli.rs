//! The `switchboard` command line, run as a real process against the bundled demo server:
//! output, exit codes (0, 1, 2, 3, 130) and signals, for one server after `--` and for the
//! servers of a config file.

#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::process_is_gone;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Runs `switchboard ARGS`.
fn switchboard(args: &[&str]) -> Output {
    run(command(args))
}

/// `switchboard ARGS`, with none of the environment variables it reads set.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("MCP_TIMEOUT")
        .env_remove("MCP_TOOL_TIMEOUT")
        .stdin(Stdio::null());
    command
}

fn run(mut command: Command) -> Output {
    command.output().expect("run switchboard")
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

// ---- The servers of a config file ----

/// A file or directory under the temp dir with a unique name, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn path(name: &str) -> Temp {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Temp(
            std::env::temp_dir().join(format!("switchboard-cli-{}-{n}-{name}", std::process::id())),
        )
    }

    /// A file holding `text`.
    fn file(name: &str, text: &str) -> Temp {
        let temp = Temp::path(name);
        std::fs::write(&temp.0, text).expect("write temp file");
        temp
    }

    /// An empty directory.
    fn dir(name: &str) -> Temp {
        let temp = Temp::path(name);
        std::fs::create_dir(&temp.0).expect("create temp dir");
        temp
    }

    fn str(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.0.is_dir() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// `one` (greet, add, echo) and `two` (the same, plus the fault tools), plus `extra` entries.
fn demo_config(extra: &str) -> String {
    format!(
        r#"{{"mcpServers": {{
            "one": {{"command": {bin}, "args": ["demo-server", "--name", "one"]}},
            "two": {{"command": {bin}, "args": ["demo-server", "--faults"]}}{extra}
        }}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    )
}

fn demo_config_file() -> Temp {
    Temp::file("demo.json", &demo_config(""))
}

/// The `"name"` fields of a JSON array.
fn names<'a>(values: &'a Value, field: &str) -> Vec<&'a str> {
    values
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|v| v[field].as_str())
        .collect()
}

#[test]
fn config_tools_json_has_catalogue_names() {
    let config = demo_config_file();
    let output = switchboard(&["tools", "-c", config.str(), "--json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(names(&doc["servers"], "name"), ["one", "two"]);
    for server in doc["servers"].as_array().expect("servers") {
        assert_eq!(server["state"], "ready", "{server}");
        assert_eq!(server["error"], Value::Null, "{server}");
    }
    let one = &doc["servers"][0]["tools"];
    let two = &doc["servers"][1]["tools"];
    // The names all three servers' tools share are prefixed; the fault tools are not.
    assert_eq!(
        names(one, "catalogueName"),
        ["one__greet", "one__add", "one__echo"]
    );
    assert_eq!(
        names(two, "catalogueName")[..5],
        ["two__greet", "two__add", "two__echo", "sleep", "hang"]
    );
    // Each tool is as the server listed it.
    assert_eq!(names(one, "name"), ["greet", "add", "echo"]);
    assert!(one[0]["inputSchema"].is_object());
    assert_eq!(one[0]["description"], "Greets someone by name.");
}

#[test]
fn config_tools_groups_tools_by_server() {
    let config = demo_config_file();
    let output = switchboard(&["tools", "-c", config.str()]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.starts_with("one (ready)\n  one__greet — Greets someone by name.\n"),
        "{out}"
    );
    assert!(out.contains("\ntwo (ready)\n  two__greet — "), "{out}");
    assert!(out.lines().any(|l| l.starts_with("  hang — ")), "{out}");
}

#[test]
fn config_call_takes_a_catalogue_name() {
    let config = demo_config_file();
    let output = switchboard(&["call", "one__greet", r#"{"name":"x"}"#, "-c", config.str()]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Hello, x!\n");
    assert_eq!(stderr(&output), "");
}

#[test]
fn config_call_timeout_exits_3() {
    let config = demo_config_file();
    let started = Instant::now();
    let err = assert_failed(
        &switchboard(&["call", "hang", "--timeout", "200ms", "-c", config.str()]),
        3,
    );
    assert!(
        err.contains("call to tool `hang` on server `two` timed out"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn config_call_of_a_shared_or_unknown_name_exits_3() {
    let config = demo_config_file();
    let err = assert_failed(&switchboard(&["call", "greet", "-c", config.str()]), 3);
    assert!(err.contains("several servers (one, two)"), "{err}");
    let err = assert_failed(&switchboard(&["call", "nosuch", "-c", config.str()]), 3);
    assert!(err.contains("no tool named `nosuch`"), "{err}");
    let err = assert_failed(
        &switchboard(&["call", "one__greet", "[1]", "-c", config.str()]),
        2,
    );
    assert!(err.contains("bad arguments for tool `one__greet`"), "{err}");
}

#[test]
fn mcp_tool_timeout_bounds_calls() {
    let config = demo_config_file();
    let started = Instant::now();
    let mut call = command(&["call", "hang", "-c", config.str()]);
    call.env("MCP_TOOL_TIMEOUT", "200");
    let err = assert_failed(&run(call), 3);
    assert!(err.contains("timed out after"), "{err}");
    // The same for one server after `--`.
    let mut call = command(&["call", "hang", "--", BIN, "demo-server", "--faults"]);
    call.env("MCP_TOOL_TIMEOUT", "200");
    let err = assert_failed(&run(call), 3);
    assert!(err.contains("timed out after"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn check_json_reports_every_server() {
    let config = Temp::file(
        "check.json",
        &demo_config(r#", "off": {"command": "nothing", "disabled": true}"#),
    );
    let output = switchboard(&["check", "-c", config.str(), "--json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    let servers = &doc["servers"];
    assert_eq!(names(servers, "name"), ["one", "two", "off"]);
    for server in &servers.as_array().expect("servers")[..2] {
        assert_eq!(server["state"], "ready", "{server}");
        assert_eq!(server["transport"], "stdio", "{server}");
        assert!(server["protocolVersion"].is_string(), "{server}");
        assert!(server["handshakeMs"].is_u64(), "{server}");
        assert_eq!(server["error"], Value::Null, "{server}");
    }
    assert_eq!(servers[0]["tools"], 3);
    assert!(servers[1]["tools"].as_u64() > Some(3));
    assert_eq!(servers[2]["state"], "disabled");
}

#[test]
fn check_table_has_a_row_per_server() {
    let config = demo_config_file();
    let output = switchboard(&["check", "-c", config.str()]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("SERVER  TRANSPORT  STATE"), "{out}");
    assert!(lines[1].starts_with("one     stdio      ready"), "{out}");
    assert!(lines[2].starts_with("two     stdio      ready"), "{out}");
}

#[test]
fn a_broken_server_fails_check_and_tools_after_the_report() {
    let config = Temp::file(
        "broken.json",
        &demo_config(r#", "broken": {"command": "/nonexistent/mcp-server"}"#),
    );
    let output = switchboard(&["check", "-c", config.str(), "--json"]);
    assert_eq!(output.status.code(), Some(3), "stderr: {}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    let servers = &doc["servers"];
    assert_eq!(names(servers, "name"), ["one", "two", "broken"]);
    assert_eq!(servers[0]["state"], "ready");
    let broken = &servers[2];
    assert!(
        broken["state"] == "restarting" || broken["state"] == "failed",
        "{broken}"
    );
    let error = broken["error"].as_str().expect("an error");
    assert!(
        error.contains("server `broken` could not be started"),
        "{error}"
    );
    assert_eq!(
        stderr(&output),
        "switchboard: 1 of 3 servers is not ready: broken\n"
    );

    let output = switchboard(&["tools", "-c", config.str()]);
    assert_eq!(output.status.code(), Some(3), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    assert!(out.starts_with("one (ready)\n"), "{out}");
    assert!(out.contains("\nbroken ("), "{out}");
    assert!(out.contains("could not be started"), "{out}");

    // A call to a working server's tool still works.
    let output = switchboard(&["call", "one__add", r#"{"a":2,"b":3}"#, "-c", config.str()]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "5\n");
}

#[test]
fn config_errors_exit_2_naming_file_and_path() {
    let config = Temp::file("type.json", r#"{"mcpServers": {"a": {"command": 5}}}"#);
    for args in [&["tools"][..], &["call", "greet"], &["check", "--json"]] {
        let mut all = args.to_vec();
        all.extend(["-c", config.str()]);
        let err = assert_failed(&switchboard(&all), 2);
        assert!(err.contains(config.str()), "{err}");
        assert!(err.contains("mcpServers.a.command"), "{err}");
    }
    let config = Temp::file("syntax.json", r#"{"mcpServers": {"#);
    let err = assert_failed(&switchboard(&["check", "-c", config.str()]), 2);
    assert!(err.contains(config.str()), "{err}");
    let err = assert_failed(&switchboard(&["tools", "-c", "/nonexistent/mcp.json"]), 2);
    assert!(err.contains("/nonexistent/mcp.json"), "{err}");
}

#[test]
fn switchboard_config_names_the_file() {
    let config = demo_config_file();
    let mut tools = command(&["tools", "--json"]);
    tools.env("SWITCHBOARD_CONFIG", config.str());
    let output = run(tools);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(names(&doc["servers"], "name"), ["one", "two"]);
    // `-c` wins over the environment.
    let mut check = command(&["check", "-c", config.str()]);
    check.env("SWITCHBOARD_CONFIG", "/nonexistent/mcp.json");
    let output = run(check);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    // A file the environment names must exist.
    let mut check = command(&["check"]);
    check.env("SWITCHBOARD_CONFIG", "/nonexistent/mcp.json");
    let err = assert_failed(&run(check), 2);
    assert!(err.contains("SWITCHBOARD_CONFIG"), "{err}");
}

#[test]
fn mcp_json_in_the_current_directory_is_found() {
    let dir = Temp::dir("project");
    std::fs::write(dir.0.join(".mcp.json"), demo_config("")).expect("write .mcp.json");
    let mut call = command(&["call", "two__greet", r#"{"name":"y"}"#]);
    call.current_dir(&dir.0);
    let output = run(call);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Hello, y!\n");
}

#[test]
fn no_config_file_exits_2() {
    let dir = Temp::dir("empty");
    for args in [&["tools"][..], &["call", "greet"], &["check"]] {
        let mut cmd = command(args);
        cmd.current_dir(&dir.0);
        let err = assert_failed(&run(cmd), 2);
        assert!(err.contains("no config file"), "{err}");
        assert!(err.contains("SWITCHBOARD_CONFIG"), "{err}");
    }
    assert!(!Path::new(&dir.0).join(".mcp.json").exists());
}

#[test]
fn config_and_command_together_exit_2() {
    let config = demo_config_file();
    for args in [&["tools"][..], &["call", "greet"]] {
        let mut all = args.to_vec();
        all.extend(["-c", config.str(), "--", BIN, "demo-server"]);
        let err = assert_failed(&switchboard(&all), 2);
        assert!(err.contains("--config"), "{err}");
    }
}
