//! A stdio MCP server on rmcp 0.16 (the Rust SDK of 2025), built as its README shows: a
//! `#[tool_router]` struct with two tools, served by `serve(stdio())`. It speaks only the
//! handshake era, and exits when the first request is not `initialize`.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Content, ServerCapabilities, ServerInfo};
use rmcp::{
    tool, tool_handler, tool_router, transport::stdio, ErrorData as McpError, ServerHandler,
    ServiceExt,
};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to echo.
    text: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Clone)]
struct Demo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Demo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echoes the text")]
    async fn echo(
        &self,
        Parameters(args): Parameters<EchoArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![Content::text(args.text)]))
    }

    #[tool(description = "Adds two integers")]
    async fn add(&self, Parameters(args): Parameters<AddArgs>) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![Content::text(
            (args.a + args.b).to_string(),
        )]))
    }
}

#[tool_handler]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            ..Default::default()
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Demo::new().serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
