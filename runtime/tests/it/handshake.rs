//! The handshake: versions accepted and refused, server info and the tool list.

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{RestartPolicy, Runtime, ServerState};

use crate::support::*;

#[tokio::test]
async fn handshake_reports_server_info_version_and_tools() {
    let (rt, server) = runtime_with(demo_stdio(&[])).await;
    let status = server.status();
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("switchboard-demo")
    );
    assert!(status.pid.is_some());
    let names: Vec<_> = server.tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        names,
        [
            "greet",
            "add",
            "echo",
            "touch",
            "resources_changed",
            "prompts_changed",
            "log",
            "log_level"
        ]
    );
    let caps = status.capabilities.as_deref().expect("capabilities");
    assert!(caps.resources.is_some() && caps.prompts.is_some() && caps.completions.is_some());
    let result = server
        .call_tool("greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "Hello, Ada!");
    rt.shutdown().await;
}

#[tokio::test]
async fn every_supported_version_is_accepted() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let (rt, server) = runtime_with(demo_memory(&["--protocol-version", version])).await;
        assert_eq!(server.status().protocol_version.as_deref(), Some(version));
        let sum = server
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(sum.text(), "5");
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn unsupported_version_is_refused_naming_both_versions() {
    let rt = Runtime::builder()
        .server(
            "old",
            demo_stdio(&["--protocol-version", "2023-01-01"]).restart(RestartPolicy::off()),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("old").unwrap();
    let ServerState::Failed { error } = server.status().state else {
        panic!("expected failure, got {:?}", server.status().state)
    };
    assert!(
        matches!(error.kind(), ErrorKind::UnsupportedVersion { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("2023-01-01") && text.contains("2025-11-25"),
        "{text}"
    );
    // Calls fail fast with the reason.
    let err = server
        .call_tool("greet", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. }),
        "{err:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn tool_list_pages_are_all_followed() {
    let (rt, server) = runtime_with(demo_memory(&["--faults", "--page-size", "2"])).await;
    let names: Vec<_> = server.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.len() > 10, "{names:?}");
    assert!(names.contains(&"hang".to_string()) && names.contains(&"greet".to_string()));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_alone() {
    let rt = Runtime::builder()
        .server("good", demo_memory(&[]))
        .server(
            "bad",
            switchboard::ServerConfig::stdio("/nonexistent/mcp-server")
                .restart(RestartPolicy::off()),
        )
        .build()
        .await
        .unwrap();
    let bad = rt.server("bad").unwrap();
    let ServerState::Failed { error } = bad.status().state else {
        panic!("{:?}", bad.status().state)
    };
    assert!(matches!(error.kind(), ErrorKind::Spawn { .. }), "{error:?}");
    assert!(error.to_string().contains("bad"), "{error}");
    // The spawn error stays reachable as a source, down to the OS error.
    let mut chain = std::iter::successors(std::error::Error::source(&error), |e| e.source());
    let io = chain.find_map(|e| e.downcast_ref::<std::sync::Arc<std::io::Error>>());
    assert_eq!(
        io.map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound),
        "{error:?}"
    );
    // A call fails at once with the start error as its cause.
    let err = bad.call_tool("echo", json!({})).await.unwrap_err();
    let ErrorKind::Unavailable {
        cause: Some(cause), ..
    } = err.kind()
    else {
        panic!("{err:?}")
    };
    assert!(matches!(cause.kind(), ErrorKind::Spawn { .. }), "{cause:?}");
    let good = rt.server("good").unwrap();
    assert_eq!(
        good.call_tool("echo", json!({"text": "hi"}))
            .await
            .unwrap()
            .text(),
        "hi"
    );
    rt.shutdown().await;
}
