//! The command line as a user meets it: a signal during a graceful shutdown that kills,
//! messages that say what happened (an unreachable URL, a server that prints text where
//! messages go, a tool the config denies, a name several servers offer), global options
//! anywhere, only the servers a command needs started, any server on the command line
//! (`-e`, `--cwd`), `key=value` arguments checked against the tool's schema, `check --
//! CMD`, an empty config, and a bare `switchboard`.

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
fn a_signal_during_a_graceful_shutdown_kills_the_servers() {
    // A server whose shell outlives the demo server: after a command that did its work it
    // takes the whole graceful shutdown (stdin closed, 2 s, SIGTERM, 2 s, SIGKILL), and
    // writes down a SIGTERM when it gets one.
    let marker = Temp::file("term-marker", "");
    let script = r#"trap 'echo term >> "$1"' TERM; "$0" demo-server --faults; while :; do sleep 60 & wait; done"#;
    let mut child = Command::new(BIN)
        .args(["tools", "--", "/bin/sh", "-c", script, BIN])
        .arg(marker.str())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the listing");
    // The listing is printed before the shutdown begins.
    assert!(line.starts_with("greet"), "{line}");
    let servers = crate::cli::children(child.id());
    assert!(!servers.is_empty() || !cfg!(target_os = "linux"));
    // Well into the graceful shutdown: stdin was closed, the demo server ended, and the
    // shell went on to its loop.
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
    // The signal: the servers are killed, not sent SIGTERM after a grace period.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "switchboard did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("status");
    assert_eq!(status.code(), Some(0), "the listing's exit code");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut rest);
    assert!(!rest.contains("switchboard: "), "no failure: {rest}");
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
        err.contains("server `sh` did not complete its handshake within its startup timeout of 1s"),
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
    // A string property takes 5 as the string "5"; as ARGS_JSON, 5 is a number it refuses.
    assert_eq!(
        succeeded(&against_demo(&["call", "greet", "name=5"])),
        "Hello, 5!\n"
    );
    let err = assert_failed(&against_demo(&["call", "greet", r#"{"name":5}"#]), 2);
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
    assert!(out.contains("New here? The tour starts"), "{out}");
    // On a line of its own, as the shell finds this program (hints_run_where_they_are_printed).
    assert!(
        out.lines()
            .any(|l| l.starts_with("  ") && l.ends_with("switchboard demo")),
        "{out}"
    );
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
    // The bar shows the latest step when it is drawn: which steps a loaded machine draws
    // is up to timing, that at least one is drawn, as a bar, is not.
    let bar = |k: usize| {
        shown.split("\r\x1b[2K[").skip(1).any(|drawn| {
            drawn.starts_with(['#', '-']) && drawn.contains(&format!("% {k}/3 step {k}"))
        })
    };
    assert!(bar(1) || bar(2) || bar(3), "{shown:?}");
    if bar(1) {
        assert!(
            shown.contains("\r\x1b[2K[#######-------------]  33% 1/3 step 1"),
            "{shown:?}"
        );
    }
    let erased = shown.rfind("\r\x1b[2K").expect("erased");
    let answer = shown.find("slept 600 ms").expect("the answer");
    assert!(erased < answer, "{shown:?}");
}

/// A handshake-era server in sh that logs when its level is set and updates `x://a` when it
/// is subscribed to: what `logs` and `subscribe` follow. Every other request is -32601.
pub(crate) const SH_SERVER: &str = r#"
reply() { printf '{"jsonrpc":"2.0","id":%s,%s}\n' "$id" "$1"; }
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      reply '"result":{"protocolVersion":"2025-06-18","capabilities":{"logging":{},"resources":{"subscribe":true}},"serverInfo":{"name":"sh","version":"1"}}' ;;
    *'"method":"logging/setLevel"'*)
      reply '"result":{}'
      printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"disk","data":"disk low"}}' ;;
    *'"method":"resources/list"'*) reply '"result":{"resources":[{"uri":"x://a","name":"a"}]}' ;;
    *'"method":"resources/templates/list"'*) reply '"result":{"resourceTemplates":[]}' ;;
    *'"method":"resources/read"'*) reply '"result":{"contents":[{"uri":"x://a","text":"fresh"}]}' ;;
    *'"method":"resources/subscribe"'*)
      reply '"result":{}'
      printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x://a"}}' ;;
    *'"method":"ping"'*) reply '"result":{}' ;;
    *) if [ -n "$id" ]; then reply '"error":{"code":-32601,"message":"Method not found"}'; fi ;;
  esac
done
"#;

/// Runs `switchboard ARGS -- /bin/sh SH_SERVER`, reads `lines` lines of its stdout, then
/// interrupts it: the lines and the exit code.
fn follow(args: &[&str], lines: usize) -> (Vec<String>, Option<i32>) {
    let script = Temp::file("server.sh", SH_SERVER);
    let mut child = Command::new(BIN)
        .args(args)
        .args(["--", "/bin/sh"])
        .arg(script.str())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn switchboard");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut read = Vec::new();
    for _ in 0..lines {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        read.push(line);
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().expect("status");
    (read, status.code())
}

#[test]
fn logs_and_subscribe_print_until_interrupted_which_ends_them_with_exit_0() {
    let (lines, code) = follow(&["logs", "--level", "info"], 1);
    assert_eq!(lines, ["[warning] sh disk: disk low\n"]);
    assert_eq!(code, Some(0));
    let (lines, code) = follow(&["logs", "--json"], 1);
    let log: serde_json::Value = serde_json::from_str(&lines[0]).expect("JSON");
    assert_eq!(log["level"], "warning");
    assert_eq!(log["data"], "disk low");
    assert_eq!(code, Some(0));
    let (lines, code) = follow(&["subscribe", "x://a", "--read"], 2);
    assert_eq!(lines, ["x://a\n", "fresh\n"]);
    assert_eq!(code, Some(0));
    let (lines, _) = follow(&["ping"], 1);
    assert!(lines[0].starts_with("sh: answered in "), "{lines:?}");
}

#[test]
fn meta_goes_into_the_requests_meta() {
    let wire = Temp::path("meta-wire.jsonl");
    let server = r#"tee "$0" | exec "$1" demo-server"#;
    let output = switchboard(&[
        "call",
        "add",
        "a=1",
        "b=2",
        "--meta",
        r#"{"trace":"t-1"}"#,
        "--",
        "/bin/sh",
        "-c",
        server,
        wire.str(),
        BIN,
    ]);
    assert_eq!(succeeded(&output), "3\n");
    let text = std::fs::read_to_string(&wire.0).expect("the wire");
    let call: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| m["method"] == "tools/call")
        .expect("the call on the wire");
    assert_eq!(call["params"]["_meta"]["trace"], "t-1", "{call}");
    assert!(
        call["params"]["_meta"]["progressToken"].is_number(),
        "{call}"
    );
    let refused = against_demo(&["call", "add", "--meta", "[1]"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("expected a JSON object"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn headers_go_with_every_request_to_a_url() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let seen = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("a request");
        let mut head = Vec::new();
        let mut byte = [0; 1];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let _ = stream.write_all(
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&head).to_lowercase()
    });
    let output = switchboard(&[
        "tools",
        "--startup-timeout",
        "2s",
        "-H",
        "X-Team: tools",
        "--header",
        "Authorization:Bearer t0k",
        "--",
        &url,
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let head = seen.join().expect("the listener");
    assert!(head.contains("x-team: tools\r\n"), "{head}");
    assert!(head.contains("authorization: bearer t0k\r\n"), "{head}");
}

/// The bundled demo server over Streamable HTTP (`demo-server --http`), killed on drop.
struct HttpDemo {
    child: std::process::Child,
    url: String,
}

impl HttpDemo {
    fn start() -> HttpDemo {
        HttpDemo::at("127.0.0.1:0")
    }

    /// Started with `--http ADDR`.
    fn at(addr: &str) -> HttpDemo {
        let mut child = Command::new(BIN)
            .args(["demo-server", "--http", addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the demo server");
        let mut line = String::new();
        BufReader::new(child.stderr.take().expect("stderr"))
            .read_line(&mut line)
            .expect("where it serves");
        let url = line
            .split("serving MCP at ")
            .nth(1)
            .map(|u| u.trim().to_owned())
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        HttpDemo { child, url }
    }
}

impl Drop for HttpDemo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn demo_server_http_with_a_bare_port_listens_on_loopback() {
    // A port nothing listens on; `serve --listen PORT` binds 127.0.0.1 the same way.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port");
    let demo = HttpDemo::at(&port.to_string());
    let url = format!("http://127.0.0.1:{port}/mcp");
    assert_eq!(demo.url, url);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let out = succeeded(&switchboard(&["call", "add", "a=2", "b=3", "--", &url]));
    assert_eq!(out, "5\n");
    // What is not a port or an IP address with its port is refused, as by `serve --listen`.
    let refused = assert_failed(&switchboard(&["demo-server", "--http", "localhost:0"]), 2);
    assert!(
        refused.contains("--http: expected PORT or IP:PORT (127.0.0.1:8080, [::1]:8080)"),
        "{refused}"
    );
}

#[test]
fn a_url_on_the_command_line_is_one_http_server() {
    let demo = HttpDemo::start();
    assert_eq!(
        succeeded(&switchboard(&[
            "call", "add", "a=2", "b=3", "--", &demo.url
        ])),
        "5\n"
    );
    let host = demo
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let doc = json_document(&["check", "--json", "--", &demo.url], 0);
    assert_eq!(doc["servers"][0]["name"], host.as_str());
    assert_eq!(doc["servers"][0]["transport"], "http");
    let out = succeeded(&switchboard(&["ping", "--", &demo.url]));
    assert!(out.starts_with(&format!("{host}: answered in ")), "{out}");
}

#[test]
fn auth_login_of_a_server_without_oauth_says_it_needs_none() {
    let demo = HttpDemo::start();
    let config = Temp::file(
        "no-oauth.json",
        &format!(
            r#"{{"mcpServers": {{"open": {{"url": "{}", "oauth": {{}}}}}}}}"#,
            demo.url
        ),
    );
    let home = Temp::path("no-oauth-home");
    let output = Command::new(BIN)
        .args(["auth", "login", "open", "-c", config.str()])
        .env("XDG_CONFIG_HOME", &home.0)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard");
    let err = assert_failed(&output, 3);
    assert!(err.contains("server `open` does not use OAuth"), "{err}");
    assert!(err.contains(&demo.url), "{err}");
}

#[test]
fn meta_goes_with_a_prompt_too() {
    let wire = Temp::path("prompt-meta-wire.jsonl");
    let server = r#"tee "$0" | exec "$1" demo-server"#;
    let output = switchboard(&[
        "prompt",
        "greeting",
        r#"{"name":"Ada"}"#,
        "--meta",
        r#"{"trace":"p-1"}"#,
        "--",
        "/bin/sh",
        "-c",
        server,
        wire.str(),
        BIN,
    ]);
    assert_eq!(succeeded(&output), "user: Say hello to Ada.\n");
    let text = std::fs::read_to_string(&wire.0).expect("the wire");
    let get: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| m["method"] == "prompts/get")
        .expect("the request on the wire");
    assert_eq!(get["params"]["_meta"]["trace"], "p-1", "{get}");
}
