//! Bytes to messages and back, for Switchboard: the JSON-RPC 2.0 envelope ([`jsonrpc`]), the
//! newline-delimited JSON codec used by stdio ([`lines`]), and the typed MCP shapes the runtime
//! interprets ([`mcp`]), outbound frames built from their parts ([`frame`]), and the Server-Sent Events framing of the HTTP transports ([`sse`]).
//!
//! This crate does no I/O and knows nothing of actors; transports frame bytes with it and the
//! runtime reads envelopes with it.
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

pub mod frame;
pub mod jsonrpc;
pub mod lines;
pub mod mcp;
pub mod sse;
