//! Where the servers of a command come from, starting them, and reporting on each of them.
//!
//! `tools` and `call` take one stdio server after `--`, which becomes a config of that one
//! server ([`ServerArgs::config_file`]): from there on it runs through the same code as a
//! config file's servers. Otherwise the config file is the first of: `-c/--config FILE`,
//! `$SWITCHBOARD_CONFIG`, `./.mcp.json` (as Claude Code names a project's servers); `-c`
//! together with `-- CMD` is a usage error. A file that cannot be used stops the command
//! before anything starts, with exit 2 and the file, JSON path and problem on one line:
//!
//! ```text
//! switchboard: .mcp.json: mcpServers.github.args: expected an array of strings
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use switchboard::{
    ConfigFile, RestartPolicy, Runtime, ServerConfig, ServerHandle, ServerState, ServerStatus,
};

use super::{duration, elicit, start, unready, Failure, Interrupt};

/// The environment variable naming the config file when `-c` is not given.
const ENV: &str = "SWITCHBOARD_CONFIG";

/// The config file looked for in the current directory last.
const DEFAULT_FILE: &str = ".mcp.json";

/// How long to wait, after the servers started, for the catalogue to list the tools of every
/// ready server. The supervisor rebuilds it right after each status change, on its own thread,
/// so this is normally a matter of microseconds; the bound only matters for a ready server
/// none of whose tools are listed (all denied, or all colliding in `never` naming mode).
const SETTLE: Duration = Duration::from_secs(1);

/// Where the config file comes from.
#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// The config file (`mcpServers` or VS Code's `servers`) [default: $SWITCHBOARD_CONFIG,
    /// else ./.mcp.json].
    #[arg(short, long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
}

impl ConfigArgs {
    /// `-c` names a set of servers and `-- CMD` one server: the two do not mix.
    pub(crate) fn refuse_with_command(&self) -> Result<(), Failure> {
        match &self.config {
            Some(file) => Err(Failure::Usage(format!(
                "--config {} and `-- CMD` both name the servers to run: give one or the other",
                file.display()
            ))),
            None => Ok(()),
        }
    }

    /// Finds and loads the config file; every problem is a usage error (exit 2). `or_command`
    /// says whether the command also takes one server after `--`, for the hint when no file
    /// is found.
    ///
    /// The OAuth clients of its servers with an `"oauth"` object are installed.
    pub(crate) fn load(&self, or_command: bool) -> Result<ConfigFile, Failure> {
        let mut file = self.load_without_oauth(or_command)?;
        super::auth::attach(&mut file)?;
        Ok(file)
    }

    /// [`load`](Self::load) without installing OAuth clients.
    pub(crate) fn load_without_oauth(&self, or_command: bool) -> Result<ConfigFile, Failure> {
        let (path, origin) = locate(
            self.config.as_deref(),
            std::env::var_os(ENV),
            Path::new(DEFAULT_FILE).is_file(),
        )
        .ok_or_else(|| {
            let or = if or_command {
                format!(", create ./{DEFAULT_FILE}, or name one server after `--`")
            } else {
                format!(" or create ./{DEFAULT_FILE}")
            };
            Failure::Usage(format!("no config file: pass -c FILE, set ${ENV}{or}"))
        })?;
        ConfigFile::load(&path).map_err(|e| match origin {
            Origin::Env => Failure::Usage(format!("{e} (named by ${ENV})")),
            Origin::Flag | Origin::CurrentDir => Failure::Usage(e.to_string()),
        })
    }
}

/// One stdio server given after `--`, run instead of a config file's servers.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// With `-- CMD`: how long the server may take to start and finish its handshake, written
    /// as in a config file: 500ms, 10s, 1.5m [default: MCP_TIMEOUT (milliseconds), else 30s].
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "command")]
    startup_timeout: Option<Duration>,
    /// One stdio server to run instead of a config file's: its command and arguments.
    #[arg(last = true, value_name = "CMD", num_args = 1..)]
    command: Vec<OsString>,
}

impl ServerArgs {
    /// The config a file listing only this server would give: one stdio server, named after
    /// its command's file name (`npx`, `uvx`, ...), with `--startup-timeout` as its
    /// `startupTimeout`, and `"restart": false`, as it lives only for one listing or call: a
    /// server that fails is reported, not restarted. The config's path is the command's
    /// program; messages about a config of one server name the server instead.
    pub(crate) fn config_file(&self) -> ConfigFile {
        let (program, args) = self.command.split_first().unzip();
        let program = program.map(OsString::as_os_str).unwrap_or_default();
        let mut config = ServerConfig::stdio(program)
            .args(args.unwrap_or_default())
            .restart(RestartPolicy::off());
        if let Some(timeout) = self.startup_timeout {
            config = config.startup_timeout(timeout);
        }
        ConfigFile::new(program, [(self.name(), config)])
    }

    /// The server's name: its command's file name.
    fn name(&self) -> String {
        let program = self
            .command
            .first()
            .map(OsString::as_os_str)
            .unwrap_or_default();
        Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| program.to_string_lossy().into_owned())
    }
}

/// The servers of `tools` and `call`: the one after `--` as a config of one server, else
/// those of the config file.
pub(crate) fn servers(config: &ConfigArgs, server: &ServerArgs) -> Result<ConfigFile, Failure> {
    if server.command.is_empty() {
        config.load(true)
    } else {
        config.refuse_with_command()?;
        Ok(server.config_file())
    }
}

/// The name of the config's only server, if it has exactly one: messages and listings then
/// speak of that server rather than of the config.
pub(crate) fn only_server(file: &ConfigFile) -> Option<&str> {
    match &file.servers[..] {
        [(name, _)] => Some(name),
        _ => None,
    }
}

/// How the config file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Flag,
    Env,
    CurrentDir,
}

/// The config file to read: the flag's, else the environment's (unless empty), else
/// `./.mcp.json` if it exists; `None` if there is none.
fn locate(
    flag: Option<&Path>,
    env: Option<OsString>,
    default_exists: bool,
) -> Option<(PathBuf, Origin)> {
    if let Some(path) = flag {
        return Some((path.to_owned(), Origin::Flag));
    }
    if let Some(path) = env.filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(path), Origin::Env));
    }
    default_exists.then(|| (PathBuf::from(DEFAULT_FILE), Origin::CurrentDir))
}

/// Starts every enabled server of `file`, with `MCP_TIMEOUT` and `MCP_TOOL_TIMEOUT` as
/// defaults under the file's own and form elicitation on the terminal ([`elicit`]), and
/// waits until each is ready or has failed and the catalogue lists the ready ones.
pub(crate) async fn start_all(
    file: &ConfigFile,
    interrupt: &mut Interrupt,
) -> Result<Runtime, Failure> {
    let builder = Runtime::builder()
        .with_env_defaults()
        .client_handlers(elicit::handlers())
        .task_store(super::tasks::store())
        .config(file.clone());
    let starting = match only_server(file) {
        Some(name) => format!("server `{name}` was starting"),
        None => format!("the servers of {} were starting", file.path.display()),
    };
    let runtime = start(builder, starting, interrupt).await?;
    // A signal here only cuts the wait short; the caller shuts the runtime down.
    let _ = interrupt.guard(settle(&runtime)).await;
    Ok(runtime)
}

/// Waits (at most [`SETTLE`]) until the catalogue has caught up with the servers' states.
async fn settle(runtime: &Runtime) {
    let mut watch = runtime.watch();
    let deadline = tokio::time::Instant::now() + SETTLE;
    while !catalogue_caught_up(runtime) {
        match tokio::time::timeout_at(deadline, watch.changed()).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}

/// Whether every ready server that listed tools has some in the catalogue.
fn catalogue_caught_up(runtime: &Runtime) -> bool {
    let catalogue = runtime.catalogue();
    runtime.servers().iter().all(|server| {
        let status = server.status();
        !status.is_ready()
            || status.tools.is_empty()
            || catalogue.for_server(server.name()).next().is_some()
    })
}

/// One configured server as the reports show it.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) name: String,
    /// `ready`, `restarting`, `failed`, ... or `disabled`.
    pub(crate) state: &'static str,
    /// Why it is not ready, if it is not.
    pub(crate) error: Option<String>,
    /// Its status; `None` for a disabled server.
    pub(crate) status: Option<ServerStatus>,
    /// Its transport (`stdio`, `http`, ...); `None` for a disabled server.
    pub(crate) transport: Option<&'static str>,
}

impl Report {
    /// Whether this is an enabled server that is not ready: the command then exits 3.
    pub(crate) fn failed(&self) -> bool {
        self.status.as_ref().is_some_and(|s| !s.is_ready())
    }

    /// Why this server is not ready, as the failure of a command about it alone; `None` if
    /// it is ready (or disabled).
    pub(crate) fn unready(&self) -> Option<Failure> {
        match &self.status {
            Some(status) => unready(&self.name, status),
            None => self.error.clone().map(Failure::Run),
        }
    }
}

/// The enabled servers of `file` in file order, then (if `disabled`) the disabled ones.
pub(crate) fn reports(runtime: &Runtime, file: &ConfigFile, disabled: bool) -> Vec<Report> {
    let mut reports: Vec<Report> = file
        .servers
        .iter()
        .map(|(name, config)| match runtime.server(name) {
            Ok(server) => report(&server),
            // Every server of the file was added; this would be a runtime bug.
            Err(e) => Report {
                name: name.clone(),
                state: "failed",
                error: Some(e.to_string()),
                status: None,
                transport: Some(config.transport_kind().as_str()),
            },
        })
        .collect();
    if disabled {
        reports.extend(file.disabled.iter().map(|name| Report {
            name: name.clone(),
            state: "disabled",
            error: None,
            status: None,
            transport: None,
        }));
    }
    reports
}

fn report(server: &ServerHandle) -> Report {
    let status = server.status();
    let error = match &status.state {
        ServerState::Ready => None,
        ServerState::Failed { error } => Some(error.to_string()),
        ServerState::Restarting { last_error, .. } => Some(last_error.to_string()),
        ServerState::Down { reason } => Some(reason.to_string()),
        other => Some(format!("the server is {}", other.as_str())),
    };
    // As configured until the first connection says which one is in use.
    let transport = status.transport.as_str();
    Report {
        name: server.name().to_owned(),
        state: status.state.as_str(),
        error,
        transport: Some(transport),
        status: Some(status),
    }
}

/// The one stderr line of a report with servers that are not ready, if there are any.
pub(crate) fn not_ready(reports: &[Report]) -> Option<Failure> {
    let failed: Vec<&str> = reports
        .iter()
        .filter(|r| r.failed())
        .map(|r| r.name.as_str())
        .collect();
    let enabled = reports.iter().filter(|r| r.status.is_some()).count();
    match failed.len() {
        0 => None,
        1 => Some(Failure::Run(format!(
            "1 of {enabled} servers is not ready: {}",
            failed[0]
        ))),
        n => Some(Failure::Run(format!(
            "{n} of {enabled} servers are not ready: {}",
            failed.join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(
        flag: Option<&str>,
        env: Option<&str>,
        default_exists: bool,
    ) -> Option<(String, Origin)> {
        locate(flag.map(Path::new), env.map(OsString::from), default_exists)
            .map(|(p, o)| (p.display().to_string(), o))
    }

    #[test]
    fn the_flag_then_the_environment_then_the_current_directory() {
        assert_eq!(
            found(Some("a.json"), Some("b.json"), true),
            Some(("a.json".into(), Origin::Flag))
        );
        assert_eq!(
            found(None, Some("b.json"), true),
            Some(("b.json".into(), Origin::Env))
        );
        assert_eq!(
            found(None, Some(""), true),
            Some((".mcp.json".into(), Origin::CurrentDir))
        );
        assert_eq!(
            found(None, None, true),
            Some((".mcp.json".into(), Origin::CurrentDir))
        );
    }

    fn server(command: &[&str]) -> ServerArgs {
        ServerArgs {
            startup_timeout: None,
            command: command.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn servers_are_named_after_their_program() {
        assert_eq!(server(&["npx", "-y", "x"]).name(), "npx");
        assert_eq!(server(&["/usr/local/bin/uvx"]).name(), "uvx");
        assert_eq!(
            server(&["./target/debug/switchboard", "demo-server"]).name(),
            "switchboard"
        );
        assert_eq!(server(&[".."]).name(), "..");
    }

    #[test]
    fn a_command_is_a_config_of_one_server() {
        let mut args = server(&["/usr/bin/srv", "--flag", "x"]);
        args.startup_timeout = Some(Duration::from_millis(1500));
        let file = args.config_file();
        assert_eq!(only_server(&file), Some("srv"));
        assert_eq!(file.path, Path::new("/usr/bin/srv"));
        assert!(file.disabled.is_empty());
        let (_, config) = &file.servers[0];
        assert_eq!(config.transport_kind().as_str(), "stdio");
        // The settings are the crate's own; its `Debug` shows them.
        let debug = format!("{config:?}");
        assert!(debug.contains(r#""--flag", "x""#), "{debug}");
        assert!(debug.contains("startup_timeout: Some(1.5s)"), "{debug}");
        let never = format!("restart: Some({:?})", RestartPolicy::off());
        assert!(debug.contains(&never), "{debug}");
    }

    #[test]
    fn nothing_found() {
        assert_eq!(found(None, None, false), None);
        assert_eq!(found(None, Some(""), false), None);
    }
}
