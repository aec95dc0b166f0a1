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
use std::ffi::OsStr;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::connection::BoxFuture;

use crate::deadline::ToolPolicy;

/// Default bound on the handshake (`initialize` through the last `tools/list` page).
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on requests in flight per server.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// An in-process server: called with the server's end of a duplex stream on each connect.
pub(crate) type MemoryServe = Arc<dyn Fn(tokio::io::DuplexStream) -> BoxFuture<()> + Send + Sync>;

/// How the runtime reaches a server.
#[derive(Clone)]
pub(crate) enum Transport {
    #[cfg(all(unix, feature = "stdio"))]
    Stdio(switchboard_transports::stdio::Config),
    Memory(MemoryServe),
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(c) => f.debug_tuple("Stdio").field(c).finish(),
            Transport::Memory(_) => f.write_str("Memory"),
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
    pub(crate) startup_timeout: Duration,
    pub(crate) max_in_flight: usize,
}

impl ServerConfig {
    fn with_transport(transport: Transport) -> Self {
        ServerConfig {
            transport,
            timeout: None,
            tools: HashMap::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
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
        self.startup_timeout = timeout;
        self
    }

    /// Bounds the requests in flight to this server (default 256, at least 1). Past it a
    /// call waits for a slot within its own deadline, then fails with
    /// [`Error::Overloaded`](crate::Error::Overloaded).
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }
}
