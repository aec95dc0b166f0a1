//! The command line against servers nobody here wrote: server-everything (over stdio,
//! Streamable HTTP and legacy HTTP+SSE, given on the command line as a command or a URL)
//! and the official Python SDK server. Tools the server adds right after its handshake are
//! called at once, forms are answered with `--answer`, `complete`, `ping` and `auth login` of a
//! server without OAuth.
//!
//! `#[ignore = "needs …"]`: `.ci/run` installs the peers (`.ci/peers`, `.ci/venv`) and runs
//! these with `--ignored`; a peer that is missing fails the test, saying how to install it.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{assert_failed, json_document, stderr, stdout, switchboard, Temp};

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn installed(path: PathBuf, what: &str) -> String {
    assert!(
        path.exists(),
        "{what} is not installed at {} (run .ci/run once, which installs every peer)",
        path.display()
    );
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// `mcp-server-everything` in `.ci/peers`.
fn everything() -> String {
    installed(
        root().join(".ci/peers/node_modules/.bin/mcp-server-everything"),
        "server-everything",
    )
}

/// The Python interpreter of the venv with the official SDK, and the peer's script.
fn python() -> (String, String) {
    let python = std::env::var_os("SWITCHBOARD_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".ci/venv/bin/python"));
    (
        installed(python, "the Python SDK's venv"),
        installed(
            root().join("tests/peers/python_server.py"),
            "the Python peer",
        ),
    )
}

/// A peer listening on a port of 127.0.0.1; killed and reaped on drop.
struct Listening {
    child: Child,
    port: u16,
}

impl Listening {
    /// `mcp-server-everything MODE` (`sse` or `streamableHttp`) on a free port.
    fn everything(mode: &str) -> Listening {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let child = Command::new(everything())
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything");
        let mut peer = Listening { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = peer.child.try_wait() {
                panic!("server-everything {mode} exited: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        peer
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Exit 0 and stdout.
fn succeeded(output: &std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    stdout(output)
}

/// The answer to server-everything's form: its required name; the defaults do the rest.
const ANSWER: &str = r#"{"name":"Ada","check":true}"#;

#[test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
fn tools_added_after_the_handshake_are_called_at_once_over_every_transport() {
    let sse = Listening::everything("sse");
    let http = Listening::everything("streamableHttp");
    let bin = everything();
    let targets: [Vec<String>; 3] = [
        vec!["--".into(), bin, "stdio".into()],
        vec!["--".into(), http.url("/mcp")],
        vec!["--sse".into(), sse.url("/sse")],
    ];
    for target in &targets {
        // Each run is a new session, whose elicitation tool is registered after
        // `initialized` and announced: five in a row, as users met the race.
        for round in 0..5 {
            let mut args = vec!["call", "trigger-elicitation-request", "--answer", ANSWER];
            args.extend(target.iter().map(String::as_str));
            let out = succeeded(&switchboard(&args));
            assert!(
                out.contains("- Name: Ada"),
                "{target:?} round {round}: {out}"
            );
            assert!(out.contains("- Favorite Integer: 42"), "{target:?}: {out}");
        }
        // And `check` counts them.
        let mut args = vec!["check", "--json"];
        args.extend(target.iter().map(String::as_str));
        let doc = json_document(&args, 0);
        let tools = doc["servers"][0]["tools"].as_u64().expect("a count");
        let mut list = vec!["tools", "--json"];
        list.extend(target.iter().map(String::as_str));
        let listed = json_document(&list, 0);
        let names: Vec<&str> = listed["servers"][0]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            names.contains(&"trigger-elicitation-request"),
            "{target:?}: {names:?}"
        );
        assert_eq!(tools as usize, names.len(), "{target:?}");
    }
}

#[test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
fn key_value_arguments_complete_and_ping_against_server_everything() {
    let bin = everything();
    let out = succeeded(&switchboard(&[
        "call", "get-sum", "a=2", "b=40", "--", &bin, "stdio",
    ]));
    assert!(out.contains("42"), "{out}");
    let out = succeeded(&switchboard(&[
        "call",
        "echo",
        "message=hi there",
        "--",
        &bin,
        "stdio",
    ]));
    assert_eq!(out.trim(), "Echo: hi there");
    // Its schema's words for a missing argument.
    let err = assert_failed(
        &switchboard(&["call", "get-sum", "a=2", "--", &bin, "stdio"]),
        2,
    );
    assert!(err.contains(r#""b" is a required property"#), "{err}");
    let out = succeeded(&switchboard(&[
        "complete",
        "completable-prompt",
        "department",
        "S",
        "--",
        &bin,
        "stdio",
    ]));
    assert_eq!(out, "Sales\nSupport\n");
    let out = succeeded(&switchboard(&["ping", "--", &bin, "stdio"]));
    assert!(
        out.starts_with("mcp-server-everything: answered in "),
        "{out}"
    );
    let http = Listening::everything("streamableHttp");
    let out = succeeded(&switchboard(&["ping", "--", &http.url("/mcp")]));
    assert!(out.contains(": answered in "), "{out}");
}

#[test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
fn auth_login_of_a_server_without_oauth_says_it_needs_none() {
    let http = Listening::everything("streamableHttp");
    let config = Temp::file(
        "no-oauth.json",
        &format!(
            r#"{{"mcpServers": {{"open": {{"url": "{}", "oauth": {{}}}}}}}}"#,
            http.url("/mcp")
        ),
    );
    let home = Temp::path("no-oauth-home");
    let output = Command::new(crate::cli::BIN)
        .args(["auth", "login", "open", "-c", config.str()])
        .env("XDG_CONFIG_HOME", &home.0)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard");
    let err = assert_failed(&output, 3);
    assert!(err.contains("server `open` does not use OAuth"), "{err}");
    assert!(err.contains(&http.url("/mcp")), "{err}");
}

#[test]
#[ignore = "needs the Python SDK in .ci/venv (.ci/run installs it)"]
fn the_python_sdk_server_from_the_command_line() {
    let (python, script) = python();
    let server = ["--", python.as_str(), script.as_str()];
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(server);
        switchboard(&all)
    };
    // A form answered by --answer, in whichever era the server is spoken to.
    assert_eq!(
        succeeded(&with(&[
            "call",
            "book_trip",
            "city=Paris",
            "--answer",
            r#"{"confirm":true}"#
        ]))
        .trim(),
        "booked Paris"
    );
    assert_eq!(
        succeeded(&with(&[
            "call",
            "book_trip",
            "city=Paris",
            "--answer",
            r#"{"confirm":false}"#
        ]))
        .trim(),
        "not booked: Paris"
    );
    // Without a terminal or an answer, the form is declined.
    let declined = with(&["call", "book_trip", "city=Paris"]);
    assert_ne!(declined.status.code(), Some(0), "{}", stdout(&declined));
    // key=value arguments, checked against its schema.
    let doc: Value = serde_json::from_str(&succeeded(&with(&[
        "call",
        "forecast",
        "city=Oslo",
        "days=2",
        "--json",
    ])))
    .expect("JSON");
    assert_eq!(doc["structuredContent"]["city"], "Oslo");
    let err = assert_failed(&with(&["call", "forecast", "days=2"]), 2);
    assert!(err.contains(r#""city" is a required property"#), "{err}");
    let out = succeeded(&with(&["ping"]));
    assert!(out.contains(": answered in "), "{out}");
    // Over Streamable HTTP, as a URL.
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut child = Command::new(&python)
        .args([script.as_str(), "--http", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the Python server");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Python server did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = switchboard(&[
        "call",
        "book_trip",
        "city=Rome",
        "--answer",
        r#"{"confirm":true}"#,
        "--",
        &url,
    ]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(succeeded(&out).trim(), "booked Rome");
}
