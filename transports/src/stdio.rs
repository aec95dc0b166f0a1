//! A child process speaking MCP over its stdin and stdout.
//!
//! [`connect`] starts the server directly (never through a shell) as the leader of its own
//! process group, frames stdin/stdout as newline-delimited JSON, and drains stderr into
//! `tracing` (target `switchboard::stderr`, field `server`) and a ring buffer of the last
//! lines, which the final [`CloseReason`] carries. A graceful [`Control::close`] follows the
//! MCP stdio shutdown: close stdin, wait, `SIGTERM` the group, wait, `SIGKILL` the group,
//! reap the child, and do the same to whatever is left of its group;
//! [`Control::close_within`] takes the same steps with the waits cut to fit a deadline.
//!
//! ```no_run
//! use switchboard_transports::stdio::{self, Config};
//!
//! # async fn run() -> Result<(), stdio::Error> {
//! let config = Config::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]);
//! let conn = stdio::connect("everything", &config).await?;
//! // ... exchange messages over conn.sender / conn.events ...
//! conn.control.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Security
//!
//! The child inherits this process's environment unless [`Config::clear_env`] is set; pass
//! secrets through [`Config::env`], which `Debug` never prints.
//!
//! # Limitations
//!
//! Group signals reach only processes that stay in the child's process group. A process
//! that leaves it on purpose (`setsid`, daemons, containers started by `docker run`) is out
//! of their reach and may outlive the connection.
//!
//! No server outlives a crashed host: one small shell per process (the *guardian*, started
//! with the first server, in a process group of its own) watches every server's group and
//! kills what is left of them when this process ends, however it ends. Where no guardian
//! can be started (no `/bin/sh`), on Linux each child gets `SIGKILL` when the thread that
//! started it exits (`PR_SET_PDEATHSIG`) instead, and that signal follows the *thread*:
//! call [`connect`] from a runtime thread that lives as long as the connection (any task on
//! a tokio runtime does; a thread of `spawn_blocking`'s pool does not).

mod group;
mod guardian;
mod lane;
mod process;
mod stderr;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use switchboard_codecs::lines::LinesCodec;
use tokio::sync::{mpsc, oneshot};

#[cfg(doc)]
use crate::connection::CloseReason;
use crate::connection::{BoxFuture, Connection, Control, KillHandle, Sender};
use crate::framed;

use self::group::Group;
pub use self::guardian::NAME as GUARDIAN_NAME;
use self::lane::Lane;
use self::process::Process;
use self::stderr::Ring;

/// How to start a server. Build it with [`Config::new`] and the chained setters.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    clear_env: bool,
    cwd: Option<PathBuf>,
    max_frame_length: usize,
    stderr_lines: usize,
    stdin_grace: Duration,
    term_grace: Duration,
}

impl Config {
    /// Runs `program`, looked up in `PATH` unless it is a path.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Config {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            clear_env: false,
            cwd: None,
            max_frame_length: 16 * 1024 * 1024,
            stderr_lines: 20,
            stdin_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets one environment variable for the child, on top of the inherited environment.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets environment variables for the child, on top of the inherited environment.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self = self.env(key, value);
        }
        self
    }

    /// Starts the child from an empty environment (plus [`Config::env`]) instead of this
    /// process's. `PATH` is then not inherited either: give the program as an absolute path.
    pub fn clear_env(mut self, clear: bool) -> Self {
        self.clear_env = clear;
        self
    }

    /// Runs the child in `dir`.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The longest line read from stdout (default 16 MiB); longer lines are skipped.
    pub fn max_frame_length(mut self, max: usize) -> Self {
        self.max_frame_length = max;
        self
    }

    /// How many of the last stderr lines to keep for the [`CloseReason`] (default 20).
    pub fn stderr_lines(mut self, lines: usize) -> Self {
        self.stderr_lines = lines;
        self
    }

    /// How long a close waits after closing stdin before `SIGTERM`, and after `SIGTERM`
    /// before `SIGKILL` (defaults 2 s and 2 s); [`Control::close_within`] cuts them to fit
    /// its grace.
    pub fn close_timeouts(mut self, stdin_grace: Duration, term_grace: Duration) -> Self {
        self.stdin_grace = stdin_grace;
        self.term_grace = term_grace;
        self
    }

    /// A hash of what is started (program, arguments, environment, working directory),
    /// equal for two configs that run the same command: what a fact learnt about one
    /// server process (its protocol era) may be kept under for the next one.
    pub fn launch_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (
            &self.program,
            &self.args,
            &self.env,
            self.clear_env,
            &self.cwd,
        )
            .hash(&mut hasher);
        hasher.finish()
    }

    /// Each argument and environment value that is UTF-8 text.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.args
            .iter()
            .chain(self.env.iter().map(|(_, v)| v))
            .filter_map(|s| s.to_str())
    }

    /// The same command with each argument and environment value that is UTF-8 text passed
    /// through `f`: what a template's values are filled in with.
    pub fn try_map_texts<E>(
        &self,
        mut f: impl FnMut(&str) -> Result<String, E>,
    ) -> Result<Config, E> {
        let mut map = |s: &OsString| -> Result<OsString, E> {
            match s.to_str() {
                Some(text) => f(text).map(OsString::from),
                None => Ok(s.clone()),
            }
        };
        let args = self.args.iter().map(&mut map).collect::<Result<_, E>>()?;
        let env = self
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), map(v)?)))
            .collect::<Result<_, E>>()?;
        Ok(Config {
            args,
            env,
            ..self.clone()
        })
    }

    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args);
        if self.clear_env {
            command.env_clear();
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // Without a guardian, the kernel's parent-death signal stands in, at the cost of
        // starting every server with `fork` (see `guardian`).
        #[cfg(target_os = "linux")]
        if !guardian::available() {
            set_parent_death_signal(&mut command);
        }
        command
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Environment values are often secrets: keys only.
        let env_keys: Vec<_> = self.env.iter().map(|(k, _)| k).collect();
        f.debug_struct("Config")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env_keys", &env_keys)
            .field("clear_env", &self.clear_env)
            .field("cwd", &self.cwd)
            .field("max_frame_length", &self.max_frame_length)
            .field("stderr_lines", &self.stderr_lines)
            .field("stdin_grace", &self.stdin_grace)
            .field("term_grace", &self.term_grace)
            .finish()
    }
}

/// Makes the kernel send `SIGKILL` to the child when the spawning thread dies.
#[cfg(target_os = "linux")]
fn set_parent_death_signal(command: &mut tokio::process::Command) {
    // SAFETY: getpid is async-signal-safe; called here in the parent.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (prctl, getppid, and building an io::Error from errno, which does not
    // allocate); it touches no lock and no memory shared with other threads.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl: then the signal will never come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Why a child could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Spawning the program failed (not found, not executable, bad cwd, ...).
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program, as configured.
        program: String,
        /// The cause.
        #[source]
        source: Arc<io::Error>,
    },
}

/// Starts the server described by `config` and connects to it.
///
/// `name` names the server in log fields. The events end with one
/// [`Event::Closed`](crate::Event::Closed) whose cause is the child's exit, an EOF on its
/// stdout, a failed write, or [`close`](Control::close); it always comes after the last
/// message the child wrote.
///
/// # Drop behavior
///
/// Dropping the connection's control without `close` sends `SIGKILL` to the child's group at
/// once; the child is still reaped in the background.
///
/// # Panics
///
/// Must be called within a tokio runtime with I/O enabled.
pub async fn connect(name: &str, config: &Config) -> Result<Connection, Error> {
    let server: Arc<str> = name.into();
    let spawn_error = |source: io::Error| Error::Spawn {
        program: config.program.to_string_lossy().into_owned(),
        source: Arc::new(source),
    };
    let mut child = config.command().spawn().map_err(spawn_error)?;
    let pid = child.id();
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(pid), (Some(stdin), Some(stdout), Some(stderr))) = (pid, pipes) else {
        // Unreachable with piped stdio and a fresh child; never leave it running.
        let _ = child.start_kill();
        return Err(spawn_error(io::Error::other(
            "the child's pipes are missing",
        )));
    };
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        let _ = child.start_kill();
        return Err(spawn_error(io::Error::other(
            "the child's pid is out of range",
        )));
    };
    tracing::debug!(server = %server, pid, program = ?config.program, "server started");

    let group = Arc::new(Group::new(pgid));
    let ring = Ring::new(config.stderr_lines);
    let (events_tx, events_rx) = mpsc::channel(framed::EVENTS_CAPACITY);
    let (outbound_tx, outbound_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let (close_tx, close_rx) = oneshot::channel();

    let stdin = match stdin
        .into_owned_fd()
        .and_then(tokio::net::unix::pipe::Sender::from_owned_fd)
    {
        Ok(stdin) => stdin,
        Err(e) => {
            let _ = child.start_kill();
            return Err(spawn_error(e));
        }
    };
    let codec = LinesCodec::with_max_length(config.max_frame_length);
    let inline = crate::connection::Inline::default();
    let outstanding = framed::Outstanding::default();
    let lane = Lane::new(stdin, outstanding.clone());
    let reader = framed::spawn_reader(
        server.clone(),
        inline.clone(),
        stdout,
        codec,
        events_tx.clone(),
        stop_rx,
        outstanding,
    );
    let writer = lane::spawn_writer(lane.clone(), outbound_rx, shutdown_rx);
    let stderr = stderr::spawn_drain(server.clone(), stderr, ring.clone());
    let process = Process {
        server: server.clone(),
        child,
        group: group.clone(),
        reader: Some(reader),
        read_end: None,
        stop_reader: Some(stop_tx),
        writer: Some(writer),
        shutdown_writer: Some(shutdown_tx),
        stderr: Some(stderr),
        close: Some(close_rx),
        events: events_tx,
        ring,
        graces: process::Graces {
            stdin: config.stdin_grace,
            term: config.term_grace,
        },
    };
    tokio::spawn(process.run());

    Ok(Connection {
        sender: Sender::with_direct(outbound_tx, lane),
        events: events_rx,
        inline,
        control: Box::new(ProcessControl {
            server,
            pid,
            group,
            close: Some(close_tx),
        }),
    })
}

/// The control of a child-process connection.
#[derive(Debug)]
struct ProcessControl {
    server: Arc<str>,
    pid: u32,
    group: Arc<Group>,
    /// Taken by `close`; still here on drop means "closed without close".
    close: Option<oneshot::Sender<process::Close>>,
}

impl ProcessControl {
    /// Starts a close (its waits capped by `within`) and returns a future that resolves
    /// when it is done. The request goes out before the future is polled, so dropping the
    /// future does not stop the close.
    fn request_close(&mut self, within: Option<Duration>) -> BoxFuture<()> {
        let (done, done_rx) = oneshot::channel();
        let requested = self
            .close
            .take()
            .is_some_and(|close| close.send(process::Close { done, within }).is_ok());
        let server = self.server.clone();
        Box::pin(async move {
            if requested {
                // An error only means the connection had already ended.
                let _ = done_rx.await;
            }
            tracing::debug!(server = %server, "server closed");
        })
    }
}

impl Control for ProcessControl {
    fn set_protocol_version(&mut self, _version: &str) {}

    fn close(mut self: Box<Self>) -> BoxFuture<()> {
        self.request_close(None)
    }

    fn close_within(mut self: Box<Self>, grace: Duration) -> BoxFuture<()> {
        self.request_close(Some(grace))
    }

    fn kill_handle(&self) -> Option<KillHandle> {
        let group = self.group.clone();
        Some(KillHandle::new(move || group.signal(libc::SIGKILL)))
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn kind(&self) -> crate::connection::Kind {
        crate::connection::Kind::Stdio
    }
}

impl Drop for ProcessControl {
    fn drop(&mut self) {
        if self.close.is_some() {
            // No graceful close is coming (an actor panicked, or the connection was just
            // dropped): leave no child behind. The process task still reaps it.
            self.group.signal(libc::SIGKILL);
        }
    }
}
