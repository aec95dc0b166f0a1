//! The bundled demo MCP server: a small, scriptable peer for tests, benches and trying things out.
//!
//! It is served by `switchboard-server`, in both eras (the handshake era 2024-11-05 …
//! 2025-11-25, and 2026-07-28 for every request whose `_meta` names it), over
//! newline-delimited JSON on any byte stream: [`serve`] runs it over an in-process stream
//! (tests use [`tokio::io::duplex`]), [`run_stdio`] over stdin/stdout, and with `--http ADDR`
//! over Streamable HTTP at `/mcp` ([`serve_http`]). Over stdio it refuses the era probe
//! (`server/discover`) unless `--modern`, so that clients that probe keep speaking the
//! handshake era to it, as the runtime's tests expect; over HTTP it answers it. With
//! `--conformance` it adds the fixture the official conformance suite's server scenarios
//! call. The `switchboard` binary serves it as `switchboard demo-server`; bench binaries
//! re-exec themselves with the `SWITCHBOARD_DEMO_SERVER` variable set and call
//! [`main_from_env`] first thing in `main`, so a real child process needs no extra binary.
//!
//! # What it serves
//!
//! - **Tools**: the ordinary `greet`, `add` and `echo`; `touch`, `resources_changed`,
//!   `prompts_changed`, `log` and `log_level`, which drive the notifications below; and with
//!   `--faults`, tools that misbehave on purpose (hang, crash, write garbage, answer with
//!   unknown ids, ...), one per failure the runtime must survive.
//! - **Resources**: `demo://text/hello` (text/plain, `Hello, world!`), `demo://blob/bytes`
//!   (application/octet-stream, the bytes 0 to 255) and `demo://text/readme` (text/markdown);
//!   the template `demo://note/{id}` (`demo://note/42` reads `note 42`). An unknown URI is
//!   error -32002 with `data: {"uri": ...}` (or the code given with `--not-found-code`).
//!   `resources/subscribe` records a URI; `touch` then sends `notifications/resources/updated`
//!   for it, and `resources_changed` sends `notifications/resources/list_changed`.
//! - **Prompts**: `simple`, `greeting` (`name` required, `style` optional) and
//!   `with_resource` (embeds `demo://text/hello`); `prompts_changed` sends
//!   `notifications/prompts/list_changed`.
//! - **Skills** (the extension `io.modelcontextprotocol/skills`): `greet-people` (with
//!   `references/STYLES.md`) and `demo/arithmetic`, listed by `skills/list`, got by
//!   `skills/get`, their folders read by `resources/directory/read` and their files by
//!   `resources/read` (`skill://greet-people/SKILL.md`, …), though not in `resources/list`.
//! - **Completion** of `greeting`'s arguments and of the template's `id`.
//! - **Logging**: `logging/setLevel` (default `info`) filters what the `log` tool sends as
//!   `notifications/message`.
//!
//! Every list (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`) is
//! paged with `--page-size`. With `--no-server-features` the server declares only `tools` and
//! `logging`, and answers the resource, prompt, skill and completion methods with -32601, as a
//! server without them would. Its `instructions` are one sentence, or `--instructions TEXT`.
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     if let Some(code) = switchboard_demo::main_from_env() {
//!         return code;
//!     }
//!     // ... the binary's own work ...
//!     std::process::ExitCode::SUCCESS
//! }
//! ```

#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

#[cfg(unix)]
pub mod child;
mod completion;
mod conformance;
mod demo;
mod feature_tools;
mod prompts;
mod resources;
mod skills;
#[cfg(test)]
mod tests;
mod tools;

use std::sync::Arc;

use switchboard_server::Server;

/// The environment variable [`main_from_env`] looks for; its value holds the server's arguments.
pub const ENV_VAR: &str = "SWITCHBOARD_DEMO_SERVER";

/// The protocol versions the demo server knows, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = switchboard_server::HANDSHAKE_VERSIONS;

/// Lines longer than this are skipped unread (and answered with an error), so that a
/// runaway client cannot exhaust memory.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// How the demo server behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// List (and allow calling) the fault tools.
    pub faults: bool,
    /// Answer `initialize` with this version whatever the client asks, so that tests can
    /// provoke an unsupported version.
    pub protocol_version: Option<String>,
    /// How many items each list (tools, resources, resource templates, prompts) returns per
    /// page; 0 means everything on one page.
    pub page_size: usize,
    /// `serverInfo.name`.
    pub name: String,
    /// Declare and serve resources, prompts and completion; without them the server is a
    /// tools-and-logging server, for tests of capability gating.
    pub server_features: bool,
    /// The error code for `resources/read` and `resources/subscribe` of an unknown URI: the
    /// spec's -32002 by default, but some real servers answer -32602 (invalid params).
    pub not_found_code: i64,
    /// Exit the process (status 1) on a request whose method the server does not know,
    /// as some servers do (rmcp 0.x exits on any first request that is not `initialize`),
    /// instead of answering -32601. For the server as a child process only.
    pub exit_on_unknown_method: bool,
    /// Answer `server/discover` on stdio too, so that clients that probe speak 2026-07-28
    /// (over HTTP it is always answered).
    pub modern: bool,
    /// Add the conformance suite's fixture: its tools, resources and prompts.
    pub conformance: bool,
    /// Serve Streamable HTTP at `http://ADDR/mcp` instead of stdio (`--http PORT` is on
    /// 127.0.0.1, as `switchboard serve --listen PORT`).
    pub http: Option<SocketAddr>,
    /// The `instructions` of its `initialize` and `server/discover` results.
    pub instructions: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            faults: false,
            protocol_version: None,
            page_size: 0,
            name: "switchboard-demo".to_owned(),
            server_features: true,
            not_found_code: resources::NOT_FOUND,
            exit_on_unknown_method: false,
            modern: false,
            conformance: false,
            http: None,
            instructions: "Switchboard's bundled demo server.".to_owned(),
        }
    }
}

impl Options {
    /// Parses command-line arguments (without the program name): `--faults`,
    /// `--protocol-version V`, `--page-size N`, `--name N`, `--no-server-features`,
    /// `--not-found-code C`, `--exit-on-unknown-method`, `--modern`, `--conformance`,
    /// `--http ADDR` (PORT on 127.0.0.1, or IP:PORT), `--instructions TEXT`. Values may also
    /// be attached with `=`, as in `--page-size=2`.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, attached) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => {
                    (flag.to_owned(), Some(value.to_owned()))
                }
                _ => (arg, None),
            };
            let mut value = |what: &str| {
                attached
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{flag} needs {what}"))
            };
            match flag.as_str() {
                "--faults" if attached.is_none() => options.faults = true,
                "--protocol-version" => options.protocol_version = Some(value("a version")?),
                "--page-size" => {
                    let n = value("a number")?;
                    options.page_size = n
                        .parse()
                        .map_err(|_| format!("--page-size: not a number: {n:?}"))?;
                }
                "--name" => options.name = value("a name")?,
                "--no-server-features" if attached.is_none() => options.server_features = false,
                "--exit-on-unknown-method" if attached.is_none() => {
                    options.exit_on_unknown_method = true
                }
                "--modern" if attached.is_none() => options.modern = true,
                "--conformance" if attached.is_none() => options.conformance = true,
                "--http" => {
                    let addr = value("an address")?;
                    let addr = switchboard_server::http::listen_addr(&addr)
                        .map_err(|e| format!("--http: {e}"))?;
                    options.http = Some(addr);
                }
                "--instructions" => options.instructions = value("a text")?,
                "--not-found-code" => {
                    let code = value("an error code")?;
                    options.not_found_code = code
                        .parse()
                        .map_err(|_| format!("--not-found-code: not a number: {code:?}"))?;
                }
                _ => return Err(format!("unknown argument: {flag:?}")),
            }
        }
        Ok(options)
    }
}

/// The demo server as a [`Server`] with these options.
pub fn server(options: Options) -> Server {
    let server_options = switchboard_server::Options::default()
        .with_page_size(options.page_size)
        .with_discover(options.modern || options.http.is_some())
        .with_forced_version(options.protocol_version.clone())
        .with_max_line(MAX_LINE);
    Server::from_arc(Arc::new(demo::Demo::new(options)), server_options)
}

/// Serves MCP over newline-delimited JSON until `reader` reaches EOF.
///
/// At EOF, requests that finish at once (everything but `sleep`, `hang` and `ping_client`)
/// are still answered; slower ones are abandoned, and queued lines get a brief moment to be
/// written. Returns an error if reading or writing fails.
pub async fn serve<R, W>(reader: R, writer: W, options: Options) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    server(options)
        .serve(reader, writer)
        .await
        .map_err(std::io::Error::other)
}

/// Serves Streamable HTTP at `/mcp` on `addr` (loopback names only in `Host` and `Origin`,
/// beside the address's own host) until accepting fails.
pub async fn serve_http(addr: SocketAddr, options: Options) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    eprintln!("switchboard-demo: serving MCP at http://{local}/mcp");
    let mut config = switchboard_server::http::Config::default();
    let ip = local.ip();
    if !ip.is_loopback() && !ip.is_unspecified() {
        config = config.allow_hosts([ip.to_string()]);
    }
    server(options)
        .serve_http(listener, config)
        .await
        .map_err(std::io::Error::other)
}

/// Serves MCP on stdin/stdout (or over HTTP with [`Options::http`]) on a fresh runtime until
/// stdin closes (or forever, over HTTP).
///
/// Exits with success on stdin EOF, and with failure if stdin or stdout fails.
pub fn run_stdio(options: Options) -> ExitCode {
    let mut builder = match options.http {
        // Handlers of many clients at once deserve every core.
        Some(_) => tokio::runtime::Builder::new_multi_thread(),
        None => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("switchboard-demo: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match options.http {
        Some(addr) => runtime.block_on(serve_http(addr, options)),
        None => runtime.block_on(async {
            server(options)
                .serve_stdio()
                .await
                .map_err(std::io::Error::other)
        }),
    };
    // When stdin is no pipe, tokio reads it on a blocking thread; if we stop because stdout
    // broke, that read may never return, and a plain drop would wait for it forever.
    runtime.shutdown_timeout(Duration::from_millis(500));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the demo server on stdio if [`ENV_VAR`] is set, with options parsed from its value
/// (whitespace-separated, e.g. `"--faults --page-size 2"`), and returns the exit code; returns
/// `None` if the variable is not set.
///
/// Bad options give exit code 2 and a message on stderr.
pub fn main_from_env() -> Option<ExitCode> {
    let value = std::env::var_os(ENV_VAR)?;
    let value = value.to_string_lossy();
    match Options::from_args(value.split_whitespace().map(str::to_owned)) {
        Ok(options) => Some(run_stdio(options)),
        Err(e) => {
            eprintln!("switchboard-demo: {ENV_VAR}: {e}");
            Some(ExitCode::from(2))
        }
    }
}
