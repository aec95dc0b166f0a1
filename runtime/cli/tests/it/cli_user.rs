//! The command line as a user meets it: a deadline reported before the shutdown (and a
//! second signal that kills), messages that say what happened (an unreachable URL, a server
//! that prints text where messages go, a tool the config denies, a name several servers
//! offer), global options anywhere, only the servers a command needs started, any server on
//! the command line (`-e`, `--cwd`), `key=value` arguments checked against the tool's
//! schema, `check -- CMD`, an empty config, and a bare `switchboard`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{
    against_demo, assert_failed, json_document, stderr, stdout, switchboard, Temp, BIN,
};
use crate::process_is_gone;

/// Exit 0 and stdout.
fn succeeded(output: &std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    stdout(output)
}

#[test]
fn a_deadline_is_reported_before_the_shutdown_and_a_second_signal_kills_the_servers() {
    // A server whose shell outlives the demo server: it takes the whole graceful shutdown
    // (stdin closed, 2 s, SIGTERM, 2 s, SIGKILL), and writes down a SIGTERM when it gets one.
    let marker = Temp::file("term-marker", "");
    let script = r#"trap 'echo term >> "$1"' TERM; "$0" demo-server --faults; while :; do sleep 60 & wait; done"#;
    let mut child = Command::new(BIN)
        .args([
            "call",
            "hang",
            "--timeout",
            "300ms",
            "--",
            "/bin/sh",
            "-c",
            script,
            BIN,
        ])
        .arg(marker.str())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("a line on stderr");
    // Said at the deadline, while the servers are still being shut down.
    assert!(line.contains("timed out"), "{line}");
    assert!(line.starts_with("switchboard: "), "{line}");
    assert!(
        child.try_wait().expect("wait").is_none(),
        "exited before saying it"
    );
    let servers = crate::cli::children(child.id());
    assert!(!servers.is_empty() || !cfg!(target_os = "linux"));
    // Well into the graceful shutdown: stdin was closed, the demo server ended, and the
    // shell went on to its loop (a signal then once found nothing left to kill).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !servers.iter().any(|&shell| {
        crate::cli::children(shell).into_iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
    }) {
        assert!(
            Instant::now() < deadline,
            "the shutdown did not close stdin"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The second signal: the servers are killed, not sent SIGTERM after a grace period.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "switchboard did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("status");
    assert_eq!(status.code(), Some(3), "the deadline's exit code");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert_eq!(rest, "", "one line on stderr");
    assert_eq!(
        std::fs::read_to_string(&marker.0).unwrap_or_default(),
        "",
        "the server was sent SIGTERM: the graceful shutdown ran its course"
    );
    for server in servers {
        assert!(process_is_gone(server), "server {server} survived");
    }
}

#[test]
fn an_unreachable_url_says_it_could_not_be_reached_and_where() {
    // Nothing listens on port 9 (discard) of the loopback.
    let url = "http://127.0.0.1:9/mcp";
    let err = assert_failed(&switchboard(&["tools", "--", url]), 3);
    assert!(
        err.contains(&format!(
            "server `127.0.0.1:9` could not be reached at {url}"
        )),
        "{err}"
    );
    assert!(!err.contains("restarting"), "{err}");
    // The same for a config file's server, which would be restarted.
    let config = Temp::file(
        "unreachable.json",
        &format!(r#"{{"mcpServers": {{"far": {{"url": "{url}"}}}}}}"#),
    );
    let err = assert_failed(&switchboard(&["call", "x", "-c", config.str()]), 3);
    assert!(
        err.contains(&format!("server `far` could not be reached at {url}")),
        "{err}"
    );
    assert!(!err.contains("restarting"), "{err}");
}

#[test]
fn what_a_server_prints_on_stdout_is_in_the_handshake_error() {
    let err = assert_failed(
        &switchboard(&[
            "tools",
            "--startup-timeout",
            "1s",
            "--",
            "/bin/sh",
            "-c",
            "echo 'Server listening on port 3000'; sleep 30",
        ]),
        3,
    );
    assert!(
        err.contains("no complete handshake within the startup timeout"),
        "{err}"
    );
    assert!(
        err.contains("`Server listening on port 3000` (not JSON"),
        "{err}"
    );
}

/// A config of the demo server `one`, whose tools `denyTools` filters.
fn denying() -> Temp {
    let text = format!(
        r#"{{"mcpServers": {{"one": {{"command": {bin}, "args": ["demo-server"], "denyTools": ["add"]}}}}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    Temp::file("deny.json", &text)
}

#[test]
fn a_tool_the_config_denies_is_said_to_be_denied() {
    let config = denying();
    let err = assert_failed(
        &switchboard(&["call", "add", "a=1", "b=2", "-c", config.str()]),
        3,
    );
    assert!(
        err.contains("tool `add` of server `one` is denied by the config"),
        "{err}"
    );
    assert!(!err.contains("no tool"), "{err}");
    // A tool nobody lists is still unknown.
    let err = assert_failed(&switchboard(&["call", "nosuch", "-c", config.str()]), 3);
    assert!(err.contains("has no tool `nosuch`"), "{err}");
}

/// `one` and `two` (the demo server twice): every tool name is shared.
fn two_demos(extra: &str) -> Temp {
    let text = format!(
        r#"{{"mcpServers": {{
            "one": {{"command": {bin}, "args": ["demo-server", "--name", "one"]}},
            "two": {{"command": {bin}, "args": ["demo-server", "--name", "two"]}}{extra}
        }}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    Temp::file("two.json", &text)
}

#[test]
fn a_name_several_servers_offer_exits_2_naming_what_to_call_for_tools_prompts_and_resources() {
    let config = two_demos("");
    let err = assert_failed(
        &switchboard(&["call", "greet", "name=x", "-c", config.str()]),
        2,
    );
    assert!(
        err.contains("tool `greet` is offered by several servers (`one`, `two`): call one of `one__greet`, `two__greet`"),
        "{err}"
    );
    let err = assert_failed(&switchboard(&["prompt", "simple", "-c", config.str()]), 2);
    assert!(
        err.contains("is offered by several servers (`one`, `two`)"),
        "{err}"
    );
    let err = assert_failed(
        &switchboard(&["read", "demo://text/hello", "-c", config.str()]),
        2,
    );
    assert!(
        err.contains("is offered by several servers (`one`, `two`)"),
        "{err}"
    );
}

/// A config of `one` (the demo server) and `marked`, a demo server that first creates
/// `marker`: whether `marked` was started shows in the file.
fn one_and_marked(marker: &Path) -> Temp {
    let marked = format!(
        r#", "marked": {{"command": "/bin/sh", "args": ["-c", "touch \"$1\"; exec \"$0\" demo-server --name marked", {bin}, {marker}]}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
        marker = serde_json::to_string(marker.to_str().expect("UTF-8")).expect("a JSON string"),
    );
    let text = format!(
        r#"{{"mcpServers": {{"one": {{"command": {bin}, "args": ["demo-server", "--name", "one"]}}{marked}}}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    Temp::file("marked.json", &text)
}

#[test]
fn a_command_about_one_server_starts_that_server_alone() {
    let marker = Temp::path("started-marker");
    let config = one_and_marked(&marker.0);
    let cases: [&[&str]; 4] = [
        &["read", "demo://text/hello", "--server", "one"],
        &["prompt", "simple", "--server", "one"],
        &["call", "one__add", "a=2", "b=3"],
        &["call", "one__echo", r#"{"text":"hi"}"#],
    ];
    for args in cases {
        let mut all = args.to_vec();
        all.extend(["-c", config.str()]);
        succeeded(&switchboard(&all));
        assert!(!marker.0.exists(), "{args:?} started `marked` too");
    }
    // A server no one names is refused before anything starts.
    let err = assert_failed(
        &switchboard(&[
            "read",
            "demo://text/hello",
            "--server",
            "nosuch",
            "-c",
            config.str(),
        ]),
        2,
    );
    assert!(
        err.contains("--server nosuch: no such server; the servers are `one`, `marked`"),
        "{err}"
    );
    assert!(!marker.0.exists(), "a refused --server started servers");
    // The control: a command about every server starts `marked`.
    succeeded(&switchboard(&["tools", "-c", config.str()]));
    assert!(
        marker.0.exists(),
        "`marked` never started: the test proves nothing"
    );
}

#[test]
fn global_options_go_anywhere() {
    let config = Temp::file(
        "auth-anywhere.json",
        r#"{"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp", "oauth": {"clientId": "app"}}}}"#,
    );
    let home = Temp::path("auth-home");
    for args in [
        &["auth", "status", "-c", config.str()][..],
        &["auth", "-c", config.str(), "status"],
        &["auth", "status", "--config", config.str()],
    ] {
        let output = Command::new(BIN)
            .args(args)
            .env("XDG_CONFIG_HOME", &home.0)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("run switchboard");
        assert_eq!(succeeded(&output), "docs: not logged in\n", "{args:?}");
    }
}

#[test]
fn arguments_as_key_value_pairs_are_checked_against_the_tools_schema() {
    assert_eq!(
        succeeded(&against_demo(&["call", "add", "a=2", "b=3"])),
        "5\n"
    );
    assert_eq!(
        succeeded(&against_demo(&["call", "greet", "name=Ada Lovelace"])),
        "Hello, Ada Lovelace!\n"
    );
    // A number where the schema says string, and a missing required one: exit 2, in the
    // schema's words, nothing sent.
    let err = assert_failed(&against_demo(&["call", "add", "a=x"]), 2);
    assert!(
        err.contains("bad arguments for tool `add` on server `switchboard`"),
        "{err}"
    );
    assert!(
        err.contains(r#""x" is not of type "number" at `/a`"#),
        "{err}"
    );
    assert!(err.contains(r#""b" is a required property"#), "{err}");
    let err = assert_failed(&against_demo(&["call", "greet", "name=5"]), 2);
    assert!(err.contains(r#"5 is not of type "string""#), "{err}");
    // The same check for ARGS_JSON.
    let err = assert_failed(&against_demo(&["call", "add", r#"{"a":1}"#]), 2);
    assert!(err.contains(r#""b" is a required property"#), "{err}");
}

#[test]
fn a_command_server_takes_its_environment_and_folder() {
    let dir = Temp::dir("server-cwd");
    let folder = std::fs::canonicalize(&dir.0).expect("canonical");
    let name = folder
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a name")
        .to_owned();
    // The server names itself after $NAME and its working directory.
    let script = r#"exec "$0" demo-server --name "$NAME-$(basename "$PWD")""#;
    let output = switchboard(&[
        "tools",
        "-e",
        "NAME=env",
        "--cwd",
        dir.str(),
        "--",
        "/bin/sh",
        "-c",
        script,
        BIN,
    ]);
    succeeded(&output);
    assert!(
        stderr(&output).contains(&format!(": env-{name} ")),
        "{}",
        stderr(&output)
    );
    let err = assert_failed(
        &switchboard(&["tools", "-e", "NOEQUALS", "--", BIN, "demo-server"]),
        2,
    );
    assert!(err.contains("-e NOEQUALS: expected KEY=VALUE"), "{err}");
}

#[test]
fn check_takes_a_command_and_its_help_documents_every_json_field() {
    let doc = json_document(&["check", "--json", "--", BIN, "demo-server"], 0);
    let server = &doc["servers"][0];
    assert_eq!(server["name"], "switchboard");
    assert_eq!(server["state"], "ready");
    let help = succeeded(&switchboard(&["check", "--help"]));
    let fields: Vec<&str> = server
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    for field in fields {
        assert!(
            help.contains(&format!("\n  {field} ")),
            "{field} is not documented: {help}"
        );
    }
}

#[test]
fn an_empty_config_says_so() {
    let config = Temp::file("empty.json", r#"{"mcpServers": {}}"#);
    for command in ["check", "tools"] {
        let err = assert_failed(&switchboard(&[command, "-c", config.str()]), 2);
        assert!(
            err.contains(&format!("{}: no servers", config.str())),
            "{err}"
        );
    }
}

#[test]
fn a_bare_switchboard_prints_its_help_naming_the_tour() {
    let out = succeeded(&switchboard(&[]));
    assert!(out.contains("Usage: switchboard"), "{out}");
    assert!(out.contains("`switchboard demo` is the tour"), "{out}");
}

#[test]
fn progress_shows_on_a_terminal_only_and_is_erased_before_the_answer() {
    // stderr is not a terminal: nothing but the answer.
    let output = against_demo(&["call", "sleep", "ms=600", "steps=3"]);
    assert_eq!(succeeded(&output), "slept 600 ms\n");
    assert_eq!(stderr(&output), "");
    // A terminal, which script(1) gives the command: the bar is drawn there, then erased.
    let command = format!("{BIN} call sleep ms=600 steps=3 -- {BIN} demo-server --faults");
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script(1), of util-linux");
    let shown = stdout(&output);
    assert!(
        shown.contains("\r\x1b[2K[#######-------------]  33% 1/3 step 1"),
        "{shown:?}"
    );
    let erased = shown.rfind("\r\x1b[2K").expect("erased");
    let answer = shown.find("slept 600 ms").expect("the answer");
    assert!(erased < answer, "{shown:?}");
}
