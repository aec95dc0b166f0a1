//! The official Python SDK server (`tests/peers/python_server.py` over Streamable HTTP),
//! killed and started again on its port 50 times: every call made once the port accepts
//! again is served, in both eras, although the runtime's reconnect ran while the server was
//! down (the rolling restart: a call then got that reconnect's refusal).
//!
//! `#[ignore = "needs …"]`: the interpreter is `SWITCHBOARD_PYTHON`, else the venv `.ci/run`
//! creates (`.ci/venv/bin/python`); a missing one fails the test.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::transport::HttpKind;
use switchboard::ErrorKind;
use switchboard::{Protocol, RestartPolicy, Runtime, ServerConfig, Unavailability};

use crate::peers::{free_port, python, python_server_script, ListeningPeer};

/// Every call's own deadline: far longer than the server's start.
const DEADLINE: Duration = Duration::from_secs(20);

/// The Python SDK server on `port`, once the port accepts connections.
async fn python_on(port: u16) -> ListeningPeer {
    let mut command = Command::new(python());
    command
        .arg(python_server_script())
        .args(["--http", &port.to_string()]);
    tokio::task::spawn_blocking(move || {
        ListeningPeer::start(command, port, "the Python SDK server")
    })
    .await
    .unwrap()
}

async fn restarted_50_times(protocol: Protocol) {
    let port = free_port();
    let mut peer = python_on(port).await;
    // Fifty restarts in a minute are a crash loop by the default guard: not this one's.
    let policy = RestartPolicy::default().with_crash_loop(10_000, Duration::from_secs(60));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = ServerConfig::http(url, HttpKind::StreamableHttp)
        .protocol(protocol)
        .restart(policy)
        .timeout(DEADLINE);
    let rt = Runtime::builder()
        .server("python", config)
        .build()
        .await
        .unwrap();
    let server = rt.server("python").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    let began = Instant::now();
    for round in 0..50 {
        drop(peer);
        // While it is down, calls fail, until one has an attempt made and refused: what a
        // call made next would get, were the server not tried again.
        let mut refused = false;
        for _ in 0..20 {
            match rt.call_tool("forecast", json!({"city": "Oslo"})).await {
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Unavailable {
                            because: Unavailability::StartFailed,
                            ..
                        }
                    ) =>
                {
                    refused = true;
                    break;
                }
                Err(_) => {}
                Ok(_) => panic!("round {round}: served while the server was down"),
            }
        }
        assert!(refused, "round {round}: no attempt was refused while down");
        peer = python_on(port).await;
        let calls: Vec<_> = (0..4)
            .map(|i| {
                let city = format!("city {round}.{i}");
                let call = rt.call_tool("forecast", json!({ "city": city }));
                tokio::spawn(async move { (city, call.await) })
            })
            .collect();
        for call in calls {
            let (city, result) = call.await.unwrap();
            let result = result.unwrap_or_else(|e| panic!("round {round}, {city}: {e}"));
            let forecast = result.structured_content.expect("structured content");
            assert_eq!(forecast["city"], city.as_str());
        }
    }
    let status = server.status();
    eprintln!(
        "50 restarts of the Python SDK server ({protocol:?}) on its port: {:?}, {} attempts",
        began.elapsed(),
        status.restarts
    );
    assert!(status.is_ready(), "{:?}", status.state);
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the Python SDK (SWITCHBOARD_PYTHON)"]
async fn python_sdk_server_restarted_on_its_port_50_times_serves_every_call_made_once_it_accepts_modern(
) {
    restarted_50_times(Protocol::Auto).await;
}

#[tokio::test]
#[ignore = "needs the Python SDK (SWITCHBOARD_PYTHON)"]
async fn python_sdk_server_restarted_on_its_port_50_times_serves_every_call_made_once_it_accepts_legacy(
) {
    restarted_50_times(Protocol::Legacy).await;
}
