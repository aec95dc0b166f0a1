//! The official Rust SDK (`rmcp`) as a client of the same server child processes (the demo
//! server, the blocking echo server).

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;

/// An rmcp client connected (handshake done) to the server child `command` starts
/// (`support::demo_command`, `support::echo_command`).
pub(crate) async fn connect(command: std::process::Command) -> RunningService<RoleClient, ()> {
    let transport =
        TokioChildProcess::new(tokio::process::Command::from(command)).expect("spawn the server");
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
