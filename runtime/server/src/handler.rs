//! What an application provides: a [`Handler`] with its tools, resources and templates,
//! prompts and completion, and the [`Info`] that says who it is and what it offers.
//!
//! Lists are plain JSON values (the shapes of `tools/list` and friends); the server pages
//! them and adds what each era needs (`ttlMs`, `resultType`, …). Calls are async and run
//! concurrently, with a [`Context`](crate::Context) for progress, log messages and input from
//! the client: each request runs on a task of its own, so a handler that computes before its
//! first `.await` holds up only its own request, never the reading of the others (work that
//! blocks for long still belongs in `spawn_blocking`: it holds a runtime thread). A handler
//! never sees which era or transport a request came by unless it asks.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::{Id, Notification, Request, Response};
use switchboard_codecs::mcp::skills;

use crate::arguments::Arguments;
use crate::context::Context;
use crate::error::HandlerError;

/// A boxed, sendable future: what handler methods return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Who the server is and which features it serves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Info {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// `serverInfo.title`.
    pub title: Option<String>,
    /// How to use the server, for a model's context (what the default
    /// [`Handler::instructions`] answers).
    pub instructions: Option<String>,
    /// Resources and templates (`resources/*`, subscriptions).
    pub resources: bool,
    /// Prompts (`prompts/*`).
    pub prompts: bool,
    /// Completion (`completion/complete`).
    pub completions: bool,
    /// Whether `listChanged` is declared for tools.
    pub tools_list_changed: bool,
    /// Whether `listChanged` is declared for resources.
    pub resources_list_changed: bool,
    /// Whether `listChanged` is declared for prompts.
    pub prompts_list_changed: bool,
    /// Skills (the extension `io.modelcontextprotocol/skills`: `skills/list`, `skills/get`);
    /// they ride on resources, which are declared with them.
    pub skills: bool,
    /// Whether `resources/directory/read` is served (the skills extension's
    /// `directoryRead`).
    pub skills_directory_read: bool,
}

impl Info {
    /// A server with tools and logging only.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Info {
            name: name.into(),
            version: version.into(),
            title: None,
            instructions: None,
            resources: false,
            prompts: false,
            completions: false,
            tools_list_changed: false,
            resources_list_changed: false,
            prompts_list_changed: false,
            skills: false,
            skills_directory_read: false,
        }
    }

    /// Serves resources too.
    pub fn with_resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// Serves prompts too.
    pub fn with_prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// Serves skills too, and the resources their files are ([`Handler::skills`]);
    /// `directory_read`: `resources/directory/read` as well ([`Handler::read_directory`]).
    pub fn with_skills(mut self, directory_read: bool) -> Self {
        self.skills = true;
        self.skills_directory_read = directory_read;
        self.resources = true;
        self
    }

    /// Serves completion too.
    pub fn with_completions(mut self) -> Self {
        self.completions = true;
        self
    }

    /// Declares `listChanged` (the handler calls [`Context::tools_changed`] and friends).
    pub fn with_list_changed(mut self) -> Self {
        self.tools_list_changed = true;
        self.resources_list_changed = true;
        self.prompts_list_changed = true;
        self
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The capabilities this declares, the same in both eras.
    pub(crate) fn capabilities(&self) -> Value {
        let mut capabilities = json!({
            "tools": {"listChanged": self.tools_list_changed},
            "logging": {},
        });
        if self.skills {
            let settings = match self.skills_directory_read {
                true => json!({"directoryRead": true}),
                false => json!({}),
            };
            // Declared in both eras, as the SDKs do: the handshake era's capabilities are
            // open to fields a version does not name.
            capabilities["extensions"] = json!({ skills::EXTENSION: settings });
        }
        if self.resources || self.skills {
            capabilities["resources"] =
                json!({"subscribe": true, "listChanged": self.resources_list_changed});
        }
        if self.prompts {
            capabilities["prompts"] = json!({"listChanged": self.prompts_list_changed});
        }
        if self.completions {
            capabilities["completions"] = json!({});
        }
        capabilities
    }

    pub(crate) fn implementation(&self) -> Value {
        let mut info = json!({"name": self.name, "version": self.version});
        if let Some(title) = &self.title {
            info["title"] = json!(title);
        }
        info
    }
}

/// What a handler answers: a result, or (for test fixtures that misbehave on purpose) the
/// exact bytes to send in place of the answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Reply {
    /// The result object.
    Result(Value),
    /// The result object, already serialized: written into the response as it is (written
    /// anew only if it has line breaks), with no value tree built and walked again.
    Json(Box<RawValue>),
    /// A tool result of one text block ([`Reply::text`], [`Reply::tool_error`],
    /// [`Reply::structured`]), kept as its parts until its response is written around it.
    Text(TextReply),
    /// Bytes written as they are instead of a response: nothing checks them.
    Raw(Bytes),
}

/// A tool result of one text block, as [`Reply::text`] and its siblings build it.
///
/// It is serialized once, straight into its response, in a buffer of the response's exact
/// size: a result serialized on its own first, then copied in, took two allocations (one
/// of them a reallocation to shrink it) and a second pass for every call.
#[derive(Debug, Clone)]
pub struct TextReply {
    text: String,
    structured: Option<Value>,
    is_error: bool,
}

impl TextReply {
    /// The block's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it says the tool failed (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// Writes the result: the one place its shape is spelled out, which
    /// [`serialized_len`](Self::serialized_len) measures. Written by hand rather than by a
    /// derived `Serialize`, which escaped every key anew on every call.
    pub(crate) fn write_into(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(BLOCK_OPEN);
        serde_json::to_writer(&mut *out, self.text.as_str())?;
        out.extend_from_slice(BLOCK_CLOSE);
        if let Some(structured) = &self.structured {
            out.extend_from_slice(STRUCTURED);
            serde_json::to_writer(&mut *out, structured)?;
        }
        if self.is_error {
            out.extend_from_slice(IS_ERROR);
        }
        out.push(b'}');
        Ok(())
    }

    /// The result's length serialized: exact but for structured content, which is not
    /// measured (a frame that misses its buffer's size only costs a second allocation).
    pub(crate) fn serialized_len(&self) -> usize {
        let structured = match &self.structured {
            Some(_) => STRUCTURED.len() + 64,
            None => 0,
        };
        let is_error = if self.is_error { IS_ERROR.len() } else { 0 };
        BLOCK_OPEN.len() + escaped_len(&self.text) + BLOCK_CLOSE.len() + structured + is_error + 1
    }

    /// The result as a value, for a path that adds fields to it.
    pub(crate) fn to_value(&self) -> Value {
        let mut result = json!({"content": [{"type": "text", "text": self.text}]});
        if let Some(structured) = &self.structured {
            result["structuredContent"] = structured.clone();
        }
        if self.is_error {
            result["isError"] = Value::Bool(true);
        }
        result
    }
}

/// The parts of a text result around its text, and its optional fields.
const BLOCK_OPEN: &[u8] = br#"{"content":[{"type":"text","text":"#;
const BLOCK_CLOSE: &[u8] = b"}]";
const STRUCTURED: &[u8] = br#","structuredContent":"#;
const IS_ERROR: &[u8] = br#","isError":true"#;

/// The length of `s` as a JSON string, quotes included, as serde_json escapes it.
pub(crate) fn escaped_len(s: &str) -> usize {
    let extra: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x0C | b'\n' | b'\r' | b'\t' => 1,
            0..=0x1F => 5,
            _ => 0,
        })
        .sum();
    s.len() + 2 + extra
}

impl Reply {
    /// A tool result with one text block.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(TextReply {
            text: text.into(),
            structured: None,
            is_error: false,
        })
    }

    /// A tool result with one text block and `isError: true`: the tool failed, and the
    /// model should see why.
    pub fn tool_error(text: impl Into<String>) -> Reply {
        Reply::Text(TextReply {
            text: text.into(),
            structured: None,
            is_error: true,
        })
    }

    /// A tool result with structured content, and its JSON as text for older clients.
    pub fn structured(content: Value) -> Reply {
        Reply::Text(TextReply {
            text: content.to_string(),
            structured: Some(content),
            is_error: false,
        })
    }
}

/// A tool result of this text.
impl From<String> for Reply {
    fn from(text: String) -> Self {
        Reply::text(text)
    }
}

/// A tool result of this text.
impl From<&str> for Reply {
    fn from(text: &str) -> Self {
        Reply::text(text)
    }
}

/// A message the server received, shown to [`Handler::observe`] before it is served.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Seen<'a> {
    /// A request.
    Request(&'a Request),
    /// A notification.
    Notification(&'a Notification),
    /// A response to a request the server sent.
    Response(&'a Response),
    /// A handshake-era `tools/call` read from its stdio line in one pass, shown by what was
    /// read of it. Not a [`Request`]: building one only to show it would cost the call
    /// what the one-pass reading saves (about 1.2 k instructions of a small `echo`'s 10 k,
    /// `BENCHMARKS.md`). Other calls, on HTTP or not read that way, come as
    /// [`Seen::Request`].
    Call {
        /// The request's id.
        id: &'a Id,
        /// The tool.
        name: &'a str,
        /// Its arguments as the request wrote them; `None` when absent or `null`.
        arguments: Option<&'a RawValue>,
    },
}

/// An application's side of an MCP server.
///
/// Every method but [`info`](Self::info) has a default: no tools, no resources, no prompts.
/// Handlers take `Arc<Self>` so that their futures own what they need and run on a task of
/// their own; one that waits or computes never holds back another (see the module docs for
/// work that blocks).
///
/// ```
/// use std::borrow::Cow;
/// use std::sync::Arc;
/// use serde::Deserialize;
/// use serde_json::{json, Value};
/// use switchboard_server::{Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply};
///
/// #[derive(Deserialize)]
/// struct EchoArgs<'a> {
///     #[serde(borrow)]
///     text: Cow<'a, str>,
/// }
///
/// struct Echo;
///
/// impl Handler for Echo {
///     fn info(&self) -> Info {
///         Info::new("echo", "1.0.0")
///     }
///     fn tools(&self) -> Cow<'_, [Value]> {
///         Cow::Owned(vec![json!({"name": "echo", "inputSchema": {"type": "object"}})])
///     }
///     fn call_tool(self: Arc<Self>, name: String, args: Arguments, _: Context)
///         -> BoxFuture<Result<Reply, HandlerError>> {
///         Box::pin(async move {
///             match name.as_str() {
///                 "echo" => Ok(match args.parse::<EchoArgs<'_>>() {
///                     Ok(EchoArgs { text }) => Reply::text(text),
///                     Err(e) => Reply::tool_error(format!("invalid arguments: {e}")),
///                 }),
///                 _ => Err(HandlerError::invalid_params(format!("unknown tool: {name}"))),
///             }
///         })
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Who the server is and what it serves.
    fn info(&self) -> Info;

    /// How to use the server, for a model's context: the `instructions` of `initialize`'s
    /// result and of `server/discover`'s, asked for each of them (never for a call). By
    /// default those of [`info`](Self::info), which is read again for it; a handler whose
    /// instructions change while it serves (a gateway whose upstreams come and go) answers
    /// here, and its `Info` needs none.
    fn instructions(&self) -> Option<Cow<'_, str>> {
        self.info().instructions.map(Cow::Owned)
    }

    /// The tools, in a stable order (cursors index into it).
    fn tools(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&[])
    }

    /// The `inputSchema` of tool `name`, which the HTTP transport checks a 2026-07-28 call's
    /// `Mcp-Param-*` headers against on every `tools/call`. By default it searches
    /// [`tools`](Self::tools); a handler with many tools, or whose list is not at hand,
    /// answers it by a lookup instead.
    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        let tools = self.tools();
        let tool = tools.iter().find(|t| t["name"] == name)?;
        tool.get("inputSchema").cloned()
    }

    /// Whether every principal may see and call tool `name`, whatever tools its credentials
    /// name: a tool that checks the principal's tools itself, as a gateway's meta-tools
    /// do (they search and call only what the principal may use). None by default.
    fn tool_for_all(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// Told that the request's principal may not call tool `name`: the request is answered
    /// as for an unknown tool without reaching [`call_tool`](Self::call_tool). For an audit
    /// trail of refusals; nothing by default.
    fn refused_tool(&self, name: &str, ctx: &Context) {
        let _ = (name, ctx);
    }

    /// Runs a tool. A tool that fails, bad arguments included, answers
    /// [`Reply::tool_error`]; an unknown tool is [`HandlerError::invalid_params`].
    fn call_tool(
        self: Arc<Self>,
        name: String,
        arguments: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        let _ = (arguments, ctx);
        Box::pin(async move {
            Err(HandlerError::invalid_params(format!(
                "unknown tool: {name}"
            )))
        })
    }

    /// The resources, in a stable order.
    fn resources(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&[])
    }

    /// The resource templates, in a stable order.
    fn resource_templates(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&[])
    }

    /// Reads a resource: the `resources/read` result (`{"contents": [...]}`).
    fn read_resource(
        self: Arc<Self>,
        uri: String,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        let _ = ctx;
        Box::pin(async move { Err(HandlerError::resource_not_found(&uri)) })
    }

    /// Whether `uri` may be subscribed to (by default, any URI): asked for a
    /// `resources/subscribe` (an error answers it) and for each URI a
    /// `subscriptions/listen` asks for (a refused one is left out of the grant).
    fn check_subscription(&self, uri: &str) -> Result<(), HandlerError> {
        let _ = uri;
        Ok(())
    }

    /// The prompts, in a stable order.
    fn prompts(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&[])
    }

    /// Gets a prompt: the `prompts/get` result.
    fn get_prompt(
        self: Arc<Self>,
        name: String,
        arguments: Value,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        let _ = (arguments, ctx);
        Box::pin(async move {
            Err(HandlerError::invalid_params(format!(
                "unknown prompt: {name}"
            )))
        })
    }

    /// Completes an argument: the `completion/complete` result, from its whole params.
    fn complete(
        self: Arc<Self>,
        params: Value,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        let _ = (params, ctx);
        Box::pin(
            async move { Ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}})) },
        )
    }

    /// The skills, as `skills/list` entries in a stable order (see
    /// [`skills::Skills::entries`](crate::skills::Skills::entries)); served when
    /// [`Info::skills`] is set. Their files are resources: [`read_resource`](Self::read_resource)
    /// reads them.
    fn skills(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&[])
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), whether
    /// [`skills`](Self::skills) lists it or not; by default the listed one. A skill not
    /// served is -32602, as the extension says. Async, as a gateway asks its upstream.
    fn get_skill(
        self: Arc<Self>,
        uri: String,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        let _ = ctx;
        let found = self
            .skills()
            .iter()
            .find(|skill| skill["uri"] == uri.as_str())
            .cloned()
            .ok_or_else(|| HandlerError::unknown_skill(&uri));
        Box::pin(std::future::ready(found))
    }

    /// The direct children of the directory resource at `uri` (`resources/directory/read`,
    /// when [`Info::skills_directory_read`] is set), as resource metadata; subdirectories
    /// have MIME type `inode/directory`. Not a directory: -32602.
    fn read_directory(
        self: Arc<Self>,
        uri: String,
        ctx: Context,
    ) -> BoxFuture<Result<Vec<Value>, HandlerError>> {
        let _ = ctx;
        Box::pin(std::future::ready(Err(HandlerError::not_a_directory(&uri))))
    }

    /// Sees every message before it is served; `false` drops it unserved (a fixture that
    /// plays a hung server).
    fn observe(&self, message: Seen<'_>) -> bool {
        let _ = message;
        true
    }

    /// Called before a request for a method the server does not serve is answered -32601.
    fn unknown_method(&self, method: &str) {
        let _ = method;
    }
}
