//! The command line: arguments, logging, signals and exit codes around the subcommands.
//!
//! `tools`, `call`, `resources`, `read`, `prompts`, `prompt`, `skills`, `skill` and `check`
//! run the servers of a config file, or one server given on the command line (a command or
//! a URL after `--`), which [`config`] turns into a config of that one server: from there on
//! each goes through the same code ([`tools`], [`call`], [`resources`], [`prompts`],
//! [`skills`], [`check`]), with the same messages, exit codes and JSON. A command about one
//! server (`read --server X`, `call X__tool`, `prompt --server X`, `skill --server X`) starts
//! that server alone. `complete`, `ping`, `logs` and
//! `subscribe` are the rest of the protocol ([`protocol`]). Every runtime they start answers
//! a server's form elicitation on the terminal, from `--answer`, or declines it
//! ([`elicit`]).
//!
//! Exit codes: 0 success; 1 the tool answered `isError: true`; 2 a bad command line, bad
//! tool or prompt arguments, or no single server to `call`, `read` or `prompt` (several offer
//! the name: the message names them); 3 any run-time failure (spawn, handshake, unknown tool
//! or prompt, resource not found, JSON-RPC error, timeout, disconnect, overload); 130
//! interrupted by `SIGINT` or `SIGTERM`. On 2 and 3 stdout stays empty and stderr gets one
//! line, `switchboard: <what failed, where, and why>`. The exception is a report on several
//! servers (`tools`, `resources` and `prompts` with a config of several servers, and
//! `check`): it is printed in full, since the servers that answered are worth seeing, and
//! exit 3 then says on stderr that some server is not ready or could not be listed.
//!
//! Every path that starts a runtime shuts it down before exiting, so no server outlives us;
//! what the command has to say is printed first ([`finish`]). After a deadline or a signal
//! the servers get [`BRISK`] to leave, so the process exits right after saying why;
//! otherwise they are closed gracefully, and a signal during that kills them at once.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};
use tokio::signal::unix::{signal, Signal, SignalKind};

use switchboard::{ConfigFile, Runtime, RuntimeBuilder, ServerHandle, ServerState, ServerStatus};

mod auth;
mod call;
mod check;
mod config;
mod conformance;
mod conformance_auth;
mod credentials;
mod demo;
mod elicit;
mod file_watch;
mod offered;
mod print;
mod program;
mod progress;
mod prompts;
mod protocol;
mod reload;
mod resources;
mod roots;
mod semantic;
mod serve;
mod serve_metrics;
mod serve_status;
mod skills;
mod startup;
mod tasks;
mod tools;
mod typed_value;

/// Run MCP servers under Switchboard's supervision and call their tools.
///
/// Its `after_help` names this program as the shell finds it ([`command`]).
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about, long_about = None)]
struct Cli {
    /// Log more to stderr (-v info, -vv debug); RUST_LOG sets finer filters.
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    /// Log only warnings and errors to stderr (`serve` logs what it does at info by
    /// default; the other commands already log no more than this).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while the command runs, e.g.
    /// 127.0.0.1:9464 (port 0 picks a free one; -v logs where).
    #[arg(long, value_name = "ADDR", global = true)]
    metrics: Option<std::net::SocketAddr>,
    /// Offer this folder to the servers as a root (repeatable); without it, no roots are
    /// declared.
    #[arg(long = "root", value_name = "DIR", global = true)]
    roots: Vec<std::path::PathBuf>,
    /// Answer every form a server asks (elicitation) with this JSON object, given as it is
    /// or in a file, instead of on the terminal: its values over the form's defaults.
    #[arg(long, value_name = "FILE|JSON", global = true)]
    answer: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A tour: start the bundled demo server, call its tools, time one out, crash it.
    Demo,
    /// List the tools of a config file's servers, or of one server after `--`.
    #[command(after_help = tools::AFTER_HELP)]
    Tools(ToolsArgs),
    /// Call one tool (by catalogue name, or of the one server after `--`) and print its
    /// result.
    #[command(after_help = call::AFTER_HELP)]
    Call(CallArgs),
    /// List the resources and resource templates of a config file's servers, or of one
    /// server after `--`.
    #[command(after_help = resources::AFTER_HELP_LIST)]
    Resources(resources::ListArgs),
    /// Read one resource (from the server that lists it, or of the one server after `--`)
    /// and print its contents.
    #[command(after_help = resources::AFTER_HELP_READ)]
    Read(resources::ReadArgs),
    /// List the prompts, with their arguments, of a config file's servers, or of one server
    /// after `--`.
    #[command(after_help = prompts::AFTER_HELP_LIST)]
    Prompts(prompts::ListArgs),
    /// Get one prompt (from the server that lists it, or of the one server after `--`)
    /// and print its messages.
    #[command(after_help = prompts::AFTER_HELP_GET)]
    Prompt(prompts::GetArgs),
    /// List the skills (the Skills extension) of a config file's servers, or of one server
    /// after `--`.
    #[command(after_help = skills::AFTER_HELP_LIST)]
    Skills(skills::ListArgs),
    /// Print one skill's SKILL.md (or another of its files), checked against its entry.
    #[command(after_help = skills::AFTER_HELP_GET)]
    Skill(skills::GetArgs),
    /// Start every server of a config file (or one after `--`) and report on each.
    #[command(after_help = AFTER_HELP_CHECK)]
    Check(CheckArgs),
    /// Complete an argument of a prompt or a variable of a resource template.
    #[command(after_help = protocol::AFTER_HELP_COMPLETE)]
    Complete(protocol::CompleteArgs),
    /// Ask the servers to log at a level, and print what they log until Ctrl-C.
    #[command(after_help = protocol::AFTER_HELP_LOGS)]
    Logs(protocol::LogsArgs),
    /// Subscribe to a resource and print its updates until Ctrl-C.
    #[command(after_help = protocol::AFTER_HELP_SUBSCRIBE)]
    Subscribe(protocol::SubscribeArgs),
    /// Ping the servers and print how long each took to answer.
    #[command(after_help = protocol::AFTER_HELP_PING)]
    Ping(protocol::PingArgs),
    /// List the tasks earlier commands left running on the servers, with their status now.
    #[command(after_help = tasks::AFTER_HELP)]
    Tasks(tasks::Args),
    /// OAuth for a config file's HTTP servers with an "oauth" object: login NAME, status,
    /// logout NAME.
    Auth(auth::AuthArgs),
    /// Serve every server of a config file as one MCP server: on stdin/stdout, or over
    /// Streamable HTTP with --listen.
    #[command(after_help = serve::AFTER_HELP)]
    Serve(Box<serve::Args>),
    /// Run a config file's servers until interrupted, serving their metrics for Prometheus.
    #[command(after_help = serve_metrics::AFTER_HELP)]
    ServeMetrics(serve_metrics::Args),
    /// Serve the bundled demo MCP server on stdin/stdout, or over Streamable HTTP.
    #[command(hide = true)]
    DemoServer {
        /// `--faults`, `--protocol-version V`, `--page-size N`, `--name N`, `--modern`,
        /// `--http ADDR` (Streamable HTTP at `http://ADDR/mcp`; PORT on 127.0.0.1, or
        /// IP:PORT, as `serve --listen`), `--conformance` (the official suite's fixture),
        /// `--instructions TEXT`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the MCP conformance suite's scenario `$MCP_CONFORMANCE_SCENARIO` against URL.
    #[command(hide = true)]
    ConformanceClient {
        /// The suite's test server (its harness appends it).
        url: String,
    },
}

/// The command line's definition, its help's first steps spelling this program as the
/// shell finds it where the user is (`target/release/switchboard` in a checkout, say).
fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().after_help(after_help(program::hint()))
}

/// What `--help` says after the options; `program` runs this program.
fn after_help(program: &str) -> String {
    format!(
        "\
New here? The tour starts the bundled demo server, calls its tools, times one out and
crashes it:
  {program} demo
Then list the tools of any server named after `--` (a command, or an http:// URL), and call
one:
  {program} tools -- {program} demo-server
  {program} call add a=2 b=3 -- {program} demo-server

Servers come from a config file (-c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json) or from
the command line after `--`. Exit codes: 0 success, 1 the tool answered isError: true, 2 a bad
command line or arguments, 3 a run-time failure, 130 interrupted."
    )
}

const AFTER_HELP_CHECK: &str = "\
The config file is -c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json; `-- CMD` (or
`-- URL`, --sse URL) checks one server instead. Every server is listed, the disabled ones
too; the report is printed in full, then exit 3 if any enabled server is not ready.

With --json, stdout is one document: {\"servers\": [...]}, one entry per server in file
order, disabled ones last, each with:
  name             the server's name in the config file
  transport        stdio, http (Streamable HTTP), sse (HTTP+SSE), auto (HTTP, not yet
                   answered) or memory; null for a disabled server
  state            ready, starting, restarting, failed, down, stopped or disabled
  era              legacy (the handshake era, 2024-11-05 to 2025-11-25) or modern (the
                   stateless era, 2026-07-28), once known; else null
  protocolVersion  the protocol version in use, once known; else null
  tools            how many tools it listed, when ready; else null
  handshakeMs      how long its handshake took, in milliseconds, once done; else null
  tasks            the shape of tasks it speaks: 2025-11-25 (the experimental tasks) or
                   extension (io.modelcontextprotocol/tasks, 2026-07-28); else null
  error            why it is not ready; null when it is (or is disabled)

Examples:
  switchboard check -c .mcp.json
  switchboard check --json -- switchboard demo-server";

#[derive(Debug, Args)]
struct ToolsArgs {
    /// Print one JSON document, the same for `-- CMD` and a config file:
    /// {"servers":[{"name","state","error","tools":[...]}]}, each tool as its server listed it
    /// plus "catalogueName".
    #[arg(long)]
    json: bool,
    /// Search the tools for QUERY (words as a user would write them) instead of listing them
    /// all: the best matches first, each with its score.
    #[arg(long, value_name = "QUERY")]
    search: Option<String>,
    /// With --search: how many matches at most.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "search")]
    limit: usize,
    /// With --search: rank semantically too, with the sentence-embedding model in DIR
    /// (all-MiniLM-L6-v2's files; a build with the feature `semantic`).
    #[arg(long, value_name = "DIR", requires = "search")]
    model: Option<std::path::PathBuf>,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool to call: a catalogue name, or its name as its server listed it when no other
    /// server lists that name.
    tool: String,
    /// The tool's arguments: one JSON object, or KEY=VALUE pairs (a VALUE that parses as
    /// JSON is that JSON, else a string) [default: {}].
    #[arg(value_name = "ARGS_JSON | KEY=VALUE")]
    arguments: Vec<String>,
    /// How long the call may take, written as in a config file: 500ms, 1.5s, 2m, 1h
    /// [default: MCP_TOOL_TIMEOUT (milliseconds), else 60s]. It caps each server's start
    /// too: a server that has not finished its handshake within it fails, as when its
    /// startup timeout (--startup-timeout, MCP_TIMEOUT, else 30s) is shorter.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    timeout: Option<Duration>,
    /// Print the result exactly as the server sent it, as one JSON document, the same for
    /// `-- CMD` and a config file: {"content":[...],"structuredContent","isError"}.
    #[arg(long)]
    json: bool,
    /// `_meta` entries for the request: a JSON object (beside the progress token).
    #[arg(long, value_name = "JSON", value_parser = meta)]
    meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// When the tool runs as a task: print its id and leave it running (see `tasks`).
    #[arg(long)]
    detach: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `--meta`, as a clap value parser: a JSON object.
pub(crate) fn meta(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err("expected a JSON object".to_owned()),
        Err(e) => Err(format!("not valid JSON ({e})")),
    }
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// Print one JSON document:
    /// {"servers":[{"name","transport","state","era","protocolVersion","tools","handshakeMs","error"}]}
    /// (see below).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// The durations of `--timeout` and `--startup-timeout`, as a clap value parser: the forms
/// config files take in strings ([`ConfigFile::parse_duration`]), greater than zero (a zero
/// timeout would fail at once, and a config file refuses it too).
///
/// A bare number is refused, as in a config file's strings: `5` would be five milliseconds
/// to one reader and five seconds to another. (A file's integer milliseconds are JSON
/// numbers, which a command line does not have.)
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    match ConfigFile::parse_duration(text) {
        Some(duration) if duration.is_zero() => {
            Err("a duration must be greater than zero".to_owned())
        }
        Some(duration) => Ok(duration),
        None => Err(format!("expected {DURATION_FORMS}")),
    }
}

/// What [`duration`] accepts, for its errors.
const DURATION_FORMS: &str =
    "a number and a unit (ms, s, m or h) as in a config file: 500ms, 5s, 1.5s, 2m or 1h";

/// Why the command did not succeed; each maps to one exit code.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A bad command line or bad tool arguments (exit 2).
    Usage(String),
    /// Anything that went wrong while running (exit 3).
    Run(String),
    /// A deadline passed, a call's or a server's start (exit 3, as any run-time failure):
    /// the servers are shut down briskly ([`BRISK`]).
    TimedOut(String),
    /// `SIGINT` or `SIGTERM` arrived (exit 130): the servers are shut down briskly.
    Interrupted(String),
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Failure::Usage(_) => 2,
            Failure::Run(_) | Failure::TimedOut(_) => 3,
            Failure::Interrupted(_) => 130,
        })
    }

    pub(crate) fn message(&self) -> &str {
        match self {
            Failure::Usage(m)
            | Failure::Run(m)
            | Failure::TimedOut(m)
            | Failure::Interrupted(m) => m,
        }
    }

    /// Whether it ends the command abruptly: a deadline passed, or the user wants out.
    fn is_abrupt(&self) -> bool {
        matches!(self, Failure::TimedOut(_) | Failure::Interrupted(_))
    }
}

impl From<switchboard::Error> for Failure {
    fn from(error: switchboard::Error) -> Self {
        if error.is_timeout() {
            Failure::TimedOut(error.to_string())
        } else {
            Failure::Run(error.to_string())
        }
    }
}

impl From<Interrupted> for Failure {
    fn from(Interrupted(signal): Interrupted) -> Self {
        Failure::Interrupted(format!("interrupted by {signal}"))
    }
}

/// Parses the command line and runs it; clap itself exits 2 on a bad command line and 0 for
/// `--help` and `--version`.
pub(crate) fn main() -> ExitCode {
    let mut definition = command();
    let matches = definition.get_matches_mut();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.format(&mut definition).exit(),
    };
    // A bare `switchboard` is someone finding their way: the help, which names the tour.
    let Some(command) = cli.command else {
        let _ = definition.print_help();
        return ExitCode::SUCCESS;
    };
    let command = match command {
        Command::DemoServer { args } => return demo_server(args),
        command => command,
    };
    init_logging(Verbosity::of(cli.quiet, cli.verbose, &command));
    if let Some(addr) = cli.metrics {
        let _ = METRICS.set(addr);
    }
    if let Err(failure) = roots::set(&cli.roots) {
        return fail(&failure);
    }
    if let Err(failure) = elicit::set_answer(cli.answer.as_deref()) {
        return fail(&failure);
    }
    let tokio = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(tokio) => tokio,
        Err(e) => {
            return fail(&Failure::Run(format!(
                "cannot start the async runtime: {e}"
            )))
        }
    };
    let outcome = tokio.block_on(run(command));
    // Every server was shut down by then; what may remain is a form's question blocked on
    // stdin in the blocking pool, which must not keep the process alive.
    tokio.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(failure) => fail(&failure),
    }
}

async fn run(command: Command) -> Result<ExitCode, Failure> {
    let mut interrupt = Interrupt::new()
        .map_err(|e| Failure::Run(format!("cannot listen for SIGINT and SIGTERM: {e}")))?;
    match command {
        Command::Demo => demo::run(&mut interrupt).await,
        Command::Tools(args) => tools::run(args, &mut interrupt).await,
        Command::Call(args) => call::run(args, &mut interrupt).await,
        Command::Resources(args) => resources::run_list(args, &mut interrupt).await,
        Command::Read(args) => resources::run_read(args, &mut interrupt).await,
        Command::Prompts(args) => prompts::run_list(args, &mut interrupt).await,
        Command::Prompt(args) => prompts::run_get(args, &mut interrupt).await,
        Command::Skills(args) => skills::run_list(args, &mut interrupt).await,
        Command::Skill(args) => skills::run_get(args, &mut interrupt).await,
        Command::Check(args) => check::run(args, &mut interrupt).await,
        Command::Complete(args) => protocol::run_complete(args, &mut interrupt).await,
        Command::Logs(args) => protocol::run_logs(args, &mut interrupt).await,
        Command::Subscribe(args) => protocol::run_subscribe(args, &mut interrupt).await,
        Command::Ping(args) => protocol::run_ping(args, &mut interrupt).await,
        Command::Tasks(args) => tasks::run(args, &mut interrupt).await,
        Command::Serve(args) => serve::run(*args, &mut interrupt).await,
        Command::ServeMetrics(args) => serve_metrics::run(args, &mut interrupt).await,
        Command::Auth(args) => auth::run(args, &mut interrupt).await,
        Command::ConformanceClient { url } => conformance::run(url, &mut interrupt).await,
        Command::DemoServer { .. } => {
            unreachable!("demo-server is served before the async runtime starts")
        }
    }
}

fn fail(failure: &Failure) -> ExitCode {
    eprintln!("switchboard: {}", failure.message());
    failure.exit_code()
}

fn demo_server(args: Vec<String>) -> ExitCode {
    match switchboard_demo::Options::from_args(args) {
        Ok(options) => switchboard_demo::run_stdio(options),
        Err(e) => fail(&Failure::Usage(format!("demo-server: {e}"))),
    }
}

/// How much the command logs to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verbosity {
    /// `-q`: warnings and errors only.
    Quiet {
        /// Whether the command is `serve`.
        serving: bool,
    },
    /// No flag: `RUST_LOG`, else what the command logs by default.
    Default {
        /// Whether the command is `serve`, which says what it does at info: it runs for
        /// long, for an operator.
        serving: bool,
    },
    /// `-v` (1) or `-vv` (2 and more).
    Verbose(u8),
}

impl Verbosity {
    fn of(quiet: bool, verbose: u8, command: &Command) -> Verbosity {
        let serving = matches!(command, Command::Serve(_));
        match (quiet, verbose) {
            (true, _) => Verbosity::Quiet { serving },
            (false, 0) => Verbosity::Default { serving },
            (false, n) => Verbosity::Verbose(n),
        }
    }

    /// The filter: `-v` and `-vv` pick info and debug; by default `RUST_LOG`, else
    /// warnings, and Switchboard's own crates only errors: every failure they warn about
    /// reaches us as an error too, and is printed once, as the one line a failure gets
    /// (`-q` changes nothing there). `serve` adds its own lines at info (where it listens,
    /// its servers ready or failed, reloads, stopping, the audit log's records) and the
    /// serving side's warnings
    /// (clients refused, a stream closed on a client that does not read); with `-q`, its
    /// warnings only.
    fn filter(self) -> tracing_subscriber::EnvFilter {
        use tracing_subscriber::EnvFilter;
        const DEFAULT: &str =
            "warn,switchboard=error,switchboard_transports=error,switchboard_codecs=error";
        // The CLI is the binary crate `switchboard`: its targets are `switchboard::cli::…`,
        // more specific than the runtime's `switchboard`.
        const SERVING: &str = "switchboard_gateway=warn,switchboard_server=warn,\
                               switchboard_transports::server=warn";
        match self {
            Verbosity::Quiet { serving: false } => EnvFilter::new(DEFAULT),
            Verbosity::Quiet { serving: true } => {
                EnvFilter::new(format!("{DEFAULT},{SERVING},switchboard::cli=warn"))
            }
            Verbosity::Default { serving } => {
                EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                    if serving {
                        EnvFilter::new(format!(
                            "{DEFAULT},{SERVING},switchboard::cli=info,switchboard::audit=info"
                        ))
                    } else {
                        EnvFilter::new(DEFAULT)
                    }
                })
            }
            Verbosity::Verbose(1) => EnvFilter::new("info"),
            Verbosity::Verbose(_) => EnvFilter::new("debug"),
        }
    }
}

/// Logs go to stderr, as [`Verbosity::filter`] says.
fn init_logging(verbosity: Verbosity) {
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(verbosity.filter())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// `SIGINT` or `SIGTERM` arrived; carries the signal's name.
#[derive(Debug)]
pub(crate) struct Interrupted(pub(crate) &'static str);

/// Listens for `SIGINT` and `SIGTERM` from the start, so that neither kills us before we have
/// shut our servers down (they run in process groups of their own, out of a terminal's reach).
#[derive(Debug)]
pub(crate) struct Interrupt {
    int: Signal,
    term: Signal,
}

impl Interrupt {
    fn new() -> std::io::Result<Self> {
        Ok(Interrupt {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// Runs `work` until it completes or a signal arrives; on a signal `work` is dropped,
    /// which cancels whatever it was awaiting (a call sends `notifications/cancelled`).
    pub(crate) async fn guard<T>(
        &mut self,
        work: impl Future<Output = T>,
    ) -> Result<T, Interrupted> {
        tokio::select! {
            biased;
            out = work => Ok(out),
            _ = self.int.recv() => Err(Interrupted("SIGINT")),
            _ = self.term.recv() => Err(Interrupted("SIGTERM")),
        }
    }
}

/// Where `--metrics` serves, for every runtime the command builds.
static METRICS: std::sync::OnceLock<std::net::SocketAddr> = std::sync::OnceLock::new();

/// Builds a runtime, interruptibly; `starting` says what is starting, for the message of an
/// interruption (``server `x` was starting``). Dropped mid-build, a runtime kills the servers it had started
/// (its `Drop` sends `SIGKILL` to their process groups).
pub(crate) async fn start(
    builder: RuntimeBuilder,
    starting: impl Display,
    interrupt: &mut Interrupt,
) -> Result<Runtime, Failure> {
    let builder = match METRICS.get() {
        Some(addr) => builder.metrics_listener(*addr),
        None => builder,
    };
    // The CLI's runtime lives as long as the process: servers' I/O can share it.
    let builder = builder.io_runtime(tokio::runtime::Handle::current());
    match interrupt.guard(builder.build()).await {
        Ok(built) => Ok(built?),
        Err(Interrupted(signal)) => Err(Failure::Interrupted(format!(
            "interrupted by {signal} while {starting}"
        ))),
    }
}

/// The server's status if it is ready, else the reason it is not, as a run-time failure;
/// `url` is where an HTTP server is.
pub(crate) fn ready(server: &ServerHandle, url: Option<&str>) -> Result<ServerStatus, Failure> {
    let status = server.status();
    match unready(server.name(), &status, url) {
        Some(failure) => Err(failure),
        None => Ok(status),
    }
}

/// Why server `name`, with this status, is not ready, as a run-time failure; `None` if it is.
/// `url` is where an HTTP server is: one that never answered a handshake could not be
/// reached there (a command that runs once is not waiting for a restart).
pub(crate) fn unready(name: &str, status: &ServerStatus, url: Option<&str>) -> Option<Failure> {
    let never_ready = status.server_info.is_none() && status.ready_since.is_none();
    // A start that ran out of its time: how long, which flag bounded it, what stalled.
    if never_ready {
        let why = match &status.state {
            ServerState::Failed { error } => Some(error.to_string()),
            ServerState::Restarting { last_error, .. } => Some(last_error.to_string()),
            _ => None,
        };
        if let Some(line) = why.and_then(|why| startup::ran_out(name, url, &why)) {
            return Some(Failure::TimedOut(line));
        }
    }
    let not_started = |why: &str| {
        // What the runtime says already names the server when it could not start it; for a
        // URL, what is left once the layers that say "it did not answer" are peeled off is
        // what the network said.
        let handshake = format!("server `{name}` failed its handshake: ");
        let mut why = why;
        if url.is_some() {
            for layer in [
                "it disconnected: ",
                handshake.as_str(),
                "the server disconnected during the handshake: ",
                "writing to the server failed: ",
                &format!("{name}: "),
            ] {
                why = why.strip_prefix(layer).unwrap_or(why);
            }
        }
        Failure::Run(match url {
            Some(url) => format!("server `{name}` could not be reached at {url}: {why}"),
            None if why.starts_with(&format!("server `{name}`")) => why.to_owned(),
            None => format!("server `{name}` could not be started: {why}"),
        })
    };
    match &status.state {
        ServerState::Ready => None,
        ServerState::Failed { error } if never_ready && url.is_some() => {
            Some(not_started(&error.to_string()))
        }
        ServerState::Failed { error } => Some(error.clone().into()),
        ServerState::Down { reason } => Some(Failure::Run(format!(
            "server `{name}` stopped right after its handshake: {reason}"
        ))),
        ServerState::Restarting { last_error, .. } if never_ready => Some(not_started(last_error)),
        ServerState::Restarting { last_error, .. } => Some(Failure::Run(format!(
            "server `{name}` is restarting after: {last_error}"
        ))),
        other => Some(Failure::Run(format!(
            "server `{name}` is {} instead of ready",
            other.as_str()
        ))),
    }
}

/// How long the servers get to leave when a command ends on a deadline or a signal: their
/// stdin is closed, then half of it later `SIGTERM`, then `SIGKILL` (a server that leaves at
/// EOF, as most do, is gone well before). The process exits within 100 ms of saying why.
const BRISK: Duration = Duration::from_millis(50);

/// Ends a command that started `runtime`: `stdout` is printed, then the failure's line if it
/// failed, at once; then the servers are shut down ([`shut_down`]): within [`BRISK`] after a
/// deadline or a signal, else gracefully. The exit code is the outcome's.
pub(crate) async fn finish(
    runtime: &Runtime,
    stdout: &str,
    outcome: Result<ExitCode, Failure>,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    print::emit(stdout);
    let shutdown = Shutdown::after(&outcome);
    let code = match outcome {
        Ok(code) => code,
        Err(failure) => fail(&failure),
    };
    shut_down(runtime, shutdown, interrupt).await;
    Ok(code)
}

/// How a command shuts its servers down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shutdown {
    /// Each server's own waits (2 s after closing stdin, 2 s after `SIGTERM`, by default):
    /// after any end but a deadline or a signal, and for `serve`, whose signal is its
    /// ordinary end.
    Graceful,
    /// Within [`BRISK`]: after a deadline or a signal ended the command.
    Brisk,
}

impl Shutdown {
    /// The shutdown after `outcome`: brisk after a deadline or a signal (the line saying so
    /// is printed, and the user is waiting), else graceful.
    pub(crate) fn after<T>(outcome: &Result<T, Failure>) -> Shutdown {
        match outcome {
            Err(failure) if failure.is_abrupt() => Shutdown::Brisk,
            _ => Shutdown::Graceful,
        }
    }
}

/// Shuts `runtime`'s servers down as `how` says; a signal meanwhile (a second Ctrl-C)
/// shortens that to `SIGKILL`.
pub(crate) async fn shut_down(runtime: &Runtime, how: Shutdown, interrupt: &mut Interrupt) {
    let shutdown = async {
        match how {
            Shutdown::Graceful => runtime.shutdown().await,
            Shutdown::Brisk => runtime.shutdown_within(BRISK).await,
        }
    };
    tokio::pin!(shutdown);
    if interrupt.guard(&mut shutdown).await.is_err() {
        runtime.kill();
        shutdown.await;
    }
}

/// One line about a ready server: its name, implementation, protocol version and tools.
pub(crate) fn describe(name: &str, status: &ServerStatus) -> String {
    let info = status
        .server_info
        .as_ref()
        .map(|i| format!("{} {}", i.name, i.version))
        .unwrap_or_else(|| "unnamed server".to_owned());
    let protocol = status.protocol_version.as_deref().unwrap_or("unknown");
    let count = status.tools.len();
    let tools = if count == 1 { "tool" } else { "tools" };
    format!("server `{name}`: {info}, protocol {protocol}, {count} {tools}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line of `switchboard ARGS`.
    fn parse(args: &[&str]) -> Cli {
        let all = std::iter::once("switchboard").chain(args.iter().copied());
        Cli::try_parse_from(all).unwrap()
    }

    fn call(args: &[&str]) -> CallArgs {
        match parse(args).command {
            Some(Command::Call(call)) => call,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn command_line_surface() {
        let call_add = call(&[
            "call",
            "add",
            r#"{"a":2}"#,
            "--timeout",
            "1.5s",
            "--startup-timeout",
            "500ms",
            "--json",
            "--",
            "/bin/srv",
            "--flag",
        ]);
        assert_eq!(call_add.tool, "add");
        assert_eq!(call_add.arguments, [r#"{"a":2}"#]);
        assert_eq!(call_add.timeout, Some(Duration::from_millis(1500)));
        assert!(call_add.json);
        let Ok(file) = config::servers(&call_add.config, &call_add.server) else {
            panic!("a command is a config")
        };
        assert_eq!(config::only_server(&file), Some("srv"));
        let debug = format!("{:?}", file.servers[0].1);
        assert!(debug.contains(r#"["--flag"]"#), "{debug}");
        assert!(debug.contains("startup_timeout: Some(500ms)"), "{debug}");
        assert!(call(&["call", "t", "--", "srv"]).arguments.is_empty());
        assert_eq!(
            call(&["call", "t", "a=1", "b=x", "--", "srv"]).arguments,
            ["a=1", "b=x"]
        );
        // The config file goes anywhere, as every global option does.
        for args in [
            &["auth", "status", "-c", "f.json"][..],
            &["auth", "-c", "f.json", "status"],
            &["tools", "-c", "f.json"],
        ] {
            assert!(
                Cli::try_parse_from(std::iter::once("switchboard").chain(args.iter().copied()))
                    .is_ok(),
                "{args:?}"
            );
        }
        // Without `-- CMD`, the servers come from a config file.
        let by_file = call(&["call", "t", "-c", "/nonexistent/f.json"]);
        match config::servers(&by_file.config, &by_file.server) {
            Err(Failure::Usage(m)) => assert!(m.contains("/nonexistent/f.json"), "{m}"),
            other => panic!("{other:?}"),
        }
        for bad in [
            &["switchboard", "call", "t", "--timeout", "5", "--", "srv"][..],
            &["switchboard", "call", "t", "--timeout", "0s", "--", "srv"],
            &[
                "switchboard",
                "tools",
                "--startup-timeout",
                "5",
                "--",
                "srv",
            ],
            &["switchboard", "call"],
            &["switchboard", "tools", "srv"],
            &["switchboard", "tools", "--startup-timeout", "5s"],
            &["switchboard", "tools", "-e", "A=1"],
            &["switchboard", "tools", "--cwd", "/tmp"],
            &["switchboard", "tools", "--header", "A: 1"],
            &["switchboard", "tools", "--sse", "http://h/sse", "--", "srv"],
            &["switchboard", "read", "--", "srv"],
            &["switchboard", "prompt", "--json"],
            &["switchboard", "read", "x://a", "--server"],
        ] {
            let e = Cli::try_parse_from(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        assert!(
            parse(&[]).command.is_none(),
            "a bare switchboard prints the help"
        );
    }

    #[test]
    fn durations_are_written_as_in_a_config_file() {
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration(" 7 s "), Ok(Duration::from_secs(7)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["5", "5 ", "", "5d", "-1s", "1e3ms", "1.2.3s"] {
            let e = duration(bad).unwrap_err();
            assert!(e.contains("500ms, 5s, 1.5s, 2m or 1h"), "{bad:?}: {e}");
        }
        assert_eq!(
            duration("0s"),
            Err("a duration must be greater than zero".to_owned())
        );
        assert!(duration("0.0ms").is_err());
    }
}
