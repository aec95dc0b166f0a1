//! The gateway's front-side series land where the runtime exports its own, counted by
//! method and outcome; the requests in flight can be read from the gateway itself.

use serde_json::json;
use switchboard::Runtime;
use switchboard_gateway::Gateway;

use crate::support::{demo, fronted, in_memory, WAIT};

/// The value of the series `line_start` (name and labels) in a Prometheus exposition.
fn value(exposition: &str, line_start: &str) -> Option<f64> {
    exposition
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn forwarded_requests_are_counted_by_method_and_outcome_beside_the_runtimes_series() {
    let upstream = Runtime::builder()
        .metrics_listener(([127, 0, 0, 1], 0).into())
        .server("demo", demo(&[]))
        .build()
        .await
        .unwrap();
    let (front, gateway, _served) = fronted(&upstream).await;
    for _ in 0..3 {
        gateway
            .call_tool("echo", json!({"text": "hi"}))
            .await
            .unwrap();
    }
    assert!(gateway.call_tool("nope", json!({})).await.is_err());
    // A tool that fails answers a result with `isError`, counted apart from both.
    let failed = gateway.call_tool("echo", json!({})).await.unwrap();
    assert!(failed.is_error(), "{failed:?}");
    let exposition = upstream
        .render_metrics()
        .expect("the runtime's own exporter");
    let ok = r#"switchboard_front_requests_total{method="tools/call",outcome="ok"}"#;
    let error = r#"switchboard_front_requests_total{method="tools/call",outcome="error"}"#;
    assert_eq!(value(&exposition, ok), Some(3.0), "{exposition}");
    assert_eq!(value(&exposition, error), Some(1.0), "{exposition}");
    let tool_error =
        r#"switchboard_front_requests_total{method="tools/call",outcome="tool_error"}"#;
    assert_eq!(value(&exposition, tool_error), Some(1.0), "{exposition}");
    assert_eq!(
        value(&exposition, "switchboard_front_requests_in_flight"),
        Some(0.0)
    );
    assert!(exposition.contains("switchboard_front_request_duration_seconds"));
    // The upstream series are there too, in the same exposition.
    assert!(exposition.contains(r#"switchboard_requests_total{server="demo""#));
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn a_call_waiting_upstream_is_counted_in_flight_until_answered() {
    let upstream = Runtime::builder()
        .server("demo", demo(&["--faults"]))
        .build()
        .await
        .unwrap();
    let gateway = Gateway::new(upstream.clone());
    let served = gateway
        .clone()
        .serve(switchboard_server::Options::default());
    let front = Runtime::builder()
        .server("gateway", in_memory(served.server().clone()))
        .build()
        .await
        .unwrap();
    let call = tokio::spawn(front.call_tool("sleep", json!({"ms": 300})).timeout(WAIT));
    tokio::time::timeout(WAIT, async {
        while gateway.in_flight() != 1 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the call is counted while it waits upstream");
    let slept = call.await.unwrap().unwrap();
    assert!(!slept.is_error(), "{slept:?}");
    assert_eq!(gateway.in_flight(), 0);
    front.shutdown().await;
    upstream.shutdown().await;
}
