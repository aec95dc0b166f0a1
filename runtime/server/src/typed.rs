//! The functions a typed tool, resource or prompt is made of: what
//! [`ServerBuilder`](crate::ServerBuilder) accepts, and what each kind of function means.
//!
//! - A tool is an `async fn(Args) -> Result<R, ToolError>`, or `async fn(Args, Context)`,
//!   where `Args: DeserializeOwned + JsonSchema` (its schema is the tool's `inputSchema`)
//!   and `R: Into<Reply>` (a `String` is a text result); a tool without arguments is an
//!   `async fn()` or `async fn(Context)`.
//! - A resource is an `async fn() -> Result<R, ToolError>`, or `async fn(Context)`, where
//!   `R: Into<ResourceReply>` (a `String` is its text).
//! - A prompt is as a tool, with `R: Into<PromptReply>` (a `String` is one user message),
//!   and its `Args` a struct whose fields take strings: they are its arguments.
//!
//! Closures work as well as `fn` items (`|Add { a, b }| async move { … }`). The traits are
//! sealed: their implementations for these functions are all there are. The marker types
//! tell them apart (a function is one of the four shapes), and never need to be named.
//!
//! ```
//! use serde::Deserialize;
//! use schemars::JsonSchema;
//! use switchboard_server::{Context, Server, ToolError};
//!
//! /// What to look up.
//! #[derive(Deserialize, JsonSchema)]
//! struct Query {
//!     /// The word.
//!     word: String,
//!     /// How many senses, at most.
//!     limit: Option<u32>,
//! }
//!
//! /// A word to explain (a prompt's arguments are strings).
//! #[derive(Deserialize, JsonSchema)]
//! struct Word {
//!     /// The word.
//!     word: String,
//! }
//!
//! async fn define(query: Query) -> Result<String, ToolError> {
//!     Ok(format!("{}: a word ({} senses)", query.word, query.limit.unwrap_or(1)))
//! }
//!
//! async fn lookup(query: Query, ctx: Context) -> Result<String, ToolError> {
//!     ctx.progress(0.5, Some(1.0), Some("looking")).await;
//!     Ok(query.word.to_uppercase())
//! }
//!
//! # fn main() -> Result<(), switchboard_server::Error> {
//! let server = Server::builder("dictionary", "1.0.0")
//!     .tool("define", "Defines a word", define)
//!     .tool("lookup", "Looks a word up", lookup)
//!     .tool("today", "Today's word", || async { Ok("serendipity") })
//!     .resource("dict://about", "about", || async { Ok("A dictionary.") })
//!     .prompt("explain", "Explains a word", |w: Word| async move {
//!         Ok(format!("Explain the word {:?} simply.", w.word))
//!     })
//!     .build()?;
//! # let _ = server; Ok(()) }
//! ```

use std::future::Future;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::context::Context;
use crate::error::{HandlerError, ToolError};
use crate::handler::{BoxFuture, Reply};
use crate::replies::{PromptReply, ResourceReply};
use crate::schema;

/// A function that is a tool: see the [module docs](self).
pub trait ToolFn<M>: sealed::Tool<M> {}

impl<M, F: sealed::Tool<M>> ToolFn<M> for F {}

/// A function that reads a resource: see the [module docs](self).
pub trait ResourceFn<M>: sealed::Resource<M> {}

impl<M, F: sealed::Resource<M>> ResourceFn<M> for F {}

/// A function that gets a prompt: see the [module docs](self).
pub trait PromptFn<M>: sealed::Prompt<M> {}

impl<M, F: sealed::Prompt<M>> PromptFn<M> for F {}

/// Marks a function of its arguments alone.
#[derive(Debug)]
pub struct Args<A>(PhantomData<fn() -> A>);

/// Marks a function of its arguments and the request's [`Context`].
#[derive(Debug)]
pub struct ArgsAndContext<A>(PhantomData<fn() -> A>);

/// Marks a function of nothing.
#[derive(Debug)]
pub struct Nothing(());

/// Marks a function of the request's [`Context`] alone.
#[derive(Debug)]
pub struct ContextOnly(());

/// A tool's future, its error made what a tool answers.
type ToolFuture = BoxFuture<Result<Reply, HandlerError>>;

/// A resource's or a prompt's future, its error made the handler's.
type ValueFuture = BoxFuture<Result<Value, HandlerError>>;

fn tool_future<R: Into<Reply>>(
    future: impl Future<Output = Result<R, ToolError>> + Send + 'static,
) -> ToolFuture {
    Box::pin(async move {
        match future.await {
            Ok(reply) => Ok(reply.into()),
            Err(error) => error.into_tool_reply(),
        }
    })
}

fn resource_future<R: Into<ResourceReply>>(
    uri: String,
    future: impl Future<Output = Result<R, ToolError>> + Send + 'static,
) -> ValueFuture {
    Box::pin(async move {
        match future.await {
            Ok(reply) => Ok(reply.into().into_result(uri)),
            Err(error) => Err(error.into_handler_error()),
        }
    })
}

fn prompt_future<R: Into<PromptReply>>(
    future: impl Future<Output = Result<R, ToolError>> + Send + 'static,
) -> ValueFuture {
    Box::pin(async move {
        match future.await {
            Ok(reply) => Ok(reply.into().into_result()),
            Err(error) => Err(error.into_handler_error()),
        }
    })
}

pub(crate) mod sealed {
    use super::*;

    /// What a tool function does: its `inputSchema`, and a call from arguments that
    /// deserialize (`Err`: why they do not, naming the field).
    pub trait Tool<M>: Send + Sync + 'static {
        fn input_schema() -> Result<Map<String, Value>, String>;
        fn call(&self, arguments: &Arguments, ctx: Context) -> Result<ToolFuture, String>;
    }

    /// What a resource function does: the `resources/read` result for `uri`.
    pub trait Resource<M>: Send + Sync + 'static {
        fn read(&self, uri: String, ctx: Context) -> ValueFuture;
    }

    /// What a prompt function does: its `arguments`, and the `prompts/get` result from
    /// arguments that deserialize (`Err`: why they do not).
    pub trait Prompt<M>: Send + Sync + 'static {
        fn arguments() -> Result<Vec<Value>, String>;
        fn get(&self, arguments: Value, ctx: Context) -> Result<ValueFuture, String>;
    }
}

impl<F, A, Fut, R> sealed::Tool<Args<A>> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<Reply> + 'static,
{
    fn input_schema() -> Result<Map<String, Value>, String> {
        schema::arguments_of::<A>()
    }

    fn call(&self, arguments: &Arguments, _: Context) -> Result<ToolFuture, String> {
        Ok(tool_future(self(arguments.read()?)))
    }
}

impl<F, A, Fut, R> sealed::Tool<ArgsAndContext<A>> for F
where
    F: Fn(A, Context) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<Reply> + 'static,
{
    fn input_schema() -> Result<Map<String, Value>, String> {
        schema::arguments_of::<A>()
    }

    fn call(&self, arguments: &Arguments, ctx: Context) -> Result<ToolFuture, String> {
        Ok(tool_future(self(arguments.read()?, ctx)))
    }
}

impl<F, Fut, R> sealed::Tool<Nothing> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<Reply> + 'static,
{
    fn input_schema() -> Result<Map<String, Value>, String> {
        Ok(no_arguments())
    }

    fn call(&self, _: &Arguments, _: Context) -> Result<ToolFuture, String> {
        Ok(tool_future(self()))
    }
}

impl<F, Fut, R> sealed::Tool<ContextOnly> for F
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<Reply> + 'static,
{
    fn input_schema() -> Result<Map<String, Value>, String> {
        Ok(no_arguments())
    }

    fn call(&self, _: &Arguments, ctx: Context) -> Result<ToolFuture, String> {
        Ok(tool_future(self(ctx)))
    }
}

fn no_arguments() -> Map<String, Value> {
    match schema::no_arguments() {
        Value::Object(schema) => schema,
        _ => Map::new(),
    }
}

impl<F, Fut, R> sealed::Resource<Nothing> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<ResourceReply> + 'static,
{
    fn read(&self, uri: String, _: Context) -> ValueFuture {
        resource_future(uri, self())
    }
}

impl<F, Fut, R> sealed::Resource<ContextOnly> for F
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<ResourceReply> + 'static,
{
    fn read(&self, uri: String, ctx: Context) -> ValueFuture {
        resource_future(uri, self(ctx))
    }
}

fn prompt_arguments_of<A: JsonSchema>() -> Result<Vec<Value>, String> {
    schema::prompt_arguments(&schema::arguments_of::<A>()?)
}

impl<F, A, Fut, R> sealed::Prompt<Args<A>> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<PromptReply> + 'static,
{
    fn arguments() -> Result<Vec<Value>, String> {
        prompt_arguments_of::<A>()
    }

    fn get(&self, arguments: Value, _: Context) -> Result<ValueFuture, String> {
        Ok(prompt_future(self(schema::from_value(arguments)?)))
    }
}

impl<F, A, Fut, R> sealed::Prompt<ArgsAndContext<A>> for F
where
    F: Fn(A, Context) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<PromptReply> + 'static,
{
    fn arguments() -> Result<Vec<Value>, String> {
        prompt_arguments_of::<A>()
    }

    fn get(&self, arguments: Value, ctx: Context) -> Result<ValueFuture, String> {
        Ok(prompt_future(self(schema::from_value(arguments)?, ctx)))
    }
}

impl<F, Fut, R> sealed::Prompt<Nothing> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<PromptReply> + 'static,
{
    fn arguments() -> Result<Vec<Value>, String> {
        Ok(Vec::new())
    }

    fn get(&self, _: Value, _: Context) -> Result<ValueFuture, String> {
        Ok(prompt_future(self()))
    }
}

impl<F, Fut, R> sealed::Prompt<ContextOnly> for F
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<PromptReply> + 'static,
{
    fn arguments() -> Result<Vec<Value>, String> {
        Ok(Vec::new())
    }

    fn get(&self, _: Value, ctx: Context) -> Result<ValueFuture, String> {
        Ok(prompt_future(self(ctx)))
    }
}
