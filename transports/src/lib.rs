//! Connections to MCP servers for Switchboard.
//!
//! A transport opens a [`Connection`]: inbound events, an outbound
//! sender, and a control for the protocol version and a graceful close. [`stdio`] runs the
//! server as a child process; `http` (feature `http`) speaks Streamable HTTP and the legacy
//! HTTP+SSE transport; [`memory`] connects to a server running in the same process.
//! Nothing here knows about actors, and little about MCP.
//!
//! The server side ([`server`], features `server` and `server-http`) is the other end: a
//! client's messages in over stdin/stdout or Streamable HTTP on hyper, a server's answers
//! out.
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

pub mod connection;
mod framed;
#[cfg(feature = "http")]
pub mod http;
pub mod memory;
#[cfg(feature = "server")]
pub mod server;
#[cfg(all(unix, feature = "stdio"))]
pub mod stdio;

pub use connection::{
    CloseCause, CloseReason, Connection, Control, Event, Facts, Inline, InlineFn, KillHandle,
    Outbound, Sender,
};
