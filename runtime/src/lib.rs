#![doc = include_str!("../../README.md")]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

mod actor;
mod admission;
mod call;
mod call_scope;
mod call_table;
mod catalogue;
pub mod client;
pub mod client_values;
mod config;
mod config_file;
mod core;
mod deadline;
mod era;
mod era_memory;
mod error;
mod exchange;
mod framer;
mod freshness;
mod handle;
pub mod isolation;
mod logging;
pub mod metrics;
mod paging;
mod primitives;
mod restart;
mod routing;
mod runtime;
mod skills;
mod status;
mod subscriptions;
pub mod task;
mod task_state;
mod task_store;
pub mod timestamp;
mod tool_result;
mod tool_rules;
pub mod transport;
mod uri_template;

pub use call::Call;
pub use call_table::Progress;
pub use catalogue::search;
pub use catalogue::{
    Catalogue, CatalogueBuilder, CatalogueEntry, Collision, Naming, NamingMode, Unresolved,
};
pub use config::ServerConfig;
pub use config_file::{ConfigError, ConfigFile, FileDefaults};
pub use deadline::ToolPolicy;
pub use era::{Era, Protocol, UnknownProtocol};
pub use error::{
    Error, ErrorCategory, ErrorContext, ErrorKind, JsonRpcError, JsonRpcMapping, Result,
    Unavailability,
};
pub use handle::ServerHandle;
pub use isolation::{Isolation, IsolationPolicy};
pub use logging::ServerLog;
pub use restart::{Liveness, RestartPolicy};
pub use runtime::{Runtime, RuntimeBuilder, RuntimeWatch};
pub use skills::{ServerSkills, SkillFile};
pub use status::{ServerState, ServerStatus};
pub use subscriptions::ResourceUpdate;
pub use switchboard_transports::{CloseCause, CloseReason};
pub use tool_rules::schema_mismatch;

/// OAuth 2.1 for remote servers: the [`switchboard-oauth`](switchboard_oauth) crate.
#[cfg(feature = "oauth")]
pub use switchboard_oauth as oauth;

/// The MCP shapes the runtime's answers come in, and what callers pass it: tools and their
/// results, content blocks, resources, prompts, completion, log levels, skills, and what a
/// server says of itself. The wire's own shapes (requests, notifications, the handshake) stay in
/// `switchboard-codecs`.
pub mod model {
    pub use switchboard_codecs::mcp::skills::{
        ListSkillsResult, Skill, SkillResource, SkillResources, SkillsCapability,
        SCHEME as SKILL_SCHEME, SKILL_MD,
    };
    pub use switchboard_codecs::mcp::{
        Annotations, AudioContent, BlobResourceContents, CallToolResult, CompleteResult,
        Completion, CompletionReference, Content, EmbeddedResource, GetPromptResult, ImageContent,
        Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        LoggingLevel, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
        ResourceContents, ResourceLink, ResourceTemplate, Role, ServerCapabilities, TaskSupport,
        TextContent, TextResourceContents, Tool, ToolAnnotations, ToolExecution, ToolResultContent,
        ToolUseContent, ToolsCapability, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
    };
}
