//! A stdio MCP server on rmcp 3.x, the same two tools as the rmcp 0.x fixture: it speaks
//! both eras (2026-07-28 through `server/discover`, and the `initialize` handshake).
//!
//! With `--skills DIR` it also serves the skills below DIR (the Skills extension, SEP-2640)
//! through rmcp's own `SkillCatalog`, as an rmcp server that publishes skills does:
//! `skills/list`, `skills/get`, `resources/directory/read`, and the skill files as resources.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    ErrorData, GetSkillRequestParams, GetSkillResult, ListResourcesResult, ListSkillsResult,
    PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    tool, tool_handler, tool_router, transport::stdio, RoleServer, ServerHandler, ServiceExt,
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

#[derive(Debug, Clone)]
struct Demo {
    // Read by the code `#[tool_handler]` generates.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
    skills: Option<Arc<SkillCatalog>>,
}

#[tool_router]
impl Demo {
    fn new(skills: Option<SkillCatalog>) -> Self {
        Self {
            tool_router: Self::tool_router(),
            skills: skills.map(Arc::new),
        }
    }

    #[tool(description = "Echoes the text")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }

    #[tool(description = "Adds two integers")]
    async fn add(&self, Parameters(args): Parameters<AddArgs>) -> String {
        (args.a + args.b).to_string()
    }

    fn catalog(&self) -> Result<&SkillCatalog, ErrorData> {
        self.skills
            .as_deref()
            .ok_or_else(|| ErrorData::invalid_params("this server serves no skills", None))
    }
}

#[tool_handler]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        let capabilities = match self.skills {
            Some(_) => ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_skills_with_directory_read()
                .build(),
            None => ServerCapabilities::builder().enable_tools().build(),
        };
        ServerConfig::new(capabilities)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        Ok(self.catalog()?.list_skills())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.catalog()?.get_skill(&request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.catalog()?.read_resource_directory(&request.uri)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            self.catalog()?.resources(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.catalog()?
            .read_resource(&request.uri)
            .map(Into::into)
            .ok_or_else(|| ErrorData::resource_not_found(request.uri, None))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let skills = match (args.next().as_deref(), args.next()) {
        (None, _) => None,
        (Some("--skills"), Some(dir)) => Some(SkillCatalog::from_dir(dir)?),
        _ => return Err("usage: rmcp3-server [--skills DIR]".into()),
    };
    let service = Demo::new(skills).serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
