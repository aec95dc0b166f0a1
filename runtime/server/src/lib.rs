//! Serving MCP, written once for both protocol eras and every server transport.
//!
//! A server is an application's [`Handler`] (tools, resources and templates, prompts,
//! completion) plus the protocol around it, which this crate provides: in the handshake era
//! (2024-11-05 … 2025-11-25) `initialize` with version negotiation and capabilities, `ping`,
//! `logging/setLevel`, cancellation of a running handler by `notifications/cancelled`,
//! progress and `list_changed` out, resource subscriptions, and requests to the client from
//! inside a handler; in the stateless era (2026-07-28) `server/discover`, the `_meta` every
//! request carries, input-required rounds with a `requestState` the server seals (a tampered
//! one is refused), `subscriptions/listen`, `ttlMs`/`cacheScope`, and on HTTP the header
//! checks. The same handler serves both: [`Context::input`] asks the client in whichever
//! way the request's era wants.
//!
//! [`Server`] serves over stdio ([`Server::serve_stdio`], or any byte stream with
//! [`Server::serve`]) and over Streamable HTTP ([`Server::serve_http`], feature `http`).
//! Handlers run concurrently, each request that waits on its own task; nothing a handler
//! that waits or a slow client does stalls another.
//!
//! Most servers are assembled from async functions by [`Server::builder`]: a tool is a
//! function of a type that derives `Deserialize` and [`schemars::JsonSchema`], whose schema
//! is its `inputSchema` (see [`typed`] for every shape a function can take). Skills (the
//! extension `io.modelcontextprotocol/skills`) are added from code or from a folder of
//! `SKILL.md` files (see [`skills`]).
//!
//! ```no_run
//! use switchboard_server::{Server, ToolError};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add {
//!     a: i64,
//!     b: i64,
//! }
//!
//! async fn add(Add { a, b }: Add) -> Result<String, ToolError> {
//!     Ok((a + b).to_string())
//! }
//!
//! # async fn run() -> Result<(), switchboard_server::Error> {
//! Server::builder("adder", "1.0.0")
//!     .tool("add", "Adds two numbers", add)
//!     .build()?
//!     .serve_stdio()
//!     .await
//! # }
//! ```
//!
//! A [`Handler`] of one's own says everything itself, as raw JSON:
//!
//! ```no_run
//! use std::borrow::Cow;
//! use std::sync::Arc;
//! use serde_json::{json, Value};
//! use switchboard_server::{
//!     Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply, Server,
//! };
//!
//! struct Hello;
//!
//! impl Handler for Hello {
//!     fn info(&self) -> Info {
//!         Info::new("hello", "1.0.0")
//!     }
//!     fn tools(&self) -> Cow<'_, [Value]> {
//!         Cow::Owned(vec![json!({"name": "hello", "inputSchema": {"type": "object"}})])
//!     }
//!     fn call_tool(self: Arc<Self>, _: String, _: Arguments, _: Context)
//!         -> BoxFuture<Result<Reply, HandlerError>> {
//!         Box::pin(async { Ok(Reply::text("Hello!")) })
//!     }
//! }
//!
//! # async fn run() -> Result<(), switchboard_server::Error> {
//! Server::new(Hello).serve_stdio().await
//! # }
//! ```
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::server::{self as transport, Inbound, Notifier, Responder, Service};
use tokio::io::{AsyncRead, AsyncWrite};

mod arguments;
mod audience;
mod builder;
mod client;
mod context;
mod dispatch;
mod error;
mod handler;
pub mod logging;
mod replies;
mod router;
mod schema;
mod seal;
mod session;
mod shared;
pub mod skills;
mod tool_call;
pub mod typed;

pub use arguments::Arguments;
pub use builder::ServerBuilder;
pub use client::ClientInfo;
pub use context::{Context, Era};
pub use error::{HandlerError, ToolError, RESOURCE_NOT_FOUND};
pub use handler::{BoxFuture, Handler, Info, Reply, Seen, TextReply};
pub use replies::{PromptMessage, PromptReply, ResourceReply};
pub use router::Router;
/// The JSON Schema derive a typed tool's arguments use, as this crate uses it.
pub use schemars;
pub use session::Session;
pub use switchboard_codecs::jsonrpc::{ErrorObject, Id, Outcome};
pub use switchboard_transports::server::Principal;

#[cfg(feature = "http")]
pub use switchboard_transports::server::http;

/// The handshake-era protocol versions served, newest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// How a server behaves beyond its handler.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// How many items each list returns per page; 0 means everything on one page.
    pub page_size: usize,
    /// Answer `server/discover` (2026-07-28). Without it the server refuses the probe with
    /// -32601, as a handshake-era server does, so that clients that probe (`auto`) speak
    /// the handshake era to it; requests whose `_meta` names 2026-07-28 are served either
    /// way.
    pub discover: bool,
    /// Answer `initialize` with this version whatever the client asks (for tests of
    /// version refusal).
    pub force_version: Option<String>,
    /// How long a request to the client (handshake era) waits for its answer.
    pub input_timeout: Duration,
    /// The key that seals `requestState`; by default a random one per server, so the
    /// replicas of one service need the same key to accept each other's states.
    pub request_state_key: Option<Vec<u8>>,
    /// `ttlMs` on cacheable 2026-07-28 results that do not set their own.
    pub ttl_ms: u64,
    /// The largest `initialize` params accepted, in bytes of their JSON text (64 KiB by
    /// default): larger ones are refused with -32602 before they are parsed, and the
    /// session stays uninitialized. A client's capabilities and identity fit in far less;
    /// what passes is kept only in part (see [`Context::client_capabilities`]).
    pub max_initialize_params: usize,
    /// The stdio framing and queue.
    pub stdio: transport::stdio::Config,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 0,
            discover: true,
            force_version: None,
            input_timeout: Duration::from_secs(60),
            request_state_key: None,
            ttl_ms: 0,
            max_initialize_params: 64 * 1024,
            stdio: transport::stdio::Config::default(),
        }
    }
}

impl Options {
    /// Pages lists `size` items at a time.
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.page_size = size;
        self
    }

    /// Answers (or refuses) `server/discover`.
    pub fn with_discover(mut self, discover: bool) -> Self {
        self.discover = discover;
        self
    }

    /// Answers `initialize` with `version` whatever the client asks.
    pub fn with_forced_version(mut self, version: Option<String>) -> Self {
        self.force_version = version;
        self
    }

    /// Seals `requestState` with `key`.
    pub fn with_request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.request_state_key = Some(key.into());
        self
    }

    /// Refuses `initialize` params longer than `bytes` of JSON text.
    ///
    /// # Security
    ///
    /// The params are read whole before the server keeps its part of them: a larger limit
    /// lets every anonymous client that opens a session have that much parsed.
    pub fn with_max_initialize_params(mut self, bytes: usize) -> Self {
        self.max_initialize_params = bytes;
        self
    }

    /// Reads stdio lines of up to `bytes`.
    pub fn with_max_line(mut self, bytes: usize) -> Self {
        self.stdio.max_line = bytes;
        self
    }
}

/// The crate's error: serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing the transport failed.
    #[error("serving {server} failed: {source}")]
    Io {
        /// The server's name.
        server: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A tool, resource, prompt or skill given to [`Server::builder`] cannot be served as it
    /// is (two of one name, arguments whose schema is not an object, a `SKILL.md` whose
    /// front matter is malformed, …).
    #[error("{kind} {name:?} cannot be served: {reason}")]
    Definition {
        /// `tool`, `resource`, `prompt` or `skill`.
        kind: &'static str,
        /// Its name (a resource's URI; a skill's URI, or the file or folder it was read
        /// from).
        name: String,
        /// Why.
        reason: String,
    },
}

/// An MCP server: a handler and the protocol around it, ready to serve.
#[derive(Clone)]
pub struct Server {
    core: Arc<shared::Core>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.core.info.name)
            .field("sessions", &self.core.audience.sessions())
            .finish()
    }
}

impl Server {
    /// A server for `handler` with default [`Options`].
    pub fn new(handler: impl Handler) -> Self {
        Server::with_options(handler, Options::default())
    }

    /// A server for `handler` with `options`.
    pub fn with_options(handler: impl Handler, options: Options) -> Self {
        Server::from_arc(Arc::new(handler), options)
    }

    /// A server for a shared handler.
    pub fn from_arc(handler: Arc<dyn Handler>, options: Options) -> Self {
        Server {
            core: Arc::new(shared::Core::new(handler, options)),
        }
    }

    /// How many sessions are open (stateless requests open none that outlives them).
    pub fn sessions(&self) -> usize {
        self.core.audience.sessions()
    }

    /// Tells every client that the tool list changed: each handshake-era session gets
    /// `notifications/tools/list_changed`, and each open `subscriptions/listen` stream that
    /// asked for tool changes. For changes that come from outside any request (a
    /// [`Context`] announces those it makes itself).
    pub fn tools_changed(&self) {
        self.core.audience.announce(audience::Change::Tools);
    }

    /// Tells every client that the resource list changed, as [`tools_changed`](Self::tools_changed) does.
    pub fn resources_changed(&self) {
        self.core.audience.announce(audience::Change::Resources);
    }

    /// Tells every client that the prompt list changed, as [`tools_changed`](Self::tools_changed) does.
    pub fn prompts_changed(&self) {
        self.core.audience.announce(audience::Change::Prompts);
    }

    /// Tells the clients subscribed to `uri` that it changed (`notifications/resources/updated`).
    pub fn resource_updated(&self, uri: &str) {
        self.core
            .audience
            .announce(audience::Change::Resource(uri.to_owned()));
    }

    fn io_error(&self, source: io::Error) -> Error {
        Error::Io {
            server: self.core.info.name.clone(),
            source,
        }
    }

    /// Serves one client over newline-delimited JSON until `reader` ends.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> Result<(), Error>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let config = self.core.options.stdio.clone();
        transport::stdio::serve(Arc::new(self.clone()), reader, writer, config)
            .await
            .map_err(|e| self.io_error(e))
    }

    /// Serves the client that started this process, on stdin and stdout, until stdin ends.
    pub async fn serve_stdio(&self) -> Result<(), Error> {
        let config = self.core.options.stdio.clone();
        transport::stdio::serve_stdio(Arc::new(self.clone()), config)
            .await
            .map_err(|e| self.io_error(e))
    }

    /// Serves Streamable HTTP on `listener` until accepting fails.
    #[cfg(feature = "http")]
    pub async fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        config: http::Config,
    ) -> Result<(), Error> {
        self.http(listener, config)
            .run()
            .await
            .map_err(|e| self.io_error(e))
    }

    /// The HTTP server, not yet running: for its address and its [`http::Handle`].
    #[cfg(feature = "http")]
    pub fn http(
        &self,
        listener: tokio::net::TcpListener,
        config: http::Config,
    ) -> http::Server<Server> {
        http::Server::new(listener, Arc::new(self.clone()), config)
    }
}

impl Service for Server {
    type Session = Session;

    fn open(&self, notifier: Notifier, stateless: bool) -> Arc<Session> {
        let session = Arc::new(Session::new(
            notifier,
            stateless,
            self.core.audience.next_key(),
        ));
        if !stateless {
            self.core.audience.register(&session);
        }
        session
    }

    fn receive(&self, session: &Arc<Session>, inbound: Inbound) {
        dispatch::receive(&self.core, session, inbound);
    }

    fn receive_line(&self, session: &Arc<Session>, line: &[u8], responder: &Responder) -> bool {
        dispatch::receive_line(&self.core, session, line, responder)
    }

    fn tool_input_schema(&self, name: &str) -> Option<serde_json::Value> {
        self.core.handler.tool_input_schema(name)
    }

    /// A sealed session id carries the negotiated version, the client's capabilities and
    /// who it is, as the session keeps them (a few hundred bytes, whatever the client
    /// sent): what every request's handling reads from the session. Its log level and
    /// subscriptions stay with the process that was told them.
    fn session_state(&self, session: &Arc<Session>) -> Option<serde_json::Value> {
        Some(session.initialized()?.to_state())
    }

    fn restore(&self, notifier: Notifier, state: &serde_json::Value) -> Option<Arc<Session>> {
        let negotiated = client::Negotiated::from_state(state)?;
        let session = self.open(notifier, false);
        session.initialize(negotiated);
        Some(session)
    }

    fn authenticated(&self, session: &Arc<Session>, principal: &Arc<Principal>) {
        session.authenticated(principal);
    }

    fn close(&self, session: &Arc<Session>) {
        session.close();
        self.core.audience.unregister(session);
    }
}
