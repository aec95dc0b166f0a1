//! A front request's W3C trace context reaches the upstream: the front's
//! `_meta.traceparent` goes on in the upstream call's `_meta`, and a malformed one does not.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};
use switchboard::Runtime;

use crate::support::{fronted, in_memory};
use switchboard_server::{
    Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply, Server,
};

/// An upstream with one tool, `trace`, which answers the trace context it was given.
struct Traced;

impl Handler for Traced {
    fn info(&self) -> Info {
        Info::new("traced", "1")
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        Cow::Owned(vec![
            json!({"name": "trace", "inputSchema": {"type": "object"}}),
        ])
    }

    fn call_tool(
        self: Arc<Self>,
        _name: String,
        _arguments: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        let seen = ctx.traceparent().unwrap_or("none").to_owned();
        Box::pin(async move { Ok(Reply::text(seen)) })
    }
}

#[tokio::test]
async fn the_front_requests_trace_context_reaches_the_upstream() {
    let upstream = Runtime::builder()
        .server("traced", in_memory(Server::new(Traced)))
        .build()
        .await
        .unwrap();
    let (front, gateway, _served) = fronted(&upstream).await;
    let call = |traceparent: Option<&str>| {
        let mut call = gateway.call_tool("trace", json!({}));
        if let Some(traceparent) = traceparent {
            let mut meta = serde_json::Map::new();
            meta.insert("traceparent".into(), json!(traceparent));
            call = call.meta(meta);
        }
        call
    };
    let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    assert_eq!(call(Some(good)).await.unwrap().text(), good);
    assert_eq!(call(None).await.unwrap().text(), "none");
    assert_eq!(call(Some("not-a-trace")).await.unwrap().text(), "none");
    front.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn an_http_traceparent_header_reaches_the_upstream_too() {
    let upstream = Runtime::builder()
        .server("traced", in_memory(Server::new(Traced)))
        .build()
        .await
        .unwrap();
    let served = switchboard_gateway::Gateway::new(upstream.clone())
        .serve(switchboard_server::Options::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = served
        .server()
        .clone()
        .http(listener, switchboard_server::http::Config::default());
    let url = format!("http://{}/mcp", http.local_addr().unwrap());
    tokio::spawn(http.run());
    let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "trace", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let answer: serde_json::Value = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "trace")
        .header("traceparent", good)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], good, "{answer}");
    upstream.shutdown().await;
}
