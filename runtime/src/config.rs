//! How to reach and treat one server: its transport, timeouts and limits.
//!
//! ```
//! use std::time::Duration;
//! use switchboard::{ServerConfig, ToolPolicy};
//!
//! let config = ServerConfig::stdio("npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"])
//!     .env("LOG_LEVEL", "debug")
//!     .timeout(Duration::from_secs(20))
//!     .tool("trigger-long-running-operation", ToolPolicy::new().timeout(Duration::from_secs(5)).reset_on_progress(true));
//! # let _ = config;
//! ```

use std::collections::HashMap;
#[cfg(all(unix, feature = "stdio"))]
use std::ffi::OsStr;
use std::future::Future;
#[cfg(all(unix, feature = "stdio"))]
use std::path::PathBuf;
#[cfg(feature = "http")]
use std::sync::Arc;
use std::time::Duration;

use crate::catalogue::Naming;
use crate::client::{ClientHandlers, HANDLER_TIMEOUT};
use crate::client_values::{self, ClientValueError, ClientValues};
use crate::deadline::ToolPolicy;
use crate::era::Protocol;
use crate::isolation::{Isolation, IsolationPolicy, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_INSTANCES};
use crate::restart::{Liveness, RestartPolicy};
#[cfg(all(unix, feature = "stdio"))]
use crate::transport::Stdio;
use crate::transport::{Http, HttpKind, Memory, Specific, Transport};

/// Default bound on the handshake (`initialize` through the last `tools/list` page).
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on requests in flight per server.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 1024;
/// Rounds of input (2026-07-28) a request may ask for by default before the call fails.
pub(crate) const DEFAULT_MAX_INPUT_ROUNDS: u32 = 10;

/// Runtime-wide defaults; each server's own settings win over them (set through
/// [`RuntimeBuilder`](crate::RuntimeBuilder) and config files).
#[derive(Debug, Clone)]
pub(crate) struct Defaults {
    /// Request timeout (default 60 s).
    pub(crate) timeout: Duration,
    /// Handshake bound (default 30 s).
    pub(crate) startup_timeout: Duration,
    /// Requests in flight per server (default 1024).
    pub(crate) max_in_flight: usize,
    /// Restart policy (default [`RestartPolicy::default`]).
    pub(crate) restart: RestartPolicy,
    /// Liveness pings (default [`Liveness::default`]).
    pub(crate) liveness: Liveness,
    /// Catalogue naming (default conditional, `__`).
    pub(crate) naming: Naming,
    /// Handlers for requests servers send to the client (default none).
    pub(crate) handlers: Option<ClientHandlers>,
    /// How long a handler may take (default [`HANDLER_TIMEOUT`]).
    pub(crate) handler_timeout: Duration,
    /// Where the tasks the runtime starts are kept (default in memory).
    pub(crate) task_store: std::sync::Arc<dyn crate::task_store::TaskStore>,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            timeout: crate::deadline::DEFAULT_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            restart: RestartPolicy::default(),
            liveness: Liveness::default(),
            naming: Naming::default(),
            handlers: None,
            handler_timeout: HANDLER_TIMEOUT,
            task_store: std::sync::Arc::new(crate::task_store::MemoryTaskStore::new()),
        }
    }
}

/// One server's configuration: a transport plus optional timeouts and limits.
///
/// `T` is the transport while the configuration is built, so that only its own settings
/// can be given (a `ServerConfig<Stdio>` has `args`, a `ServerConfig<Http>` has `header`);
/// anything that takes a configuration takes `impl Into<ServerConfig>`, which erases it.
///
/// `Debug` never shows environment or header values.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig<T = Transport> {
    pub(crate) transport: T,
    pub(crate) timeout: Option<Duration>,
    pub(crate) tools: HashMap<String, ToolPolicy>,
    pub(crate) startup_timeout: Option<Duration>,
    pub(crate) max_in_flight: Option<usize>,
    pub(crate) restart: Option<RestartPolicy>,
    pub(crate) liveness: Option<Liveness>,
    pub(crate) allow_tools: Vec<String>,
    pub(crate) deny_tools: Vec<String>,
    pub(crate) prefix: Option<String>,
    pub(crate) handlers: Option<ClientHandlers>,
    pub(crate) handler_timeout: Option<Duration>,
    pub(crate) protocol: Protocol,
    pub(crate) max_input_rounds: Option<u32>,
    pub(crate) reissue_on_broken_stream: bool,
    pub(crate) min_list_freshness: Option<Duration>,
    pub(crate) isolation: Isolation,
    pub(crate) max_instances: Option<usize>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) list_as: Option<ClientValues>,
    #[cfg(feature = "oauth")]
    pub(crate) token_exchange: Option<crate::oauth::TokenExchange>,
    #[cfg(feature = "http")]
    pub(crate) client_auth: Option<Arc<dyn crate::client_values::ClientAuth>>,
}

impl<T: Specific> From<ServerConfig<T>> for ServerConfig {
    fn from(c: ServerConfig<T>) -> ServerConfig {
        c.map_transport(Into::into)
    }
}

impl ServerConfig {
    /// A server run as a child process over stdin/stdout: shorthand for
    /// `ServerConfig::new(Stdio::new(program))`.
    #[cfg(all(unix, feature = "stdio"))]
    pub fn stdio(program: impl AsRef<OsStr>) -> ServerConfig<Stdio> {
        ServerConfig::new(Stdio::new(program))
    }

    /// A remote server over HTTP: shorthand for `ServerConfig::new(Http::new(url, kind))`.
    pub fn http(url: impl Into<String>, kind: HttpKind) -> ServerConfig<Http> {
        ServerConfig::new(Http::new(url, kind))
    }

    /// A server running in this process: shorthand for
    /// `ServerConfig::new(Memory::new(serve))`.
    pub fn memory<F, Fut>(serve: F) -> ServerConfig<Memory>
    where
        F: Fn(tokio::io::DuplexStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        ServerConfig::new(Memory::new(serve))
    }

    /// Which transport the server is configured with.
    pub fn transport_kind(&self) -> crate::transport::TransportKind {
        self.transport.kind()
    }

    /// The isolation and its bounds, defaults filled in. A server that uses per-client values
    /// is [`Isolation::Client`] unless it says [`Isolation::Session`].
    pub fn isolation_policy(&self) -> IsolationPolicy {
        let isolation = match self.isolation {
            Isolation::Shared if self.per_client() => Isolation::Client,
            isolation => isolation,
        };
        IsolationPolicy {
            isolation,
            max_instances: self.max_instances.unwrap_or(DEFAULT_MAX_INSTANCES),
            idle_timeout: self.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT),
        }
    }

    /// Whether each client of a gateway runs its own instance of the server with its own
    /// values: the config uses per-client values (`${client.…}`, see
    /// [`client_values`](crate::client_values)), or exchanges each client's token.
    pub fn per_client(&self) -> bool {
        self.uses_client_values() || self.exchanges_tokens()
    }

    /// Whether the config uses per-client values (`${client.…}`).
    pub(crate) fn uses_client_values(&self) -> bool {
        self.transport.texts().any(client_values::uses)
    }

    /// Whether each client's instance authenticates as that client (RFC 8693 token
    /// exchange, per-user OAuth).
    fn exchanges_tokens(&self) -> bool {
        #[cfg(feature = "http")]
        return self.client_auth.is_some();
        #[cfg(not(feature = "http"))]
        false
    }

    /// Gives each client's instance of this HTTP server its own auth hook (see
    /// [`ClientAuth`](crate::client_values::ClientAuth)): the server then runs an instance
    /// per client. The runtime's own instance keeps the server's configured hook.
    #[cfg(feature = "http")]
    pub fn client_auth(mut self, hook: Arc<dyn crate::client_values::ClientAuth>) -> Self {
        self.client_auth = Some(hook);
        self
    }

    /// Exchanges each client's token for one meant for this HTTP server (RFC 8693), and
    /// lists its tools with the client credentials grant of the same client: see
    /// [`TokenExchange`](crate::oauth::TokenExchange). The server runs an instance per
    /// client; it is the config key `auth.tokenExchange`. Replaces the server's auth hook.
    #[cfg(feature = "oauth")]
    pub fn token_exchange(mut self, exchange: crate::oauth::TokenExchange) -> Self {
        if let Transport::Http(http) = &mut self.transport {
            http.auth = Some(exchange.for_gateway());
        }
        self.client_auth = Some(Arc::new(exchange.clone()));
        self.token_exchange = Some(exchange);
        self
    }

    /// The server's token exchange, when it has one.
    #[cfg(feature = "oauth")]
    pub fn exchange(&self) -> Option<&crate::oauth::TokenExchange> {
        self.token_exchange.as_ref()
    }

    /// Checks that every per-client value the config uses is one that can be filled.
    pub(crate) fn check_client_values(&self) -> Result<(), ClientValueError> {
        self.transport.texts().try_for_each(client_values::check)
    }

    /// This config with its per-client values filled from `values`, and the values filled,
    /// in order: two clients whose values used are equal run the same command.
    pub(crate) fn fill_for(
        &self,
        values: &ClientValues,
    ) -> Result<(ServerConfig, Vec<String>), ClientValueError> {
        let mut used = Vec::new();
        #[allow(unused_mut)]
        let mut transport = self
            .transport
            .try_map_texts(|text| client_values::fill(text, values, &mut used))?;
        #[cfg(feature = "http")]
        if let (Some(hook), Transport::Http(http)) = (&self.client_auth, &mut transport) {
            http.auth = Some(hook.for_client(values)?);
        }
        Ok((
            ServerConfig {
                transport,
                ..self.clone()
            },
            used,
        ))
    }

    /// The values `values` gives the per-client values this config uses, in order, or why
    /// one cannot be filled: what [`fill_for`](Self::fill_for) would use, without making a
    /// config.
    pub(crate) fn values_used(
        &self,
        values: &ClientValues,
    ) -> Result<Vec<String>, ClientValueError> {
        let mut used = Vec::new();
        for text in self.transport.texts().filter(|t| client_values::uses(t)) {
            client_values::fill(text, values, &mut used)?;
        }
        Ok(used)
    }

    /// The transport the runtime's own instance opens: the configured one, its per-client
    /// values (if any) filled from the values named to list with.
    pub(crate) fn opening_transport(&self) -> Result<Transport, ClientValueError> {
        if !self.uses_client_values() {
            return Ok(self.transport.clone());
        }
        let values = self
            .list_as
            .as_ref()
            .ok_or(ClientValueError::NothingToListWith)?;
        Ok(self.fill_for(values)?.0.transport)
    }

    /// Fills every setting the server leaves open from the runtime's defaults.
    pub(crate) fn resolve(mut self, defaults: &Defaults) -> ServerConfig {
        self.timeout.get_or_insert(defaults.timeout);
        self.startup_timeout.get_or_insert(defaults.startup_timeout);
        self.max_in_flight.get_or_insert(defaults.max_in_flight);
        self.restart.get_or_insert_with(|| defaults.restart.clone());
        self.liveness
            .get_or_insert_with(|| defaults.liveness.clone());
        if self.handlers.is_none() {
            self.handlers = defaults.handlers.clone();
        }
        self.handler_timeout.get_or_insert(defaults.handler_timeout);
        self
    }

    /// The handshake bound (after [`resolve`](Self::resolve)).
    pub(crate) fn startup_timeout_value(&self) -> Duration {
        self.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }

    /// How long a handler may take (after [`resolve`](Self::resolve)).
    pub(crate) fn handler_timeout_value(&self) -> Duration {
        self.handler_timeout.unwrap_or(HANDLER_TIMEOUT)
    }

    /// The input-required rounds allowed per request.
    pub(crate) fn max_input_rounds_value(&self) -> u32 {
        self.max_input_rounds.unwrap_or(DEFAULT_MAX_INPUT_ROUNDS)
    }

    /// The shortest time a stateless server's list counts as fresh.
    pub(crate) fn min_list_freshness_value(&self) -> Duration {
        self.min_list_freshness
            .unwrap_or(crate::freshness::MIN_FRESH)
    }

    /// The in-flight bound (after [`resolve`](Self::resolve)).
    pub(crate) fn max_in_flight_value(&self) -> usize {
        self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT)
    }
}

impl<T> ServerConfig<T> {
    /// A server reached through `transport`, with every other setting left to the runtime.
    pub fn new(transport: T) -> Self {
        ServerConfig {
            transport,
            timeout: None,
            tools: HashMap::new(),
            startup_timeout: None,
            max_in_flight: None,
            restart: None,
            liveness: None,
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            prefix: None,
            handlers: None,
            handler_timeout: None,
            protocol: Protocol::Auto,
            max_input_rounds: None,
            reissue_on_broken_stream: false,
            min_list_freshness: None,
            isolation: Isolation::Shared,
            max_instances: None,
            idle_timeout: None,
            list_as: None,
            #[cfg(feature = "oauth")]
            token_exchange: None,
            #[cfg(feature = "http")]
            client_auth: None,
        }
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    fn map_transport<U>(self, f: impl FnOnce(T) -> U) -> ServerConfig<U> {
        ServerConfig {
            transport: f(self.transport),
            timeout: self.timeout,
            tools: self.tools,
            startup_timeout: self.startup_timeout,
            max_in_flight: self.max_in_flight,
            restart: self.restart,
            liveness: self.liveness,
            allow_tools: self.allow_tools,
            deny_tools: self.deny_tools,
            prefix: self.prefix,
            handlers: self.handlers,
            handler_timeout: self.handler_timeout,
            protocol: self.protocol,
            max_input_rounds: self.max_input_rounds,
            reissue_on_broken_stream: self.reissue_on_broken_stream,
            min_list_freshness: self.min_list_freshness,
            isolation: self.isolation,
            max_instances: self.max_instances,
            idle_timeout: self.idle_timeout,
            list_as: self.list_as,
            #[cfg(feature = "oauth")]
            token_exchange: self.token_exchange,
            #[cfg(feature = "http")]
            client_auth: self.client_auth,
        }
    }

    /// Who gets an instance of this server of its own behind a gateway (see
    /// [`isolation`](crate::isolation); default [`Isolation::Shared`]).
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// At most this many instances of an isolated server at once (default
    /// [`DEFAULT_MAX_INSTANCES`]; at least 1).
    pub fn max_instances(mut self, max: usize) -> Self {
        self.max_instances = Some(max.max(1));
        self
    }

    /// How long an instance of an isolated server may sit idle before it is stopped
    /// (default [`DEFAULT_IDLE_TIMEOUT`]).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// The values the runtime's own instance of a server that uses per-client values is
    /// started with: the instance that lists its tools for every client (see
    /// [`client_values`](crate::client_values); config key `listAs`). Without them, only
    /// clients' own instances of such a server run.
    pub fn list_as(mut self, values: ClientValues) -> Self {
        self.list_as = Some(values);
        self
    }

    /// Answers the server's own requests (roots, sampling, elicitation) for this server;
    /// beats the runtime's handlers. Capabilities are declared from what the handlers provide.
    pub fn client_handlers(mut self, handlers: ClientHandlers) -> Self {
        self.handlers = Some(handlers);
        self
    }

    /// How long this server's requests may wait for a handler before they are answered with
    /// a JSON-RPC error (beats [`RuntimeBuilder::handler_timeout`](crate::RuntimeBuilder::handler_timeout);
    /// default [`HANDLER_TIMEOUT`]).
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = Some(timeout);
        self
    }

    /// Which protocol era to speak to the server (default [`Protocol::Auto`]: probe with
    /// `server/discover`, fall back to `initialize`).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// How many input-required rounds (2026-07-28) one request to this server may take
    /// before it fails with [`ErrorKind::InputLoop`](crate::ErrorKind::InputLoop) (default 10).
    pub fn max_input_rounds(mut self, rounds: u32) -> Self {
        self.max_input_rounds = Some(rounds);
        self
    }

    /// Whether this server's tool calls are sent again, under a new id, when their response
    /// breaks before the answer and cannot be resumed (over HTTP); a tool's
    /// [`ToolPolicy::reissue_on_broken_stream`] beats it. Only for servers whose tools are
    /// all safe to run twice. Off by default. Lists, reads, prompt gets, completions and
    /// pings are always sent again: they change nothing.
    pub fn reissue_on_broken_stream(mut self, reissue: bool) -> Self {
        self.reissue_on_broken_stream = reissue;
        self
    }

    /// The shortest time a stateless (2026-07-28) server's list (tools, resources, prompts)
    /// counts as fresh, whatever its `ttlMs` says (default 1 s): with `ttlMs: 0` a list
    /// would otherwise be fetched again before every call. `Duration::ZERO` honours `ttlMs`
    /// exactly.
    pub fn min_list_freshness(mut self, floor: Duration) -> Self {
        self.min_list_freshness = Some(floor);
        self
    }

    /// The server's request timeout (beats the runtime default; per-tool and per-call
    /// timeouts beat it).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The deadline rules for one tool of this server.
    pub fn tool(mut self, tool: impl Into<String>, policy: ToolPolicy) -> Self {
        self.tools.insert(tool.into(), policy);
        self
    }

    /// Shorthand for [`tool`](Self::tool) with just a timeout.
    pub fn tool_timeout(self, tool: impl Into<String>, timeout: Duration) -> Self {
        self.tool(tool, ToolPolicy::new().timeout(timeout))
    }

    /// Bounds the start (default 30 s): opening the connection, the era probe
    /// (`server/discover`, see [`Protocol::Auto`]), the handshake and the first `tools/list`,
    /// together. Past it the connection is closed: `initialize` is never cancelled, as the
    /// specification requires.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// The start's bound this configuration sets ([`startup_timeout`](Self::startup_timeout)),
    /// if it sets one; `None` leaves it to the runtime's default. Named as
    /// [`std::process::Command`] names its getters, beside the setter of the same name.
    pub fn get_startup_timeout(&self) -> Option<Duration> {
        self.startup_timeout
    }

    /// Bounds the requests in flight to this server (default 1024, at least 1). Past it a
    /// call waits for a slot within its own deadline, then fails with
    /// [`ErrorKind::Overloaded`](crate::ErrorKind::Overloaded).
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = Some(max.max(1));
        self
    }

    /// How the server is restarted when it goes down (default: the runtime's policy).
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = Some(policy);
        self
    }

    /// Liveness pings while idle (default: the runtime's setting).
    pub fn liveness(mut self, liveness: Liveness) -> Self {
        self.liveness = Some(liveness);
        self
    }

    /// Only tools whose original names match one of these globs (`*`, `?`) are listed and
    /// callable. Empty means all.
    pub fn allow_tools<I, S>(mut self, globs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow_tools = globs.into_iter().map(Into::into).collect();
        self
    }

    /// Tools whose original names match one of these globs are neither listed nor callable,
    /// by any name.
    pub fn deny_tools<I, S>(mut self, globs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny_tools = globs.into_iter().map(Into::into).collect();
        self
    }

    /// The string used instead of the server's name when its tools are prefixed in the
    /// catalogue.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }
}

#[cfg(all(unix, feature = "stdio"))]
impl ServerConfig<Stdio> {
    fn stdio_with(mut self, f: impl FnOnce(Stdio) -> Stdio) -> Self {
        self.transport = f(self.transport);
        self
    }

    /// Adds a command-line argument.
    pub fn arg(self, arg: impl AsRef<OsStr>) -> Self {
        self.stdio_with(|t| t.arg(arg))
    }

    /// Adds command-line arguments.
    pub fn args<I, S>(self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.stdio_with(|t| t.args(args))
    }

    /// Sets an environment variable for the child.
    pub fn env(self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.stdio_with(|t| t.env(key, value))
    }

    /// Starts the child from an empty environment instead of this process's.
    pub fn clear_env(self, clear: bool) -> Self {
        self.stdio_with(|t| t.clear_env(clear))
    }

    /// Sets the child's working directory.
    pub fn cwd(self, dir: impl Into<PathBuf>) -> Self {
        self.stdio_with(|t| t.cwd(dir))
    }

    /// Sets the graceful-close waits: after closing stdin, and after `SIGTERM`.
    pub fn close_timeouts(self, stdin_grace: Duration, term_grace: Duration) -> Self {
        self.stdio_with(|t| t.close_timeouts(stdin_grace, term_grace))
    }

    /// Bounds one inbound frame (default 16 MiB); longer lines are skipped and reported.
    pub fn max_frame_length(self, max: usize) -> Self {
        self.stdio_with(|t| t.max_frame_length(max))
    }
}

impl ServerConfig<Http> {
    /// Adds a static HTTP header. Values never appear in logs, errors or `Debug` output.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.transport = self.transport.header(name, value);
        self
    }

    /// A static bearer token. Never logged or shown.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.transport = self.transport.bearer_token(token);
        self
    }

    /// A hook asked for a bearer token before each request, and again when the server
    /// refuses one (401, or 403 `insufficient_scope`) with the `WWW-Authenticate` parameters;
    /// [`oauth::OAuth`](crate::oauth::OAuth) is the one that does MCP authorization.
    #[cfg(feature = "http")]
    pub fn auth(mut self, auth: Arc<dyn crate::transport::Auth>) -> Self {
        self.transport = self.transport.auth(auth);
        self
    }
}
