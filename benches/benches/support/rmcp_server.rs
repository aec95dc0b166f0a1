//! rmcp's Streamable HTTP server (`StreamableHttpService`, stateless JSON mode: no session,
//! every POST answered with `application/json`) serving one tool, `echo`, that answers its
//! `text` argument as text content, as the bare echo and the demo server do. It runs on an
//! [`HttpServer`] thread like the other servers of the `server` bench, each connection
//! served by hyper (HTTP/1.1, keep-alive).

use std::convert::Infallible;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::http_server::HttpServer;

/// The echo tool's handler.
#[derive(Debug, Clone, Copy)]
struct Echo;

fn echo_tool() -> Tool {
    let mut schema = serde_json::Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert(
        "properties".into(),
        serde_json::json!({"text": {"type": "string"}}),
    );
    schema.insert("required".into(), serde_json::json!(["text"]));
    Tool::new("echo", "Echoes `text`.", Arc::new(schema))
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![echo_tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "echo").then(echo_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(serde_json::Value::as_str);
        match (request.name.as_ref(), text) {
            ("echo", Some(text)) => {
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
            }
            _ => Err(ErrorData::invalid_params(
                "echo takes a string argument `text`",
                None,
            )),
        }
    }
}

/// Starts rmcp's server on a thread of its own.
pub(crate) fn start() -> HttpServer {
    HttpServer::start_with(|listener, mut stop| {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
                .with_sse_keep_alive(None);
            let service = StreamableHttpService::new(
                || Ok(Echo),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            loop {
                let (stream, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(_) => continue,
                    },
                    _ = &mut stop => return,
                };
                // As the other servers: never hold a small answer back for Nagle.
                let _ = stream.set_nodelay(true);
                let service = service.clone();
                let serve = hyper::service::service_fn(move |request| {
                    let service = service.clone();
                    async move { Ok::<_, Infallible>(service.handle(request).await) }
                });
                tokio::task::spawn_local(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), serve)
                        .await;
                });
            }
        })
    })
}
