//! What `serve` tells its operator about its servers, as it happens: each one ready (what it
//! is, its protocol, its tools) or not (why), at start and whenever that changes (a crash,
//! a restart, a reload that adds or replaces one). One line per change, at info for a server
//! that is ready and at warn for one that is not; a server that keeps failing is told on its
//! attempts 1, 2, 4, 8, … rather than on each.
//!
//! ```text
//! INFO server `docs` is ready: docs-server 1.2.0, protocol 2025-11-25, 4 tools
//! WARN server `github` could not start (…); trying again in 1.0s (attempt 1)
//! WARN server `github`, which --ready-requires names, is no longer in the config: /readyz answers 503
//! ```
//!
//! What a server said of itself (its name and version) and its errors (which may carry its
//! stderr) are written with control characters escaped, one line each. Nothing here reads a
//! server's configuration, so no secret of it can reach a line.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use switchboard::{Runtime, RuntimeWatch, ServerState, ServerStatus};

use super::print::escape_line;

/// The servers as last told, and the names `/readyz` requires.
#[derive(Debug, Default)]
pub(crate) struct Told {
    servers: BTreeMap<String, Seen>,
    required: Vec<String>,
    /// Required names found missing, told once until they are back.
    missing: BTreeSet<String>,
}

impl Told {
    /// Nothing told yet; `required` are the servers `--ready-requires` names.
    pub(crate) fn new(required: Vec<String>) -> Told {
        Told {
            required,
            ..Told::default()
        }
    }

    /// Logs what changed among `servers` (every server the runtime runs) since the last look.
    pub(crate) fn look(&mut self, servers: &[switchboard::ServerHandle]) {
        let mut present = BTreeSet::new();
        for server in servers {
            let now = Now::of(&server.status());
            let name = server.name();
            present.insert(name.to_owned());
            let before = self.servers.get(name);
            if let Some(line) = report(name, before, &now) {
                line.log();
            }
            let seen = now.seen.after(before);
            self.servers.insert(name.to_owned(), seen);
        }
        self.servers.retain(|name, _| present.contains(name));
        for name in &self.required {
            if present.contains(name) {
                self.missing.remove(name);
            } else if self.missing.insert(name.clone()) {
                tracing::warn!(
                    "server `{name}`, which --ready-requires names, is no longer in the config: \
                     /readyz answers 503"
                );
            }
        }
    }
}

/// Tells every change of `runtime`'s servers after those `told` knows, until the runtime is
/// gone (or the task is dropped).
pub(crate) async fn follow(mut watch: RuntimeWatch, mut told: Told) {
    while watch.changed().await {
        told.look(&watch.servers());
    }
}

/// Logs the servers of `runtime` as they are now, and returns what was told, for [`follow`].
pub(crate) fn at_start(runtime: &Runtime, required: Vec<String>) -> (RuntimeWatch, Told) {
    // Watched first, so that no change between this look and the follower's is missed.
    let watch = runtime.watch();
    let mut told = Told::new(required);
    told.look(&runtime.servers());
    (watch, told)
}

/// A server's state, as compared between two looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Starting,
    Ready,
    Restarting,
    Down,
    Failed,
    Stopped,
}

/// What is kept of a server between looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    kind: Kind,
    /// Since when it is ready: a new value is a new incarnation (a restart, a replacement).
    ready_since: Option<Instant>,
    /// The last restart attempt seen, kept while the attempt runs (`Starting`); 0 once
    /// ready.
    attempt: u32,
    /// Whether it was ever ready.
    was_ready: bool,
}

impl Seen {
    /// What to keep of this look, `before` being the last: a restart's attempt runs as
    /// `Starting`, and keeps the number of the attempt that failed before it.
    fn after(self, before: Option<&Seen>) -> Seen {
        match (self.kind, before) {
            (Kind::Starting, Some(before)) => Seen {
                attempt: before.attempt,
                ..self
            },
            _ => self,
        }
    }
}

/// A server now, as much as a line about it needs.
#[derive(Debug, Clone, PartialEq)]
struct Now {
    seen: Seen,
    /// `name version, protocol P, N tools`, when ready.
    what: String,
    restarts: u32,
    /// Why it is not ready.
    why: String,
    /// When the next attempt starts, while restarting.
    retry_in: Duration,
}

impl Now {
    fn of(status: &ServerStatus) -> Now {
        let (kind, attempt, why, retry_in) = match &status.state {
            ServerState::Starting => (Kind::Starting, 0, String::new(), Duration::ZERO),
            ServerState::Ready => (Kind::Ready, 0, String::new(), Duration::ZERO),
            ServerState::Restarting {
                attempt,
                next_retry_at,
                last_error,
            } => (
                Kind::Restarting,
                *attempt,
                last_error.to_string(),
                next_retry_at.saturating_duration_since(Instant::now()),
            ),
            ServerState::Down { reason } => (Kind::Down, 0, reason.to_string(), Duration::ZERO),
            ServerState::Failed { error } => (Kind::Failed, 0, error.to_string(), Duration::ZERO),
            ServerState::Stopped => (Kind::Stopped, 0, String::new(), Duration::ZERO),
            _ => (Kind::Starting, 0, String::new(), Duration::ZERO),
        };
        let what = match &status.server_info {
            Some(info) => format!("{} {}", info.name, info.version),
            None => "a server with no name".to_owned(),
        };
        let tools = status.tools.len();
        let protocol = status.protocol_version.as_deref().unwrap_or("unknown");
        Now {
            seen: Seen {
                kind,
                ready_since: status.ready_since,
                attempt,
                was_ready: status.ready_since.is_some() || status.server_info.is_some(),
            },
            what: format!(
                "{what}, protocol {protocol}, {tools} tool{}",
                if tools == 1 { "" } else { "s" }
            ),
            restarts: status.restarts,
            why,
            retry_in,
        }
    }
}

/// One line to log.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Info(String),
    Warn(String),
}

impl Line {
    fn log(&self) {
        match self {
            Line::Info(text) => tracing::info!("{text}"),
            Line::Warn(text) => tracing::warn!("{text}"),
        }
    }
}

/// The line to log about server `name`, now `now`, last seen `before`; `None` when nothing
/// worth a line changed.
fn report(name: &str, before: Option<&Seen>, now: &Now) -> Option<Line> {
    let same_kind = before.is_some_and(|b| b.kind == now.seen.kind);
    let why = escape_line(own_words(name, &now.why));
    match now.seen.kind {
        Kind::Ready => {
            if same_kind && before.is_some_and(|b| b.ready_since == now.seen.ready_since) {
                return None;
            }
            let after = match now.restarts {
                0 => String::new(),
                1 => ", after 1 restart".to_owned(),
                n => format!(", after {n} restarts"),
            };
            Some(Line::Info(format!(
                "server `{name}` is ready: {}{after}",
                escape_line(&now.what)
            )))
        }
        Kind::Restarting => {
            // A server that was ready is told going down; attempts that fail in a row, on
            // attempts 1, 2, 4, 8, … (an attempt that ran early and failed keeps its number).
            let attempt = now.seen.attempt;
            let went_down = before.is_some_and(|b| b.kind == Kind::Ready);
            let new_attempt = before.map_or(true, |b| b.attempt != attempt);
            let told = went_down || (new_attempt && attempt.is_power_of_two());
            if !told {
                return None;
            }
            let retry = format!(
                "trying again in {} (attempt {attempt})",
                duration(now.retry_in)
            );
            Some(Line::Warn(if went_down {
                format!("server `{name}` went down ({why}); {retry}")
            } else if now.seen.was_ready {
                format!("server `{name}` did not come back ({why}); {retry}")
            } else {
                format!("server `{name}` could not start ({why}); {retry}")
            }))
        }
        Kind::Failed if !same_kind => Some(Line::Warn(if now.seen.was_ready {
            format!("server `{name}` failed and is not restarted: {why}")
        } else {
            format!("server `{name}` could not start: {why}")
        })),
        Kind::Down if !same_kind => Some(Line::Warn(format!(
            "server `{name}` went down and is not restarted: {why}"
        ))),
        Kind::Failed | Kind::Down | Kind::Starting | Kind::Stopped => None,
    }
}

/// `why` without the server's name in front, which the line says already (`server `x`
/// failed its handshake: …` is `failed its handshake: …`).
fn own_words<'a>(name: &str, why: &'a str) -> &'a str {
    let named = format!("server `{name}`");
    let Some(rest) = why.strip_prefix(&named) else {
        return why;
    };
    rest.strip_prefix(" could not be started: ")
        .or_else(|| rest.strip_prefix(": "))
        .or_else(|| rest.strip_prefix(' '))
        .unwrap_or(why)
}

/// `250ms`, `1.5s`, `2m30s`.
fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", d.as_secs_f64()),
        _ => format!("{}m{}s", d.as_secs() / 60, d.as_secs() % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now(kind: Kind, attempt: u32, ready_since: Option<Instant>) -> Now {
        Now {
            seen: Seen {
                kind,
                ready_since,
                attempt,
                was_ready: ready_since.is_some(),
            },
            what: "demo 1.0, protocol 2025-11-25, 3 tools".to_owned(),
            restarts: 0,
            why: "it exited with status 1".to_owned(),
            retry_in: Duration::from_millis(1500),
        }
    }

    fn text(line: Option<Line>) -> String {
        match line {
            Some(Line::Info(text)) => format!("info: {text}"),
            Some(Line::Warn(text)) => format!("warn: {text}"),
            None => "none".to_owned(),
        }
    }

    #[test]
    fn a_server_is_told_ready_once_per_incarnation() {
        let t0 = Instant::now();
        let ready = now(Kind::Ready, 0, Some(t0));
        assert_eq!(
            text(report("demo", None, &ready)),
            "info: server `demo` is ready: demo 1.0, protocol 2025-11-25, 3 tools"
        );
        assert!(report("demo", Some(&ready.seen), &ready).is_none());
        // Ready again since another instant: restarted or replaced, told again.
        let mut again = now(Kind::Ready, 0, Some(t0 + Duration::from_secs(1)));
        again.restarts = 2;
        assert_eq!(
            text(report("demo", Some(&ready.seen), &again)),
            "info: server `demo` is ready: demo 1.0, protocol 2025-11-25, 3 tools, after 2 restarts"
        );
    }

    #[test]
    fn a_server_that_keeps_failing_is_told_on_attempts_one_two_four_and_eight() {
        let starting = now(Kind::Starting, 0, None);
        assert!(report("x", None, &starting).is_none());
        let mut before = starting.seen;
        let mut told = Vec::new();
        for attempt in 1..=9 {
            // Each attempt starts, then fails.
            let failing = now(Kind::Restarting, attempt, None);
            if let Some(line) = report("x", Some(&before), &failing) {
                told.push((attempt, text(Some(line))));
            }
            before = failing.seen.after(Some(&before));
            let retrying = now(Kind::Starting, 0, None);
            assert!(report("x", Some(&before), &retrying).is_none());
            before = retrying.seen.after(Some(&before));
            // An attempt made early that fails keeps its number: not told again.
            assert!(report("x", Some(&before), &failing).is_none());
        }
        let attempts: Vec<u32> = told.iter().map(|(a, _)| *a).collect();
        assert_eq!(attempts, [1, 2, 4, 8], "{told:?}");
        assert_eq!(
            told[0].1,
            "warn: server `x` could not start (it exited with status 1); trying again in 1.5s (attempt 1)"
        );
    }

    #[test]
    fn a_crash_failure_and_a_stop_are_told_as_what_they_are() {
        let up = now(Kind::Ready, 0, Some(Instant::now()));
        let down = now(Kind::Restarting, 1, up.seen.ready_since);
        assert_eq!(
            text(report("x", Some(&up.seen), &down)),
            "warn: server `x` went down (it exited with status 1); trying again in 1.5s (attempt 1)"
        );
        let failed = now(Kind::Failed, 0, None);
        assert_eq!(
            text(report("x", None, &failed)),
            "warn: server `x` could not start: it exited with status 1"
        );
        assert!(report("x", Some(&failed.seen), &failed).is_none());
        let stopped = now(Kind::Stopped, 0, None);
        assert!(report("x", Some(&up.seen), &stopped).is_none());
    }

    #[test]
    fn what_a_server_says_is_escaped_onto_one_line() {
        let mut ready = now(Kind::Ready, 0, Some(Instant::now()));
        ready.what = "evil\n\u{1b}[31m 1.0, protocol p, 0 tools".to_owned();
        let line = text(report("x", None, &ready));
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
    }

    #[test]
    fn the_server_is_named_once() {
        let mut failed = now(Kind::Failed, 0, None);
        failed.why = "server `x` could not be started: cannot start `srv`: no such file".into();
        assert_eq!(
            text(report("x", None, &failed)),
            "warn: server `x` could not start: cannot start `srv`: no such file"
        );
        let mut failing = now(Kind::Restarting, 1, None);
        failing.why = "server `x` failed its handshake: it timed out".into();
        assert_eq!(
            text(report("x", None, &failing)),
            "warn: server `x` could not start (failed its handshake: it timed out); \
             trying again in 1.5s (attempt 1)"
        );
        failing.why = "server `xy` failed".into();
        assert!(text(report("x", None, &failing)).contains("(server `xy` failed)"));
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(duration(Duration::from_millis(250)), "250ms");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration(Duration::from_secs(150)), "2m30s");
    }
}
