//! Cross-crate tests: the exact wire Switchboard writes (against a scripted peer), and
//! interop with MCP servers nobody here wrote (behind `SWITCHBOARD_INTEROP=1`).

mod interop;
mod wire;
