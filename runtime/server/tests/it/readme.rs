//! The README's server is `examples/quickstart/server.rs` exactly (which `cargo test`
//! builds, and the runtime's doc tests compile from the README itself), and it serves what
//! it says: the code a reader copies compiles and runs.

use serde_json::json;

use crate::support::LineClient;

#[test]
fn the_readme_shows_the_example_as_it_is() {
    let readme = include_str!("../../../../README.md");
    let example = include_str!("../../examples/quickstart/server.rs");
    assert!(
        readme.contains(&format!("```rust,no_run\n{example}```")),
        "README.md's \"Serving MCP\" example differs from runtime/server/examples/quickstart/server.rs"
    );
    let lines = example.lines().count();
    assert!(lines <= 20, "the README's server takes {lines} lines");
}

/// The example, as it is: its `server()` served here, its `main` left alone.
#[allow(dead_code)]
mod quickstart {
    include!("../../examples/quickstart/server.rs");

    pub(super) fn build() -> Result<Server, Error> {
        server()
    }
}

#[tokio::test]
async fn the_readme_server_serves_two_tools_and_a_resource() {
    let mut client = LineClient::start(quickstart::build().unwrap());
    let init = client
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["serverInfo"]["name"], "demo");
    let tools = client.request(2, "tools/list", json!({})).await;
    assert_eq!(
        tools["result"]["tools"][0]["inputSchema"],
        json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to say back."}},
            "required": ["text"],
        })
    );
    assert_eq!(tools["result"]["tools"][1]["name"], "pi");
    let echo = client
        .request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(
        echo["result"]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
    let about = client
        .request(4, "resources/read", json!({"uri": "demo://about"}))
        .await;
    assert_eq!(about["result"]["contents"][0]["text"], "A demo");
    client.close().await;
}
