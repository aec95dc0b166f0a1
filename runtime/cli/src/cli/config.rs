//! Where the servers of a command come from, starting them, and reporting on each of them.
//!
//! Every command that runs servers takes one server on the command line instead of a config
//! file: a stdio command after `--` (with `-e KEY=VALUE` and `--cwd DIR`), an HTTP URL after
//! `--` (Streamable HTTP, falling back to HTTP+SSE), or `--sse URL` (HTTP+SSE), with
//! `--header K:V` for either HTTP form. That server becomes a config of that one server
//! ([`ServerArgs::config_file`]): from there on it runs through the same code as a config
//! file's servers. Otherwise the config file is the first of: `-c/--config FILE`,
//! `$SWITCHBOARD_CONFIG`, `./.mcp.json` (as Claude Code names a project's servers); `-c`
//! together with a server on the command line is a usage error. A file that cannot be used
//! (or lists no server) stops the command before anything starts, with exit 2 and the file,
//! JSON path and problem on one line:
//!
//! ```text
//! switchboard: .mcp.json: mcpServers.github.args: expected an array of strings
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use switchboard::transport::{HttpKind, Transport};
use switchboard::{ConfigFile, RestartPolicy, Runtime, ServerConfig, ServerHandle, ServerStatus};

use super::{duration, elicit, start, startup, unready, Failure, Interrupt};

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
#[derive(Debug, Clone, Args)]
pub(crate) struct ConfigArgs {
    /// The config file (`mcpServers` or VS Code's `servers`) [default: $SWITCHBOARD_CONFIG,
    /// else ./.mcp.json].
    #[arg(short, long = "config", value_name = "FILE", global = true)]
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
        let file = ConfigFile::load(&path).map_err(|e| match origin {
            Origin::Env => Failure::Usage(format!("{e} (named by ${ENV})")),
            Origin::Flag | Origin::CurrentDir => Failure::Usage(e.to_string()),
        })?;
        if file.servers.is_empty() && file.disabled.is_empty() {
            return Err(Failure::Usage(format!(
                "{}: no servers: its \"mcpServers\" (or \"servers\") object is empty or missing",
                file.path.display()
            )));
        }
        Ok(file)
    }
}

/// One server given on the command line, run instead of a config file's servers.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// With a server on the command line: how long it may take to start (the connection,
    /// the era probe and the handshake, together), written as in a config file: 500ms, 10s,
    /// 1.5m [default: MCP_TIMEOUT (milliseconds), else 30s]; `call --timeout` caps it.
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "target")]
    startup_timeout: Option<Duration>,
    /// One server over the legacy HTTP+SSE transport, at its event stream's URL, instead of
    /// a config file's.
    #[arg(long, value_name = "URL", group = "target", conflicts_with = "command")]
    sse: Option<String>,
    /// With a URL: an HTTP header sent on every request, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "K:V", requires = "target")]
    headers: Vec<String>,
    /// With `-- CMD`: an environment variable for the server, KEY=VALUE (repeatable).
    #[arg(
        short = 'e',
        long = "env",
        value_name = "KEY=VALUE",
        requires = "command"
    )]
    env: Vec<String>,
    /// With `-- CMD`: the server's working directory.
    #[arg(long, value_name = "DIR", requires = "command")]
    cwd: Option<PathBuf>,
    /// One server to run instead of a config file's: a stdio command and its arguments, or
    /// an http:// or https:// URL (Streamable HTTP, falling back to HTTP+SSE).
    #[arg(last = true, value_name = "CMD|URL", num_args = 1.., group = "target")]
    command: Vec<OsString>,
}

impl ServerArgs {
    /// Whether a server is given on the command line.
    pub(crate) fn is_given(&self) -> bool {
        !self.command.is_empty() || self.sse.is_some()
    }

    /// The URL of an HTTP server given on the command line, and its transport.
    fn url(&self) -> Option<(&str, HttpKind)> {
        if let Some(url) = &self.sse {
            return Some((url, HttpKind::Sse));
        }
        match &self.command[..] {
            [one] => one
                .to_str()
                .filter(|s| s.starts_with("http://") || s.starts_with("https://"))
                .map(|url| (url, HttpKind::Auto)),
            _ => None,
        }
    }

    /// The config a file listing only this server would give: one server, named after its
    /// command's file name (`npx`, `uvx`, ...) or its URL's host, with `--startup-timeout` as
    /// its `startupTimeout`, and `"restart": false`, as it lives only for one command: a
    /// server that fails is reported, not restarted. The config's path is the command's
    /// program or the URL; messages about a config of one server name the server instead.
    /// The program `switchboard` is this one where the server's `PATH` has none (a
    /// checkout: [`program::resolve`](super::program::resolve)).
    pub(crate) fn config_file(&self) -> Result<ConfigFile, Failure> {
        let (path, config): (OsString, ServerConfig) = match self.url() {
            Some((url, kind)) => {
                if !self.env.is_empty() || self.cwd.is_some() {
                    return Err(Failure::Usage(format!(
                        "-e and --cwd are for a command after `--`, not for the URL {url}"
                    )));
                }
                url::Url::parse(url)
                    .map_err(|e| Failure::Usage(format!("{url}: not a URL ({e})")))?;
                let mut config = ServerConfig::http(url, kind);
                for header in &self.headers {
                    let (name, value) = header
                        .split_once(':')
                        .map(|(n, v)| (n.trim(), v.trim()))
                        .filter(|(n, _)| !n.is_empty())
                        .ok_or_else(|| {
                            Failure::Usage(format!("--header {header}: expected `Name: value`"))
                        })?;
                    config = config.header(name, value);
                }
                (url.into(), config.into())
            }
            None => {
                if !self.headers.is_empty() {
                    return Err(Failure::Usage(
                        "--header is for a URL (after `--`, or --sse URL), not for a command"
                            .to_owned(),
                    ));
                }
                let (program, args) = self.command.split_first().unzip();
                let program = program.map(OsString::as_os_str).unwrap_or_default();
                // `switchboard` is this program where the server's PATH has none (a checkout).
                let path = match self.env.iter().rev().find_map(|p| p.strip_prefix("PATH=")) {
                    Some(path) => Some(OsString::from(path)),
                    None => std::env::var_os("PATH"),
                };
                let started = super::program::resolve(program, path.as_deref());
                let started = started.as_deref().map_or(program, Path::as_os_str);
                let mut config = ServerConfig::stdio(started).args(args.unwrap_or_default());
                for pair in &self.env {
                    let (key, value) = pair
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| Failure::Usage(format!("-e {pair}: expected KEY=VALUE")))?;
                    config = config.env(key, value);
                }
                if let Some(dir) = &self.cwd {
                    if !dir.is_dir() {
                        return Err(Failure::Usage(format!(
                            "--cwd {}: not a directory",
                            dir.display()
                        )));
                    }
                    config = config.cwd(dir);
                }
                (program.to_owned(), config.into())
            }
        };
        let mut config = config.restart(RestartPolicy::off());
        if let Some(timeout) = self.startup_timeout {
            config = config.startup_timeout(timeout);
        }
        Ok(ConfigFile::new(path, [(self.name(), config)]))
    }

    /// The server's name: its command's file name, or its URL's host (and port).
    fn name(&self) -> String {
        if let Some((url, _)) = self.url() {
            return url::Url::parse(url)
                .ok()
                .and_then(|u| {
                    let host = u.host_str()?.to_owned();
                    Some(match u.port() {
                        Some(port) => format!("{host}:{port}"),
                        None => host,
                    })
                })
                .unwrap_or_else(|| url.to_owned());
        }
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
    if server.is_given() {
        config.refuse_with_command()?;
        server.config_file()
    } else {
        config.load(true)
    }
}

/// `file` with only its server `name` (which it has): what a command about that server alone
/// starts.
pub(crate) fn only(file: &ConfigFile, name: &str) -> ConfigFile {
    let mut one = file.clone();
    one.servers.retain(|(n, _)| n == name);
    one.disabled.clear();
    one.oauth.retain(|(n, _)| n == name);
    one
}

/// The URL of server `name` of `file`, if it is an HTTP server.
pub(crate) fn url_of<'a>(file: &'a ConfigFile, name: &str) -> Option<&'a str> {
    file.servers
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, config)| match config.transport() {
            Transport::Http(http) => Some(http.url()),
            _ => None,
        })
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
/// defaults under the file's own, each start cut to the command's `--timeout`
/// ([`startup`]), and form elicitation on the terminal ([`elicit`]); waits until each is
/// ready or has failed and the catalogue lists the ready ones.
pub(crate) async fn start_all(
    file: &ConfigFile,
    interrupt: &mut Interrupt,
) -> Result<Runtime, Failure> {
    let builder = Runtime::builder()
        .with_env_defaults()
        .client_handlers(elicit::handlers())
        .task_store(super::tasks::store())
        .config(startup::bounded(file));
    let starting = match only_server(file) {
        Some(name) => format!("server `{name}` was starting"),
        None => format!("the servers of {} were starting", file.path.display()),
    };
    let runtime = start(builder, starting, interrupt).await?;
    // A signal here only cuts the wait short; the caller shuts the runtime down.
    let _ = interrupt.guard(settle(&runtime)).await;
    Ok(runtime)
}

/// Waits (at most [`SETTLE`]) until the catalogue has caught up with the servers' states,
/// and until every re-listing of tools a server announced is over (server-everything adds
/// tools once it is initialized, and announces them right after the handshake).
async fn settle(runtime: &Runtime) {
    let mut watch = runtime.watch();
    let deadline = tokio::time::Instant::now() + SETTLE;
    let relisted = futures_util::future::join_all(
        runtime
            .servers()
            .into_iter()
            .map(|server| async move { server.tools_settled().await }),
    );
    let _ = tokio::time::timeout_at(deadline, relisted).await;
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
    /// Its URL, if it is an HTTP server.
    pub(crate) url: Option<String>,
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
            Some(status) => unready(&self.name, status, self.url.as_deref()),
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
            Ok(server) => report(&server, url_of(file, name)),
            // Every server of the file was added; this would be a runtime bug.
            Err(e) => Report {
                name: name.clone(),
                state: "failed",
                error: Some(e.to_string()),
                status: None,
                transport: Some(config.transport_kind().as_str()),
                url: url_of(file, name).map(str::to_owned),
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
            url: None,
        }));
    }
    reports
}

fn report(server: &ServerHandle, url: Option<&str>) -> Report {
    let status = server.status();
    // The same words as the failure of a command about this server alone.
    let error = unready(server.name(), &status, url).map(|f| f.message().to_owned());
    // As configured until the first connection says which one is in use.
    let transport = status.transport.as_str();
    Report {
        name: server.name().to_owned(),
        state: status.state.as_str(),
        error,
        transport: Some(transport),
        status: Some(status),
        url: url.map(str::to_owned),
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
            sse: None,
            headers: Vec::new(),
            env: Vec::new(),
            cwd: None,
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
        let file = args.config_file().unwrap();
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
    fn a_url_is_a_config_of_one_http_server() {
        let mut args = server(&["http://127.0.0.1:3001/mcp"]);
        args.headers = vec!["Authorization: Bearer x".into(), "X-Team:tools".into()];
        assert_eq!(args.name(), "127.0.0.1:3001");
        let file = args.config_file().unwrap();
        let (_, config) = &file.servers[0];
        assert_eq!(config.transport_kind().as_str(), "auto");
        assert_eq!(
            url_of(&file, "127.0.0.1:3001"),
            Some("http://127.0.0.1:3001/mcp")
        );
        let mut sse = server(&[]);
        sse.sse = Some("https://example.com/sse".into());
        assert!(sse.is_given());
        assert_eq!(sse.name(), "example.com");
        let file = sse.config_file().unwrap();
        assert_eq!(file.servers[0].1.transport_kind().as_str(), "sse");
        // What is for one kind of server is refused for the other.
        let mut bad = server(&["http://h/mcp"]);
        bad.env = vec!["A=1".into()];
        assert!(matches!(bad.config_file(), Err(Failure::Usage(m)) if m.contains("-e and --cwd")));
        let mut bad = server(&["srv"]);
        bad.headers = vec!["A: 1".into()];
        assert!(matches!(bad.config_file(), Err(Failure::Usage(m)) if m.contains("--header")));
        let mut bad = server(&["http://h/mcp"]);
        bad.headers = vec!["no colon".into()];
        assert!(matches!(bad.config_file(), Err(Failure::Usage(m)) if m.contains("Name: value")));
        let mut bad = server(&["srv"]);
        bad.env = vec!["=1".into()];
        assert!(matches!(bad.config_file(), Err(Failure::Usage(m)) if m.contains("KEY=VALUE")));
    }

    #[test]
    fn nothing_found() {
        assert_eq!(found(None, None, false), None);
        assert_eq!(found(None, Some(""), false), None);
    }
}
