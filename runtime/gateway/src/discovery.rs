//! Discovery mode (`serve --discovery`): `tools/list` offers two meta-tools instead of the
//! whole catalogue, one that searches it and one that calls a tool by its catalogue name.
//!
//! A model handed hundreds of tool definitions reads tens of thousands of tokens before the
//! task and picks worse the more it is shown; in discovery mode it is shown two:
//!
//! - [`SEARCH_TOOL`] (`search_tools`) takes `query` (what the model wants done, in its own
//!   words) and an optional `limit` (1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`]), and
//!   answers the best matches of the catalogue ([`Runtime::search_tools_with`](switchboard::Runtime::search_tools_with)), best first,
//!   each with its catalogue name, server, score and full definition, as `structuredContent`
//!   (its `outputSchema` says the shape) and as the same JSON in a text block for clients
//!   that read only text.
//! - [`CALL_TOOL`] (`call_tool`) takes `name` (a catalogue name) and `arguments`, checks them
//!   against that tool's `inputSchema`, and calls it exactly as a direct `tools/call` of that
//!   name would be ([`Gateway`]'s forwarding): the same errors, progress, cancellation,
//!   log messages, elicitation and sampling, in both eras, counted in the metrics as a
//!   `tools/call` of that tool (the runtime counts it under its server). Arguments that do
//!   not match the schema get what a tool's invalid arguments get
//!   ([`Context::invalid_arguments`]: an `isError` result from 2025-11-25 on, -32602 before).
//!
//! A search is answered by the gateway itself, from the runtime's index, as the lists are:
//! it is not a forwarded request, so it is in none of the front's request series (nor is the
//! client's query logged).
//!
//! A client limited to some tools (`--auth` tool lists) finds only those, and calling
//! another through `call_tool` is refused as its direct call is (-32602, unknown tool); the
//! two meta-tools themselves are every client's. Direct calls by catalogue name keep
//! working while only the meta-tools are listed.
//!
//! **Names.** While discovery is on, the two names are the meta-tools': an upstream tool
//! whose catalogue name is `search_tools` or `call_tool` is not called by a direct call of
//! that name, but is still found by a search and called through `call_tool` (whose `name` is
//! always a catalogue name). With the threshold form below its threshold, the catalogue is
//! listed as it is and every name is the catalogue's.
//!
//! **Threshold.** [`Discovery::Above`]`(n)` lists the meta-tools only while the catalogue has
//! more than `n` tools. Whether it does is read from the lists snapshot each request reads,
//! so it changes exactly when the listing does, and the clients hear
//! `notifications/tools/list_changed` as for any change of the catalogue. A client that
//! calls a meta-tool after the catalogue fell back to the threshold gets what a call of any
//! tool no longer listed gets (the name is the catalogue's again).
//!
//! ```no_run
//! # async fn run(runtime: switchboard::Runtime) -> Result<(), switchboard_server::Error> {
//! use switchboard_gateway::{Discovery, Gateway};
//!
//! // The meta-tools while there are more than 40 tools; the catalogue itself below that.
//! let gateway = Gateway::with_discovery(runtime, "40".parse::<Discovery>().expect("a mode"));
//! let front = gateway.serve(switchboard_server::Options::default());
//! front.server().serve_stdio().await
//! # }
//! ```

use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};
use switchboard::schema_mismatch;
use switchboard::search::{ToolMatch, ToolSearch};
use switchboard_server::{Arguments, BoxFuture, Context, Handler, HandlerError, Reply};

use crate::Gateway;

/// The meta-tool that searches the catalogue.
pub const SEARCH_TOOL: &str = "search_tools";

/// The meta-tool that calls a catalogue tool by its name.
pub const CALL_TOOL: &str = "call_tool";

/// How many matches a search answers when its `limit` is not given.
pub const DEFAULT_LIMIT: usize = 10;

/// The most matches one search answers.
pub const MAX_LIMIT: usize = 50;

/// When the gateway lists the meta-tools instead of the catalogue (see the [module](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Discovery {
    /// Always (`--discovery search`).
    Search,
    /// While the catalogue has more than this many tools (`--discovery N`).
    Above(usize),
}

impl Discovery {
    /// Whether a catalogue of `tools` tools is offered through the meta-tools.
    pub fn applies_to(self, tools: usize) -> bool {
        match self {
            Discovery::Search => true,
            Discovery::Above(threshold) => tools > threshold,
        }
    }
}

/// Why a discovery mode did not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected `search` or a number of tools, not {0:?}")]
pub struct ParseDiscoveryError(String);

impl FromStr for Discovery {
    type Err = ParseDiscoveryError;

    /// `search`, or a number of tools above which the meta-tools are listed.
    fn from_str(text: &str) -> Result<Discovery, ParseDiscoveryError> {
        match text.trim() {
            "search" => Ok(Discovery::Search),
            number => number
                .parse()
                .map(Discovery::Above)
                .map_err(|_| ParseDiscoveryError(text.to_owned())),
        }
    }
}

/// One of the two meta-tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meta {
    Search,
    Call,
}

impl Meta {
    /// The meta-tool `name` is while discovery is on for `gateway`'s listing now.
    pub(crate) fn of(gateway: &Gateway, name: &str) -> Option<Meta> {
        let meta = match name {
            SEARCH_TOOL => Meta::Search,
            CALL_TOOL => Meta::Call,
            _ => return None,
        };
        listing(gateway).then_some(meta)
    }

    fn definition(self) -> &'static Value {
        let [search, call] = definitions();
        match self {
            Meta::Search => search,
            Meta::Call => call,
        }
    }

    /// Its `inputSchema`.
    pub(crate) fn input_schema(self) -> Value {
        self.definition()["inputSchema"].clone()
    }
}

/// Whether `gateway` lists the meta-tools now, rather than its catalogue.
pub(crate) fn listing(gateway: &Gateway) -> bool {
    gateway
        .discovery
        .is_some_and(|d| d.applies_to(gateway.lists().tools.len()))
}

/// The two meta-tools' definitions, as `tools/list` answers them.
pub(crate) fn definitions() -> &'static [Value; 2] {
    static DEFINITIONS: OnceLock<[Value; 2]> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        [
            json!({
                "name": SEARCH_TOOL,
                "title": "Search tools",
                "description": "Finds the tools that can do what you describe, among every \
                    tool this server can call. Describe the task in your own words; the best \
                    matches come first, each with the name to give call_tool and its full \
                    definition (its inputSchema says what arguments it takes).",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "minLength": 1,
                            "description": "What you want to do, e.g. \"open an issue\" or \"read a file\"."
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_LIMIT,
                            "description": format!("How many tools at most (default {DEFAULT_LIMIT}).")
                        }
                    },
                    "required": ["query"]
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "tools": {
                            "type": "array",
                            "description": "The matches, best first.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string", "description": "The name to give call_tool."},
                                    "server": {"type": "string", "description": "The server that offers it."},
                                    "score": {"type": "number", "description": "How well it matched; higher is better."},
                                    "definition": {"type": "object", "description": "The tool as tools/list would list it."}
                                },
                                "required": ["name", "server", "score", "definition"]
                            }
                        }
                    },
                    "required": ["tools"]
                },
                "annotations": {"readOnlyHint": true, "openWorldHint": false}
            }),
            json!({
                "name": CALL_TOOL,
                "title": "Call a tool",
                "description": "Calls a tool that search_tools found, by its name, with \
                    arguments that match its inputSchema, and answers the tool's own result.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {
                            "type": "string",
                            "minLength": 1,
                            "description": "The tool's name, as search_tools gave it."
                        },
                        "arguments": {
                            "type": "object",
                            "description": "The tool's arguments, as its inputSchema describes them."
                        }
                    },
                    "required": ["name"]
                }
            }),
        ]
    })
}

/// Serves a call of meta-tool `meta`.
pub(crate) fn serve(
    gateway: Arc<Gateway>,
    meta: Meta,
    arguments: Arguments,
    ctx: Context,
) -> BoxFuture<Result<Reply, HandlerError>> {
    let name = match meta {
        Meta::Search => SEARCH_TOOL,
        Meta::Call => CALL_TOOL,
    };
    let arguments = match read(&meta.input_schema(), arguments) {
        Ok(arguments) => arguments,
        Err(why) => {
            let refused = ctx.invalid_arguments(name, &why);
            return Box::pin(async move { refused });
        }
    };
    match meta {
        Meta::Search => {
            let found = search(&gateway, &arguments, &ctx);
            Box::pin(async move { Ok(found) })
        }
        Meta::Call => call(gateway, arguments, ctx),
    }
}

/// The meta-tool's arguments as an object, once they match its schema.
fn read(schema: &Value, arguments: Arguments) -> Result<Map<String, Value>, String> {
    let value = arguments.into_value().map_err(|e| e.to_string())?;
    if let Some(why) = schema_mismatch(schema, &value) {
        return Err(why);
    }
    match value {
        Value::Object(arguments) => Ok(arguments),
        _ => Err("arguments must be an object".into()),
    }
}

/// The search: the catalogue's best matches that the request's principal may use.
fn search(gateway: &Gateway, arguments: &Map<String, Value>, ctx: &Context) -> Reply {
    let query = arguments["query"].as_str().unwrap_or_default();
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(DEFAULT_LIMIT);
    let mut search = ToolSearch::new(query).limit(limit);
    // A client never finds a tool it may not call.
    if let Some(principal) = ctx.principal().filter(|p| p.tools.is_some()) {
        search = search.filter(move |entry| principal.may_use_tool(&entry.name));
    }
    let matches = gateway.runtime.search_tools_with(&search);
    // The query is the client's text: not logged.
    tracing::debug!(found = matches.len(), "searched the catalogue");
    Reply::structured(json!({ "tools": matches.iter().map(found).collect::<Vec<_>>() }))
}

/// A match as the search answers it: the definition under its catalogue name.
fn found(tool: &ToolMatch) -> Value {
    let mut definition = serde_json::to_value(&tool.tool).unwrap_or_else(|_| json!({}));
    definition["name"] = Value::String(tool.name.clone());
    json!({
        "name": tool.name,
        "server": &*tool.server,
        "score": tool.score,
        "definition": definition,
    })
}

/// The call: tool `name` of the catalogue with `arguments`, once the principal may use it
/// and they match its schema, forwarded as a direct call is.
fn call(
    gateway: Arc<Gateway>,
    mut arguments: Map<String, Value>,
    ctx: Context,
) -> BoxFuture<Result<Reply, HandlerError>> {
    let Some(Value::String(name)) = arguments.remove("name") else {
        // The schema that [`read`] checked requires it.
        let refused = ctx.invalid_arguments(CALL_TOOL, "name must be a string");
        return Box::pin(async move { refused });
    };
    let arguments = arguments
        .remove("arguments")
        .unwrap_or_else(|| Value::Object(Map::new()));
    if ctx.principal().is_some_and(|p| !p.may_use_tool(&name)) {
        // As its direct call is refused: its existence is not this client's.
        gateway.refused_tool(&name, &ctx);
        let refused = HandlerError::unknown_tool(&name);
        return Box::pin(async move { Err(refused) });
    }
    // A tool not listed yet (a re-list pending) is not checked here: its server checks, and
    // the runtime waits for the list inside the call's deadline, as for a direct call.
    let schema = gateway.lists().schemas.get(&name).cloned();
    if let Some(why) = schema.and_then(|schema| schema_mismatch(&schema, &arguments)) {
        gateway.refused_call(&name, &ctx, crate::audit::INVALID_ARGUMENTS);
        let refused = ctx.invalid_arguments(&name, &why);
        return Box::pin(async move { refused });
    }
    gateway.forward_tool(name, Arguments::from(arguments), ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_is_search_or_a_number_of_tools() {
        assert_eq!("search".parse(), Ok(Discovery::Search));
        assert_eq!(" 40 ".parse(), Ok(Discovery::Above(40)));
        for bad in ["", "all", "-1", "4.5"] {
            assert!(bad.parse::<Discovery>().is_err(), "{bad:?}");
        }
        assert!(Discovery::Search.applies_to(0));
        assert!(!Discovery::Above(3).applies_to(3));
        assert!(Discovery::Above(3).applies_to(4));
    }

    #[test]
    fn the_meta_tools_check_their_own_arguments_by_their_schemas() {
        let [search, call] = definitions();
        let search = &search["inputSchema"];
        let call = &call["inputSchema"];
        assert_eq!(
            schema_mismatch(search, &json!({"query": "read a file"})),
            None
        );
        assert_eq!(
            schema_mismatch(search, &json!({"query": "x", "limit": 5})),
            None
        );
        assert!(schema_mismatch(search, &json!({})).is_some());
        assert!(schema_mismatch(search, &json!({"query": "x", "limit": 0})).is_some());
        assert!(schema_mismatch(search, &json!({"query": "x", "limit": MAX_LIMIT + 1})).is_some());
        assert_eq!(
            schema_mismatch(call, &json!({"name": "add", "arguments": {"a": 1}})),
            None
        );
        assert!(schema_mismatch(call, &json!({"name": "add", "arguments": [1]})).is_some());
        let why = schema_mismatch(call, &json!({"arguments": {}})).expect("name is required");
        assert!(why.contains("name"), "{why}");
    }

    #[test]
    fn a_schema_that_does_not_compile_checks_nothing() {
        assert_eq!(schema_mismatch(&json!({"type": 5}), &json!({})), None);
    }
}
