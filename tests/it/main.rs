//! Cross-crate tests: the exact wire Switchboard writes, how it answers the requests servers
//! send to the client, how it recovers a lost HTTP session and cancels a timed-out HTTP call
//! (against scripted peers), OAuth against a scripted authorization server (and identity
//! provider, for cross-app access), and interop with MCP servers and clients nobody here
//! wrote (`#[ignore = "needs …"]`: `.ci/run` installs the peers and runs them with
//! `--ignored`; those that need only rmcp, a dependency, and the project's own `switchboard`
//! binary, which [`own_binary`] builds, run in every `cargo test`).

mod broken_response;
mod broken_stream;
mod cross_app_access;
mod cutting_proxy;
mod era_per_origin;
mod handlers;
mod http_fixture;
mod http_listen;
mod http_modern;
mod http_session;
mod http_timeout;
mod interop;
mod interop_everything;
mod interop_filesystem;
mod interop_gateway;
mod interop_gateway_upstreams;
mod interop_python;
mod interop_python_tasks;
mod interop_rmcp;
mod interop_server;
mod interop_skills;
mod interop_tasks;
mod oauth;
mod oauth_fixture;
mod own_binary;
mod peers;
mod python_server_restarted_on_its_port;
mod secrets;
mod wire;
