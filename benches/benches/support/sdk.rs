//! The official Rust SDK (`rmcp`) as a client of the same demo server child process.

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;

/// An rmcp client connected (handshake done) to a demo server child started with `args`.
pub(crate) async fn connect(args: &str) -> RunningService<RoleClient, ()> {
    let command = tokio::process::Command::new(super::demo_exe()).configure(|c| {
        c.env(switchboard::demo::ENV_VAR, args);
    });
    let transport = TokioChildProcess::new(command).expect("spawn the demo server");
    ().serve(transport).await.expect("rmcp handshake")
}

/// The `echo` arguments as rmcp takes them.
pub(crate) fn echo_args() -> JsonObject {
    match super::echo_args() {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("echo's arguments are an object"),
    }
}

/// One `tools/call echo` through rmcp.
pub(crate) async fn echo(peer: &Peer<RoleClient>) {
    let result = peer
        .call_tool(CallToolRequestParams::new("echo").with_arguments(echo_args()))
        .await
        .expect("rmcp echo");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}
