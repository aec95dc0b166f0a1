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
//!     .tool("trigger-long-running-operation", ToolPolicy::timeout(Duration::from_secs(5)).with_reset_on_progress(true));
//! # let _ = config;
//! ```

use std::collections::HashMap;
#[cfg(all(unix, feature = "stdio"))]
use std::ffi::OsStr;
use std::fmt;
use std::future::Future;
#[cfg(all(unix, feature = "stdio"))]
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::connection::BoxFuture;

use crate::catalogue::Naming;
use crate::client::ClientHandlers;
use crate::deadline::ToolPolicy;
use crate::restart::{Liveness, RestartPolicy};

/// Default bound on the handshake (`initialize` through the last `tools/list` page).
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on requests in flight per server.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// Runtime-wide defaults; each server's own settings win over them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Defaults {
    /// Request timeout (default 60 s).
    pub timeout: Duration,
    /// Handshake bound (default 30 s).
    pub startup_timeout: Duration,
    /// Requests in flight per server (default 1024).
    pub max_in_flight: usize,
    /// Restart policy (default [`RestartPolicy::default`]).
    pub restart: RestartPolicy,
    /// Liveness pings (default [`Liveness::default`]).
    pub liveness: Liveness,
    /// Catalogue naming (default conditional, `__`).
    pub naming: Naming,
    /// Handlers for requests servers send to the client (default none).
    pub handlers: Option<ClientHandlers>,
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
        }
    }
}

/// An in-process server: called with the server's end of a duplex stream on each connect.
pub(crate) type MemoryServe = Arc<dyn Fn(tokio::io::DuplexStream) -> BoxFuture<()> + Send + Sync>;

/// Which HTTP transport a remote server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpKind {
    /// The 2024-11-05 HTTP+SSE transport (`type: "sse"`).
    Sse,
    /// Streamable HTTP (`type: "http"` / `"streamable-http"`).
    StreamableHttp,
    /// Streamable HTTP, falling back to HTTP+SSE for old servers (a `url` without a type).
    Auto,
}

/// A remote server's address and static headers.
#[derive(Clone)]
pub(crate) struct HttpTarget {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) kind: HttpKind,
    pub(crate) bearer: Option<String>,
    #[cfg(feature = "http")]
    pub(crate) auth: Option<Arc<dyn switchboard_transports::http::Auth>>,
}

impl fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials: names only.
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpTarget")
            .field("url", &self.url)
            .field("headers", &names)
            .field("kind", &self.kind)
            .finish()
    }
}

/// How the runtime reaches a server.
#[derive(Clone)]
pub(crate) enum Transport {
    #[cfg(all(unix, feature = "stdio"))]
    Stdio(switchboard_transports::stdio::Config),
    Memory(MemoryServe),
    Http(HttpTarget),
}

impl Transport {
    /// `stdio`, `memory`, `sse`, `http` or `auto`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(_) => "stdio",
            Transport::Memory(_) => "memory",
            Transport::Http(t) => match t.kind {
                HttpKind::Sse => "sse",
                HttpKind::StreamableHttp => "http",
                HttpKind::Auto => "auto",
            },
        }
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(c) => f.debug_tuple("Stdio").field(c).finish(),
            Transport::Memory(_) => f.write_str("Memory"),
            Transport::Http(t) => f.debug_tuple("Http").field(t).finish(),
        }
    }
}

/// One server's configuration: a transport plus optional timeouts and limits.
///
/// `Debug` never shows environment values.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    pub(crate) transport: Transport,
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
}

impl ServerConfig {
    fn with_transport(transport: Transport) -> Self {
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
        }
    }

    /// A remote server over HTTP: Streamable HTTP, or the legacy HTTP+SSE transport, or
    /// Streamable HTTP with a fallback to HTTP+SSE (`HttpKind::Auto`).
    pub fn http(url: impl Into<String>, kind: HttpKind) -> Self {
        Self::with_transport(Transport::Http(HttpTarget {
            url: url.into(),
            headers: Vec::new(),
            kind,
            bearer: None,
            #[cfg(feature = "http")]
            auth: None,
        }))
    }

    /// A static bearer token (HTTP servers; ignored otherwise). Never logged or shown.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Transport::Http(t) = &mut self.transport {
            t.bearer = Some(token.into());
        }
        self
    }

    /// An auth hook asked for a bearer token before each request and once more on a 401
    /// with the `WWW-Authenticate` parameters (HTTP servers; ignored otherwise).
    #[cfg(feature = "http")]
    pub fn auth(mut self, auth: Arc<dyn switchboard_transports::http::Auth>) -> Self {
        if let Transport::Http(t) = &mut self.transport {
            t.auth = Some(auth);
        }
        self
    }

    /// Answers the server's own requests (elicitation, …) for this server; beats the
    /// runtime's handlers. Capabilities are declared from what the handlers provide.
    pub fn client_handlers(mut self, handlers: ClientHandlers) -> Self {
        self.handlers = Some(handlers);
        self
    }

    /// Adds a static HTTP header (HTTP servers; ignored otherwise). Values never appear in
    /// logs, errors or `Debug` output.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Http(t) = &mut self.transport {
            t.headers.push((name.into(), value.into()));
        }
        self
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
        self
    }

    /// The handshake bound (after [`resolve`](Self::resolve)).
    pub(crate) fn startup_timeout_value(&self) -> Duration {
        self.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }

    /// The in-flight bound (after [`resolve`](Self::resolve)).
    pub(crate) fn max_in_flight_value(&self) -> usize {
        self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT)
    }

    /// The transport's kind: `stdio`, `memory`, `sse`, `http` or `auto`.
    pub fn transport_kind(&self) -> &'static str {
        self.transport.kind()
    }

    /// A server run as a child process speaking MCP over stdin/stdout, started directly
    /// (never through a shell).
    ///
    /// The child inherits this process's environment with [`env`](Self::env) applied on top;
    /// [`clear_env`](Self::clear_env) starts from an empty one.
    #[cfg(all(unix, feature = "stdio"))]
    pub fn stdio(program: impl AsRef<OsStr>) -> Self {
        Self::with_transport(Transport::Stdio(
            switchboard_transports::stdio::Config::new(program),
        ))
    }

    /// A server running in this process: `serve` is called with the server's end of an
    /// in-memory duplex stream (newline-delimited JSON) each time the runtime connects, and
    /// the future it returns runs on the runtime's actor thread.
    pub fn memory<F, Fut>(serve: F) -> Self
    where
        F: Fn(tokio::io::DuplexStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self::with_transport(Transport::Memory(Arc::new(move |io| Box::pin(serve(io)))))
    }

    #[cfg(all(unix, feature = "stdio"))]
    fn map_stdio(
        mut self,
        f: impl FnOnce(switchboard_transports::stdio::Config) -> switchboard_transports::stdio::Config,
    ) -> Self {
        if let Transport::Stdio(c) = self.transport {
            self.transport = Transport::Stdio(f(c));
        }
        self
    }

    /// Adds a command-line argument (stdio servers; ignored otherwise).
    #[cfg(all(unix, feature = "stdio"))]
    pub fn arg(self, arg: impl AsRef<OsStr>) -> Self {
        self.map_stdio(|c| c.arg(arg))
    }

    /// Adds command-line arguments (stdio servers; ignored otherwise).
    #[cfg(all(unix, feature = "stdio"))]
    pub fn args<I, S>(self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.map_stdio(|c| c.args(args))
    }

    /// Sets an environment variable for the child (stdio servers; ignored otherwise).
    #[cfg(all(unix, feature = "stdio"))]
    pub fn env(self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.map_stdio(|c| c.env(key, value))
    }

    /// Starts the child from an empty environment instead of this process's (stdio servers).
    #[cfg(all(unix, feature = "stdio"))]
    pub fn clear_env(self, clear: bool) -> Self {
        self.map_stdio(|c| c.clear_env(clear))
    }

    /// Sets the child's working directory (stdio servers; ignored otherwise).
    #[cfg(all(unix, feature = "stdio"))]
    pub fn cwd(self, dir: impl Into<PathBuf>) -> Self {
        self.map_stdio(|c| c.cwd(dir))
    }

    /// Sets the graceful-close waits: after closing stdin, and after `SIGTERM`.
    #[cfg(all(unix, feature = "stdio"))]
    pub fn close_timeouts(self, stdin_grace: Duration, term_grace: Duration) -> Self {
        self.map_stdio(|c| c.close_timeouts(stdin_grace, term_grace))
    }

    /// Bounds one inbound frame (default 16 MiB); longer lines are skipped and reported.
    #[cfg(all(unix, feature = "stdio"))]
    pub fn max_frame_length(self, max: usize) -> Self {
        self.map_stdio(|c| c.max_frame_length(max))
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
        self.tool(tool, ToolPolicy::timeout(timeout))
    }

    /// Bounds the handshake (default 30 s). Past it the connection is closed: `initialize`
    /// is never cancelled, as the specification requires.
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// Bounds the requests in flight to this server (default 1024, at least 1). Past it a
    /// call waits for a slot within its own deadline, then fails with
    /// [`Error::Overloaded`](crate::Error::Overloaded).
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
