#![doc = include_str!("../../README.md")]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

mod actor;
mod call;
mod config;
mod deadline;
#[doc(hidden)]
pub mod demo;
mod error;
mod handle;
mod runtime;
mod status;

pub use call::{Call, Progress};
pub use config::ServerConfig;
pub use deadline::ToolPolicy;
pub use error::{Error, Result};
pub use handle::ServerHandle;
pub use runtime::{Runtime, RuntimeBuilder};
pub use status::{ServerState, ServerStatus};
pub use switchboard_transports::{CloseCause, CloseReason};

/// The MCP shapes results come in (tools, call results, content blocks, …).
pub mod model {
    pub use switchboard_codecs::mcp::*;
}
