//! `switchboard resources`, `read`, `prompts` and `prompt`, run as a real process against the
//! bundled demo server: listings for one server after `--` and for a config file with a
//! server that offers neither, reads of text, blobs and template URIs, which server a read or
//! prompt goes to, the arguments checked before a prompt is asked for, and server text
//! escaped in human output only.

use serde_json::Value;

use crate::cli::{
    against_demo, assert_failed, json_document, stderr, stdout, switchboard, Temp, BIN,
};

/// `one` and `two` (the demo server's resources and prompts both), and `plain`, which
/// offers neither (`--no-server-features`).
fn three_servers() -> Temp {
    let text = format!(
        r#"{{"mcpServers": {{
            "one": {{"command": {bin}, "args": ["demo-server", "--name", "one"]}},
            "plain": {{"command": {bin}, "args": ["demo-server", "--no-server-features"]}},
            "two": {{"command": {bin}, "args": ["demo-server", "--name", "two"]}}
        }}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    Temp::file("features.json", &text)
}

/// `one` and `plain` of [`three_servers`]: only `one` offers resources and prompts.
fn one_with_features() -> Temp {
    let text = format!(
        r#"{{"mcpServers": {{
            "one": {{"command": {bin}, "args": ["demo-server", "--name", "one"]}},
            "plain": {{"command": {bin}, "args": ["demo-server", "--no-server-features"]}}
        }}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    Temp::file("one-with-features.json", &text)
}

/// Exit 0 and stdout.
fn succeeded(output: &std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    stdout(output)
}

const DEMO_RESOURCES: &str = "\
demo://text/hello — hello (text/plain)
demo://blob/bytes — bytes (application/octet-stream)
demo://text/readme — readme (text/markdown)
demo://note/{id} — note (text/plain) [template]
";

#[test]
fn resources_lists_a_line_per_resource_and_template() {
    assert_eq!(succeeded(&against_demo(&["resources"])), DEMO_RESOURCES);
}

#[test]
fn resources_json_lists_them_as_the_server_did() {
    let mut args = vec!["resources", "--json", "--", BIN, "demo-server"];
    let doc = json_document(&args, 0);
    let server = &doc["servers"][0];
    assert_eq!(doc["servers"].as_array().map(Vec::len), Some(1));
    assert_eq!(server["name"], "switchboard");
    assert_eq!(server["state"], "ready");
    assert_eq!(server["error"], Value::Null);
    let uris: Vec<&str> = server["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "demo://text/hello",
            "demo://blob/bytes",
            "demo://text/readme"
        ]
    );
    assert_eq!(server["resources"][1]["size"], 256);
    assert_eq!(server["resources"][0]["title"], "Hello");
    assert_eq!(
        server["resourceTemplates"][0]["uriTemplate"],
        "demo://note/{id}"
    );
    assert_eq!(server["resourceTemplates"][0]["mimeType"], "text/plain");
    // A server without resources: null, not a failure.
    args.push("--no-server-features");
    let doc = json_document(&args, 0);
    assert_eq!(doc["servers"][0]["resources"], Value::Null);
    assert_eq!(doc["servers"][0]["resourceTemplates"], Value::Null);
    assert_eq!(doc["servers"][0]["error"], Value::Null);
}

#[test]
fn a_server_without_resources_is_listed_as_such() {
    let config = one_with_features();
    let out = succeeded(&switchboard(&["resources", "-c", config.str()]));
    let indented: String = DEMO_RESOURCES.lines().map(|l| format!("  {l}\n")).collect();
    assert_eq!(
        out,
        format!("one (ready)\n{indented}plain (ready, no resources)\n")
    );
    let doc = json_document(&["resources", "--json", "-c", config.str()], 0);
    let names: Vec<&str> = doc["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["one", "plain"]);
    assert_eq!(
        doc["servers"][0]["resources"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(doc["servers"][1]["state"], "ready");
    assert_eq!(doc["servers"][1]["resources"], Value::Null);
    // One server after `--`: nothing listed, and a line on stderr saying why.
    let output = switchboard(&[
        "resources",
        "--",
        BIN,
        "demo-server",
        "--no-server-features",
    ]);
    assert_eq!(succeeded(&output), "");
    assert_eq!(stderr(&output), "server `switchboard`: no resources\n");
}

#[test]
fn read_prints_a_text_resource_as_it_is() {
    let readme = "# Switchboard demo\n\nA resource in Markdown, for clients to read.\n";
    assert_eq!(
        succeeded(&against_demo(&["read", "demo://text/readme"])),
        readme
    );
    // Without a final newline, one is added.
    assert_eq!(
        succeeded(&against_demo(&["read", "demo://text/hello"])),
        "Hello, world!\n"
    );
}

#[test]
fn read_summarises_a_blob_on_one_line() {
    assert_eq!(
        succeeded(&against_demo(&["read", "demo://blob/bytes"])),
        "<blob: 256 bytes, application/octet-stream>\n"
    );
    // --json: the result as the server sent it, base64 and all.
    let doc = json_document(
        &[
            "read",
            "demo://blob/bytes",
            "--json",
            "--",
            BIN,
            "demo-server",
        ],
        0,
    );
    let blob = doc["contents"][0]["blob"].as_str().expect("a blob");
    assert!(blob.starts_with("AAECAwQF"), "{blob}");
    assert_eq!(blob.len(), 344);
}

#[test]
fn read_a_uri_of_a_template() {
    assert_eq!(
        succeeded(&against_demo(&["read", "demo://note/7"])),
        "note 7\n"
    );
    // From a file of several servers, the one whose template matches.
    let config = one_with_features();
    assert_eq!(
        succeeded(&switchboard(&["read", "demo://note/7", "-c", config.str()])),
        "note 7\n"
    );
}

#[test]
fn read_of_an_unknown_uri_exits_3() {
    let err = assert_failed(&against_demo(&["read", "demo://nope"]), 3);
    assert_eq!(
        err,
        "switchboard: server `switchboard` has no resource `demo://nope`: Resource not found\n"
    );
    // The same with --json, whose raw request the typed method does not answer.
    let err = assert_failed(&against_demo(&["read", "demo://nope", "--json"]), 3);
    assert!(err.contains("has no resource `demo://nope`"), "{err}");
    // With several servers, no server that lists it: no one to ask.
    let config = one_with_features();
    let err = assert_failed(
        &switchboard(&["read", "demo://nope", "-c", config.str()]),
        2,
    );
    assert!(
        err.contains("no server lists resource `demo://nope` or a template matching it"),
        "{err}"
    );
    // Unless one is named.
    let err = assert_failed(
        &switchboard(&["read", "demo://nope", "--server", "one", "-c", config.str()]),
        3,
    );
    assert!(
        err.contains("server `one` has no resource `demo://nope`"),
        "{err}"
    );
}

#[test]
fn read_of_a_uri_two_servers_list_needs_server() {
    let config = three_servers();
    let err = assert_failed(
        &switchboard(&["read", "demo://text/hello", "-c", config.str()]),
        2,
    );
    assert!(
        err.contains("resource `demo://text/hello` is offered by several servers (`one`, `two`)"),
        "{err}"
    );
    assert!(err.contains("--server"), "{err}");
    // A template match counts as listing it.
    let err = assert_failed(
        &switchboard(&["read", "demo://note/1", "-c", config.str()]),
        2,
    );
    assert!(err.contains("(`one`, `two`)"), "{err}");
    let read_from_two = [
        "read",
        "demo://text/hello",
        "--server",
        "two",
        "-c",
        config.str(),
    ];
    assert_eq!(succeeded(&switchboard(&read_from_two)), "Hello, world!\n");
    let err = assert_failed(
        &switchboard(&[
            "read",
            "demo://text/hello",
            "--server",
            "three",
            "-c",
            config.str(),
        ]),
        2,
    );
    assert!(err.contains("--server three: no such server"), "{err}");
    // A server without resources, named, is asked and says so.
    let err = assert_failed(
        &switchboard(&[
            "read",
            "demo://text/hello",
            "--server",
            "plain",
            "-c",
            config.str(),
        ]),
        3,
    );
    assert!(err.contains("declared no `resources` capability"), "{err}");
}

#[test]
fn prompts_lists_their_arguments() {
    assert_eq!(
        succeeded(&against_demo(&["prompts"])),
        "simple — A prompt without arguments.\n\
         greeting — Asks to greet someone, optionally in a style.\n\
         \x20 name (required) — Who to greet\n\
         \x20 style — How to greet them\n\
         with_resource — A prompt whose message embeds the demo://text/hello resource.\n"
    );
    let doc = json_document(&["prompts", "--json", "--", BIN, "demo-server"], 0);
    let greeting = &doc["servers"][0]["prompts"][1];
    assert_eq!(greeting["name"], "greeting");
    assert_eq!(greeting["arguments"][0]["required"], true);
    // No `arguments` listed, none added.
    assert!(doc["servers"][0]["prompts"][0].get("arguments").is_none());
    let config = one_with_features();
    let out = succeeded(&switchboard(&["prompts", "-c", config.str()]));
    assert!(out.starts_with("one (ready)\n  simple — "), "{out}");
    assert!(
        out.contains("\n    name (required) — Who to greet\n"),
        "{out}"
    );
    assert!(out.ends_with("\nplain (ready, no prompts)\n"), "{out}");
    let doc = json_document(&["prompts", "--json", "-c", config.str()], 0);
    assert_eq!(doc["servers"][1]["prompts"], Value::Null);
}

#[test]
fn prompt_prints_its_messages() {
    assert_eq!(
        succeeded(&against_demo(&["prompt", "greeting", r#"{"name":"Ada"}"#])),
        "user: Say hello to Ada.\n"
    );
    assert_eq!(
        succeeded(&against_demo(&[
            "prompt",
            "greeting",
            r#"{"name":"Ada","style":"pirate"}"#
        ])),
        "user: Say hello to Ada in a pirate style.\n"
    );
    // Content other than text, on one line.
    assert_eq!(
        succeeded(&against_demo(&["prompt", "with_resource"])),
        "user: [resource demo://text/hello (text, 13 bytes)]\n"
    );
    let doc = json_document(
        &[
            "prompt",
            "greeting",
            r#"{"name":"Ada"}"#,
            "--json",
            "--",
            BIN,
            "demo-server",
        ],
        0,
    );
    assert_eq!(doc["messages"][0]["content"]["text"], "Say hello to Ada.");
    assert_eq!(doc["description"], "Asks to greet someone.");
}

#[test]
fn a_missing_required_argument_exits_2_before_asking() {
    for args in [&[][..], &["{}"], &[r#"{"style":"warm"}"#]] {
        let mut all = vec!["prompt", "greeting"];
        all.extend(args);
        let err = assert_failed(&against_demo(&all), 2);
        assert_eq!(
            err,
            "switchboard: prompt `greeting` of server `switchboard` needs the required \
             argument `name` (as NAME=VALUE or in ARGS_JSON)\n"
        );
    }
}

#[test]
fn prompt_arguments_must_be_an_object_of_strings() {
    for (bad, why) in [
        (
            "[1]",
            "ARGS_JSON must be a JSON object of strings, not an array",
        ),
        (r#"{"name":1}"#, "but `name` is a number"),
        ("nope", "ARGS_JSON is not valid JSON"),
    ] {
        let err = assert_failed(&against_demo(&["prompt", "greeting", bad]), 2);
        assert!(err.contains("bad arguments for prompt `greeting`"), "{err}");
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn prompt_of_two_servers_needs_server() {
    let config = three_servers();
    let args = [
        "prompt",
        "greeting",
        r#"{"name":"Ada"}"#,
        "-c",
        config.str(),
    ];
    let err = assert_failed(&switchboard(&args), 2);
    assert!(
        err.contains("prompt `greeting` is offered by several servers (`one`, `two`)"),
        "{err}"
    );
    let mut named = args.to_vec();
    named.extend(["--server", "one"]);
    assert_eq!(succeeded(&switchboard(&named)), "user: Say hello to Ada.\n");
    let err = assert_failed(&switchboard(&["prompt", "nosuch", "-c", config.str()]), 3);
    assert!(err.contains("lists a prompt `nosuch`"), "{err}");
    // A file where only one server lists it needs no --server.
    let config = one_with_features();
    let args = [
        "prompt",
        "greeting",
        r#"{"name":"Ada"}"#,
        "-c",
        config.str(),
    ];
    assert_eq!(succeeded(&switchboard(&args)), "user: Say hello to Ada.\n");
}

#[test]
fn control_characters_in_server_text_are_escaped() {
    // The demo server echoes the name into its message: clear screen, a bell, a carriage
    // return.
    let nasty = r#"{"name":"\u001b[2JAda\u0007\r"}"#;
    let out = succeeded(&against_demo(&["prompt", "greeting", nasty]));
    assert_eq!(out, "user: Say hello to \\u{1b}[2JAda\\u{7}\\r.\n");
    assert!(!out.contains('\u{1b}'), "{out:?}");
    // --json is what the server sent.
    let doc = json_document(
        &[
            "prompt",
            "greeting",
            nasty,
            "--json",
            "--",
            BIN,
            "demo-server",
        ],
        0,
    );
    assert_eq!(
        doc["messages"][0]["content"]["text"],
        "Say hello to \u{1b}[2JAda\u{7}\r."
    );
}

#[test]
fn help_has_examples() {
    for command in ["resources", "read", "prompts", "prompt"] {
        let out = succeeded(&switchboard(&[command, "--help"]));
        assert!(
            out.contains("Examples:\n  switchboard "),
            "{command}: {out}"
        );
        assert!(out.contains("--json"), "{command}: {out}");
    }
}

#[test]
fn root_offers_the_folder_to_servers_and_without_it_no_roots_are_declared() {
    let dir = std::env::temp_dir().join(format!("switchboard-root-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let canonical = std::fs::canonicalize(&dir).expect("canonical");
    let dir_arg = dir.to_string_lossy().into_owned();
    let asked = against_demo(&[
        "call",
        "ping_client",
        r#"{"method":"roots/list"}"#,
        "--root",
        &dir_arg,
    ]);
    let text = succeeded(&asked);
    let answer: Value = serde_json::from_str(text.trim()).expect("the roots/list answer");
    assert_eq!(
        answer["roots"][0]["uri"],
        format!("file://{}", canonical.display())
    );
    // Without --root the client declares no roots and answers the request -32601: the tool
    // reports that as its error.
    let refused = against_demo(&["call", "ping_client", r#"{"method":"roots/list"}"#]);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "stderr: {}",
        stderr(&refused)
    );
    // A folder that is not there is a usage error.
    let missing = against_demo(&["tools", "--root", "/nonexistent/switchboard-root"]);
    assert_eq!(missing.status.code(), Some(2));
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn key_value_arguments_are_read_as_the_schema_types_them() {
    // `text` is a string property: 42 is the string "42", not a number the server refuses.
    assert_eq!(
        succeeded(&against_demo(&["call", "echo", "text=42"])),
        "42\n"
    );
    assert_eq!(
        succeeded(&against_demo(&["call", "echo", "text=true"])),
        "true\n"
    );
    // `a` and `b` are numbers: read as numbers.
    assert_eq!(
        succeeded(&against_demo(&["call", "add", "a=2", "b=40"])),
        "42\n"
    );
    // A prompt's arguments are strings, as pairs too.
    assert_eq!(
        succeeded(&against_demo(&[
            "prompt",
            "greeting",
            "name=Ada",
            "style=pirate"
        ])),
        "user: Say hello to Ada in a pirate style.\n"
    );
    assert_eq!(
        succeeded(&against_demo(&["prompt", "greeting", "name=42"])),
        "user: Say hello to 42.\n"
    );
}

/// Runs `switchboard subscribe URI --read -c FILE` until its first line (the URI of the
/// first update), then interrupts it: that line, the exit code and stderr.
fn subscribe_once(file: &Temp, uri: &str) -> (String, Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut child = std::process::Command::new(BIN)
        .args(["subscribe", uri, "-c", file.str()])
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let _ = out.read_line(&mut line);
    // SAFETY: a signal to our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().expect("status");
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    (line, status.code(), err)
}

#[test]
fn subscribe_and_complete_find_their_server_among_two_every_time() {
    // Two servers, one of which offers `x://a` (and sends an update when it is subscribed
    // to), listing its resources 300 ms after its handshake: which server owns the URI is
    // known only from that listing. Twenty runs, none may miss it.
    let slow = super::cli_user::SH_SERVER.replace(
        r#"*'"method":"resources/list"'*) reply"#,
        r#"*'"method":"resources/list"'*) sleep 0.3; reply"#,
    );
    assert_ne!(slow, super::cli_user::SH_SERVER, "the listing is delayed");
    let script = Temp::file("slow-lister.sh", &slow);
    let text = format!(
        r#"{{"mcpServers": {{
            "sh": {{"command": "/bin/sh", "args": [{script}]}},
            "plain": {{"command": {bin}, "args": ["demo-server", "--no-server-features"]}}
        }}}}"#,
        script = serde_json::to_string(script.str()).expect("a JSON string"),
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    let two = Temp::file("slow-lister.json", &text);
    // The prompts of `one` are listed after its handshake too.
    let features = one_with_features();
    for run in 0..20 {
        let (line, code, err) = subscribe_once(&two, "x://a");
        assert_eq!(line, "x://a\n", "run {run}: {err}");
        assert_eq!(code, Some(0), "run {run}: {err}");
        let completed = switchboard(&["complete", "greeting", "name", "A", "-c", features.str()]);
        assert_eq!(succeeded(&completed), "Ada\nAlan\nAlice\n", "run {run}");
    }
}
