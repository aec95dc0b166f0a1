//! The `switchboard` command line, run as a real process against the bundled demo server:
//! output, exit codes (0, 1, 2, 3, 130) and signals, for one server after `--` and for the
//! servers of a config file.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::process_is_gone;

pub(super) const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Runs `switchboard ARGS`.
pub(super) fn switchboard(args: &[&str]) -> Output {
    run(command(args))
}

/// `switchboard ARGS`, with none of the environment variables it reads set.
pub(crate) fn command(args: &[&str]) -> Command {
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
pub(super) fn against_demo(args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--", BIN, "demo-server", "--faults"]);
    switchboard(&all)
}

pub(super) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(super) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit 2 or 3: nothing on stdout, one `switchboard: ...` line on stderr.
pub(super) fn assert_failed(output: &Output, code: i32) -> String {
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
fn durations_are_written_as_in_a_config_file() {
    // A fraction of a second: the call times out after 1.5 s, not 1 s, 15 s or 60 s. (Not
    // a shorter one: --timeout caps the demo server's start as well.)
    let err = assert_failed(&against_demo(&["call", "hang", "--timeout", "1.5s"]), 3);
    let after: u64 = err
        .split("timed out after ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no elapsed time in {err:?}"));
    assert!((1500..5000).contains(&after), "{err}");
    // Milliseconds for the handshake of a server that never answers.
    let err = assert_failed(
        &switchboard(&["tools", "--startup-timeout", "500ms", "--", "sleep", "30"]),
        3,
    );
    assert!(err.contains("startup timeout of 500ms"), "{err}");
    let output = against_demo(&[
        "call",
        "add",
        r#"{"a":2,"b":3}"#,
        "--timeout",
        " 1 m ",
        "--startup-timeout",
        "0.5m",
    ]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    // Refused as a config file refuses them (and zero, which a file's timeouts refuse too),
    // before anything starts.
    for (flag, bad) in [
        ("--timeout", "200"),
        ("--timeout", "1.5"),
        ("--timeout", "5d"),
        ("--timeout", "0s"),
        ("--startup-timeout", "30"),
        ("--startup-timeout", "1 sec"),
    ] {
        let output = against_demo(&["call", "add", flag, bad]);
        assert_eq!(output.status.code(), Some(2), "{flag} {bad}");
        assert_eq!(stdout(&output), "", "{flag} {bad}");
        let err = stderr(&output);
        assert!(
            err.contains(&format!("'{bad}' for '{flag} <DURATION>'")),
            "{err}"
        );
        assert!(
            err.contains("500ms, 5s, 1.5s, 2m or 1h") || err.contains("greater than zero"),
            "{err}"
        );
    }
}

#[test]
fn call_timeout_exits_3() {
    let started = Instant::now();
    // Long enough for the server's start, which --timeout caps too.
    let err = assert_failed(&against_demo(&["call", "hang", "--timeout", "2s"]), 3);
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

/// The child processes of `pid`, which Linux lists per thread (the thread that spawned a
/// child is its parent), but for the transport's guardian; elsewhere none, and the servers'
/// exit is not checked.
pub(super) fn children(pid: u32) -> Vec<u32> {
    let mut children = children_and_guardian(pid);
    children.retain(|&pid| !crate::is_guardian(pid));
    children
}

/// Every child process of `pid`, the guardian included.
fn children_and_guardian(pid: u32) -> Vec<u32> {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    threads
        .flatten()
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// `switchboard call hang` to a server that `script` runs (`/bin/sh -c script file BIN`:
/// `$0` is `file`, `$1` this binary).
fn call_hang(script: &str, file: &Temp) -> Command {
    let mut command = Command::new(BIN);
    command
        .args([
            "call",
            "hang",
            "--",
            "/bin/sh",
            "-c",
            script,
            file.str(),
            BIN,
        ])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// The messages in a file of JSON lines (a last, partial line is left out).
fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rsplit_once('\n').map_or("", |(done, _)| done);
    complete
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn sigint_cancels_the_call_and_exits_130() {
    // The server's input is copied to a file on its way in: the wire, as the server reads it.
    let wire = Temp::path("sigint-wire.jsonl");
    let server = r#"tee "$0" | exec "$1" demo-server --faults"#;
    let mut child = call_hang(server, &wire)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    // Interrupt once the call is on the wire.
    let deadline = Instant::now() + Duration::from_secs(15);
    let call_id = loop {
        let call = json_lines(&wire.0)
            .into_iter()
            .find(|m| m["method"] == "tools/call");
        if let Some(call) = call {
            break call["id"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(call_id.is_i64(), "{call_id}");
    let pid = child.id();
    let servers = children(pid);
    if cfg!(target_os = "linux") {
        assert!(!servers.is_empty(), "no server process under switchboard");
    }
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
    // The server was told, under the call's own id, once. (A list the runtime itself still
    // had in flight when the signal came is cancelled as the client shuts down: not the
    // call's.)
    let wire = json_lines(&wire.0);
    let cancels: Vec<_> = wire
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .filter(|m| m["params"]["requestId"] == call_id)
        .collect();
    assert_eq!(cancels.len(), 1, "{wire:#?}");
}

/// A host that is killed outright (`SIGKILL`: no handler runs, nothing is closed) leaves no
/// server behind: the guardian kills what it started.
#[cfg(target_os = "linux")]
#[test]
fn a_killed_host_leaves_no_server_behind() {
    let pidfile = Temp::path("sigkill-server.pid");
    // A server that outlives the end of its input, as many do: the demo server ends at
    // EOF, and its shell then sleeps on.
    let server = r#"echo $$ > "$0"; "$1" demo-server --faults; exec sleep 600"#;
    let mut child = call_hang(server, &pidfile)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn switchboard");
    let deadline = Instant::now() + Duration::from_secs(15);
    let server: u32 = loop {
        let written = std::fs::read_to_string(&pidfile.0).unwrap_or_default();
        if let Ok(pid) = written.trim().parse() {
            break pid;
        }
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its handshake done, the call in flight: the host is at work.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!process_is_gone(server), "the server ended on its own");
    let guardians: Vec<u32> = children_and_guardian(child.id())
        .into_iter()
        .filter(|&pid| crate::is_guardian(pid))
        .collect();
    assert_eq!(guardians.len(), 1, "one guardian per process");
    child.kill().expect("SIGKILL switchboard");
    child.wait().expect("reap switchboard");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(process_is_gone(server) && process_is_gone(guardians[0])) {
        assert!(
            Instant::now() < deadline,
            "server {server} or the guardian outlived the killed host"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- The servers of a config file ----

/// A file or directory under the temp dir with a unique name, removed on drop.
pub(super) struct Temp(pub(super) PathBuf);

impl Temp {
    pub(super) fn path(name: &str) -> Temp {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Temp(
            std::env::temp_dir().join(format!("switchboard-cli-{}-{n}-{name}", std::process::id())),
        )
    }

    /// A file holding `text`.
    pub(super) fn file(name: &str, text: &str) -> Temp {
        let temp = Temp::path(name);
        std::fs::write(&temp.0, text).expect("write temp file");
        temp
    }

    /// An empty directory.
    pub(super) fn dir(name: &str) -> Temp {
        let temp = Temp::path(name);
        std::fs::create_dir(&temp.0).expect("create temp dir");
        temp
    }

    pub(super) fn str(&self) -> &str {
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
    let one_names = names(one, "catalogueName");
    assert_eq!(one_names[..3], ["one__greet", "one__add", "one__echo"]);
    assert!(
        one_names.iter().all(|n| n.starts_with("one__")),
        "{one_names:?}"
    );
    let two_names = names(two, "catalogueName");
    assert_eq!(two_names[..3], ["two__greet", "two__add", "two__echo"]);
    for fault in ["sleep", "hang"] {
        assert!(two_names.contains(&fault), "{two_names:?}");
    }
    // Each tool is as the server listed it.
    assert_eq!(names(one, "name")[..3], ["greet", "add", "echo"]);
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
        &switchboard(&["call", "hang", "--timeout", "2s", "-c", config.str()]),
        3,
    );
    assert!(
        err.contains("call to tool `hang` on server `two` timed out"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn config_call_of_a_shared_name_exits_2_and_of_an_unknown_one_3() {
    let config = demo_config_file();
    let err = assert_failed(&switchboard(&["call", "greet", "-c", config.str()]), 2);
    assert!(
        err.contains("several servers (`one`, `two`): call one of `one__greet`, `two__greet`"),
        "{err}"
    );
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
        // The demo server refuses `server/discover`: `auto` speaks the handshake era to it.
        assert_eq!(server["era"], "legacy", "{server}");
        assert!(server["handshakeMs"].is_u64(), "{server}");
        assert_eq!(server["error"], Value::Null, "{server}");
    }
    // The demo server's ordinary tools, and more with --faults.
    assert_eq!(servers[0]["tools"], 8);
    assert!(servers[1]["tools"].as_u64() > Some(8));
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

// ---- One road: `-- CMD` runs as a config file of that one server ----

/// A config file of one server, `name`: `command ARGS` plus `extra` fields.
fn one_server_config(name: &str, command: &str, args: &[&str], extra: &str) -> Temp {
    let text = format!(
        r#"{{"mcpServers": {{{name}: {{"command": {command}, "args": {args}{extra}}}}}}}"#,
        name = serde_json::to_string(name).expect("a JSON string"),
        command = serde_json::to_string(command).expect("a JSON string"),
        args = serde_json::to_string(args).expect("a JSON array"),
    );
    Temp::file("one.json", &text)
}

/// The bundled demo server with its fault tools, in a file as `-- CMD` names it.
fn demo_as_a_file() -> Temp {
    one_server_config("switchboard", BIN, &["demo-server", "--faults"], "")
}

/// The keys of a JSON object, sorted.
fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// Runs `switchboard ARGS`, expecting exit `code` and one JSON document on stdout.
pub(super) fn json_document(args: &[&str], code: i32) -> Value {
    let output = switchboard(args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{args:?}: stderr: {}",
        stderr(&output)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not one JSON document ({e}): {}", stdout(&output)))
}

/// Asserts the `tools --json` shape: servers with a name, state, error and tools, each tool
/// as listed plus its catalogue name.
fn assert_tools_shape(doc: &Value) {
    assert_eq!(keys(doc), ["servers"], "{doc}");
    let servers = doc["servers"].as_array().expect("servers");
    assert!(!servers.is_empty(), "{doc}");
    for server in servers {
        assert_eq!(
            keys(server),
            ["error", "name", "state", "tools"],
            "{server}"
        );
        let tools = server["tools"].as_array().expect("tools");
        assert!(tools.len() >= 3, "{server}");
        for tool in tools {
            let keys = keys(tool);
            for key in ["catalogueName", "description", "inputSchema", "name"] {
                assert!(keys.contains(&key), "{key} missing from {tool}");
            }
        }
    }
}

#[test]
fn tools_json_has_one_shape_for_a_command_and_a_file() {
    let file = demo_as_a_file();
    let by_command = json_document(
        &["tools", "--json", "--", BIN, "demo-server", "--faults"],
        0,
    );
    let by_file = json_document(&["tools", "--json", "-c", file.str()], 0);
    assert_tools_shape(&by_command);
    // The same server either way: the same document.
    assert_eq!(by_command, by_file);
    // One server: every tool keeps its name in the catalogue.
    let tools = by_command["servers"][0]["tools"].as_array().expect("tools");
    for tool in tools {
        assert_eq!(tool["catalogueName"], tool["name"], "{tool}");
    }
    // Several servers: the same shape, with prefixed catalogue names.
    let several = demo_config_file();
    let by_file = json_document(&["tools", "--json", "-c", several.str()], 0);
    assert_tools_shape(&by_file);
    assert_eq!(
        by_file["servers"][0]["tools"][0]["catalogueName"],
        "one__greet"
    );
}

#[test]
fn call_json_has_one_shape_for_a_command_and_a_file() {
    let file = demo_as_a_file();
    let several = demo_config_file();
    let add = r#"{"a":2,"b":3}"#;
    let by_command = json_document(
        &[
            "call",
            "add",
            add,
            "--json",
            "--",
            BIN,
            "demo-server",
            "--faults",
        ],
        0,
    );
    let by_file = json_document(&["call", "add", add, "--json", "-c", file.str()], 0);
    let by_catalogue_name =
        json_document(&["call", "one__add", add, "--json", "-c", several.str()], 0);
    // The result exactly as the server sent it.
    assert_eq!(keys(&by_command), ["content", "structuredContent"]);
    assert_eq!(by_command["structuredContent"]["sum"], 5);
    assert_eq!(by_command["content"][0]["text"], "5");
    assert_eq!(by_command, by_file);
    assert_eq!(by_command, by_catalogue_name);
    // A tool error: exit 1, with the same document either way.
    let fail = r#"{"message":"no luck"}"#;
    let by_command = json_document(
        &[
            "call",
            "fail",
            fail,
            "--json",
            "--",
            BIN,
            "demo-server",
            "--faults",
        ],
        1,
    );
    let by_file = json_document(&["call", "fail", fail, "--json", "-c", file.str()], 1);
    assert_eq!(by_command["isError"], true, "{by_command}");
    assert_eq!(by_command, by_file);
}

#[test]
fn a_command_fails_as_a_file_of_that_one_server_does() {
    // A server that never answers, bounded by the same startup timeout written the same way.
    let sleeper = one_server_config(
        "sleep",
        "sleep",
        &["30"],
        r#", "startupTimeout": "0.5s", "restart": false"#,
    );
    let demo = demo_as_a_file();
    let missing = one_server_config(
        "mcp-server",
        "/nonexistent/mcp-server",
        &[],
        r#", "restart": false"#,
    );
    let cases = [
        (
            vec!["tools", "--startup-timeout", "0.5s", "--", "sleep", "30"],
            vec!["tools", "-c", sleeper.str()],
            "server `sleep` did not complete its handshake within its startup timeout of 500ms \
             (--startup-timeout or startupTimeout), waiting for the answer to initialize",
        ),
        (
            vec!["tools", "--json", "--", "/nonexistent/mcp-server"],
            vec!["tools", "--json", "-c", missing.str()],
            "server `mcp-server` could not be started",
        ),
        (
            vec!["call", "add", "--", "/nonexistent/mcp-server"],
            vec!["call", "add", "-c", missing.str()],
            "server `mcp-server` could not be started",
        ),
        (
            vec!["call", "nosuch", "--", BIN, "demo-server"],
            vec!["call", "nosuch", "-c", demo.str()],
            "server `switchboard` has no tool `nosuch`",
        ),
    ];
    for (by_command, by_file, expected) in cases {
        let by_command = assert_failed(&switchboard(&by_command), 3);
        assert!(by_command.contains(expected), "{by_command}");
        let by_file = assert_failed(&switchboard(&by_file), 3);
        assert_eq!(by_command, by_file);
    }
}

/// One of the rmcp fixture servers, built by `.ci/run` into `.ci/peers/rust-target`.
fn rmcp_server(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/peers/rust-target/release")
        .join(name);
    assert!(
        path.exists(),
        "{} is not built (run .ci/run once, which builds tests/peers/rmcp*)",
        path.display()
    );
    path
}

#[test]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target (.ci/run builds them)"]
fn call_works_first_time_against_rmcp_0_and_3_servers() {
    for server in ["rmcp0-server", "rmcp3-server"] {
        let bin = rmcp_server(server);
        let bin = bin.to_str().unwrap();
        let started = Instant::now();
        let output = switchboard(&["call", "echo", r#"{"text":"hi"}"#, "--", bin]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{server}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output).trim(), "hi", "{server}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{server}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target (.ci/run builds them)"]
fn check_shows_rmcp_0_and_3_servers_ready_each_in_its_era() {
    let config = format!(
        r#"{{"mcpServers": {{"r0": {{"command": {:?}}}, "r3": {{"command": {:?}}}}}}}"#,
        rmcp_server("rmcp0-server"),
        rmcp_server("rmcp3-server"),
    );
    let dir = std::env::temp_dir().join(format!("sb-cli-rmcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mcp.json");
    std::fs::write(&file, config).unwrap();
    let output = switchboard(&["check", "--json", "-c", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let checked: Value = serde_json::from_slice(&output.stdout).unwrap();
    let servers = checked["servers"].as_array().unwrap();
    let of = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(
        (of("r0")["state"].clone(), of("r0")["era"].clone()),
        ("ready".into(), "legacy".into())
    );
    assert_eq!(
        (of("r3")["state"].clone(), of("r3")["era"].clone()),
        ("ready".into(), "modern".into())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `GET /metrics`, the body.
fn scrape(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_owned()
}

/// The value of one series (`name{labels}`), if it is exported.
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.trim().parse().ok()
    })
}

#[test]
fn the_cli_serves_a_config_files_metrics_until_interrupted() {
    use std::io::BufRead;

    let dir = std::env::temp_dir().join(format!("switchboard-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("servers.json");
    let config = json!({"mcpServers": {"demo": {
        "command": BIN,
        "args": ["demo-server"],
    }}});
    std::fs::write(&file, config.to_string()).unwrap();
    let mut child = Command::new(BIN)
        .args(["--metrics", "127.0.0.1:0", "serve-metrics", "-c"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics\n"))
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let body = std::panic::catch_unwind(|| scrape(addr));
    // Stop it before any assertion, so that a failure leaves no process behind.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let body = body.expect("a scrape");
    assert_eq!(
        value(&body, r#"switchboard_server_up{server="demo"}"#),
        Some(1.0),
        "{body}"
    );
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tools_search_prints_the_best_matches_with_scores() {
    let output = against_demo(&["tools", "--search", "sum of two numbers", "--limit", "2"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 2, "{out}");
    let (score, rest) = lines[0]
        .trim_start()
        .split_once("  ")
        .expect("score, then the tool");
    assert!(score.parse::<f64>().is_ok_and(|s| s > 0.0), "{out}");
    assert!(
        rest.starts_with("add — Adds two numbers and returns the sum"),
        "{out}"
    );
    // Nothing matches: nothing printed, still a success.
    let output = against_demo(&["tools", "--search", "zebra giraffe"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn config_tools_search_json_ranks_across_servers() {
    let config = demo_config_file();
    let output = switchboard(&[
        "tools",
        "-c",
        config.str(),
        "--search",
        "greet someone",
        "--json",
        "--limit",
        "3",
    ]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(doc["query"], "greet someone");
    let matches = doc["matches"].as_array().expect("matches");
    assert!(matches.len() >= 2 && matches.len() <= 3, "{doc}");
    // Both servers' greet first (equal scores: catalogue order), each as its server listed
    // it plus its catalogue name, server and score.
    assert_eq!(
        names(&doc["matches"], "catalogueName")[..2],
        ["one__greet", "two__greet"]
    );
    assert_eq!(names(&doc["matches"], "server")[..2], ["one", "two"]);
    assert_eq!(matches[0]["name"], "greet");
    assert!(matches[0]["inputSchema"].is_object());
    let scores: Vec<f64> = matches.iter().filter_map(|m| m["score"].as_f64()).collect();
    assert_eq!(scores.len(), matches.len());
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    // The text form names the server after the score.
    let output = switchboard(&["tools", "-c", config.str(), "--search", "greet someone"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let out = stdout(&output);
    let first = out.lines().next().expect("a match");
    assert!(
        first
            .trim_start()
            .split("  ")
            .skip(1)
            .eq(["one", "one__greet — Greets someone by name."]),
        "{out}"
    );
}

#[test]
fn tools_limit_needs_search() {
    let output = switchboard(&["tools", "--limit", "3", "--", "srv"]);
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
}
