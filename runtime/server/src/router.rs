//! The [`Handler`] that [`ServerBuilder`](crate::ServerBuilder) assembles: typed tools,
//! resources and prompts, each found by its name (a resource by its URI), their lists
//! written once when it is built.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::arguments::Arguments;
use crate::context::Context;
use crate::error::HandlerError;
use crate::handler::{BoxFuture, Handler, Info, Reply};
use crate::skills::Skills;

/// A tool's call from its arguments: the handler's future, or why the arguments do not
/// deserialize into the type the tool takes.
pub(crate) type CallFn = Box<
    dyn Fn(&Arguments, Context) -> Result<BoxFuture<Result<Reply, HandlerError>>, String>
        + Send
        + Sync,
>;

/// A resource's read, from its URI.
pub(crate) type ReadFn =
    Box<dyn Fn(String, Context) -> BoxFuture<Result<Value, HandlerError>> + Send + Sync>;

/// A prompt's get from its arguments, or why they do not deserialize.
pub(crate) type GetFn = Box<
    dyn Fn(Value, Context) -> Result<BoxFuture<Result<Value, HandlerError>>, String> + Send + Sync,
>;

/// A [`Handler`] of typed tools, resources and prompts, built by
/// [`ServerBuilder::into_router`](crate::ServerBuilder::into_router): for serving it with
/// [`Server::with_options`](crate::Server::with_options), or from a handler of one's own
/// that passes some requests on to it.
pub struct Router {
    pub(crate) info: Info,
    /// `tools/list`, `resources/list` and `prompts/list`, in the order they were added.
    pub(crate) tool_list: Vec<Value>,
    pub(crate) resource_list: Vec<Value>,
    pub(crate) prompt_list: Vec<Value>,
    pub(crate) tools: HashMap<String, Tool>,
    pub(crate) resources: HashMap<String, ReadFn>,
    pub(crate) prompts: HashMap<String, GetFn>,
    /// The skills, whose files are also in `resource_list`.
    pub(crate) skills: Skills,
}

pub(crate) struct Tool {
    pub(crate) call: CallFn,
    pub(crate) input_schema: Value,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |list: &[Value], key: &str| -> Vec<String> {
            list.iter()
                .map(|entry| entry[key].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        f.debug_struct("Router")
            .field("name", &self.info.name)
            .field("tools", &names(&self.tool_list, "name"))
            .field("resources", &names(&self.resource_list, "uri"))
            .field("prompts", &names(&self.prompt_list, "name"))
            .field("skills", &names(self.skills.entries(), "uri"))
            .finish()
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<T> {
    Box::pin(std::future::ready(value))
}

impl Handler for Router {
    fn info(&self) -> Info {
        self.info.clone()
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.tool_list)
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        Some(self.tools.get(name)?.input_schema.clone())
    }

    /// Runs the tool with its arguments read into the type it takes. Arguments that are not
    /// one (the field that failed named) are -32602 before 2025-11-25, and from it on (the
    /// stateless era too) a result with `isError: true`, as each version's specification
    /// says.
    fn call_tool(
        self: Arc<Self>,
        name: String,
        arguments: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        let Some(tool) = self.tools.get(&name) else {
            return ready(Err(HandlerError::unknown_tool(&name)));
        };
        if !arguments.is_object() {
            return ready(ctx.invalid_arguments(&name, "arguments must be an object"));
        }
        // The context is kept (a reference count) for the answer to arguments that do not
        // deserialize, whose form depends on the request's version.
        match (tool.call)(&arguments, ctx.clone()) {
            Ok(call) => call,
            Err(why) => ready(ctx.invalid_arguments(&name, &why)),
        }
    }

    fn resources(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.resource_list)
    }

    fn read_resource(
        self: Arc<Self>,
        uri: String,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        match self.resources.get(&uri) {
            Some(read) => read(uri, ctx),
            None => ready(
                self.skills
                    .read(&uri)
                    .ok_or_else(|| HandlerError::resource_not_found(&uri)),
            ),
        }
    }

    fn prompts(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.prompt_list)
    }

    fn skills(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self.skills.entries())
    }

    fn get_skill(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        ready(
            self.skills
                .get(&uri)
                .cloned()
                .ok_or_else(|| HandlerError::unknown_skill(&uri)),
        )
    }

    fn read_directory(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Vec<Value>, HandlerError>> {
        ready(
            self.skills
                .read_directory(&uri)
                .ok_or_else(|| HandlerError::not_a_directory(&uri)),
        )
    }

    /// Gets the prompt with its arguments read into the type it takes; arguments that are
    /// not one are -32602, the field that failed named.
    fn get_prompt(
        self: Arc<Self>,
        name: String,
        arguments: Value,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        let Some(get) = self.prompts.get(&name) else {
            return ready(Err(HandlerError::invalid_params(format!(
                "unknown prompt: {name}"
            ))));
        };
        match get(arguments, ctx) {
            Ok(future) => future,
            Err(why) => ready(Err(HandlerError::invalid_params(format!(
                "invalid arguments for prompt {name}: {why}"
            )))),
        }
    }
}
