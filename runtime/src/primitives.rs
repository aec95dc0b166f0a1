//! Typed methods for a server's primitives besides tools: resources, prompts, completion,
//! logging and ping, each one more request through the one exchange.
//!
//! Every `list_*` follows the pages to the end (with the same cap as `tools/list`); a
//! `list_*_page` returns one page. From protocol 2025-06-18 on, a method whose capability the
//! server did not declare fails at once with [`ErrorKind::NotSupported`], nothing sent; older
//! servers are asked anyway (2024-11-05 servers offer completion without declaring it).
//! `ping` is never refused.
//!
//! ```no_run
//! # async fn f(server: switchboard::ServerHandle) -> switchboard::Result<()> {
//! for resource in server.list_resources().await? {
//!     let read = server.read_resource(&resource.uri).await?;
//!     println!("{}: {} part(s)", resource.uri, read.contents.len());
//! }
//! let prompt = server.get_prompt("greeting", [("name", "Ada")]).await?;
//! println!("{} message(s)", prompt.messages.len());
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use switchboard_codecs::mcp::{
    methods, CompleteResult, CompletionReference, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, LoggingLevel, Prompt, ReadResourceResult,
    Resource, ResourceTemplate, ServerCapabilities,
};
use tokio::sync::broadcast;

use crate::error::{Error, ErrorContext, ErrorKind, Result};
use crate::handle::ServerHandle;
use crate::logging::ServerLog;
use crate::paging::collect_pages;
use crate::subscriptions::ResourceUpdate;

/// JSON-RPC error code for a resource that does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;
/// JSON-RPC "invalid params", which some servers answer for an unknown resource.
const INVALID_PARAMS: i64 = -32602;

/// The first protocol version whose servers must declare what they offer.
const DECLARED_FROM: &str = "2025-06-18";

/// The capability a server must declare for a method.
#[derive(Debug, Clone, Copy)]
enum Capability {
    Resources,
    ResourceSubscriptions,
    Prompts,
    Completions,
    Logging,
}

impl Capability {
    fn name(self) -> &'static str {
        match self {
            Capability::Resources => "resources",
            Capability::ResourceSubscriptions => "resources.subscribe",
            Capability::Prompts => "prompts",
            Capability::Completions => "completions",
            Capability::Logging => "logging",
        }
    }

    fn declared(self, caps: &ServerCapabilities) -> bool {
        match self {
            Capability::Resources => caps.resources.is_some(),
            Capability::ResourceSubscriptions => caps
                .resources
                .as_ref()
                .and_then(|r| r.get("subscribe"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            Capability::Prompts => caps.prompts.is_some(),
            Capability::Completions => caps.completions.is_some(),
            Capability::Logging => caps.logging.is_some(),
        }
    }
}

impl ServerHandle {
    /// Every resource the server lists, all pages.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.require(methods::RESOURCES_LIST, Capability::Resources)?;
        self.every_page(methods::RESOURCES_LIST, |p: ListResourcesResult| {
            (p.resources, p.next_cursor)
        })
        .await
    }

    /// One page of `resources/list`, from `cursor` (`None`: the first).
    pub async fn list_resources_page(&self, cursor: Option<&str>) -> Result<ListResourcesResult> {
        self.require(methods::RESOURCES_LIST, Capability::Resources)?;
        self.typed(methods::RESOURCES_LIST, page_params(cursor))
            .await
    }

    /// Every resource template the server lists, all pages.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.require(methods::RESOURCE_TEMPLATES_LIST, Capability::Resources)?;
        self.every_page(
            methods::RESOURCE_TEMPLATES_LIST,
            |p: ListResourceTemplatesResult| (p.resource_templates, p.next_cursor),
        )
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult> {
        self.require(methods::RESOURCE_TEMPLATES_LIST, Capability::Resources)?;
        self.typed(methods::RESOURCE_TEMPLATES_LIST, page_params(cursor))
            .await
    }

    /// Reads a resource: text parts as text, binary parts as the base64 the server sent.
    /// An unknown URI is [`ErrorKind::ResourceNotFound`], whichever code the server used for it
    /// (-32002, or -32602 as some servers answer).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        self.require(methods::RESOURCES_READ, Capability::Resources)?;
        self.typed(methods::RESOURCES_READ, json!({ "uri": uri }))
            .await
            .map_err(|e| self.not_found(uri, e))
    }

    /// [`read_resource`](Self::read_resource)'s result as the server sent it, untouched.
    pub async fn read_resource_raw(&self, uri: &str) -> Result<Box<serde_json::value::RawValue>> {
        self.require(methods::RESOURCES_READ, Capability::Resources)?;
        self.request(methods::RESOURCES_READ, Some(json!({ "uri": uri })))
            .await
            .map_err(|e| self.not_found(uri, e))
    }

    /// A read's error, with an unknown resource told apart whichever code says so.
    fn not_found(&self, uri: &str, error: Error) -> Error {
        match error.kind() {
            ErrorKind::Rpc { code, message, .. }
                if *code == RESOURCE_NOT_FOUND || *code == INVALID_PARAMS =>
            {
                ErrorContext::of_server(self.core.name.clone()).error(ErrorKind::ResourceNotFound {
                    uri: uri.into(),
                    message: message.clone(),
                })
            }
            _ => error,
        }
    }

    /// Every prompt the server lists, all pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.require(methods::PROMPTS_LIST, Capability::Prompts)?;
        self.every_page(methods::PROMPTS_LIST, |p: ListPromptsResult| {
            (p.prompts, p.next_cursor)
        })
        .await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts_page(&self, cursor: Option<&str>) -> Result<ListPromptsResult> {
        self.require(methods::PROMPTS_LIST, Capability::Prompts)?;
        self.typed(methods::PROMPTS_LIST, page_params(cursor)).await
    }

    /// A prompt's messages, for these string arguments.
    pub async fn get_prompt<K, V>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<GetPromptResult>
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.require(methods::PROMPTS_GET, Capability::Prompts)?;
        let arguments: BTreeMap<String, String> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.typed(
            methods::PROMPTS_GET,
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    /// Values for one argument of a prompt or a resource template, given what the user
    /// typed so far (`value`) and the arguments already chosen (`context`, 2025-06-18).
    pub async fn complete<K, V>(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
        context: impl IntoIterator<Item = (K, V)>,
    ) -> Result<CompleteResult>
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.require(methods::COMPLETION_COMPLETE, Capability::Completions)?;
        let context: BTreeMap<String, String> = context
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let mut params = json!({
            "ref": reference,
            "argument": { "name": argument, "value": value },
        });
        if !context.is_empty() {
            params["context"] = json!({ "arguments": context });
        }
        self.typed(methods::COMPLETION_COMPLETE, params).await
    }

    /// Asks the server to log at `level` and above; the level is sent again after every
    /// restart and re-initialization, so callers never redo it.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<()> {
        self.require(methods::LOGGING_SET_LEVEL, Capability::Logging)?;
        let _: Value = self
            .typed(methods::LOGGING_SET_LEVEL, json!({ "level": level }))
            .await?;
        self.core.logging.set_level(level);
        Ok(())
    }

    /// Subscribes to a resource's updates. The subscription stands until
    /// [`unsubscribe`](Self::unsubscribe), across restarts (the runtime subscribes again to
    /// every new session); each receiver gets every update from now on.
    ///
    /// A handshake-era server is sent `resources/subscribe`. A stateless (2026-07-28) server
    /// has no such request: the URI joins what the runtime's `subscriptions/listen` stream
    /// asks for, the stream is opened again with it, and this returns once the server
    /// acknowledged that stream (within the server's timeout); when the server refuses it,
    /// with the server's error.
    pub async fn subscribe(&self, uri: &str) -> Result<broadcast::Receiver<ResourceUpdate>> {
        self.require(
            methods::RESOURCES_SUBSCRIBE,
            Capability::ResourceSubscriptions,
        )?;
        // Registered first, so that an update racing the answer is not lost.
        let (updates, revision) = self.core.subscriptions.add(uri);
        let sent = if self.speaks_modern().await {
            self.listen_acknowledged(uri, revision).await
        } else {
            self.typed(methods::RESOURCES_SUBSCRIBE, json!({ "uri": uri }))
                .await
                .map(|_: Value| ())
        };
        if let Err(error) = sent {
            self.core.subscriptions.remove(uri);
            return Err(error);
        }
        Ok(updates)
    }

    /// Ends a subscription: the server is told (a stateless server by a
    /// `subscriptions/listen` without the URI), and the receivers' streams end.
    pub async fn unsubscribe(&self, uri: &str) -> Result<()> {
        self.require(
            methods::RESOURCES_UNSUBSCRIBE,
            Capability::ResourceSubscriptions,
        )?;
        // Removing the URI bumps the set's revision, which has a stateless server's listen
        // opened again without it; nothing to wait for.
        self.core.subscriptions.remove(uri);
        if self.speaks_modern().await {
            return Ok(());
        }
        let _: Value = self
            .typed(methods::RESOURCES_UNSUBSCRIBE, json!({ "uri": uri }))
            .await?;
        Ok(())
    }

    /// Whether the server speaks the stateless era, waiting for it to start when its era is
    /// not known yet.
    async fn speaks_modern(&self) -> bool {
        let era = match self.status().era {
            Some(era) => Some(era),
            None => self.wait_started().await.era,
        };
        era == Some(crate::era::Era::Modern)
    }

    /// Waits until a stateless server acknowledged a listen asking for the subscription set
    /// at `revision` (or a later one), within the server's timeout.
    async fn listen_acknowledged(&self, uri: &str, revision: u64) -> Result<()> {
        let after = self
            .core
            .config
            .timeout
            .unwrap_or(self.core.default_timeout);
        let acked = self.core.subscriptions.wait_acknowledged(revision);
        match tokio::time::timeout(after, acked).await {
            Ok(answered) => answered,
            Err(_) => Err(ErrorContext::of_server(self.core.name.clone()).error(
                ErrorKind::SubscriptionNotAcknowledged {
                    uri: uri.to_owned(),
                    after,
                },
            )),
        }
    }

    /// The messages the server logs (`notifications/message`), from now on. A receiver that
    /// falls more than 256 messages behind is told how many it missed.
    pub fn logs(&self) -> broadcast::Receiver<ServerLog> {
        self.core.logging.subscribe()
    }

    /// Sends `ping` and waits for the answer. A stateless (2026-07-28) server, whose era
    /// has no `ping`, is sent `server/discover` instead, as liveness does: servers must
    /// answer it, and it does no work.
    pub async fn ping(&self) -> Result<()> {
        let method = if self.speaks_modern().await {
            switchboard_codecs::mcp::modern::SERVER_DISCOVER
        } else {
            methods::PING
        };
        let _: Value = self.typed(method, json!({})).await?;
        Ok(())
    }

    /// Whether the server may be asked `method`: from 2025-06-18 on, only with its
    /// capability declared.
    fn require(&self, method: &str, capability: Capability) -> Result<()> {
        let status = self.core.status.borrow();
        let (Some(version), Some(caps)) = (&status.protocol_version, &status.capabilities) else {
            // Not initialized yet: the request waits for readiness and the server decides.
            return Ok(());
        };
        if **version >= *DECLARED_FROM && !capability.declared(caps) {
            return Err(ErrorContext::of_server(self.core.name.clone())
                .with_method(method.into())
                .error(ErrorKind::NotSupported {
                    capability: capability.name(),
                }));
        }
        Ok(())
    }

    /// Every page of a list, each page's items and next cursor taken out by `items`.
    async fn every_page<R: DeserializeOwned, T>(
        &self,
        method: &'static str,
        items: fn(R) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>> {
        collect_pages(self.name(), method, |cursor| async move {
            let page: R = self.typed(method, page_params(cursor.as_deref())).await?;
            Ok(items(page))
        })
        .await
    }
}

fn page_params(cursor: Option<&str>) -> Value {
    match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    }
}
