//! Switchboard: an actor-based runtime for the Model Context Protocol.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

#[doc(hidden)]
pub mod demo;
