//! How long a server may take to start, and what a start that ran out of that time says.
//!
//! A server's start (opening the connection, the era probe, the handshake, its tools listed)
//! is bounded by its startup timeout: the server's own (`--startup-timeout` for a server on
//! the command line, `startupTimeout` in a config file), else the file's
//! (`"switchboard": {"startupTimeout"}`), else `MCP_TIMEOUT` (milliseconds), else 30 s.
//! `call --timeout` caps it ([`set_cap`]): a command whose call may take 3 s does not wait
//! 30 s for a server that stalls, and the call still gets its whole 3 s once the server is
//! ready. Each bound stays predictable (the call's does not shrink by however long the
//! start took), and no stalled start outlasts `--timeout`.
//!
//! A start that ran out of its time is reported naming the flag that bounded it and what
//! the server left unanswered ([`ran_out`]):
//!
//! ```text
//! switchboard: server `127.0.0.1:3001` at http://127.0.0.1:3001/mcp did not complete its handshake within 3s (--timeout), waiting for the answer to initialize
//! ```

use std::sync::OnceLock;
use std::time::Duration;

use switchboard::ConfigFile;

/// The startup timeout when nothing sets one: the runtime's default, as
/// `ServerConfig::startup_timeout` documents it and `--startup-timeout --help` says.
const DEFAULT: Duration = Duration::from_secs(30);

/// The variable that sets the startup timeout of servers that set none (integer
/// milliseconds, as Claude Code reads it; `RuntimeBuilder::with_env_defaults` reads it the
/// same way).
const ENV: &str = "MCP_TIMEOUT";

/// The `--timeout` of this command, when it has one: it caps every server's start.
static CAP: OnceLock<Duration> = OnceLock::new();

/// Caps the start of every server this command runs at `timeout` (`call --timeout`); set
/// before the servers start.
pub(crate) fn set_cap(timeout: Duration) {
    let _ = CAP.set(timeout);
}

/// What [`set_cap`] set.
fn cap() -> Option<Duration> {
    CAP.get().copied()
}

/// `file` as it is started: with every server's startup timeout cut to the command's
/// `--timeout`, if it has one and that is shorter.
pub(crate) fn bounded(file: &ConfigFile) -> ConfigFile {
    let Some(cap) = cap() else {
        return file.clone();
    };
    let env = from_env(std::env::var(ENV).ok().as_deref());
    let mut bounded = file.clone();
    for (_, config) in &mut bounded.servers {
        let limit = limit(
            config.get_startup_timeout(),
            file.defaults.startup_timeout,
            env,
            Some(cap),
        );
        *config = config.clone().startup_timeout(limit);
    }
    bounded
}

/// A server's startup timeout: its own, else the file's, else the environment's, else
/// [`DEFAULT`]; cut to `cap`.
fn limit(
    own: Option<Duration>,
    file: Option<Duration>,
    env: Option<Duration>,
    cap: Option<Duration>,
) -> Duration {
    let limit = own.or(file).or(env).unwrap_or(DEFAULT);
    cap.map_or(limit, |cap| limit.min(cap))
}

/// `MCP_TIMEOUT`'s value as the runtime reads it: integer milliseconds, more than zero;
/// anything else is no value.
fn from_env(value: Option<&str>) -> Option<Duration> {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}

/// What the runtime says of a start that ran out of its time, after the server's name:
/// `server `NAME` failed its handshake: ` then this, the limit in milliseconds, ` ms`, and
/// what the server left unanswered (and wrote that is not MCP).
const RAN_OUT: &str = "no complete handshake within the startup timeout of ";

/// The line of server `name` (at `url`, for an HTTP server) whose start failed with `why`,
/// if `why` is the runtime's word that the start ran out of its time: naming the limit,
/// the flag that bounded it, and what the server left unanswered. `None` for any other
/// failure.
pub(crate) fn ran_out(name: &str, url: Option<&str>, why: &str) -> Option<String> {
    explain(name, url, why, cap())
}

/// [`ran_out`] with the command's `--timeout` as `cap`.
fn explain(name: &str, url: Option<&str>, why: &str, cap: Option<Duration>) -> Option<String> {
    let after = why
        .strip_prefix(&format!("server `{name}` failed its handshake: "))?
        .strip_prefix(RAN_OUT)?;
    let (millis, rest) = after.split_once(" ms")?;
    let limit = Duration::from_millis(millis.parse().ok()?);
    // The cap bounded it when the limit is the cap (a tie is the cap's too: raising the
    // startup timeout alone would change nothing).
    let within = match cap {
        Some(cap) if cap.as_millis() == limit.as_millis() => {
            format!("within {} (--timeout)", written(limit))
        }
        _ => format!(
            "within its startup timeout of {} (--startup-timeout or startupTimeout)",
            written(limit)
        ),
    };
    let at = url.map(|url| format!(" at {url}")).unwrap_or_default();
    Some(format!(
        "server `{name}`{at} did not complete its handshake {within}{rest}"
    ))
}

/// A duration as a config file and the command line write it: `500ms`, `3s`, `1.5s`.
fn written(duration: Duration) -> String {
    let millis = duration.as_millis();
    match (millis / 1000, millis % 1000) {
        (0, ms) => format!("{ms}ms"),
        (s, 0) => format!("{s}s"),
        (s, ms) => {
            let fraction = format!("{ms:03}");
            format!("{s}.{}s", fraction.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_startup_timeout_is_the_servers_else_the_files_else_the_environments_cut_to_the_cap() {
        assert_eq!(limit(None, None, None, None), DEFAULT);
        assert_eq!(limit(Some(5 * S), Some(7 * S), Some(9 * S), None), 5 * S);
        assert_eq!(limit(None, Some(7 * S), Some(9 * S), None), 7 * S);
        assert_eq!(limit(None, None, Some(9 * S), None), 9 * S);
        // --timeout caps whichever it is, and never lengthens it.
        assert_eq!(limit(None, None, None, Some(3 * S)), 3 * S);
        assert_eq!(limit(Some(60 * S), None, None, Some(3 * S)), 3 * S);
        assert_eq!(limit(Some(S), None, None, Some(3 * S)), S);
        assert_eq!(limit(None, None, None, Some(10 * 60 * S)), DEFAULT);
    }

    #[test]
    fn mcp_timeout_is_read_as_the_runtime_reads_it() {
        assert_eq!(from_env(Some("2500")), Some(Duration::from_millis(2500)));
        assert_eq!(from_env(Some(" 40 ")), Some(Duration::from_millis(40)));
        for ignored in [
            None,
            Some(""),
            Some("0"),
            Some("5s"),
            Some("-1"),
            Some("1.5"),
        ] {
            assert_eq!(from_env(ignored), None, "{ignored:?}");
        }
    }

    #[test]
    fn durations_are_written_as_they_are_typed() {
        assert_eq!(written(Duration::from_millis(500)), "500ms");
        assert_eq!(written(3 * S), "3s");
        assert_eq!(written(Duration::from_millis(1500)), "1.5s");
        assert_eq!(written(Duration::from_millis(1250)), "1.25s");
        assert_eq!(written(Duration::from_millis(1005)), "1.005s");
        assert_eq!(written(90 * S), "90s");
        assert_eq!(written(Duration::ZERO), "0ms");
    }

    /// The runtime's words for a start of `name` that ran out after `ms`.
    fn runtime_says(name: &str, ms: u64, rest: &str) -> String {
        format!("server `{name}` failed its handshake: {RAN_OUT}{ms} ms{rest}")
    }

    #[test]
    fn a_start_that_ran_out_names_the_flag_that_bounded_it_and_what_stalled() {
        let waiting = ", waiting for the answer to initialize";
        let url = Some("http://127.0.0.1:3001/mcp");
        // --timeout was the shorter: it is named.
        assert_eq!(
            explain("h", url, &runtime_says("h", 3000, waiting), Some(3 * S)).as_deref(),
            Some(
                "server `h` at http://127.0.0.1:3001/mcp did not complete its handshake \
                 within 3s (--timeout), waiting for the answer to initialize"
            )
        );
        // The startup timeout was the shorter, or there is no --timeout.
        let expected = "server `sleep` did not complete its handshake within its startup \
                        timeout of 500ms (--startup-timeout or startupTimeout), waiting for \
                        the answer to initialize; it wrote what is not an MCP message: `hi`";
        let why = runtime_says(
            "sleep",
            500,
            &format!("{waiting}; it wrote what is not an MCP message: `hi`"),
        );
        assert_eq!(
            explain("sleep", None, &why, Some(3 * S)).as_deref(),
            Some(expected)
        );
        assert_eq!(
            explain("sleep", None, &why, None).as_deref(),
            Some(expected)
        );
        // Anything else is left to the other messages.
        for other in [
            "server `h` failed its handshake: initialize was refused: boom".to_owned(),
            runtime_says("other", 3000, waiting),
            format!("server `h` failed its handshake: {RAN_OUT}soon ms"),
            format!("it disconnected: {}", runtime_says("h", 3000, waiting)),
        ] {
            assert_eq!(explain("h", url, &other, Some(3 * S)), None, "{other}");
        }
    }
}
