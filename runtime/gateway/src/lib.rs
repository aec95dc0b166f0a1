//! `switchboard serve`: every server a [`Runtime`] runs, served as one MCP server.
//!
//! A [`Gateway`] is a [`switchboard_server::Handler`] whose tools, resources and templates,
//! prompts and completion are the runtime's catalogue: names as the runtime's naming gives
//! them (with one upstream and no prefix, the upstream's own), every request routed to the
//! upstream that offers what it names, whatever era that upstream speaks, and the answer
//! passed back. Progress reaches the front client that asked for it; a front client that
//! cancels (or closes its HTTP stream) drops the upstream call, which cancels it there. When
//! the catalogue changes, every front client hears `list_changed` ([`Front`] follows the
//! runtime and tells them).
//!
//! ```no_run
//! # async fn run(runtime: switchboard::Runtime) -> Result<(), switchboard_server::Error> {
//! use switchboard_gateway::Gateway;
//!
//! let front = Gateway::new(runtime).serve(switchboard_server::Options::default());
//! front.server().serve_stdio().await
//! # }
//! ```
//!
//! A resource a front client subscribes to is subscribed to upstream, and its updates reach
//! the front clients subscribed to it. While an upstream serves a tool call, what it asks the
//! client (sampling, elicitation; roots from a 2026-07-28 upstream) is asked of the front
//! client whose call caused it, and what it logs reaches that client at the level the client
//! set (`asks.rs`, `forward.rs`). A handshake-era upstream's requests and log messages carry
//! no link to a call, so they are the call's only while it is that upstream's one tool call in
//! flight; otherwise a request is refused and a log message stays in the gateway's own log.
//! Not forwarded: roots to a handshake-era upstream (its connection serves every front
//! client, so it is not told of roots), and what an upstream asks or logs while it serves a
//! prompt, a resource read or a completion.
//!
//! `initialize` and `server/discover` carry the upstreams' `instructions`: with one
//! upstream its own, with several a section per upstream under its name, rebuilt with the
//! lists. [`Gateway::is_ready_for`] says whether the upstreams a deployment needs are ready
//! ([`Readiness`]), for `/readyz`.
//!
//! A server isolated per client or per session (its config's `isolation`) serves each client
//! or session from an instance of its own, started on first use, bounded and stopped when
//! idle: see the `instances` module's documentation; [`Gateway::shutdown_instances`] stops them.
//!
//! Skills (the extension `io.modelcontextprotocol/skills`) are aggregated from every
//! upstream that serves them, their URIs prefixed apart as the catalogue prefixes tools, and
//! requests for them routed back: see the `skills` module's documentation.
//!
//! With [`Gateway::audit_to`] (`serve --audit`), every forwarded request and every refused
//! tool call is written to an [`audit::Audit`] log and traced at info: see [`audit`].
//!
//! In discovery mode ([`Gateway::with_discovery`], `serve --discovery`), `tools/list` offers
//! two meta-tools instead of the catalogue, `search_tools` and `call_tool`, always or while
//! the catalogue is larger than a threshold: see [`discovery`].
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use arc_swap::ArcSwap;
use serde_json::Value;
use switchboard::Runtime;
use switchboard_server::{
    Arguments, BoxFuture, Context, Handler, HandlerError, Info, Options, Reply, Server,
};
use tokio::task::JoinHandle;

mod asks;
pub mod audit;
pub mod auth;
mod credentials;
pub mod discovery;
mod error;
mod forward;
mod instances;
mod lists;
mod metrics;
pub mod per_user;
mod readiness;
mod skills;
mod subscriptions;

use metrics::Method;

pub use asks::upstream_handlers;
pub use credentials::{Credentials, CredentialsError};
pub use discovery::Discovery;
pub use readiness::Readiness;

use lists::Lists;

/// The runtime's catalogue as an MCP server's handler.
pub struct Gateway {
    runtime: Runtime,
    lists: ArcSwap<Lists>,
    /// The upstreams' skills, listed by the skills follower.
    skills: ArcSwap<skills::Skills>,
    subscriptions: subscriptions::Requests,
    /// The instances of isolated servers, per client or session.
    instances: Arc<instances::Instances>,
    /// Taken by [`serve`](Gateway::serve), which runs it.
    upstream: Mutex<Option<subscriptions::Upstream>>,
    metrics: metrics::FrontMetrics,
    /// Whether, and when, `tools/list` offers the meta-tools instead of the catalogue.
    discovery: Option<Discovery>,
    /// Where each forwarded request and refusal is written, once set.
    audit: OnceLock<audit::Audit>,
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("runtime", &self.runtime)
            .field("tools", &self.lists().tools.len())
            .finish()
    }
}

impl Gateway {
    /// A gateway over `runtime`, listing its catalogue as it is now.
    pub fn new(runtime: Runtime) -> Arc<Gateway> {
        Gateway::build(runtime, None)
    }

    /// A gateway over `runtime` in discovery mode: `tools/list` offers the meta-tools
    /// instead of the catalogue, as `discovery` says (see [`discovery`]).
    pub fn with_discovery(runtime: Runtime, discovery: Discovery) -> Arc<Gateway> {
        Gateway::build(runtime, Some(discovery))
    }

    fn build(runtime: Runtime, discovery: Option<Discovery>) -> Arc<Gateway> {
        let lists = Lists::build(&runtime);
        let (subscriptions, upstream) = subscriptions::channel();
        let instances = Arc::new(instances::Instances::new(runtime.clone(), lists.isolated));
        Arc::new(Gateway {
            instances,
            metrics: metrics::FrontMetrics::new(&runtime),
            runtime,
            lists: ArcSwap::from_pointee(lists),
            skills: ArcSwap::default(),
            subscriptions,
            upstream: Mutex::new(Some(upstream)),
            discovery,
            audit: OnceLock::new(),
        })
    }

    /// The runtime it serves.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Whether every configured upstream has started or failed (none is still in its first
    /// start): the catalogue is as complete as it is going to be. What `/readyz` says by
    /// default: [`is_ready_for`](Self::is_ready_for) [`Readiness::Started`].
    pub fn is_ready(&self) -> bool {
        self.is_ready_for(&Readiness::Started)
    }

    /// Whether the upstreams meet `requires`: every one past its first start (the default),
    /// every one ready, or the named ones ready and the others past their first start.
    pub fn is_ready_for(&self, requires: &Readiness) -> bool {
        let servers = self.runtime.servers();
        let statuses: Vec<_> = servers.iter().map(|s| (s.name(), s.status())).collect();
        requires.met(
            statuses
                .iter()
                .map(|(name, status)| readiness::Upstream::of(name, status)),
        )
    }

    /// Stops every instance of an isolated server (see the `instances` module): what a
    /// serving process does before it shuts its runtime down, so that no instance's process
    /// outlives it.
    pub async fn shutdown_instances(&self) {
        self.instances.shutdown().await;
    }

    /// Starts the instances of servers that take per-client values with `credentials`'
    /// secrets from now on (see [`Credentials`]); an instance started with a secret that
    /// changed is replaced on its client's next request.
    pub fn set_credentials(&self, credentials: Credentials) {
        self.instances.set_credentials(credentials);
    }

    /// Asks clients, through their requests, to authorize per-user servers with
    /// `per_user` (see [`per_user`]); `false` (and nothing changes) if it was set already.
    /// Serve its [`callback_page`](per_user::PerUser::callback_page) at the HTTP front.
    pub fn per_user(&self, per_user: Arc<per_user::PerUser>) -> bool {
        self.instances.set_per_user(per_user)
    }

    /// How many forwarded front requests (calls, reads, prompts, completions) are waiting
    /// for their upstream's answer now.
    pub fn in_flight(&self) -> usize {
        self.metrics.in_flight()
    }

    /// Writes every forwarded request and every refused tool call to `audit` from now on;
    /// `false` (and nothing changes) if an audit log was set already.
    pub fn audit_to(&self, audit: audit::Audit) -> bool {
        self.audit.set(audit).is_ok()
    }

    /// Begins the audit record of a forwarded request, when there is an audit log:
    /// `server` and `bytes_in` are asked only then.
    fn audited(
        &self,
        method: Method,
        name: &str,
        ctx: &Context,
        server: impl FnOnce(&Runtime) -> Option<String>,
        bytes_in: u64,
        arguments: &dyn Fn() -> Option<Value>,
    ) -> Option<audit::Pending> {
        let log = self.audit.get()?;
        let server = server(&self.runtime);
        let (principal, session) = audit::sender(ctx);
        let isolation = server
            .as_deref()
            .and_then(|s| self.runtime.server(s).ok())
            .map(|s| s.isolation().isolation);
        Some(log.begin(&audit::Request {
            method: method.name(),
            name,
            server: server.as_deref(),
            isolation,
            principal,
            session,
            bytes_in,
            arguments,
        }))
    }

    /// Writes the refusal of a call of tool `name` to the audit log, for `reason`.
    fn refused_call(&self, name: &str, ctx: &Context, reason: &'static str) {
        if let Some(log) = self.audit.get() {
            let (principal, session) = audit::sender(ctx);
            let server = self.runtime.catalogue().get(name).map(|e| e.server.clone());
            log.refused(
                &audit::Request {
                    method: Method::CallTool.name(),
                    name,
                    server: server.as_deref(),
                    isolation: None,
                    principal,
                    session,
                    bytes_in: 0,
                    arguments: &|| None,
                },
                reason,
            );
        }
    }

    /// The server for this gateway, and the tasks that tell its clients when the catalogue
    /// changes and when a resource they subscribed to is updated. Call it inside a tokio
    /// runtime; a gateway serves once (a second server hears of no resource updates).
    pub fn serve(self: Arc<Self>, options: Options) -> Front {
        let server = Server::from_arc(self.clone(), options);
        let upstream = self
            .upstream
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let subscriber = upstream
            .map(|upstream| tokio::spawn(upstream.run(self.runtime.clone(), server.clone())));
        let skills = tokio::spawn(follow_skills(self.clone(), server.clone()));
        let reaper = tokio::spawn(instances::Instances::reap(Arc::downgrade(&self.instances)));
        let follower = tokio::spawn(follow(self, server.clone()));
        Front {
            server,
            follower,
            skills,
            reaper,
            subscriber,
        }
    }

    /// Counts the HTTP front's rejections as `switchboard_front_rejected_total{reason}`,
    /// beside the runtime's series, and writes each to the audit log: give it to
    /// [`http::Config::with_rejections`](switchboard_server::http::Config::with_rejections).
    pub fn count_rejections(
        self: &Arc<Self>,
    ) -> impl Fn(switchboard_server::http::Rejection) + Send + Sync + 'static {
        let gateway = Arc::downgrade(self);
        move |rejection| {
            if let Some(gateway) = gateway.upgrade() {
                gateway.metrics.rejected(rejection);
                if let Some(log) = gateway.audit.get() {
                    log.rejected(rejection.as_str());
                }
            }
        }
    }

    /// Forwards a call of catalogue tool `name`: a direct call, or one through `call_tool`.
    fn forward_tool(
        self: Arc<Self>,
        name: String,
        arguments: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        // Passed on as the front client wrote them, once read strictly: what goes upstream
        // is valid JSON, and a string that is not (a lone surrogate escape) is the front
        // client's error.
        let arguments = match arguments.into_json().and_then(forward::valid) {
            Ok(arguments) => arguments,
            Err(e) => {
                let error = HandlerError::invalid_params(format!("invalid arguments: {e}"));
                return Box::pin(async move { Err(error) });
            }
        };
        let audit = self.audited(
            Method::CallTool,
            &name,
            &ctx,
            |runtime| runtime.catalogue().get(&name).map(|e| e.server.to_string()),
            arguments.get().len() as u64,
            &|| serde_json::from_str(arguments.get()).ok(),
        );
        // The call's span names the front's trace, so that the gateway's own events join it.
        let span = tracing::debug_span!(
            "forward",
            tool = %name,
            trace_id = ctx.traceparent().and_then(|t| t.get(3..35)).unwrap_or(""),
        );
        Box::pin(tracing::Instrument::instrument(
            async move {
                let forwarded =
                    forward::call_tool(&self.runtime, &self.instances, &name, arguments, &ctx);
                self.metrics
                    .measure(Method::CallTool, forwarded, audit)
                    .await
                    .map(|f| f.reply)
            },
            span,
        ))
    }

    /// The lists now: no lock, since every list request and every HTTP `tools/call` reads them.
    fn lists(&self) -> Arc<Lists> {
        self.lists.load_full()
    }

    /// Lists the catalogue again; says which lists changed. Only the follower task relists,
    /// so nothing stores between its load and its store.
    fn relist(&self) -> lists::Changed {
        let fresh = Lists::build(&self.runtime);
        self.instances.set_any(fresh.isolated);
        let changed = fresh.changed_since(&self.lists.load());
        self.lists.store(Arc::new(fresh));
        changed
    }
}

/// Relists on every change of the runtime and announces what changed, until the runtime is
/// gone.
async fn follow(gateway: Arc<Gateway>, server: Server) {
    let mut watch = gateway.runtime.watch();
    loop {
        // Relisted after subscribing, so that no change between `new` and here is missed.
        let changed = gateway.relist();
        if changed.tools {
            server.tools_changed();
        }
        if changed.resources {
            server.resources_changed();
        }
        if changed.prompts {
            server.prompts_changed();
        }
        if !watch.changed().await {
            return;
        }
        // Debounced: a burst of changes (servers starting together, a reload, a crash loop)
        // is announced once; what changes meanwhile is in the next listing.
        tokio::time::sleep(LIST_CHANGED_DEBOUNCE).await;
    }
}

/// Lists the upstreams' skills again on every change of the runtime, apart from the other
/// lists: an upstream slow to list its skills holds up no `list_changed` of the others.
async fn follow_skills(gateway: Arc<Gateway>, server: Server) {
    let mut watch = gateway.runtime.watch();
    loop {
        let fresh = skills::Skills::list(&gateway.runtime, &gateway.skills.load()).await;
        let changed = fresh.changed_since(&gateway.skills.load());
        gateway.skills.store(Arc::new(fresh));
        if changed {
            server.resources_changed();
        }
        if !watch.changed().await {
            return;
        }
        tokio::time::sleep(LIST_CHANGED_DEBOUNCE).await;
    }
}

/// How long the gateway waits after a change of its catalogue before it lists again and
/// announces what changed.
const LIST_CHANGED_DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(50);

/// A gateway's MCP server, kept up to date with the runtime's catalogue.
///
/// # Drop behavior
///
/// Dropping it stops telling clients about changes; the server's clones keep serving.
#[derive(Debug)]
pub struct Front {
    server: Server,
    follower: JoinHandle<()>,
    skills: JoinHandle<()>,
    reaper: JoinHandle<()>,
    subscriber: Option<JoinHandle<()>>,
}

impl Front {
    /// The server: serve it with [`Server::serve_stdio`] or [`Server::serve_http`].
    pub fn server(&self) -> &Server {
        &self.server
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.follower.abort();
        self.skills.abort();
        self.reaper.abort();
        if let Some(subscriber) = &self.subscriber {
            subscriber.abort();
        }
    }
}

impl Handler for Gateway {
    fn info(&self) -> Info {
        Info::new("switchboard", env!("CARGO_PKG_VERSION"))
            .with_resources()
            .with_prompts()
            .with_completions()
            .with_list_changed()
            .with_skills(true)
    }

    // Rebuilt with the lists; asked for by each `initialize` and `server/discover`.
    fn instructions(&self) -> Option<Cow<'_, str>> {
        self.lists().instructions.clone().map(Cow::Owned)
    }

    // The lists are snapshots in an `Arc`, rebuilt on change; a list request copies one.
    fn tools(&self) -> Cow<'_, [Value]> {
        if discovery::listing(self) {
            return Cow::Borrowed(discovery::definitions());
        }
        Cow::Owned(self.lists().tools.clone())
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        match discovery::Meta::of(self, name) {
            Some(meta) => Some(meta.input_schema()),
            None => self.lists().schemas.get(name).cloned(),
        }
    }

    // The meta-tools search and call only what the principal may use.
    fn tool_for_all(&self, name: &str) -> bool {
        discovery::Meta::of(self, name).is_some()
    }

    fn refused_tool(&self, name: &str, ctx: &Context) {
        self.refused_call(name, ctx, audit::NOT_PERMITTED);
    }

    fn call_tool(
        self: Arc<Self>,
        name: String,
        arguments: Arguments,
        ctx: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        match discovery::Meta::of(&self, &name) {
            Some(meta) => discovery::serve(self, meta, arguments, ctx),
            None => self.forward_tool(name, arguments, ctx),
        }
    }

    // A skill file an upstream lists as a resource is listed under the URI its skill has
    // here (see `skills`).
    fn resources(&self) -> Cow<'_, [Value]> {
        let lists = self.lists();
        let skills = self.skills.load();
        let resources = lists
            .resources
            .iter()
            .zip(&lists.resource_servers)
            .map(|(resource, server)| skills.front_resource(server, resource))
            .collect();
        Cow::Owned(resources)
    }

    fn resource_templates(&self) -> Cow<'_, [Value]> {
        Cow::Owned(self.lists().templates.clone())
    }

    fn read_resource(
        self: Arc<Self>,
        uri: String,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            let skills = self.skills.load();
            // A skill's file is its upstream's, whoever else lists the URI; a `skill://` URI
            // no skill claims goes to the one upstream serving skills only when no upstream
            // lists it as an ordinary resource.
            let route = skills.claimed(&uri).or_else(|| {
                self.runtime
                    .resource_owners(&uri)
                    .is_empty()
                    .then(|| skills.sole(&uri))
                    .flatten()
            });
            drop(skills);
            let skill_server = route.as_ref().map(|route| route.server.clone());
            let audit = self.audited(
                Method::ReadResource,
                &uri,
                &ctx,
                |runtime| skill_server.or_else(|| owner_name(runtime.resource_owners(&uri))),
                0,
                &|| None,
            );
            match route {
                Some(route) => {
                    let read = skills::read_file(&self.runtime, route, &uri);
                    self.metrics
                        .measure(Method::ReadResource, read, audit)
                        .await
                }
                None => {
                    let forwarded =
                        forward::read_resource(&self.runtime, &self.instances, &uri, &ctx);
                    self.metrics
                        .measure(Method::ReadResource, forwarded, audit)
                        .await
                }
            }
        })
    }

    // Aggregated from every upstream, URIs rewritten apart (see `skills`).
    fn skills(&self) -> Cow<'_, [Value]> {
        Cow::Owned(self.skills.load().entries().to_vec())
    }

    fn get_skill(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            let route = self.skills.load().route(&uri);
            match route {
                Some(route) => skills::get(&self.runtime, route, &uri).await,
                None => Err(HandlerError::unknown_skill(&uri)),
            }
        })
    }

    fn read_directory(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Vec<Value>, HandlerError>> {
        Box::pin(async move {
            let route = self.skills.load().route(&uri);
            match route {
                Some(route) => skills::read_directory(&self.runtime, route, &uri).await,
                None => Err(HandlerError::not_a_directory(&uri)),
            }
        })
    }

    // The server crate keeps each session's subscriptions; upstream, the gateway subscribes
    // once per URI and forwards the updates (see `subscriptions`).
    fn check_subscription(&self, uri: &str) -> Result<(), HandlerError> {
        if self.runtime.resource_owners(uri).is_empty() {
            return Err(HandlerError::resource_not_found(uri));
        }
        if !self.subscriptions.ask(uri) {
            tracing::warn!(%uri, "too many subscriptions waiting: not subscribed upstream");
        }
        Ok(())
    }

    fn prompts(&self) -> Cow<'_, [Value]> {
        Cow::Owned(self.lists().prompts.clone())
    }

    fn get_prompt(
        self: Arc<Self>,
        name: String,
        arguments: Value,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            let audit = self.audited(
                Method::GetPrompt,
                &name,
                &ctx,
                |runtime| {
                    let prompts = runtime.prompt_catalogue();
                    prompts.get(&name).map(|e| e.server.to_string())
                },
                audit::json_len(&arguments),
                &|| Some(arguments.clone()),
            );
            let forwarded =
                forward::get_prompt(&self.runtime, &self.instances, &name, arguments, &ctx);
            self.metrics
                .measure(Method::GetPrompt, forwarded, audit)
                .await
        })
    }

    fn complete(
        self: Arc<Self>,
        params: Value,
        ctx: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            // What it completes for: the prompt's name or the template's URI.
            let reference = &params["ref"];
            let name = reference["name"]
                .as_str()
                .or_else(|| reference["uri"].as_str())
                .unwrap_or_default();
            let audit = self.audited(
                Method::Complete,
                name,
                &ctx,
                |_| None,
                audit::json_len(&params),
                &|| Some(params["argument"].clone()),
            );
            let forwarded = forward::complete(&self.runtime, params);
            self.metrics
                .measure(Method::Complete, forwarded, audit)
                .await
        })
    }
}

/// The name of the one upstream among `owners` (none when none or several own it).
fn owner_name(owners: Vec<switchboard::ServerHandle>) -> Option<String> {
    match owners.as_slice() {
        [one] => Some(one.name().to_owned()),
        _ => None,
    }
}
