//! Interop with `@modelcontextprotocol/server-everything` (over stdio, HTTP+SSE and
//! Streamable HTTP) and `@modelcontextprotocol/server-filesystem`.
//!
//! `#[ignore = "needs …"]`: `.ci/run` installs the peers into `.ci/peers` (never fetched
//! inside a startup timeout) and runs these with `--ignored`; a peer that is missing or
//! cannot start fails the test.

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::transport::HttpKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig};

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn server_everything_lists_and_calls_echo_over_stdio() {
    let bin = crate::peers::npm_bin("mcp-server-everything");
    assert!(bin.exists(), "peer not installed at {}", bin.display());
    let rt = Runtime::builder()
        .server(
            "everything",
            ServerConfig::stdio(&bin)
                .arg("stdio")
                .startup_timeout(Duration::from_secs(30)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("everything").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("mcp-servers/everything")
    );
    let names: Vec<_> = server.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "get-sum"), "{names:?}");

    let r = server
        .call_tool("echo", json!({"message": "hello from switchboard"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: hello from switchboard");
    let sum = server
        .call_tool("get-sum", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(sum.text().contains("42"), "{}", sum.text());

    // Progress from a server nobody here wrote reaches the caller.
    let steps = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = steps.clone();
    server
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
        )
        .on_progress(move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert_eq!(steps.load(std::sync::atomic::Ordering::SeqCst), 4);
    let pid = status.pid.unwrap();
    rt.shutdown().await;
    assert!(
        unsafe { libc::kill(pid as i32, 0) } != 0
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z"))
                .unwrap_or(true)
    );
}

#[tokio::test]
#[ignore = "needs server-everything and server-filesystem in .ci/peers (.ci/run installs them)"]
async fn everything_and_filesystem_aggregated_from_a_config_file() {
    let everything = crate::peers::npm_bin("mcp-server-everything");
    let filesystem = crate::peers::npm_bin("mcp-server-filesystem");
    assert!(
        everything.exists() && filesystem.exists(),
        "peers not installed"
    );
    let dir = std::env::temp_dir().join(format!("switchboard-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.txt"), "hello from a file").unwrap();
    // The shape Claude Desktop writes, with an env expansion and our optional additions.
    let text = serde_json::to_string(&json!({
        "mcpServers": {
            "everything": {"command": everything, "args": ["stdio"], "denyTools": ["get-env"]},
            "files": {"command": filesystem, "args": ["${INTEROP_DIR}"], "prefix": "fs"}
        },
        "switchboard": {"timeout": "20s", "naming": {"mode": "conditional"}}
    }))
    .unwrap();
    let dir_text = dir.to_string_lossy().into_owned();
    let file = switchboard::ConfigFile::parse_with_env(&text, &dir.join(".mcp.json"), &|var| {
        (var == "INTEROP_DIR").then(|| dir_text.clone())
    })
    .unwrap();
    let rt = Runtime::builder().config(file).build().await.unwrap();
    for server in rt.servers() {
        assert!(
            server.status().is_ready(),
            "{}: {:?}",
            server.name(),
            server.status().state
        );
    }
    let catalogue = rt.catalogue();
    let names: Vec<_> = catalogue.iter().map(|e| e.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"read_text_file"),
        "{names:?}"
    );
    assert!(!names.contains(&"get-env"), "denied tool listed: {names:?}");

    let echo = rt
        .call_tool("echo", json!({"message": "routed"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: routed");
    let path = dir.join("hello.txt");
    let read = rt
        .call_tool("read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert!(read.text().contains("hello from a file"), "{}", read.text());
    // The prefixed form reaches the same tool.
    let listed = rt
        .call_tool("fs__list_directory", json!({"path": dir}))
        .await
        .unwrap();
    assert!(listed.text().contains("hello.txt"), "{}", listed.text());
    rt.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// server-everything serving HTTP on a free port of 127.0.0.1; killed (and reaped) on drop.
pub(crate) type HttpPeer = crate::peers::ListeningPeer;

impl crate::peers::ListeningPeer {
    /// Starts `mcp-server-everything <mode>` (`sse` or `streamableHttp`) and waits until its
    /// port accepts connections.
    pub(crate) fn everything(mode: &str) -> HttpPeer {
        let port = crate::peers::free_port();
        let mut command = Command::new(crate::peers::npm_bin("mcp-server-everything"));
        command.arg(mode).env("PORT", port.to_string());
        HttpPeer::start(command, port, &format!("server-everything {mode}"))
    }
}

/// A one-server runtime (the server is named `everything`): not restarted, no pings.
pub(crate) async fn one_server_runtime(config: impl Into<ServerConfig>) -> Runtime {
    let config = config
        .into()
        .restart(RestartPolicy::off())
        .liveness(Liveness::off())
        .startup_timeout(Duration::from_secs(20))
        .timeout(Duration::from_secs(20));
    Runtime::builder()
        .server("everything", config)
        .build()
        .await
        .unwrap()
}

/// Lists the tools and calls `echo`; returns the transport the runtime reports.
async fn lists_and_echoes(rt: &Runtime, words: &str) -> &'static str {
    let server = rt.server("everything").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("mcp-servers/everything")
    );
    // `auto` (the default): server-everything refuses `server/discover`, so the handshake era.
    assert_eq!(status.era, Some(switchboard::Era::Legacy));
    let names: Vec<_> = server.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    let r = server
        .call_tool("echo", json!({"message": words}))
        .await
        .unwrap();
    assert_eq!(r.text(), format!("Echo: {words}"));
    // Routed by catalogue name too.
    let r = rt
        .call_tool("echo", json!({"message": "routed"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: routed");
    status.transport.as_str()
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn server_everything_over_legacy_http_sse() {
    let peer = HttpPeer::everything("sse");
    let rt = one_server_runtime(ServerConfig::http(peer.url("/sse"), HttpKind::Sse)).await;
    assert_eq!(lists_and_echoes(&rt, "over http+sse").await, "sse");
    rt.shutdown().await;
    // Auto at the event stream's URL: the era probe's POST and then `initialize`'s are
    // refused, so the legacy HTTP+SSE transport it is.
    let rt = one_server_runtime(ServerConfig::http(peer.url("/sse"), HttpKind::Auto)).await;
    assert_eq!(lists_and_echoes(&rt, "auto over http+sse").await, "sse");
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn server_everything_over_streamable_http_and_auto() {
    let peer = HttpPeer::everything("streamableHttp");
    let rt = one_server_runtime(ServerConfig::http(
        peer.url("/mcp"),
        HttpKind::StreamableHttp,
    ))
    .await;
    assert_eq!(lists_and_echoes(&rt, "over streamable http").await, "http");
    rt.shutdown().await;
    // Auto finds Streamable HTTP at the same endpoint (no fallback).
    let rt = one_server_runtime(ServerConfig::http(peer.url("/mcp"), HttpKind::Auto)).await;
    assert_eq!(lists_and_echoes(&rt, "auto").await, "http");
    rt.shutdown().await;
}

/// Accepts every form with its defaults and a name.
#[derive(Debug)]
pub(crate) struct AcceptWithName;

impl ElicitationHandler for AcceptWithName {
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let mut content = request.defaults();
        content.insert("name".into(), json!("Switchboard"));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn server_everything_elicitation_over_streamable_http() {
    let peer = HttpPeer::everything("streamableHttp");
    let rt = one_server_runtime(
        ServerConfig::http(peer.url("/mcp"), HttpKind::StreamableHttp)
            .client_handlers(ClientHandlers::new().elicitation(AcceptWithName)),
    )
    .await;
    let server = rt.server("everything").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    // Registered once the server saw our `elicitation` capability (after `initialized`);
    // called through the handle, so a listing that raced the registration does not matter.
    let r = server
        .call_tool("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    let text = r.text();
    assert!(!r.is_error(), "{text}");
    assert!(
        text.contains("User provided the requested information"),
        "{text}"
    );
    assert!(text.contains("- Name: Switchboard"), "{text}");
    // A default from the form's schema came back.
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn server_everything_tools_added_after_initialized_are_routed_to_over_legacy_sse() {
    // server-everything registers `trigger-elicitation-request` once it is initialized and
    // has seen our elicitation capability, then announces it. Over HTTP+SSE each message is
    // its own POST: the runtime's `tools/list` must not overtake `notifications/initialized`,
    // and a call by the new name made at once must wait for the announced re-listing. Each
    // round is a new session, as each `switchboard call` is.
    let peer = HttpPeer::everything("sse");
    for round in 0..5 {
        let rt = one_server_runtime(
            ServerConfig::http(peer.url("/sse"), HttpKind::Sse)
                .client_handlers(ClientHandlers::new().elicitation(AcceptWithName)),
        )
        .await;
        let called = rt.call_tool("trigger-elicitation-request", json!({})).await;
        let result = called.unwrap_or_else(|e| panic!("round {round}: {e}"));
        let text = result.text();
        assert!(
            text.contains("- Name: Switchboard"),
            "round {round}: {text}"
        );
        rt.shutdown().await;
    }
}
