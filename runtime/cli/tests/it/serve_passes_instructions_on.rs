//! Through `switchboard serve`, a front client is told its upstreams' `instructions`, in
//! both eras (`initialize`, and 2026-07-28's `server/discover`): with two upstreams each
//! under its name, and after a reload that removes one, the other's as it wrote them.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::{Protocol, Runtime, ServerConfig};

use crate::cli::BIN;
use crate::gateway::config_file_of;
use crate::serve_tells_its_operator::Logged;

const WAIT: Duration = Duration::from_secs(20);

fn demo(instructions: &str) -> Value {
    json!({"command": BIN, "args": ["demo-server", "--instructions", instructions]})
}

/// What a new front client speaking `era` is told.
async fn told(url: &str, era: Protocol) -> Option<String> {
    let server = ServerConfig::http(url, HttpKind::StreamableHttp).protocol(era);
    let front = Runtime::builder()
        .server("gateway", server)
        .build()
        .await
        .unwrap();
    let status = front.server("gateway").unwrap().status();
    assert!(status.is_ready(), "{status:?}");
    assert_eq!(status.era.map(|e| e.as_str()), Some(era.as_str()));
    front.shutdown().await;
    status.instructions.as_deref().map(str::to_owned)
}

#[tokio::test]
async fn both_eras_are_told_the_upstreams_instructions_and_a_reload_changes_them() {
    let config = config_file_of(json!({"mcpServers": {
        "alpha": demo("Alpha adds."),
        "beta": demo("Beta echoes."),
    }}));
    let mut served = Logged::start(&config, &["--listen", "0"]);
    let url = format!("http://{}/mcp", served.addr());
    let both = "## alpha\nAlpha adds.\n\n## beta\nBeta echoes.";
    for era in [Protocol::Legacy, Protocol::Modern] {
        assert_eq!(told(&url, era).await.as_deref(), Some(both), "{era:?}");
    }

    std::fs::write(
        &config,
        json!({"mcpServers": {"alpha": demo("Alpha adds.")}}).to_string(),
    )
    .unwrap();
    served.until("saying beta was removed", |l| l.contains("removed `beta`"));
    // The removal leaves the catalogue in the background, and the gateway relists after it.
    let deadline = Instant::now() + WAIT;
    while told(&url, Protocol::Legacy).await.as_deref() != Some("Alpha adds.") {
        assert!(Instant::now() < deadline, "still told beta's instructions");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        told(&url, Protocol::Modern).await.as_deref(),
        Some("Alpha adds.")
    );
    served.stop();
}
