//! Metrics, scraped over HTTP from each runtime's own `/metrics` endpoint after known traffic.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{RestartPolicy, Runtime, ServerConfig, ServerState};

use crate::support::*;

/// `GET /metrics`, the body.
pub(crate) fn scrape(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_owned()
}

/// The value of one series (`name{labels}`), if it is exported.
pub(crate) fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.trim().parse().ok()
    })
}

fn requests(tool: &str, outcome: &str) -> String {
    format!(
        r#"switchboard_requests_total{{server="demo",method="tools/call",tool="{tool}",outcome="{outcome}"}}"#
    )
}

async fn runtime_exporting(name: &str, config: impl Into<ServerConfig>) -> (Runtime, SocketAddr) {
    let rt = Runtime::builder()
        .server(name, config)
        .metrics_listener(([127, 0, 0, 1], 0).into())
        .build()
        .await
        .expect("runtime");
    let addr = rt.metrics_addr().expect("a metrics endpoint");
    (rt, addr)
}

#[tokio::test]
async fn known_traffic_is_counted_exactly() {
    let (rt, addr) = runtime_exporting("demo", demo_memory(&["--faults"])).await;
    let server = rt.server("demo").unwrap();
    for i in 0..3 {
        let text = format!("hello {i}");
        let result = server.call_tool("echo", json!({"text": text})).await;
        assert_eq!(result.unwrap().text(), text);
    }
    let err = server
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    // A typed call and a raw one that the tool fails (isError: true).
    assert!(server
        .call_tool("fail", json!({}))
        .await
        .unwrap()
        .is_error());
    server.call_tool("fail", json!({})).raw().await.unwrap();
    // A call its caller stops waiting for.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(100),
        server.call_tool("hang", json!({})),
    )
    .await;
    assert!(abandoned.is_err());
    server.call_tool("unknown_id", json!({})).await.unwrap();
    server
        .call_tool("garbage", json!({"kind": "text"}))
        .await
        .unwrap();
    server.request("ping", None).await.unwrap();
    let tools = server.tools().len() as f64;

    let settled = |body: &str| {
        value(
            body,
            r#"switchboard_cancellations_sent_total{server="demo",reason="caller"}"#,
        ) == Some(1.0)
    };
    let mut body = scrape(addr);
    assert!(
        eventually(Duration::from_secs(5), || {
            body = scrape(addr);
            settled(&body)
        })
        .await,
        "{body}"
    );
    let expect = [
        (requests("echo", "ok"), 3.0),
        (requests("hang", "timeout"), 1.0),
        (requests("hang", "cancelled"), 1.0),
        (requests("fail", "tool_error"), 2.0),
        (requests("unknown_id", "ok"), 1.0),
        (
            r#"switchboard_requests_total{server="demo",method="ping",outcome="ok"}"#.into(),
            1.0,
        ),
        (
            r#"switchboard_request_duration_seconds_count{server="demo",method="tools/call",tool="echo",outcome="ok"}"#.into(),
            3.0,
        ),
        (
            r#"switchboard_requests_in_flight{server="demo"}"#.into(),
            0.0,
        ),
        (r#"switchboard_server_up{server="demo"}"#.into(), 1.0),
        (r#"switchboard_server_tools{server="demo"}"#.into(), tools),
        ("switchboard_catalogue_tools".into(), tools),
        (
            r#"switchboard_server_restarts_total{server="demo"}"#.into(),
            0.0,
        ),
        (
            r#"switchboard_handshake_duration_seconds_count{server="demo"}"#.into(),
            1.0,
        ),
        (
            r#"switchboard_cancellations_sent_total{server="demo",reason="timeout"}"#.into(),
            1.0,
        ),
        (
            r#"switchboard_cancellations_sent_total{server="demo",reason="caller"}"#.into(),
            1.0,
        ),
        (
            r#"switchboard_cancellations_sent_total{server="demo",reason="shutdown"}"#.into(),
            0.0,
        ),
        (
            r#"switchboard_unknown_answers_total{server="demo"}"#.into(),
            2.0,
        ),
        (
            r#"switchboard_skipped_frames_total{server="demo",kind="not_json"}"#.into(),
            1.0,
        ),
    ];
    for (series, want) in &expect {
        assert_eq!(value(&body, series), Some(*want), "{series} in\n{body}");
    }
    // Traffic both ways: at least the handshake and every call above.
    let out = value(
        &body,
        r#"switchboard_messages_total{server="demo",direction="out"}"#,
    )
    .unwrap();
    let inbound = value(
        &body,
        r#"switchboard_messages_total{server="demo",direction="in"}"#,
    )
    .unwrap();
    assert!(out >= 13.0 && inbound >= 10.0, "{out} out, {inbound} in");
    assert!(value(&body, r#"switchboard_bytes_sent_total{server="demo"}"#).unwrap() > out * 20.0);
    // Bounded labels: no request id, no argument.
    assert!(!body.contains("hello 0"), "{body}");
    assert!(body.contains("# TYPE switchboard_request_duration_seconds histogram"));
    rt.shutdown().await;
}

#[tokio::test]
async fn server_up_follows_a_crash_and_the_restart() {
    let policy = RestartPolicy::default()
        .with_initial_delay(Duration::from_millis(400))
        .with_jitter(0.0);
    let config = demo_stdio(&["--faults"]).restart(policy);
    let (rt, addr) = runtime_exporting("demo", config).await;
    let server = rt.server("demo").unwrap();
    let up = r#"switchboard_server_up{server="demo"}"#;
    assert_eq!(value(&scrape(addr), up), Some(1.0));
    let err = server
        .call_tool("crash", json!({"code": 3}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Disconnected { .. }),
        "{err:?}"
    );
    assert!(
        eventually(Duration::from_secs(5), || value(&scrape(addr), up)
            == Some(0.0))
        .await,
        "server_up did not drop to 0"
    );
    assert!(
        eventually(Duration::from_secs(10), || server.status().is_ready()).await,
        "{:?}",
        server.status().state
    );
    assert!(matches!(server.status().state, ServerState::Ready));
    let body = scrape(addr);
    assert_eq!(value(&body, up), Some(1.0), "{body}");
    assert_eq!(
        value(&body, r#"switchboard_server_restarts_total{server="demo"}"#),
        Some(1.0)
    );
    assert_eq!(value(&body, &requests("crash", "disconnected")), Some(1.0));
    assert_eq!(
        value(
            &body,
            r#"switchboard_handshake_duration_seconds_count{server="demo"}"#
        ),
        Some(2.0)
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn two_runtimes_export_only_their_own_traffic() {
    let (a, a_addr) = runtime_exporting("demo", demo_memory(&[])).await;
    let (b, b_addr) = runtime_exporting("demo", demo_memory(&[])).await;
    assert_ne!(a_addr, b_addr);
    for _ in 0..2 {
        a.call_tool("echo", json!({"text": "a"})).await.unwrap();
    }
    for _ in 0..5 {
        b.call_tool("echo", json!({"text": "b"})).await.unwrap();
    }
    assert_eq!(value(&scrape(a_addr), &requests("echo", "ok")), Some(2.0));
    assert_eq!(value(&scrape(b_addr), &requests("echo", "ok")), Some(5.0));
    assert_eq!(
        a.render_metrics()
            .and_then(|body| value(&body, &requests("echo", "ok"))),
        Some(2.0)
    );
    // Without a listener there is no endpoint (metrics go to the global recorder).
    let (plain, _) = runtime_with(demo_memory(&[])).await;
    assert_eq!(plain.metrics_addr(), None);
    for rt in [a, b, plain] {
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn a_taken_address_fails_the_build() {
    let (rt, addr) = runtime_exporting("demo", demo_memory(&[])).await;
    let err = Runtime::builder()
        .metrics_listener(addr)
        .build()
        .await
        .unwrap_err();
    let ErrorKind::MetricsListener {
        addr: asked,
        source,
    } = err.kind()
    else {
        panic!("{err:?}")
    };
    assert_eq!(*asked, addr);
    assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(err.category(), switchboard::ErrorCategory::Setup);
    assert!(err.to_string().contains("metrics"), "{err}");
    rt.shutdown().await;
}

#[tokio::test]
async fn feature_requests_are_labelled_by_method_never_by_uri_or_argument() {
    let (rt, addr) = runtime_exporting("demo", demo_memory(&[])).await;
    let server = rt.server("demo").unwrap();
    server.read_resource("demo://text/hello").await.unwrap();
    server.read_resource("demo://note/31337").await.unwrap();
    let _ = server.read_resource("demo://missing").await.unwrap_err();
    server
        .get_prompt("greeting", [("name", "Zebediah")])
        .await
        .unwrap();
    let body = scrape(addr);
    assert_eq!(
        value(
            &body,
            r#"switchboard_requests_total{server="demo",method="resources/read",outcome="ok"}"#
        ),
        Some(2.0),
        "{body}"
    );
    assert_eq!(
        value(
            &body,
            r#"switchboard_requests_total{server="demo",method="prompts/get",outcome="ok"}"#
        ),
        Some(1.0)
    );
    for secret in ["demo://", "31337", "Zebediah"] {
        assert!(!body.contains(secret), "`{secret}` became a label value");
    }
    rt.shutdown().await;
}
