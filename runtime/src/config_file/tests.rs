//! Config files in the shapes real hosts write, and the errors bad ones get.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::shapes::{self, Document, Launch};
use super::{ConfigError, ConfigFile, Ctx, FileDefaults};
use crate::catalogue::{Naming, NamingMode};
use crate::config::ServerConfig;
use crate::deadline::ToolPolicy;
use crate::restart::RestartPolicy;
use crate::transport::HttpKind;

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

/// A map-backed environment.
fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

/// Parses `text` as the file at `file`, keeping the expanded launches.
fn document(text: &str, file: &Path, vars: &[(&str, &str)]) -> Result<Document, ConfigError> {
    let env = env(vars);
    shapes::parse(text, &Ctx::new(file, &env))
}

fn parse(text: &str, vars: &[(&str, &str)]) -> Document {
    match document(text, Path::new("/home/me/project/mcp.json"), vars) {
        Ok(document) => document,
        Err(e) => panic!("{e}"),
    }
}

/// The error for `text`, which must be rejected.
fn error(text: &str, vars: &[(&str, &str)]) -> ConfigError {
    let env = env(vars);
    match ConfigFile::parse_with_env(text, Path::new("/home/me/project/mcp.json"), &env) {
        Ok(file) => panic!("accepted: {file:?}"),
        Err(e) => e,
    }
}

/// Asserts that `text` is rejected at `path` with a message containing `message`.
fn rejects(text: &str, path: &str, message: &str) {
    let e = error(text, &[]);
    assert_eq!(e.path, path, "{e}");
    assert!(e.message.contains(message), "{e}");
}

fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-config-file-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn claude_desktop_file() {
    // claude_desktop_config.json: no `type`, other top-level keys of the app's own.
    let text = r#"{
      "globalShortcut": "Ctrl+Space",
      "mcpServers": {
        "zeta-filesystem": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
        },
        "github": {
          "command": "docker",
          "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
          "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal" }
        }
      }
    }"#;
    let doc = parse(text, &[]);
    let names: Vec<&str> = doc.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["zeta-filesystem", "github"],
        "file order, not sorted"
    );
    assert_eq!(
        doc.servers[0].launch,
        Launch::Stdio {
            command: "npx".into(),
            args: strings(&[
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/Users/me/Desktop"
            ]),
            env: vec![],
            cwd: None,
        }
    );
    let Launch::Stdio { env, .. } = &doc.servers[1].launch else {
        panic!("not stdio")
    };
    assert_eq!(
        env,
        &pairs(&[("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_literal")])
    );
    let config = &doc.servers[1].config;
    assert_eq!(config.transport_kind().as_str(), "stdio");
    let debug = format!("{config:?}");
    assert!(debug.contains("GITHUB_PERSONAL_ACCESS_TOKEN"), "{debug}");
    assert!(!debug.contains("ghp_literal"), "{debug}");
    assert_eq!(config.timeout, None);
    assert_eq!(doc.defaults, FileDefaults::default());
    assert!(doc.disabled.is_empty());
}

#[test]
fn claude_code_file() {
    // .mcp.json: explicit types and `${VAR:-default}`.
    let text = r#"{
      "mcpServers": {
        "db": {
          "type": "stdio",
          "command": "${HOME}/bin/db-mcp",
          "args": ["--url", "${DB_URL:-postgres://localhost/dev}"],
          "env": { "LOG": "${LOG_LEVEL:-info}" }
        },
        "api": {
          "type": "http",
          "url": "${API_BASE_URL:-https://api.example.com}/mcp",
          "headers": { "Authorization": "Bearer ${API_KEY}" }
        },
        "legacy": { "type": "sse", "url": "https://legacy.example.com/sse" },
        "streamable": { "type": "streamable-http", "url": "https://s.example.com/mcp" }
      }
    }"#;
    let doc = parse(
        text,
        &[("HOME", "/home/me"), ("API_KEY", "k3y"), ("LOG_LEVEL", "")],
    );
    assert_eq!(
        doc.servers[0].launch,
        Launch::Stdio {
            command: "/home/me/bin/db-mcp".into(),
            args: strings(&["--url", "postgres://localhost/dev"]),
            env: pairs(&[("LOG", "info")]),
            cwd: None,
        }
    );
    assert_eq!(
        doc.servers[1].launch,
        Launch::Http {
            url: "https://api.example.com/mcp".into(),
            kind: HttpKind::Auto,
            headers: pairs(&[("Authorization", "Bearer k3y")]),
        }
    );
    let kinds: Vec<&str> = doc
        .servers
        .iter()
        .map(|s| s.config.transport_kind().as_str())
        .collect();
    assert_eq!(kinds, ["stdio", "auto", "sse", "http"]);
    let debug = format!("{:?}", doc.servers[1].config);
    assert!(
        debug.contains("Authorization") && !debug.contains("k3y"),
        "{debug}"
    );
}

#[test]
fn cursor_file() {
    // .cursor/mcp.json: `${env:VAR}`, url + headers without a type, `${workspaceFolder}`
    // meaning the project folder (the parent of `.cursor`).
    let text = r#"{
      "mcpServers": {
        "remote": {
          "url": "https://mcp.example.com/mcp",
          "headers": { "API_KEY": "${env:EXAMPLE_KEY}" }
        },
        "local": {
          "command": "python",
          "args": ["${workspaceFolder}/tools/server.py"],
          "env": { "TOKEN": "${env:TOKEN}" }
        }
      }
    }"#;
    let file = Path::new("/home/me/project/.cursor/mcp.json");
    let doc = document(text, file, &[("EXAMPLE_KEY", "ek"), ("TOKEN", "tk")]).unwrap();
    assert_eq!(
        doc.servers[0].launch,
        Launch::Http {
            url: "https://mcp.example.com/mcp".into(),
            kind: HttpKind::Auto,
            headers: pairs(&[("API_KEY", "ek")]),
        }
    );
    assert_eq!(doc.servers[0].config.transport_kind().as_str(), "auto");
    assert_eq!(
        doc.servers[1].launch,
        Launch::Stdio {
            command: "python".into(),
            args: strings(&["/home/me/project/tools/server.py"]),
            env: pairs(&[("TOKEN", "tk")]),
            cwd: None,
        }
    );
}

#[test]
fn vscode_file() {
    // .vscode/mcp.json: `servers`, `inputs` (ignored while unreferenced), `envFile`.
    let project = TempDir::new("vscode");
    fs::create_dir_all(project.0.join(".vscode")).unwrap();
    fs::write(
        project.0.join(".env"),
        "# secrets\nexport API_KEY=\"from-file\"\nREGION=eu\n",
    )
    .unwrap();
    let text = r#"{
      "inputs": [
        { "type": "promptString", "id": "api-key", "description": "API key", "password": true }
      ],
      "servers": {
        "search": {
          "type": "stdio",
          "command": "node",
          "args": ["${workspaceFolder}/server/index.js"],
          "envFile": "${workspaceFolder}/.env",
          "env": { "REGION": "us", "DEBUG": "1" },
          "cwd": "${workspaceFolder}/server"
        },
        "api": {
          "type": "http",
          "url": "https://api.example.com/mcp",
          "headers": { "Authorization": "Bearer ${env:API_TOKEN}" },
          "gallery": true
        }
      }
    }"#;
    let file = project.0.join(".vscode").join("mcp.json");
    let doc = document(text, &file, &[("API_TOKEN", "tok")]).unwrap();
    let root = project.0.display().to_string();
    assert_eq!(
        doc.servers[0].launch,
        Launch::Stdio {
            command: "node".into(),
            args: vec![format!("{root}/server/index.js")],
            env: pairs(&[("API_KEY", "from-file"), ("REGION", "us"), ("DEBUG", "1")]),
            cwd: Some(project.0.join("server")),
        }
    );
    // VS Code's `http` falls back to HTTP+SSE, and so does ours.
    assert_eq!(doc.servers[1].config.transport_kind().as_str(), "auto");
    let names: Vec<&str> = doc.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["search", "api"]);
}

#[test]
fn http_types_map_to_their_transports() {
    // `http` is Streamable HTTP with the HTTP+SSE fallback (as VS Code treats it), as is a
    // `url` without a type; `streamable-http` (and Cline's `streamableHttp`) is strict.
    let cases = [
        (r#""type": "http","#, HttpKind::Auto, "auto"),
        ("", HttpKind::Auto, "auto"),
        (
            r#""type": "streamable-http","#,
            HttpKind::StreamableHttp,
            "http",
        ),
        (
            r#""type": "streamableHttp","#,
            HttpKind::StreamableHttp,
            "http",
        ),
        (r#""type": "sse","#, HttpKind::Sse, "sse"),
    ];
    for (declared, kind, transport) in cases {
        let text =
            format!(r#"{{"servers": {{"api": {{{declared} "url": "https://x.example/mcp"}}}}}}"#);
        let doc = parse(&text, &[]);
        assert_eq!(
            doc.servers[0].launch,
            Launch::Http {
                url: "https://x.example/mcp".into(),
                kind,
                headers: Vec::new(),
            },
            "{declared}"
        );
        assert_eq!(
            doc.servers[0].config.transport_kind().as_str(),
            transport,
            "{declared}"
        );
    }
    // The spellings are exact.
    for wrong in ["HTTP", "streamable_http", "auto"] {
        rejects(
            &format!(
                r#"{{"servers": {{"api": {{"type": "{wrong}", "url": "https://x.example/mcp"}}}}}}"#
            ),
            "servers.api.type",
            r#"expected "stdio", "sse", "http" or "streamable-http""#,
        );
    }
}

#[test]
fn a_config_of_given_servers_is_a_file_of_only_them() {
    let file = ConfigFile::new(
        "npx",
        [
            ("a".to_owned(), ServerConfig::stdio("first")),
            ("b".to_owned(), ServerConfig::stdio("other")),
            ("a".to_owned(), ServerConfig::stdio("second").timeout(S)),
        ],
    );
    assert_eq!(file.path, Path::new("npx"));
    let names: Vec<&str> = file.servers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["b", "a"]);
    assert_eq!(file.servers[1].1.timeout, Some(S));
    assert_eq!(file.defaults, FileDefaults::default());
    assert!(file.disabled.is_empty());
}

#[test]
fn relative_paths_and_workspace_folder_of_a_plain_folder() {
    let dir = TempDir::new("relative");
    fs::write(dir.0.join("vars.env"), "A=1\n").unwrap();
    let text = r#"{"mcpServers": {"s": {
        "command": "./run", "cwd": "sub", "envFile": "vars.env", "args": ["${workspaceFolder}"]
    }}}"#;
    let file = dir.0.join("mcp.json");
    let doc = document(text, &file, &[]).unwrap();
    assert_eq!(
        doc.servers[0].launch,
        Launch::Stdio {
            command: "./run".into(),
            args: vec![dir.0.display().to_string()],
            env: pairs(&[("A", "1")]),
            cwd: Some(dir.0.join("sub")),
        }
    );
}

#[test]
fn a_missing_env_file_is_an_error() {
    let e = error(
        r#"{"servers": {"s": {"command": "x", "envFile": "/nonexistent/switchboard/.env"}}}"#,
        &[],
    );
    assert_eq!(e.path, "servers.s.envFile");
    assert!(e.message.contains("/nonexistent/switchboard/.env"), "{e}");
}

#[test]
fn a_malformed_env_file_is_an_error_naming_the_line() {
    let dir = TempDir::new("malformed-env");
    fs::write(dir.0.join(".env"), "A=1\nnot a pair\n").unwrap();
    let text = r#"{"servers": {"s": {"command": "x", "envFile": ".env"}}}"#;
    let e = document(text, &dir.0.join("mcp.json"), &[]).err().unwrap();
    assert_eq!(e.path, "servers.s.envFile");
    assert!(e.message.contains("line 2"), "{e}");
}

#[test]
fn an_input_reference_is_an_error_naming_it() {
    let e = error(
        r#"{"inputs": [{"id": "api-key", "type": "promptString"}],
            "servers": {"api": {"url": "https://x.example/mcp",
                                "headers": {"Authorization": "Bearer ${input:api-key}"}}}}"#,
        &[],
    );
    assert_eq!(e.path, "servers.api.headers.Authorization");
    assert!(e.message.contains("${input:api-key}"), "{e}");
}

#[test]
fn an_unset_variable_is_an_error_naming_it_and_its_path() {
    let e = error(
        r#"{"mcpServers": {"github": {"command": "gh-mcp", "env": {"TOKEN": "${GITHUB_TOKEN}"}}}}"#,
        &[],
    );
    assert_eq!(e.path, "mcpServers.github.env.TOKEN");
    assert!(e.message.contains("`GITHUB_TOKEN` is not set"), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "/home/me/project/mcp.json: mcpServers.github.env.TOKEN: {}",
            e.message
        )
    );
    let e = error(
        r#"{"mcpServers": {"s": {"command": "x", "args": ["a", "${NOPE"]}}}"#,
        &[],
    );
    assert_eq!(e.path, "mcpServers.s.args[1]");
    assert!(e.message.contains("unterminated"), "{e}");
}

#[test]
fn disabled_servers_are_listed_and_not_expanded() {
    let text = r#"{"mcpServers": {
        "off": {"command": "x", "env": {"T": "${UNSET}"}, "args": "not even an array", "disabled": true},
        "on": {"command": "y", "disabled": false}
    }}"#;
    let file = ConfigFile::parse_with_env(text, Path::new("mcp.json"), &env(&[])).unwrap();
    assert_eq!(file.disabled, ["off"]);
    assert_eq!(file.servers.len(), 1);
    assert_eq!(file.servers[0].0, "on");
    assert_eq!(file.path, Path::new("mcp.json"));
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "disabled": "yes"}}}"#,
        "mcpServers.s.disabled",
        "expected true or false",
    );
}

#[test]
fn wrong_types_are_errors_at_their_exact_path() {
    let cases = [
        (
            r#"{"mcpServers": {"s": {"command": "x", "args": "-y"}}}"#,
            "mcpServers.s.args",
            "expected an array of strings",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "args": ["a", 2]}}}"#,
            "mcpServers.s.args[1]",
            "expected a string",
        ),
        (
            r#"{"mcpServers": {"s": {"command": 7}}}"#,
            "mcpServers.s.command",
            "expected a non-empty string",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "env": ["A=1"]}}}"#,
            "mcpServers.s.env",
            "expected an object of strings",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "env": {"PORT": 3000}}}}"#,
            "mcpServers.s.env.PORT",
            "expected a string",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "cwd": false}}}"#,
            "mcpServers.s.cwd",
            "expected a non-empty string",
        ),
        (
            r#"{"servers": {"api": {"url": "https://x/mcp", "headers": {"Authorization": 1}}}}"#,
            "servers.api.headers.Authorization",
            "expected a string",
        ),
        (
            r#"{"servers": {"api": {"url": 5}}}"#,
            "servers.api.url",
            "expected a string",
        ),
        (
            r#"{"servers": {"api": {"url": "ftp://x"}}}"#,
            "servers.api.url",
            "http://",
        ),
        (
            r#"{"servers": {"api": {"type": "websocket", "url": "https://x"}}}"#,
            "servers.api.type",
            r#"expected "stdio", "sse", "http" or "streamable-http""#,
        ),
        (
            r#"{"servers": {"api": "https://x"}}"#,
            "servers.api",
            "expected an object",
        ),
        (
            r#"{"servers": {"s": {}}}"#,
            "servers.s",
            "expected a `command` or a `url`",
        ),
        (
            r#"{"servers": {"s": {"command": "x", "url": "https://x"}}}"#,
            "servers.s",
            "not both",
        ),
        (
            r#"{"servers": {"s": {"type": "stdio", "url": "https://x"}}}"#,
            "servers.s",
            "expected a `command`",
        ),
        (
            r#"{"servers": {"s": {"type": "sse", "command": "x"}}}"#,
            "servers.s",
            "expected a `url`",
        ),
        (
            r#"{"servers": {"a.b": {}}}"#,
            r#"servers["a.b"]"#,
            "expected a `command` or a `url`",
        ),
        (
            r#"{"servers": {"": {"command": "x"}}}"#,
            "servers",
            "must not be empty",
        ),
        (
            r#"{"servers": {"s": {"command": "x"}, "s": {"command": "y"}}}"#,
            "servers.s",
            "duplicate server name",
        ),
        (r#"{"servers": []}"#, "servers", "expected an object"),
        (
            r#"{"mcpServers": {"s": {"command": "x", "prefix": ""}}}"#,
            "mcpServers.s.prefix",
            "expected a non-empty string",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "protocol": "2026-07-28"}}}"#,
            "mcpServers.s.protocol",
            "unknown protocol",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "allowTools": "read_*"}}}"#,
            "mcpServers.s.allowTools",
            "expected an array of strings",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "denyTools": [null]}}}"#,
            "mcpServers.s.denyTools[0]",
            "expected a string",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "maxInFlight": 0}}}"#,
            "mcpServers.s.maxInFlight",
            "expected an integer of at least 1",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "maxInFlight": 2.5}}}"#,
            "mcpServers.s.maxInFlight",
            "expected an integer of at least 1",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "tools": {"t": {"timeout": "1s", "retries": 3}}}}}"#,
            "mcpServers.s.tools.t.retries",
            "unknown field; expected `timeout`, `resetOnProgress`, `maxTotal`, `reissueOnBrokenStream`",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "tools": {"t": {"resetOnProgress": "yes"}}}}}"#,
            "mcpServers.s.tools.t.resetOnProgress",
            "expected true or false",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "tools": []}}}"#,
            "mcpServers.s.tools",
            "expected an object",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "restart": "always"}}}"#,
            "mcpServers.s.restart",
            "expected true, false or an object",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "restart": {"jitter": 1.5}}}}"#,
            "mcpServers.s.restart.jitter",
            "expected a number from 0 to 1",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "restart": {"maxFailures": 0}}}}"#,
            "mcpServers.s.restart.maxFailures",
            "expected an integer of at least 1",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "restart": {"maxDelay": "100ms"}}}}"#,
            "mcpServers.s.restart.maxDelay",
            "less than initialDelay",
        ),
        (
            r#"{"mcpServers": {}, "switchboard": {"restart": {"maxDelay": "1m", "backoff": 2}}}"#,
            "switchboard.restart.backoff",
            "unknown field",
        ),
        (
            r#"{"mcpServers": {}, "switchboard": {"naming": {"mode": "sometimes"}}}"#,
            "switchboard.naming.mode",
            r#"expected "conditional", "always" or "never""#,
        ),
        (
            r#"{"mcpServers": {}, "switchboard": {"naming": {"separator": ""}}}"#,
            "switchboard.naming.separator",
            "expected a non-empty string",
        ),
        (
            r#"{"mcpServers": {}, "switchboard": {"maxInflight": 4}}"#,
            "switchboard.maxInflight",
            "unknown field",
        ),
        (
            r#"{"mcpServers": {}, "switchboard": []}"#,
            "switchboard",
            "expected an object",
        ),
    ];
    for (text, path, message) in cases {
        rejects(text, path, message);
    }
}

#[test]
fn whole_file_errors_have_no_path() {
    let no_servers = "expected an `mcpServers` or `servers` object";
    for (text, message) in [
        ("{", "invalid JSON"),
        ("[]", no_servers),
        (r#"{"inputs": []}"#, no_servers),
        (r#"{"mcpServers": null}"#, no_servers),
        (
            r#"{"mcpServers": {}, "servers": {}}"#,
            "use either mcpServers or servers",
        ),
    ] {
        let e = error(text, &[]);
        assert_eq!(e.path, "", "{e}");
        assert!(e.message.contains(message), "{e}");
        assert_eq!(
            e.to_string(),
            format!("/home/me/project/mcp.json: {}", e.message)
        );
    }
}

#[test]
fn load_reads_the_file_or_says_why_not() {
    let dir = TempDir::new("load");
    let file = dir.0.join(".mcp.json");
    fs::write(&file, r#"{"mcpServers": {"s": {"command": "x"}}}"#).unwrap();
    let loaded = ConfigFile::load(&file).unwrap();
    assert_eq!(loaded.path, file);
    assert_eq!(loaded.servers[0].0, "s");
    let missing = dir.0.join("missing.json");
    let e = ConfigFile::load(&missing).unwrap_err();
    assert_eq!(e.path, "");
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read the file", missing.display())),
        "{e}"
    );
}

#[test]
fn durations_in_both_forms() {
    let text = r#"{"switchboard": {"timeout": "1.5s", "startupTimeout": 45000, "handlerTimeout": "10m"},
                   "mcpServers": {"s": {"command": "x", "timeout": 500, "startupTimeout": "2m",
                                        "handlerTimeout": "30s",
                                        "tools": {"t": {"timeout": "1h"}}}}}"#;
    let doc = parse(text, &[]);
    assert_eq!(doc.defaults.timeout, Some(1500 * MS));
    assert_eq!(doc.defaults.startup_timeout, Some(45 * S));
    assert_eq!(doc.defaults.handler_timeout, Some(600 * S));
    let config = &doc.servers[0].config;
    assert_eq!(config.timeout, Some(500 * MS));
    assert_eq!(config.startup_timeout, Some(120 * S));
    assert_eq!(config.handler_timeout, Some(30 * S));
    assert_eq!(config.tools["t"].timeout, Some(3600 * S));
}

#[test]
fn bad_durations_are_refused() {
    let expected = r#"expected a duration such as "500ms", "30s" or integer milliseconds"#;
    for bad in [
        r#""30""#, r#""5d""#, r#""-1s""#, "-5", "1.5", "true", "[]", r#""""#,
    ] {
        let text = format!(r#"{{"mcpServers": {{"s": {{"command": "x", "timeout": {bad}}}}}}}"#);
        let e = error(&text, &[]);
        assert_eq!(e.path, "mcpServers.s.timeout", "{bad}: {e}");
        assert_eq!(e.message, expected, "{bad}");
    }
    rejects(
        r#"{"mcpServers": {}, "switchboard": {"restart": {"maxDelay": "soon"}}}"#,
        "switchboard.restart.maxDelay",
        expected,
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "timeout": "0s"}}}"#,
        "mcpServers.s.timeout",
        "greater than zero",
    );
}

#[test]
fn restart_false_true_and_object() {
    let text = r#"{"switchboard": {"restart": {"initialDelay": "1s", "maxDelay": "1m", "jitter": 0,
                                              "maxFailures": 3, "window": "2m", "stableAfter": 90000}},
                   "mcpServers": {
                     "never": {"command": "x", "restart": false},
                     "default": {"command": "x", "restart": true},
                     "partial": {"command": "x", "restart": {"maxFailures": 10}},
                     "unset": {"command": "x"}
                   }}"#;
    let doc = parse(text, &[]);
    assert_eq!(
        doc.defaults.restart,
        Some(
            RestartPolicy::default()
                .with_initial_delay(S)
                .with_max_delay(60 * S)
                .with_jitter(0.0)
                .with_crash_loop(3, 120 * S)
                .with_stable_after(90 * S)
        )
    );
    let restart: Vec<Option<RestartPolicy>> = doc
        .servers
        .iter()
        .map(|s| s.config.restart.clone())
        .collect();
    assert_eq!(
        restart,
        [
            Some(RestartPolicy::off()),
            Some(RestartPolicy::default()),
            Some(RestartPolicy::default().with_crash_loop(10, 60 * S)),
            None,
        ]
    );
    assert!(!doc.servers[0].config.restart.as_ref().unwrap().is_enabled());
}

#[test]
fn naming_and_other_defaults() {
    let doc = parse(
        r#"{"switchboard": {"naming": {"mode": "always", "separator": "."}, "maxInFlight": 8},
            "mcpServers": {}}"#,
        &[],
    );
    assert_eq!(
        doc.defaults,
        FileDefaults {
            max_in_flight: Some(8),
            naming: Some(Naming::new(NamingMode::Always).with_separator(".")),
            ..FileDefaults::default()
        }
    );
    let doc = parse(
        r#"{"switchboard": {"naming": {"mode": "never"}}, "mcpServers": {}}"#,
        &[],
    );
    assert_eq!(doc.defaults.naming, Some(Naming::new(NamingMode::Never)));
    let doc = parse(r#"{"switchboard": {"naming": {}}, "mcpServers": {}}"#, &[]);
    assert_eq!(doc.defaults.naming, Some(Naming::default()));
}

#[test]
fn per_tool_policies() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "tools": {
        "slow": {"timeout": "5m", "resetOnProgress": true, "maxTotal": "1h"},
        "quick": {"timeout": 2000},
        "chatty": {"resetOnProgress": true},
        "idempotent": {"reissueOnBrokenStream": true}
    }}}}"#;
    let tools = &parse(text, &[]).servers[0].config.tools;
    assert_eq!(
        tools["slow"],
        ToolPolicy::new()
            .timeout(300 * S)
            .reset_on_progress(true)
            .max_total(3600 * S)
    );
    assert_eq!(tools["quick"], ToolPolicy::new().timeout(2 * S));
    assert_eq!(
        tools["chatty"],
        ToolPolicy::default().reset_on_progress(true)
    );
    assert_eq!(
        tools["idempotent"],
        ToolPolicy::new().reissue_on_broken_stream(true)
    );
}

#[test]
fn reissue_on_broken_stream_per_server() {
    let text = r#"{"mcpServers": {"on": {"command": "x", "reissueOnBrokenStream": true},
                                  "off": {"command": "x"}}}"#;
    let servers = parse(text, &[]).servers;
    let by_name = |name: &str| {
        servers
            .iter()
            .find(|s| &*s.name == name)
            .map(|s| s.config.reissue_on_broken_stream)
    };
    assert_eq!(by_name("on"), Some(true));
    assert_eq!(by_name("off"), Some(false));
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "reissueOnBrokenStream": "yes"}}}"#,
        "mcpServers.s.reissueOnBrokenStream",
        "expected true or false",
    );
}

#[test]
fn isolation_and_its_bounds_per_server() {
    let text = r#"{"mcpServers": {
        "memory": {"command": "x", "isolation": "client", "maxInstances": 5, "idleTimeout": "90s"},
        "shell": {"command": "x", "isolation": "session"},
        "plain": {"command": "x"}}}"#;
    let servers = parse(text, &[]).servers;
    let policy = |name: &str| {
        servers
            .iter()
            .find(|s| &*s.name == name)
            .map(|s| s.config.isolation_policy())
            .unwrap()
    };
    let memory = policy("memory");
    assert_eq!(memory.isolation, crate::Isolation::Client);
    assert_eq!(memory.max_instances, 5);
    assert_eq!(memory.idle_timeout, Duration::from_secs(90));
    let shell = policy("shell");
    assert_eq!(shell.isolation, crate::Isolation::Session);
    assert_eq!(shell.max_instances, crate::isolation::DEFAULT_MAX_INSTANCES);
    assert_eq!(shell.idle_timeout, crate::isolation::DEFAULT_IDLE_TIMEOUT);
    assert_eq!(policy("plain").isolation, crate::Isolation::Shared);
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "isolation": "user"}}}"#,
        "mcpServers.s.isolation",
        "unknown isolation `user`",
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "maxInstances": 0}}}"#,
        "mcpServers.s.maxInstances",
        "at least 1",
    );
}

#[test]
fn per_client_values_are_kept_for_each_client_and_listed_as_named() {
    let text = r#"{"mcpServers": {
        "files": {"command": "x", "args": ["/srv/${client.name}", "${TOKEN}"],
                  "env": {"GH": "${client.secret.GH}", "ORG": "${client.claims.org:-none}"},
                  "listAs": {"name": "catalogue", "secrets": {"GH": "${TOKEN}"}}},
        "web": {"url": "https://example.com/${client.claims.org:-x}/mcp",
                "headers": {"Authorization": "Bearer ${client.secret.WEB}"},
                "isolation": "session", "listAs": {"name": "c", "secrets": {"WEB": "w"}}}}}"#;
    let servers = parse(text, &[("TOKEN", "t0k")]).servers;
    let files = &servers[0].config;
    assert!(files.per_client());
    assert_eq!(files.isolation_policy().isolation, crate::Isolation::Client);
    let alice = crate::client_values::ClientValues::new("alice").with_secrets([("GH", "ghp")]);
    let (filled, used) = files.fill_for(&alice).unwrap();
    assert_eq!(used, ["alice", "ghp", "none"]);
    let listed = files.opening_transport().unwrap();
    let texts: Vec<&str> = listed.texts().collect();
    assert_eq!(texts, ["/srv/catalogue", "t0k", "t0k", "none"]);
    assert!(!filled.per_client());
    assert_eq!(
        servers[1].config.isolation_policy().isolation,
        crate::Isolation::Session
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "args": ["${client.name}"]}}}"#,
        "mcpServers.s.listAs",
        "name the values its tools are listed with",
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "args": ["${client.secret.T}"],
            "listAs": {"name": "c"}}}}"#,
        "mcpServers.s.listAs",
        "`${client.secret.T}` has no value",
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "args": ["${client.email}"],
            "listAs": {"name": "c"}}}}"#,
        "mcpServers.s",
        "unknown per-client value `${client.email}`",
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "args": ["${client.name}"],
            "isolation": "shared", "listAs": {"name": "c"}}}}"#,
        "mcpServers.s.isolation",
        "never shared",
    );
    rejects(
        r#"{"mcpServers": {"s": {"command": "x", "listAs": {"nom": "c"}}}}"#,
        "mcpServers.s.listAs.nom",
        "unknown field",
    );
}

#[cfg(feature = "oauth")]
#[test]
fn a_token_exchange_makes_a_server_per_client() {
    let text = r#"{"mcpServers": {"gh": {"url": "https://gh.example.com/mcp",
        "auth": {"tokenExchange": {"tokenEndpoint": "https://idp.example.com/token",
            "clientId": "gw", "clientSecretEnv": "GW_SECRET", "audience": "gh", "scope": "repo"}}}}}"#;
    let servers = parse(text, &[("GW_SECRET", "s3cret")]).servers;
    let gh = &servers[0].config;
    assert!(gh.per_client());
    assert_eq!(gh.isolation_policy().isolation, crate::Isolation::Client);
    let exchange = gh.exchange().expect("a token exchange");
    assert_eq!(exchange.token_endpoint(), "https://idp.example.com/token");
    assert!(!format!("{exchange:?}").contains("s3cret"));
    let e = error(
        r#"{"mcpServers": {"gh": {"url": "https://gh.example.com/mcp",
            "auth": {"tokenExchange": {"tokenEndpoint": "https://idp/t", "clientId": "gw",
                     "clientSecretEnv": "UNSET_SECRET"}}}}}"#,
        &[],
    );
    assert_eq!(
        e.path, "mcpServers.gh.auth.tokenExchange.clientSecretEnv",
        "{e}"
    );
    rejects(
        r#"{"mcpServers": {"gh": {"url": "https://gh.example.com/mcp",
            "auth": {"tokenExchange": {"clientId": "gw"}}}}}"#,
        "mcpServers.gh.auth.tokenExchange",
        "needs `tokenEndpoint`",
    );
    rejects(
        r#"{"mcpServers": {"gh": {"command": "x", "auth": {"tokenExchange": {}}}}}"#,
        "mcpServers.gh.auth",
        "auth is for http servers",
    );
    rejects(
        r#"{"mcpServers": {"gh": {"url": "https://gh.example.com/mcp", "isolation": "shared",
            "auth": {"tokenExchange": {"tokenEndpoint": "https://idp/t", "clientId": "gw"}}}}}"#,
        "mcpServers.gh.isolation",
        "never shared",
    );
}

#[test]
fn allow_deny_prefix_and_max_in_flight() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "allowTools": ["read_*", "list?"],
        "denyTools": ["read_secret"], "prefix": "fs", "maxInFlight": 4}}}"#;
    let config = &parse(text, &[]).servers[0].config;
    assert_eq!(config.allow_tools, strings(&["read_*", "list?"]));
    assert_eq!(config.deny_tools, strings(&["read_secret"]));
    assert_eq!(config.prefix.as_deref(), Some("fs"));
    assert_eq!(config.max_in_flight, Some(4));
}

#[test]
fn the_protocol_era_is_read_per_server() {
    let text = r#"{"mcpServers": {"a": {"command": "x", "protocol": "modern"},
        "b": {"command": "x", "protocol": "legacy"}, "c": {"command": "x"}}}"#;
    let doc = parse(text, &[]);
    let protocol = |name: &str| {
        let server = doc.servers.iter().find(|s| &*s.name == name).expect(name);
        server.config.protocol
    };
    assert_eq!(protocol("a"), crate::Protocol::Modern);
    assert_eq!(protocol("b"), crate::Protocol::Legacy);
    assert_eq!(protocol("c"), crate::Protocol::Auto);
}

#[test]
fn unknown_server_fields_and_nulls_are_ignored() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "autoApprove": ["t"], "alwaysAllow": [],
        "description": 5, "env": null, "cwd": null, "timeout": null}}}"#;
    let config = &parse(text, &[]).servers[0].config;
    assert_eq!(config.timeout, None);
    assert_eq!(config.transport_kind().as_str(), "stdio");
}
