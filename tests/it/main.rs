//! Cross-crate tests: the exact wire Switchboard writes and how it recovers a lost HTTP
//! session (against scripted peers), and interop with MCP servers nobody here wrote (behind
//! `SWITCHBOARD_INTEROP=1`).

mod http_session;
mod interop;
mod secrets;
mod wire;
