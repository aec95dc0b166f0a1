//! How the runtime reaches a server: one value per transport, each with only the settings
//! that transport has.
//!
//! A [`ServerConfig`](crate::ServerConfig) is built from one of them, and keeps its type
//! while it is configured, so that a stdio setting cannot be given to an HTTP server:
//!
//! ```
//! use std::time::Duration;
//! use switchboard::transport::{Http, HttpKind, Stdio};
//! use switchboard::ServerConfig;
//!
//! let local = ServerConfig::new(Stdio::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]))
//!     .timeout(Duration::from_secs(20));
//! let remote = ServerConfig::new(Http::new("https://mcp.example.com/mcp", HttpKind::Auto).bearer_token("secret"));
//! // The same, with the shorthands that keep the transport's own setters at hand:
//! let local_too = ServerConfig::stdio("npx").args(["-y", "@modelcontextprotocol/server-everything"]);
//! # let _ = (local, remote, local_too);
//! ```

#[cfg(all(unix, feature = "stdio"))]
use std::ffi::OsStr;
use std::fmt;
use std::future::Future;
#[cfg(all(unix, feature = "stdio"))]
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(all(unix, feature = "stdio"))]
use std::time::Duration;

use switchboard_transports::connection::BoxFuture;

#[cfg(feature = "http")]
pub use switchboard_transports::http::{Auth, Challenge};

/// A server run as a child process speaking MCP over stdin/stdout, started directly (never
/// through a shell).
///
/// The child inherits this process's environment with [`env`](Self::env) applied on top;
/// [`clear_env`](Self::clear_env) starts from an empty one. `Debug` never shows environment
/// values.
#[cfg(all(unix, feature = "stdio"))]
#[derive(Debug, Clone)]
pub struct Stdio {
    pub(crate) config: switchboard_transports::stdio::Config,
}

#[cfg(all(unix, feature = "stdio"))]
impl Stdio {
    /// The program to run.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Stdio {
            config: switchboard_transports::stdio::Config::new(program),
        }
    }

    /// Adds a command-line argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.config = self.config.arg(arg);
        self
    }

    /// Adds command-line arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.config = self.config.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.config = self.config.env(key, value);
        self
    }

    /// Starts the child from an empty environment instead of this process's.
    pub fn clear_env(mut self, clear: bool) -> Self {
        self.config = self.config.clear_env(clear);
        self
    }

    /// Sets the child's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config = self.config.cwd(dir);
        self
    }

    /// Sets the graceful-close waits: after closing stdin, and after `SIGTERM`.
    pub fn close_timeouts(mut self, stdin_grace: Duration, term_grace: Duration) -> Self {
        self.config = self.config.close_timeouts(stdin_grace, term_grace);
        self
    }

    /// Bounds one inbound frame (default 16 MiB); longer lines are skipped and reported.
    pub fn max_frame_length(mut self, max: usize) -> Self {
        self.config = self.config.max_frame_length(max);
        self
    }
}

/// Which HTTP transport a remote server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpKind {
    /// The 2024-11-05 HTTP+SSE transport (`"type": "sse"`).
    Sse,
    /// Streamable HTTP only (`"type": "streamable-http"`).
    StreamableHttp,
    /// Streamable HTTP, falling back to HTTP+SSE when the server refuses the `initialize`
    /// POST with 400, 404 or 405 (`"type": "http"`, or a `url` without a type).
    Auto,
}

/// A remote server over HTTP.
///
/// `Debug` shows header names, never their values, nor the bearer token.
#[derive(Clone)]
pub struct Http {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) kind: HttpKind,
    pub(crate) bearer: Option<String>,
    #[cfg(feature = "http")]
    pub(crate) auth: Option<Arc<dyn Auth>>,
}

impl Http {
    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's URL and which HTTP transport it speaks.
    pub fn new(url: impl Into<String>, kind: HttpKind) -> Self {
        Http {
            url: url.into(),
            headers: Vec::new(),
            kind,
            bearer: None,
            #[cfg(feature = "http")]
            auth: None,
        }
    }

    /// Adds a static header. Values never appear in logs, errors or `Debug` output.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A static bearer token. Never logged or shown.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// A hook asked for a bearer token before each request, and again when the server
    /// refuses one (401, or 403 `insufficient_scope`) with the `WWW-Authenticate` parameters;
    /// [`oauth::OAuth`](crate::oauth::OAuth) is the one that does MCP authorization.
    #[cfg(feature = "http")]
    pub fn auth(mut self, auth: Arc<dyn Auth>) -> Self {
        self.auth = Some(auth);
        self
    }
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Http")
            .field("url", &self.url)
            .field("headers", &names)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A server running in this process, reached over an in-memory duplex stream.
#[derive(Clone)]
pub struct Memory {
    pub(crate) serve: Arc<dyn Fn(tokio::io::DuplexStream) -> BoxFuture<()> + Send + Sync>,
}

impl Memory {
    /// `serve` is called with the server's end of an in-memory duplex stream
    /// (newline-delimited JSON) each time the runtime connects; the future it returns runs
    /// where the runtime does its connections' I/O.
    pub fn new<F, Fut>(serve: F) -> Self
    where
        F: Fn(tokio::io::DuplexStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Memory {
            serve: Arc::new(move |io| Box::pin(serve(io))),
        }
    }
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Memory")
    }
}

/// Any transport: what a [`ServerConfig`](crate::ServerConfig) holds once its transport no
/// longer matters to the code holding it (a list of servers, a config file).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Transport {
    /// A child process over stdin/stdout.
    #[cfg(all(unix, feature = "stdio"))]
    Stdio(Stdio),
    /// A remote server over HTTP.
    Http(Http),
    /// A server in this process.
    Memory(Memory),
}

impl Transport {
    /// Which transport this is (for HTTP, as configured: [`TransportKind::Auto`] until the
    /// server has answered).
    pub fn kind(&self) -> TransportKind {
        match self {
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(_) => TransportKind::Stdio,
            Transport::Memory(_) => TransportKind::Memory,
            Transport::Http(t) => match t.kind {
                HttpKind::Sse => TransportKind::Sse,
                HttpKind::StreamableHttp => TransportKind::StreamableHttp,
                HttpKind::Auto => TransportKind::Auto,
            },
        }
    }

    /// The config strings per-client values may be used in: a stdio server's arguments and
    /// environment values, an HTTP server's URL, headers and bearer token.
    pub(crate) fn texts(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(stdio) => Box::new(stdio.config.texts()),
            Transport::Http(http) => Box::new(
                std::iter::once(http.url.as_str())
                    .chain(http.headers.iter().map(|(_, v)| v.as_str()))
                    .chain(http.bearer.as_deref()),
            ),
            Transport::Memory(_) => Box::new(std::iter::empty()),
        }
    }

    /// The same transport with each of its [`texts`](Self::texts) passed through `f`.
    pub(crate) fn try_map_texts<E>(
        &self,
        mut f: impl FnMut(&str) -> Result<String, E>,
    ) -> Result<Transport, E> {
        Ok(match self {
            #[cfg(all(unix, feature = "stdio"))]
            Transport::Stdio(stdio) => Transport::Stdio(Stdio {
                config: stdio.config.try_map_texts(f)?,
            }),
            Transport::Http(http) => {
                let mut http = http.clone();
                http.url = f(&http.url)?;
                for (_, value) in &mut http.headers {
                    *value = f(value)?;
                }
                if let Some(bearer) = &mut http.bearer {
                    *bearer = f(bearer)?;
                }
                Transport::Http(http)
            }
            Transport::Memory(memory) => Transport::Memory(memory.clone()),
        })
    }
}

/// The transport of a server, as [`ServerStatus`](crate::ServerStatus) shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process over stdin/stdout.
    Stdio,
    /// A server in this process.
    Memory,
    /// Streamable HTTP.
    StreamableHttp,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// HTTP, not yet known to be Streamable HTTP or HTTP+SSE (the server has not answered).
    Auto,
}

impl TransportKind {
    /// `stdio`, `memory`, `http` (Streamable HTTP), `sse` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Memory => "memory",
            TransportKind::StreamableHttp => "http",
            TransportKind::Sse => "sse",
            TransportKind::Auto => "auto",
        }
    }
}

impl From<switchboard_transports::connection::Kind> for TransportKind {
    /// The kind a connection reports.
    fn from(kind: switchboard_transports::connection::Kind) -> Self {
        use switchboard_transports::connection::Kind;
        match kind {
            Kind::Memory => TransportKind::Memory,
            Kind::StreamableHttp => TransportKind::StreamableHttp,
            Kind::Sse => TransportKind::Sse,
            // `Kind` is non-exhaustive; a new process transport is stdio-like.
            _ => TransportKind::Stdio,
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The transports a [`ServerConfig`](crate::ServerConfig) can be built from; sealed.
pub trait Specific: sealed::Sealed + Into<Transport> + Clone + fmt::Debug {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! specific {
    ($(#[$cfg:meta])* $ty:ident) => {
        $(#[$cfg])*
        impl sealed::Sealed for $ty {}
        $(#[$cfg])*
        impl Specific for $ty {}
        $(#[$cfg])*
        impl From<$ty> for Transport {
            fn from(t: $ty) -> Transport {
                Transport::$ty(t)
            }
        }
    };
}

specific!(
    #[cfg(all(unix, feature = "stdio"))]
    Stdio
);
specific!(Http);
specific!(Memory);
