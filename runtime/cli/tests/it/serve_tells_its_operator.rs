//! What `switchboard serve` logs on stderr by default, for whoever runs it: where it
//! listens, each server ready or not and why, each reload and what it did (or why the file
//! did not read), a warning for an address anyone may reach without `--auth`, and that it
//! is stopping; with `-q`, the warnings alone. Never a secret of the config.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::{config_file_of, listening_at};

/// How long anything awaited may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// `switchboard serve` as a child process, its stderr read line by line.
pub(crate) struct Logged {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line read so far.
    pub(crate) seen: Vec<String>,
}

impl Logged {
    /// `switchboard serve -c config` with `args`.
    pub(crate) fn start(config: &Path, args: &[&str]) -> Logged {
        let mut child = Command::new(BIN)
            .args(["serve", "-c", config.to_str().unwrap()])
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Logged {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until one is `wanted`, and returns it; fails the test after [`WAIT`] or
    /// at the end of stderr, with what was read.
    pub(crate) fn until(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        if let Some(line) = self.seen.iter().find(|l| wanted(l)) {
            return line.clone();
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(e) => panic!("no line {what} ({e:?}); read:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Where it listens, on loopback (it may be bound to every address).
    pub(crate) fn addr(&mut self) -> SocketAddr {
        let line = self.until("saying where it listens", |l| listening_at(l).is_some());
        let url = listening_at(&line).unwrap_or_default();
        let port = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line}"));
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// `SIGTERM`, then every line it wrote; it exits 0.
    pub(crate) fn stop(mut self) -> Vec<String> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "serve after SIGTERM: {status}");
        // The reader ends at the end of stderr, once the process is gone.
        while let Ok(line) = self.lines.recv_timeout(WAIT) {
            self.seen.push(line);
        }
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Logged {
    /// A failed test leaves no gateway behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The demo server, with `env`.
fn demo(env: Value) -> Value {
    json!({"command": BIN, "args": ["demo-server"], "env": env})
}

/// The servers of the first config: the demo with a secret in its environment, a command
/// that does not exist, and an HTTP server nobody listens for, with a secret in its
/// headers and its URL.
fn servers() -> serde_json::Map<String, Value> {
    let mut servers = serde_json::Map::new();
    servers.insert("demo".into(), demo(json!({"DEMO_TOKEN": "env-secret-one"})));
    servers.insert(
        "broken".into(),
        json!({"command": "/nonexistent/switchboard-no-such-server"}),
    );
    servers.insert(
        "remote".into(),
        json!({"type": "http", "url": "http://127.0.0.1:1/mcp?key=url-secret",
            "headers": {"Authorization": "Bearer header-secret"}}),
    );
    servers
}

fn write(path: &Path, servers: &serde_json::Map<String, Value>) {
    std::fs::write(path, json!({"mcpServers": servers}).to_string()).unwrap();
}

fn has(lines: &[String], level: &str, text: &str) -> bool {
    lines.iter().any(|l| l.contains(level) && l.contains(text))
}

#[test]
fn serve_logs_its_servers_reloads_an_open_address_and_its_stop() {
    let config = config_file_of(json!({}));
    write(&config, &servers());
    let mut served = Logged::start(&config, &["--listen", "0.0.0.0:0"]);
    let listening = served.until("saying where it listens", |l| listening_at(l).is_some());
    assert!(listening.contains(" INFO "), "{listening}");
    assert!(listening.contains("serving 3 servers at http://0.0.0.0:"));
    for (level, text) in [
        (" INFO ", "server `demo` is ready: switchboard-demo "),
        (
            " WARN ",
            "server `broken` could not start (cannot start `/nonexistent/",
        ),
        (" WARN ", "server `remote` could not start ("),
    ] {
        assert!(
            has(&served.seen, level, text),
            "{text} in {:#?}",
            served.seen
        );
    }
    let warning = served.until("warning of the open address", |l| {
        l.contains("without --auth")
    });
    assert!(warning.contains(" WARN "), "{warning}");
    assert!(warning.contains("anyone who reaches it can list and call every tool"));

    // A file that reads: a server added, and the demo's environment changed.
    let mut now = servers();
    now.insert("demo".into(), demo(json!({"DEMO_TOKEN": "env-secret-two"})));
    now.insert("extra".into(), demo(json!({})));
    write(&config, &now);
    let reloaded = served.until("saying what the reload did", |l| l.contains("reload ("));
    assert!(reloaded.contains(" INFO "), "{reloaded}");
    assert!(
        reloaded.contains("added `extra`") && reloaded.contains("changed `demo` [env]"),
        "{reloaded}"
    );
    served.until("saying the added server is ready", |l| {
        l.contains("server `extra` is ready")
    });
    // One that does not: the servers go on as they are, and the operator hears why.
    std::fs::write(&config, "{\"mcpServers\": {").unwrap();
    let refused = served.until("saying the file did not read", |l| {
        l.contains("the file did not read")
    });
    assert!(refused.contains(" WARN "), "{refused}");

    let all = served.stop();
    assert!(
        has(&all, " INFO ", "SIGTERM: stopping (0 requests in flight)"),
        "{all:#?}"
    );
    assert!(has(&all, " INFO ", "stopped"), "{all:#?}");
    let text = all.join("\n");
    for secret in ["env-secret", "url-secret", "header-secret"] {
        assert!(!text.contains(secret), "{secret} logged:\n{text}");
    }
}

#[test]
fn quiet_serve_logs_its_warnings_only() {
    let config = config_file_of(json!({}));
    write(&config, &servers());
    let mut served = Logged::start(&config, &["-q", "--listen", "0.0.0.0:0"]);
    served.until("warning of the open address", |l| {
        l.contains("without --auth")
    });
    let all = served.stop();
    assert!(
        has(&all, " WARN ", "server `broken` could not start"),
        "{all:#?}"
    );
    let info: Vec<&String> = all.iter().filter(|l| l.contains(" INFO ")).collect();
    assert!(info.is_empty(), "info lines with -q: {info:#?}");
    assert!(!all.iter().any(|l| listening_at(l).is_some()), "{all:#?}");
}

#[test]
fn serve_on_loopback_or_with_auth_gives_no_warning() {
    let config = config_file_of(json!({"mcpServers": {"demo": demo(json!({}))}}));
    let auth = config.with_file_name("auth.json");
    let key = "a key of thirty-two bytes or more, for the test";
    let keys = json!({"resource": "http://127.0.0.1/mcp", "keys": [{"name": "ci", "key": key}]});
    std::fs::write(&auth, keys.to_string()).unwrap();
    let auth = auth.to_str().unwrap();
    for args in [
        &["--listen", "0"][..],
        &["--listen", "0.0.0.0:0", "--auth", auth],
    ] {
        let mut served = Logged::start(&config, args);
        served.addr();
        let all = served.stop();
        assert!(
            !all.iter().any(|l| l.contains(" WARN ")),
            "{args:?}: {all:#?}"
        );
        assert!(!all.join("\n").contains(key), "the key is never logged");
    }
}
