//! The upstreams' `instructions` reach the front client in both eras: one upstream's as it
//! wrote them, several under their servers' names, and only those of the servers the
//! gateway still runs once one is removed.

use serde_json::{json, Value};
use switchboard::Runtime;
use switchboard_gateway::Gateway;

use crate::support::{demo, RawFront, WAIT};

/// An upstream runtime whose servers are demos with these names and instructions.
async fn upstream(servers: &[(&str, &str)]) -> Runtime {
    let mut builder = Runtime::builder();
    for (name, instructions) in servers {
        builder = builder.server(*name, demo(&["--instructions", instructions]));
    }
    builder.build().await.expect("the upstream runtime")
}

/// What a new front client is told: `initialize`'s `instructions` (handshake era), and
/// `server/discover`'s (2026-07-28).
async fn told(server: &switchboard_server::Server) -> (Value, Value) {
    let mut front = RawFront::start(server.clone());
    let init = front
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "front", "version": "1"}}),
        )
        .await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let found = front
        .request(2, "server/discover", json!({"_meta": meta}))
        .await;
    (
        init["result"]["instructions"].clone(),
        found["result"]["instructions"].clone(),
    )
}

#[tokio::test]
async fn one_upstreams_instructions_reach_the_front_as_written() {
    let written = "Add with `add`.\nEcho with `echo`.";
    let upstream = upstream(&[("demo", written)]).await;
    let front = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    let (init, found) = told(front.server()).await;
    assert_eq!(init, written);
    assert_eq!(found, written);
    upstream.shutdown().await;
}

#[tokio::test]
async fn several_upstreams_instructions_come_under_their_names_and_follow_a_removal() {
    let upstream = upstream(&[("alpha", "Alpha adds."), ("beta", "Beta echoes.")]).await;
    let front = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    let both = "## alpha\nAlpha adds.\n\n## beta\nBeta echoes.";
    let (init, found) = told(front.server()).await;
    assert_eq!(init, both);
    assert_eq!(found, both);

    // A session open while `beta` goes hears its tools leave; from then on, a new client
    // is told `alpha`'s instructions only, as it wrote them: the gateway runs one upstream.
    let mut open = RawFront::start(front.server().clone());
    open.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "front", "version": "1"}}),
    )
    .await;
    open.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    upstream.remove_server("beta").await.expect("beta removed");
    tokio::time::timeout(WAIT, async {
        while open.next().await["method"] != "notifications/tools/list_changed" {}
    })
    .await
    .expect("the open session hears list_changed");
    let (init, found) = told(front.server()).await;
    assert_eq!(init, "Alpha adds.");
    assert_eq!(found, "Alpha adds.");
    upstream.shutdown().await;
}
