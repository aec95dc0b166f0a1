//! `switchboard serve`: every server of a config file as one MCP server, on stdin/stdout
//! or over Streamable HTTP, until the client leaves or `SIGINT`/`SIGTERM`.
//!
//! ```text
//! $ switchboard serve -c .mcp.json                      # MCP on stdin/stdout
//! $ switchboard serve -c .mcp.json --listen 8080        # http://127.0.0.1:8080/mcp
//! ```
//!
//! On stdio, stdout carries only MCP (logs go to stderr) and the end of stdin ends the
//! command. Over HTTP the address is loopback unless another one is given in full, and the
//! `Host`/`Origin` checks stay on (`--allow-host` names what a proxy in front forwards);
//! `/healthz` and `/readyz` answer probes (`--ready-requires` says which servers must be
//! ready). Either way an interruption stops serving and shuts every server down before
//! exiting 0. What an operator needs to know is logged on stderr at info: where it serves,
//! its servers ready or not ([`serve_status`]), reloads ([`super::reload`]), an open
//! address without `--auth` (a warning), and stopping.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use switchboard::Runtime;
use switchboard_gateway::audit::{Audit, Rotation, Sink};
use switchboard_gateway::per_user::PerUser;
use switchboard_gateway::{Discovery, Gateway, Readiness};
use switchboard_server::http::{self, Probes};

use super::config::ConfigArgs;
use super::{serve_status, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP: &str = "\
The config file is -c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json: its servers' tools,
resources, resource templates and prompts are served as one MCP server, named as the other
commands name them (with one server and no prefix, as the server names them). Tool calls
(with their progress and cancellation), resources/read, prompts/get and completion/complete
are forwarded to the server that offers what they name, and the clients hear list_changed
when the catalogue changes. Both protocol eras are served, whatever era each server speaks.

Without --listen, MCP is spoken on stdin/stdout (logs on stderr) until stdin ends. With
--listen, Streamable HTTP is served at http://ADDR/mcp: a bare PORT binds 127.0.0.1:PORT;
any other address must be written out (0.0.0.0:8080) and is then reachable from the network
with no authentication (put a proxy that authenticates in front). Host and Origin headers
must name loopback, the address given, or an --allow-host name. GET /healthz answers 200
while serving. GET /readyz answers 200 once every server has started or failed (fail open:
a server that failed is simply absent), else 503; with --ready-requires all, only while
every server is ready; with --ready-requires NAME[,NAME...], only while those servers are
ready and the others have started or failed. A server restarting is not ready.

Replicas: give every replica the same secrets with --session-keys FILE (one per line, the
first seals, the others still open: rotate by adding a new first line) or
$SWITCHBOARD_SESSION_KEYS (comma-separated). Handshake-era session ids are then sealed
(they carry the session's version and capabilities, encrypted and authenticated) and the
2026-07-28 requestState is signed with a key derived from the first secret, so any replica
serves any request behind a round-robin load balancer. Without them each process has its
own random keys and its sessions are its own. A secret must be 32 bytes or more.

Authentication: with --auth FILE only the clients that FILE names get in (static keys,
and JWTs verified against an issuer's JWKS; its fields are in the README's Gateway section):
others get 401 with WWW-Authenticate naming the protected-resource metadata (RFC 9728),
served at /.well-known/oauth-protected-resource/mcp; a token without a required scope
gets 403. A key or a token may limit its client to some tools. Without --auth, anyone who
reaches the address gets in: bind loopback, or put an authenticating proxy in front.

Discovery: with --discovery search, tools/list offers two tools instead of the catalogue:
search_tools {query, limit?} answers the tools that best match what the query describes
(their names, servers, scores and full definitions, best first), and call_tool {name,
arguments?} calls one by its name, its arguments checked against its inputSchema, with the
progress, cancellation, elicitation and sampling of a direct call. With --discovery N they
are listed only while the catalogue has more than N tools (clients hear list_changed when
it crosses N). A client limited to some tools by --auth finds and calls only those. A
direct call by a tool's name still works; while discovery is on, the names search_tools and
call_tool are the meta-tools' (a server's tool of that name is reached through call_tool).
With --model DIR (a build with the feature `semantic`) search_tools fuses the lexical ranking
with a sentence-embedding model's (all-MiniLM-L6-v2's folder); the tools are embedded in the
background as servers list them, and ranked lexically until they are.

Isolation: a server whose config says isolation client gives each client (an --auth key's
name or a token's subject) an instance of its own, started on its first call, read or
prompt; isolation session gives each handshake-era session one (a 2026-07-28 request, which
has no session, is refused). maxInstances (default 32) bounds them: past it a new client is
refused, never a busy instance stopped; idleTimeout (default 10m) stops an instance that
had nothing in flight that long, its process with it. The runtime's own instance lists the
server's tools for everyone and is called by no one. Isolation client needs --auth.

Per-client values: a server's args, env, headers and url may say ${client.name} (the key's
name, the token's sub), ${client.claims.NAME} (a claim of the verified token) and
${client.secret.NAME} (from --credentials FILE, {\"key:alice\": {\"NAME\": \"value\"}}, read
again when it changes); ${client.secret.NAME:-default} gives a default. Such a server runs
an instance per client, started with that client's values; its listAs object ({\"name\": ...,
\"claims\": {...}, \"secrets\": {...}}) names the values the runtime's own instance, which
lists its tools, runs with. A value a client lacks refuses its call, naming the value; no
instance starts with an empty one. A client whose secret changed gets a new instance on its
next call. No value is logged.

Upstream identity: an HTTP server with \"auth\": {\"tokenExchange\": {\"tokenEndpoint\",
\"clientId\", \"clientSecret\" or \"clientSecretEnv\", \"audience\", \"scope\"}} presents, for each
client, a token exchanged for the client's verified JWT (RFC 8693), once per token lifetime;
with \"auth\": {\"perUser\": \"oauth\"} each user authorizes the server through the client (a
URL-mode elicitation of the authorization URL, redirected to this gateway's /oauth/callback,
--oauth-callback URL when clients reach it elsewhere), tokens sealed with the session keys in
--oauth-dir (shared by replicas); `switchboard auth revoke --client NAME SERVER` removes a
user's. Both need --auth; per-user OAuth needs --listen and --session-keys.

Reload: SIGHUP, or a change of the config file, reads it again: new servers start, removed
ones stop once their calls in flight finish, changed ones start anew while the old ones
finish theirs. A file that does not read changes nothing.

Logs (on stderr, never stdout): where it serves, each server ready or not (and why), as it
happens; each reload and what it changed, or why the file did not read; a warning when
--listen is not loopback and there is no --auth; on SIGINT or SIGTERM, that it is stopping
and how many requests are in flight. -q keeps the warnings and errors only, -v adds the
runtime's own info, RUST_LOG sets finer filters. No key, token or header value is logged.

Audit: with --audit FILE, one JSON line per forwarded request (tools/call,
resources/read, prompts/get, completion/complete) and per refused tool call (one the client
may not call, one that does not exist), and per connection or request the HTTP front turns
away or cuts (method http, the reason: rate, client_sessions, ...): time, principal, session
(hashed), method, name, server, instance, outcome, code, reason, duration_ms, bytes_in,
bytes_out. Arguments only with --audit-arguments; never a header, key, token or session
id. --audit - writes to stdout (with --listen only: on stdio, stdout is MCP's). With
--audit-max-size SIZE the file is renamed FILE.1 (older ones shifted, --audit-keep kept)
before a line would take it past SIZE; SIGHUP reloads the config, it does not reopen the
audit file. The same records are logged at info (target switchboard::audit), without the
arguments. A line that finds 4096 lines waiting for the disk is dropped, counted and warned
about: calls never wait on it.

SIGINT or SIGTERM stops serving and shuts the servers down; exit 0.

Examples:
  switchboard serve -c .mcp.json
  switchboard serve -c .mcp.json --listen 8080
  switchboard serve -c .mcp.json --listen 0.0.0.0:8080 --auth auth.json
  switchboard serve -c .mcp.json --listen 8080 --ready-requires github,docs
  switchboard serve -c .mcp.json --discovery 40
  switchboard serve -c .mcp.json --listen 8080 --auth auth.json --audit audit.jsonl --audit-max-size 100MiB";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio: PORT (on 127.0.0.1) or
    /// IP:PORT.
    #[arg(long, value_name = "ADDR", value_parser = http::listen_addr)]
    listen: Option<SocketAddr>,
    /// A host name the HTTP server also accepts in `Host` and `Origin` (repeatable), for a
    /// proxy in front that forwards it.
    #[arg(long = "allow-host", value_name = "NAME", requires = "listen")]
    allow_hosts: Vec<String>,
    /// A file of secrets, one per line, that seal session ids (the first seals, all open):
    /// replicas with the same file serve each other's sessions. Default:
    /// $SWITCHBOARD_SESSION_KEYS, comma-separated.
    #[arg(long = "session-keys", value_name = "FILE", requires = "listen")]
    session_keys: Option<std::path::PathBuf>,
    /// Let in only the clients this file names: static keys and JWTs from an issuer (JSON:
    /// `resource`, `keys`, `jwt`, `requiredScopes`).
    #[arg(long, value_name = "FILE", requires = "listen")]
    auth: Option<std::path::PathBuf>,
    /// Where per-user OAuth keeps each client's tokens, sealed with the session keys
    /// (replicas share it). Default: $XDG_STATE_HOME/switchboard/per-user-oauth.
    #[arg(long = "oauth-dir", value_name = "DIR", requires = "auth")]
    oauth_dir: Option<std::path::PathBuf>,
    /// The URL of this gateway's /oauth/callback as browsers reach it, where per-user
    /// OAuth's authorization servers redirect. Default: the auth file's resource's origin.
    #[arg(long = "oauth-callback", value_name = "URL", requires = "auth")]
    oauth_callback: Option<String>,
    /// Each client's secrets, for servers whose config says `${client.secret.NAME}` (JSON:
    /// {"key:NAME" or "ISSUER#SUB": {NAME: value}}); read again when it changes.
    #[arg(long, value_name = "FILE", requires = "auth")]
    credentials: Option<std::path::PathBuf>,
    /// When GET /readyz answers 200: `all` (every server ready) or NAME[,NAME...] (those
    /// ready, the others started or failed). Default: every server started or failed.
    #[arg(long, value_name = "all|NAME[,NAME...]", value_parser = ready_requires, requires = "listen")]
    ready_requires: Option<Readiness>,
    /// List two meta-tools instead of every tool: search_tools (finds tools by what they
    /// do) and call_tool (calls one by name). `search`: always; N: while there are more
    /// than N tools.
    #[arg(long, value_name = "search|N")]
    discovery: Option<Discovery>,
    /// Rank search_tools semantically too, with the sentence-embedding model in DIR
    /// (all-MiniLM-L6-v2's files; a build with the feature `semantic`).
    #[arg(long, value_name = "DIR", requires = "discovery")]
    model: Option<std::path::PathBuf>,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    limits: Limits,
    #[command(flatten)]
    config: ConfigArgs,
}

/// Where the audit log goes, what it holds and when it rotates.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Audit log")]
struct AuditArgs {
    /// Write one JSON line per forwarded request and per refused tool call to FILE
    /// (appended to), or to stdout with `-` (with --listen only).
    #[arg(long, value_name = "FILE|-")]
    audit: Option<std::path::PathBuf>,
    /// Also write each request's arguments (off by default: they may hold personal data).
    #[arg(long = "audit-arguments", requires = "audit")]
    arguments: bool,
    /// Rotate the audit file before a line would take it past SIZE (e.g. 100MiB).
    #[arg(long = "audit-max-size", value_name = "SIZE", value_parser = size, requires = "audit")]
    max_size: Option<usize>,
    /// How many rotated audit files (FILE.1 … FILE.N) are kept.
    #[arg(
        long = "audit-keep",
        value_name = "N",
        default_value = "5",
        requires = "max_size"
    )]
    keep: u32,
}

impl AuditArgs {
    /// The audit log, opened; `None` without `--audit`. `stdio`: stdout is the front's.
    fn start(&self, stdio: bool) -> Result<Option<Audit>, Failure> {
        let Some(file) = &self.audit else {
            return Ok(None);
        };
        let sink = if file.as_os_str() == "-" {
            if stdio {
                return Err(Failure::Usage(
                    "--audit - needs --listen: on stdio, stdout carries MCP".into(),
                ));
            }
            Sink::Stdout
        } else {
            Sink::File(file.clone())
        };
        let rotation = Rotation {
            max_bytes: self.max_size.map(|n| n as u64),
            keep: self.keep,
        };
        Audit::start(sink, rotation, self.arguments)
            .map(Some)
            .map_err(|e| Failure::Usage(e.to_string()))
    }
}

/// What one `serve --listen` lets any client hold, and for how long (the README's Gateway
/// section lists each with what a client past it gets).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Limits (with --listen)")]
struct Limits {
    /// The longest a request's head may take; the connection is closed beyond.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::duration, requires = "listen")]
    head_timeout: Duration,
    /// The longest a request's body may go without a byte arriving; closed beyond.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::duration, requires = "listen")]
    body_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = super::duration, requires = "listen")]
    idle_timeout: Duration,
    /// The longest a response or stream may wait on a client that does not read it; the
    /// connection is closed and its calls cancelled beyond.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = super::duration, requires = "listen")]
    send_timeout: Duration,
    /// The most connections open at once; past it an idle one is closed for a newcomer, or
    /// the newcomer gets 503 (health probes are still answered).
    #[arg(long, value_name = "N", default_value_t = 4096, requires = "listen")]
    max_connections: usize,
    /// The most handshake-era sessions open at once.
    #[arg(long, value_name = "N", default_value_t = 1024, requires = "listen")]
    max_sessions: usize,
    /// The most requests in flight at once, in all.
    #[arg(long, value_name = "N", default_value_t = 4096, requires = "listen")]
    max_in_flight: usize,
    /// The bytes held for clients, in all (e.g. 512MiB): answers not yet sent and request
    /// bodies being served. Past it the connections that do not read are cut and new bodies
    /// refused (503). Default: a sixteenth of the memory, 64 MiB to 2 GiB.
    #[arg(long, value_name = "SIZE", value_parser = size, requires = "listen")]
    answer_budget: Option<usize>,
    /// The sessions one client (its --auth name, else its address) may hold. Default: an
    /// eighth of --max-sessions.
    #[arg(long, value_name = "N", requires = "listen")]
    client_sessions: Option<usize>,
    /// The GET and listen streams one client may hold open. Default: a sixteenth of
    /// --max-sessions.
    #[arg(long, value_name = "N", requires = "listen")]
    client_streams: Option<usize>,
    /// The requests one client may have in flight. Default: an eighth of --max-in-flight.
    #[arg(long, value_name = "N", requires = "listen")]
    client_in_flight: Option<usize>,
    /// The requests a second one client may make, sustained (0: no limit); past it, 429 with
    /// Retry-After.
    #[arg(long, value_name = "N", default_value_t = 1000.0, requires = "listen")]
    client_rate: f64,
    /// The requests one client may make at once above its rate.
    #[arg(long, value_name = "N", default_value_t = 2000, requires = "listen")]
    client_burst: u32,
    /// A proxy in front (repeatable) whose X-Forwarded-For names the client: the rightmost
    /// address in it that is not a trusted proxy. Without it, every client behind a proxy
    /// is the proxy's address.
    #[arg(long = "trusted-proxy", value_name = "IP", requires = "listen")]
    trusted_proxies: Vec<IpAddr>,
}

impl Limits {
    /// The HTTP server's config with these limits.
    fn apply(&self, config: http::Config) -> http::Config {
        let mut config = config
            .with_head_timeout(self.head_timeout)
            .with_body_timeout(self.body_timeout)
            .with_idle_timeout(self.idle_timeout)
            .with_send_timeout(self.send_timeout)
            .with_max_connections(self.max_connections)
            .with_max_sessions(self.max_sessions)
            .with_max_in_flight(self.max_in_flight)
            .with_trusted_proxies(self.trusted_proxies.iter().copied());
        if let Some(budget) = self.answer_budget {
            config = config.with_answer_budget(budget);
        }
        let mut client = http::ClientLimits::share_of(&config);
        if let Some(sessions) = self.client_sessions {
            client = client.with_sessions(sessions);
        }
        if let Some(streams) = self.client_streams {
            client = client.with_streams(streams);
        }
        if let Some(in_flight) = self.client_in_flight {
            client = client.with_in_flight(in_flight);
        }
        let rate = (self.client_rate > 0.0).then_some(self.client_rate);
        config.with_client_limits(client.with_rate(rate, self.client_burst))
    }
}

/// A size in bytes: a number, then B, KiB, MiB or GiB (or KB, MB, GB, in powers of ten).
fn size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => {
            return Err(format!(
                "expected a size such as 512MiB or 2GiB, not {text:?}"
            ))
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|n| *n > 0)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("expected a size such as 512MiB or 2GiB, not {text:?}"))
}

/// The shortest secret accepted: 256 bits of a random key, written as text.
const MIN_SECRET: usize = 32;

/// The replicas' shared secrets: from `--session-keys FILE`, else the environment; none
/// when neither is given.
fn session_keys(file: Option<&std::path::Path>) -> Result<Vec<String>, Failure> {
    let (text, origin, separator) = match file {
        Some(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                Failure::Usage(format!(
                    "cannot read --session-keys {}: {e}",
                    path.display()
                ))
            })?,
            format!("--session-keys {}", path.display()),
            '\n',
        ),
        None => match std::env::var("SWITCHBOARD_SESSION_KEYS") {
            Ok(text) => (text, "$SWITCHBOARD_SESSION_KEYS".to_owned(), ','),
            Err(_) => return Ok(Vec::new()),
        },
    };
    let keys: Vec<String> = text
        .split(separator)
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if keys.is_empty() {
        return Err(Failure::Usage(format!("{origin} holds no secret")));
    }
    if let Some(n) = keys.iter().position(|k| k.len() < MIN_SECRET) {
        // Never the secret itself: only where it is.
        return Err(Failure::Usage(format!(
            "{origin}: secret {} is shorter than {MIN_SECRET} bytes",
            n + 1
        )));
    }
    Ok(keys)
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `--auth FILE`, read and checked before any server starts.
fn auth_file(file: &std::path::Path) -> Result<switchboard_gateway::auth::AuthConfig, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", file.display())))?;
    switchboard_gateway::auth::AuthConfig::parse(&text)
        .map_err(|e| Failure::Usage(format!("{}: {e}", file.display())))
}

/// The `requestState` key replicas share, derived from the first secret so that it is not
/// the session ids' key.
fn request_state_key(secret: &str) -> Vec<u8> {
    let mut material = b"switchboard serve: requestState\n".to_vec();
    material.extend_from_slice(secret.as_bytes());
    ring::digest::digest(&ring::digest::SHA256, &material)
        .as_ref()
        .to_vec()
}

/// `--ready-requires`: `all`, or server names separated by commas.
/// Without `--auth` no request has a principal, and a peer's address is not one: a server
/// isolated per client could serve nobody.
fn refuse_client_isolation(file: &switchboard::ConfigFile) -> Result<(), Failure> {
    let isolated: Vec<&str> = file
        .servers
        .iter()
        .filter(|(_, config)| {
            config.isolation_policy().isolation == switchboard::Isolation::Client
                || config.per_client()
        })
        .map(|(name, _)| name.as_str())
        .collect();
    if isolated.is_empty() {
        return Ok(());
    }
    Err(Failure::Usage(format!(
        "{} of {} give each client an instance of its own (isolation: client, or values \
         `${{client.…}}`), which needs authenticated clients: serve with --auth FILE, or use \
         isolation \"session\" or \"shared\" without per-client values",
        isolated.join(", "),
        file.path.display()
    )))
}

/// Per-user OAuth for the file's per-user servers: each client's instance gets its own
/// OAuth client, authorized through the client (see `switchboard_gateway::per_user`).
fn per_user_oauth(
    args: &Args,
    auth: Option<&switchboard_gateway::auth::AuthConfig>,
    keys: &[String],
    file: &mut switchboard::ConfigFile,
) -> Result<Arc<PerUser>, Failure> {
    let names = file.per_user.join(", ");
    let Some(auth) = auth.filter(|_| args.listen.is_some()) else {
        return Err(Failure::Usage(format!(
            "{names}: per-user OAuth needs --listen and --auth: each client authorizes as \
             itself, and its authorization server redirects to the gateway"
        )));
    };
    let callback = match &args.oauth_callback {
        Some(url) => url.clone(),
        None => {
            let resource = url::Url::parse(&auth.resource)
                .map_err(|e| Failure::Usage(format!("the auth file's resource: {e}")))?;
            format!(
                "{}{}",
                resource.origin().ascii_serialization(),
                switchboard_gateway::per_user::CALLBACK_PATH
            )
        }
    };
    let dir = match &args.oauth_dir {
        Some(dir) => dir.clone(),
        None => default_oauth_dir().ok_or_else(|| {
            Failure::Usage(format!(
                "{names}: no folder for per-user OAuth: give --oauth-dir (or set XDG_STATE_HOME or HOME)"
            ))
        })?,
    };
    let per_user =
        PerUser::new(dir, keys, callback).map_err(|e| Failure::Usage(format!("{names}: {e}")))?;
    file.attach_per_user(|name, url, settings| per_user.hook(name, url, settings))
        .map_err(|e| Failure::Usage(e.to_string()))?;
    Ok(per_user)
}

/// Where per-user OAuth keeps tokens by default.
pub(crate) fn default_oauth_dir() -> Option<std::path::PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| std::path::PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("switchboard").join("per-user-oauth"))
}

fn ready_requires(text: &str) -> Result<Readiness, String> {
    if text.trim() == "all" {
        return Ok(Readiness::All);
    }
    let names: Vec<&str> = text.split(',').map(str::trim).collect();
    if names.iter().any(|n| n.is_empty()) {
        return Err(format!(
            "expected `all` or server names separated by commas (github,docs), not {text:?}"
        ));
    }
    Ok(Readiness::servers(names))
}

/// Every name `requires` has must be a server the file runs: one it does not have, or has
/// disabled, would never be ready.
fn check_required(requires: &Readiness, file: &switchboard::ConfigFile) -> Result<(), Failure> {
    let Readiness::Servers(names) = requires else {
        return Ok(());
    };
    for name in names {
        if file.servers.iter().any(|(server, _)| server == name) {
            continue;
        }
        let why = if file.disabled.contains(name) {
            "is disabled in"
        } else {
            "is not a server of"
        };
        return Err(Failure::Usage(format!(
            "--ready-requires {name}: `{name}` {why} {} (it would never be ready)",
            file.path.display()
        )));
    }
    Ok(())
}

/// The names `requires` has, for the line that says one of them left the file.
fn required_names(requires: Option<&Readiness>) -> Vec<String> {
    match requires {
        Some(Readiness::Servers(names)) => names.clone(),
        _ => Vec::new(),
    }
}

pub(crate) async fn run(args: Args, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let mut file = args.config.load(false)?;
    let baseline = super::reload::Baseline::of(&file.path);
    if let Some(requires) = &args.ready_requires {
        check_required(requires, &file)?;
    }
    // Bound first: a port already taken fails before any server is started.
    let listener = match args.listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::Run(format!("cannot listen on {addr}: {e}")))?,
        ),
        None => None,
    };
    let keys = match args.listen {
        Some(_) => session_keys(args.session_keys.as_deref())?,
        None => Vec::new(),
    };
    let auth = match &args.auth {
        Some(file) => Some(auth_file(file)?),
        None => None,
    };
    let per_user = match file.per_user.is_empty() {
        true => None,
        false => Some(per_user_oauth(&args, auth.as_ref(), &keys, &mut file)?),
    };
    if auth.is_none() {
        refuse_client_isolation(&file)?;
    }
    let credentials = match &args.credentials {
        Some(path) => Some(super::credentials::load(path)?),
        None => None,
    };
    let audit = args.audit.start(args.listen.is_none())?;
    let scorer = super::semantic::load(args.model.as_deref())?;
    let runtime = start(&file, scorer, interrupt).await?;
    // Each server ready or not, now and as that changes.
    let (watch, told) =
        serve_status::at_start(&runtime, required_names(args.ready_requires.as_ref()));
    let telling = AbortOnDrop(tokio::spawn(serve_status::follow(watch, told)));
    // Stopped (dropped) when serving ends: no reload while the servers shut down.
    let reloading = AbortOnDrop(tokio::spawn(super::reload::watch(
        runtime.clone(),
        args.config.clone(),
        file.path.clone(),
        baseline,
        per_user.clone(),
    )));
    let gateway = match args.discovery {
        Some(discovery) => Gateway::with_discovery(runtime.clone(), discovery),
        None => Gateway::new(runtime.clone()),
    };
    if let Some(audit) = audit {
        gateway.audit_to(audit);
    }
    if let Some(per_user) = &per_user {
        gateway.per_user(per_user.clone());
    }
    let _credentials = match (args.credentials, credentials) {
        (Some(path), Some((credentials, seen))) => {
            gateway.set_credentials(credentials);
            Some(AbortOnDrop(tokio::spawn(super::credentials::watch(
                gateway.clone(),
                path,
                seen,
            ))))
        }
        _ => None,
    };
    let mut options = switchboard_server::Options::default();
    if let Some(first) = keys.first() {
        options = options.with_request_state_key(request_state_key(first));
    }
    let front = gateway.clone().serve(options);
    let servers = runtime.servers().len();
    let plural = if servers == 1 { "" } else { "s" };
    let served = match listener {
        None => {
            tracing::info!("serving {servers} server{plural} on stdin/stdout");
            interrupt.guard(front.server().serve_stdio()).await
        }
        Some(listener) => {
            let addr = listener
                .local_addr()
                .map_err(|e| Failure::Run(format!("the listener has no address: {e}")))?;
            let ready = gateway.clone();
            let requires = args.ready_requires.unwrap_or_default();
            let mut config = args
                .limits
                .apply(http::Config::default())
                .with_probes(Probes::new(move || ready.is_ready_for(&requires)))
                .with_rejections(gateway.count_rejections());
            let mut hosts = args.allow_hosts;
            if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
                hosts.push(addr.ip().to_string());
            }
            config = config.allow_hosts(hosts).with_session_keys(&keys);
            let open = auth.is_none();
            if let Some(auth) = auth {
                config = config.with_auth(auth.into_auth());
            }
            if let Some(per_user) = &per_user {
                config = config.with_page(per_user.callback_page());
            }
            tracing::info!("serving {servers} server{plural} at http://{addr}/mcp");
            if open && !addr.ip().to_canonical().is_loopback() {
                tracing::warn!(
                    "listening on {addr} without --auth: anyone who reaches it can list and \
                     call every tool; pass --auth FILE, bind loopback, or put a proxy that \
                     authenticates in front"
                );
            }
            interrupt
                .guard(front.server().serve_http(listener, config))
                .await
        }
    };
    let in_flight = || match gateway.in_flight() {
        1 => "1 request in flight".to_owned(),
        n => format!("{n} requests in flight"),
    };
    let outcome = match served {
        Ok(Ok(())) => {
            tracing::info!("the client closed stdin: stopping ({})", in_flight());
            Ok(ExitCode::SUCCESS)
        }
        Ok(Err(e)) => Err(Failure::Run(e.to_string())),
        Err(Interrupted(signal)) => {
            tracing::info!(
                "{signal}: stopping ({}); shutting the servers down",
                in_flight()
            );
            Ok(ExitCode::SUCCESS)
        }
    };
    drop((front, reloading, telling));
    gateway.shutdown_instances().await;
    super::shut_down(&runtime, super::Shutdown::Graceful, interrupt).await;
    tracing::info!("stopped");
    outcome
}

/// The config file's servers (a server that fails to start is served as failed, the others
/// as they are: fail open), started without the terminal's handlers: on stdio the
/// terminal is the MCP client's stream, and a server's questions are not ours to answer.
async fn start(
    file: &switchboard::ConfigFile,
    scorer: Option<super::semantic::Scorer>,
    interrupt: &mut Interrupt,
) -> Result<Runtime, Failure> {
    // Upstreams' requests to the client go to the front client whose call caused them.
    let builder = Runtime::builder()
        .with_env_defaults()
        .config(file.clone())
        .client_handlers(switchboard_gateway::upstream_handlers());
    // The catalogue's tools are embedded on the scorer's thread as servers list them.
    let builder = match scorer {
        None => builder,
        #[cfg(feature = "semantic")]
        Some(scorer) => builder.semantic_search(scorer),
        #[cfg(not(feature = "semantic"))]
        Some(never) => match never {},
    };
    let starting = format!("the servers of {} were starting", file.path.display());
    super::start(builder, starting, interrupt).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_requires_all_or_names_of_servers_the_file_runs() {
        assert_eq!(ready_requires("all"), Ok(Readiness::All));
        assert_eq!(
            ready_requires("github, docs"),
            Ok(Readiness::servers(["github", "docs"]))
        );
        assert!(ready_requires("github,").is_err());
        assert!(ready_requires("").is_err());
        let file = switchboard::ConfigFile::parse(
            r#"{"mcpServers": {"github": {"command": "gh"}, "old": {"command": "o", "disabled": true}}}"#,
            std::path::Path::new("servers.json"),
        )
        .unwrap();
        assert!(check_required(&Readiness::All, &file).is_ok());
        assert!(check_required(&Readiness::servers(["github"]), &file).is_ok());
        for (name, why) in [("docs", "is not a server of"), ("old", "is disabled in")] {
            let Err(Failure::Usage(refused)) = check_required(&Readiness::servers([name]), &file)
            else {
                panic!("{name} was accepted");
            };
            assert!(
                refused.contains(why) && refused.contains("servers.json"),
                "{refused}"
            );
        }
    }

    #[test]
    fn sizes_take_binary_and_decimal_units() {
        assert_eq!(size("512MiB"), Ok(512 << 20));
        assert_eq!(size("2GiB"), Ok(2 << 30));
        assert_eq!(size("64 KB"), Ok(64_000));
        assert_eq!(size("4096"), Ok(4096));
        for bad in ["", "0", "MiB", "1.5GiB", "-1MiB", "12 parsecs"] {
            assert!(size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn session_keys_come_one_per_line_and_a_short_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("switchboard-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys");
        let long = "k".repeat(MIN_SECRET);
        std::fs::write(&path, format!("# the new one first\n{long}1\n\n{long}2\n")).unwrap();
        let keys = session_keys(Some(&path)).unwrap();
        assert_eq!(keys, vec![format!("{long}1"), format!("{long}2")]);
        std::fs::write(&path, format!("{long}\nshort\n")).unwrap();
        let Err(Failure::Usage(refused)) = session_keys(Some(&path)) else {
            panic!("a short secret was accepted");
        };
        assert!(
            refused.contains("secret 2 is shorter than 32 bytes"),
            "{refused}"
        );
        assert!(
            !refused.contains("short\n"),
            "the secret itself is never shown"
        );
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(session_keys(Some(&path)).is_err());
        assert!(session_keys(Some(&dir.join("missing"))).is_err());
        let _ = std::fs::remove_dir_all(&dir);
        assert_ne!(
            request_state_key(&long),
            long.as_bytes(),
            "derived, not the secret"
        );
    }
}
