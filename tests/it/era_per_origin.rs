//! The era verdict of an `auto` HTTP server holds for its origin: another server on the same
//! origin (or the same one removed and added again) connects without `server/discover`,
//! in the era the first probe found; a server on another origin is probed; and an origin
//! redeployed in another era is probed again once a start with the old verdict fails.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use switchboard::transport::HttpKind;
use switchboard::{Era, Liveness, RestartPolicy, Runtime, ServerConfig};

use crate::http_fixture::{empty, json_response};

/// How many times each method was posted.
type Counts = Arc<Mutex<HashMap<String, usize>>>;

/// A stateless server when `modern`, otherwise a handshake-era one that refuses
/// `server/discover` as an unknown method.
async fn handle(
    modern: Arc<AtomicBool>,
    counts: Counts,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let modern = modern.load(Ordering::SeqCst);
    let (verb, _, body) = crate::http_fixture::read(request).await;
    if verb != Method::POST {
        return Ok(empty(StatusCode::METHOD_NOT_ALLOWED));
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    *counts.lock().unwrap().entry(method.clone()).or_default() += 1;
    let id = body["id"].clone();
    let ok = |result: Value| {
        json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    };
    let tools = json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]});
    Ok(match (method.as_str(), modern) {
        ("server/discover", true) => ok(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}
        })),
        ("initialize", false) => ok(json!({
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy", "version": "1"}
        })),
        ("notifications/initialized", false) => empty(StatusCode::ACCEPTED),
        ("tools/list", _) => ok(tools),
        _ => json_response(
            StatusCode::OK,
            None,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
        ),
    })
}

async fn serve(modern: bool, counts: Counts) -> String {
    serve_switchable(Arc::new(AtomicBool::new(modern)), counts).await
}

/// A server whose era follows `modern` from one request to the next (a redeployment).
async fn serve_switchable(modern: Arc<AtomicBool>, counts: Counts) -> String {
    let addr = crate::http_fixture::serve(move |r| handle(modern.clone(), counts.clone(), r)).await;
    format!("http://{addr}")
}

fn server(url: String) -> ServerConfig {
    ServerConfig::http(url, HttpKind::StreamableHttp)
        .restart(RestartPolicy::off())
        .liveness(Liveness::off())
        .timeout(Duration::from_secs(10))
        .into()
}

fn count(counts: &Counts, method: &str) -> usize {
    counts.lock().unwrap().get(method).copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_connection_to_a_known_origin_is_not_probed_again() {
    for modern in [true, false] {
        let counts = Counts::default();
        let base = serve(modern, counts.clone()).await;
        let era = if modern { Era::Modern } else { Era::Legacy };
        let rt = Runtime::builder()
            .server("first", server(format!("{base}/mcp")))
            .build()
            .await
            .unwrap();
        assert_eq!(rt.server("first").unwrap().status().era, Some(era));
        assert_eq!(count(&counts, "server/discover"), 1, "the first probe");

        // The same origin, another path: no probe, the same era.
        let second = rt
            .add_server("second", server(format!("{base}/other")))
            .await
            .unwrap();
        let status = second.wait_started().await;
        assert!(status.is_ready(), "{:?}", status.state);
        assert_eq!(status.era, Some(era));
        // The same server removed and added again: still no probe.
        rt.remove_server("first").await.unwrap();
        let again = rt
            .add_server("first", server(format!("{base}/mcp")))
            .await
            .unwrap();
        assert!(again.wait_started().await.is_ready());
        assert_eq!(count(&counts, "server/discover"), 1, "modern: {modern}");
        if !modern {
            assert_eq!(count(&counts, "initialize"), 3);
        }
        rt.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_origin_is_probed() {
    let (modern, legacy) = (Counts::default(), Counts::default());
    let modern_url = serve(true, modern.clone()).await;
    let legacy_url = serve(false, legacy.clone()).await;
    let rt = Runtime::builder()
        .server("modern", server(format!("{modern_url}/mcp")))
        .server("legacy", server(format!("{legacy_url}/mcp")))
        .build()
        .await
        .unwrap();
    assert_eq!(rt.server("modern").unwrap().status().era, Some(Era::Modern));
    assert_eq!(rt.server("legacy").unwrap().status().era, Some(Era::Legacy));
    assert_eq!(count(&modern, "server/discover"), 1);
    assert_eq!(count(&legacy, "server/discover"), 1);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_redeployed_in_another_era_is_probed_again_after_a_failed_start() {
    let counts = Counts::default();
    let modern = Arc::new(AtomicBool::new(false));
    let base = serve_switchable(modern.clone(), counts.clone()).await;
    let rt = Runtime::builder()
        .server("first", server(format!("{base}/mcp")))
        .build()
        .await
        .unwrap();
    assert_eq!(rt.server("first").unwrap().status().era, Some(Era::Legacy));
    assert_eq!(count(&counts, "server/discover"), 1);
    assert_eq!(count(&counts, "initialize"), 1);

    // Redeployed as a stateless server, which refuses `initialize`. A new server on the
    // origin starts with the kept verdict, fails, and its supervised retry probes.
    modern.store(true, Ordering::SeqCst);
    let mut changes = rt.watch();
    let config = server(format!("{base}/other"))
        .restart(RestartPolicy::default().with_initial_delay(Duration::from_millis(20)));
    let second = rt.add_server("second", config).await.unwrap();
    let ready = async {
        while !second.status().is_ready() {
            assert!(changes.changed().await, "the runtime is gone");
        }
    };
    tokio::time::timeout(Duration::from_secs(10), ready)
        .await
        .expect("ready in the new era");
    assert_eq!(second.status().era, Some(Era::Modern));
    assert_eq!(
        (
            count(&counts, "initialize"),
            count(&counts, "server/discover")
        ),
        (2, 2),
        "one start with the kept verdict, then one probe"
    );
    rt.shutdown().await;
}
