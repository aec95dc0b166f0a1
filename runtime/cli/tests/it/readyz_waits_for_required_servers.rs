//! `serve --ready-requires`: `/readyz` answers 200 only while the servers it names are
//! ready (with `all`, every server), not merely started or failed as by default; a name the
//! config does not run is refused at start.

use std::net::SocketAddr;
use std::process::Command;

use serde_json::{json, Value};

use crate::cli::BIN;
use crate::gateway::config_file_of;
use crate::gateway_support::get;
use crate::serve_tells_its_operator::Logged;

fn demo() -> Value {
    json!({"command": BIN, "args": ["demo-server"]})
}

/// The demo, a command that does not exist, and one that exits at once.
fn config() -> std::path::PathBuf {
    config_file_of(json!({"mcpServers": {
        "demo": demo(),
        "missing": {"command": "/nonexistent/switchboard-no-such-server"},
        "exits": {"command": "sh", "args": ["-c", "exit 1"]},
    }}))
}

async fn readyz(addr: SocketAddr) -> u16 {
    let (status, _) = get([127, 0, 0, 1].into(), addr, "/readyz")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    status
}

#[tokio::test]
async fn readyz_stays_503_while_a_required_server_cannot_start() {
    let config = config();
    for name in ["missing", "exits"] {
        let mut served = Logged::start(&config, &["--listen", "0", "--ready-requires", name]);
        let addr = served.addr();
        // Past its second attempt it still cannot start, and the gateway is not ready.
        served.until("saying its second attempt failed", |l| {
            l.contains(&format!("server `{name}` could not start")) && l.contains("(attempt 2)")
        });
        assert_eq!(readyz(addr).await, 503, "requiring {name}");
        served.stop();
    }
    // The same servers without the requirement: ready, failing ones and all (fail open).
    let mut served = Logged::start(&config, &["--listen", "0"]);
    let addr = served.addr();
    assert_eq!(readyz(addr).await, 200);
    served.stop();
}

#[tokio::test]
async fn readyz_is_200_when_the_required_servers_are_ready() {
    let config = config();
    let mut served = Logged::start(&config, &["--listen", "0", "--ready-requires", "demo"]);
    let addr = served.addr();
    assert_eq!(readyz(addr).await, 200, "demo is ready, the others started");
    served.stop();
}

#[tokio::test]
async fn readyz_with_all_is_200_only_when_every_server_is_ready() {
    let mut served = Logged::start(&config(), &["--listen", "0", "--ready-requires", "all"]);
    let addr = served.addr();
    assert_eq!(readyz(addr).await, 503, "two servers cannot start");
    served.stop();
    let healthy = config_file_of(json!({"mcpServers": {"one": demo(), "two": demo()}}));
    let mut served = Logged::start(&healthy, &["--listen", "0", "--ready-requires", "all"]);
    let addr = served.addr();
    assert_eq!(readyz(addr).await, 200);
    served.stop();
}

#[test]
fn a_required_name_the_config_does_not_run_is_a_usage_error() {
    let config = config_file_of(json!({"mcpServers": {
        "demo": demo(),
        "old": {"command": "old-server", "disabled": true},
    }}));
    for (name, why) in [("nosuch", "is not a server of"), ("old", "is disabled in")] {
        let out = Command::new(BIN)
            .args(["serve", "-c", config.to_str().unwrap(), "--listen", "0"])
            .args(["--ready-requires", &format!("demo,{name}")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("--ready-requires {name}: `{name}` {why}")),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}
