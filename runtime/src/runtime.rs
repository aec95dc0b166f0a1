//! [`Runtime`]: the actor system on its own thread, the servers it supervises, and the tool
//! catalogue across them.
//!
//! The actix `System` lives on a thread the runtime owns, so any tokio application (single-
//! or multi-threaded) can embed it; callers only ever hold plain handles. Routing a call by
//! catalogue name reads a shared snapshot and never waits on the supervisor.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use actix::{Actor, Addr, AsyncContext};
use tokio::sync::{mpsc, oneshot, watch};

use crate::actor::server::{IoPlaces, Kills};
use crate::actor::supervisor::{
    AddServer, PanicServer, RemoveServer, ReplaceServer, RestartServer, RootsChanged, StopAll,
    Supervisor,
};
use crate::call::{Call, Route};
use crate::catalogue::search::{ToolMatch, ToolSearch};
use crate::catalogue::{Catalogue, Naming};
use crate::client::ClientHandlers;
use crate::client_values::ClientValues;
use crate::config::{Defaults, ServerConfig};
use crate::config_file::ConfigFile;
use crate::error::{Error, ErrorContext, ErrorKind, Result};
use crate::framer::Arguments;
use crate::handle::ServerHandle;
use crate::metrics::{RuntimeMetrics, Sink};
use crate::restart::{Liveness, RestartPolicy};
use crate::routing::Registry;

/// Most server events the supervisor takes in one batch.
const EVENT_BATCH: usize = 1024;

/// Builds a [`Runtime`].
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    servers: Vec<(String, ServerConfig)>,
    defaults: Defaults,
    /// A recorder given with `metrics_recorder`.
    metrics: Option<Sink>,
    #[cfg(feature = "prometheus")]
    metrics_listener: Option<std::net::SocketAddr>,
    io: Io,
    /// Set for an instance's runtime ([`Runtime::start_instance`]): the series it records.
    instance_of: Option<Arc<RuntimeMetrics>>,
    /// The semantic scorer tool searches fuse with.
    #[cfg(feature = "semantic")]
    semantic: Option<Arc<crate::search::semantic::SemanticScorer>>,
}

/// Where the servers' connections do their I/O.
#[derive(Debug, Default)]
enum Io {
    /// On the multi-thread tokio runtime that builds the runtime, else on the actor thread.
    #[default]
    Builder,
    /// On the runtime's own actor thread.
    ActorThread,
    /// On this runtime.
    Runtime(tokio::runtime::Handle),
}

impl RuntimeBuilder {
    /// Adds a server under a unique name (a later server with the same name replaces it).
    pub fn server(mut self, name: impl Into<String>, config: impl Into<ServerConfig>) -> Self {
        let name = name.into();
        let config = config.into();
        self.servers.retain(|(n, _)| *n != name);
        self.servers.push((name, config));
        self
    }

    /// Adds every enabled server of a config file, and applies its `"switchboard"` defaults.
    pub fn config(mut self, file: ConfigFile) -> Self {
        let d = file.defaults;
        if let Some(t) = d.timeout {
            self.defaults.timeout = t;
        }
        if let Some(t) = d.startup_timeout {
            self.defaults.startup_timeout = t;
        }
        if let Some(t) = d.handler_timeout {
            self.defaults.handler_timeout = t;
        }
        if let Some(n) = d.max_in_flight {
            self.defaults.max_in_flight = n;
        }
        if let Some(r) = d.restart {
            self.defaults.restart = r;
        }
        if let Some(n) = d.naming {
            self.defaults.naming = n;
        }
        for (name, config) in file.servers {
            self = self.server(name, config);
        }
        self
    }

    /// The request timeout when neither the call, the tool nor the server sets one
    /// (default 60 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.defaults.timeout = timeout;
        self
    }

    /// The handshake bound for servers that set none (default 30 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.defaults.startup_timeout = timeout;
        self
    }

    /// The in-flight bound for servers that set none (default 1024).
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.defaults.max_in_flight = max.max(1);
        self
    }

    /// The restart policy for servers that set none.
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.defaults.restart = policy;
        self
    }

    /// Liveness pings for servers that set none.
    pub fn liveness(mut self, liveness: Liveness) -> Self {
        self.defaults.liveness = liveness;
        self
    }

    /// Handlers for requests servers send to the client, for servers that set none.
    pub fn client_handlers(mut self, handlers: ClientHandlers) -> Self {
        self.defaults.handlers = Some(handlers);
        self
    }

    /// Where the tasks the runtime starts are kept, so that their ids survive a restart of
    /// the runtime (default: in memory; see [`crate::task::TaskStore`]).
    pub fn task_store(mut self, store: Arc<dyn crate::task_store::TaskStore>) -> Self {
        self.defaults.task_store = store;
        self
    }

    /// How long a server's request may wait for a handler before it is answered with a
    /// JSON-RPC error, for servers that set none (default
    /// [`HANDLER_TIMEOUT`](crate::client::HANDLER_TIMEOUT), 300 s).
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.defaults.handler_timeout = timeout;
        self
    }

    /// Serves this runtime's metrics in the Prometheus text format at `http://ADDR/metrics`
    /// (port 0 picks a free port: see [`Runtime::metrics_addr`]). The runtime records into a
    /// Prometheus recorder of its own, never installed as the global one, so runtimes in one
    /// process do not mix their numbers. The names are listed in [`crate::metrics`].
    ///
    /// The address is bound by [`build`](Self::build), which fails if it cannot be; the
    /// listener lives until the last clone of the runtime is dropped.
    ///
    /// # Security
    ///
    /// The endpoint has no authentication and shows server and tool names: bind it to a
    /// loopback or otherwise private address.
    #[cfg(feature = "prometheus")]
    pub fn metrics_listener(mut self, addr: std::net::SocketAddr) -> Self {
        self.metrics_listener = Some(addr);
        self
    }

    /// Runs the servers' connections (pipes, sockets, their reader and writer tasks, and the
    /// routing of answers) on `io`.
    ///
    /// By default, stdio and in-process servers' connections run on the tokio runtime that
    /// calls [`build`](Self::build) when it is a multi-thread runtime (what `#[tokio::main]`
    /// builds), and on the runtime's own actor thread otherwise; HTTP connections run on the
    /// actor thread, where the HTTP client's tasks do not compete with the callers. On the callers'
    /// runtime a call goes from its task to the server and back without waking another
    /// thread, which on most machines is the bulk of a sequential call's latency and CPU
    /// (see `benches/HISTORY.md`). Supervision, restarts and liveness stay on the actor thread.
    ///
    /// The runtime behind `io` must have its I/O and time drivers enabled (`enable_all`)
    /// and must outlive this [`Runtime`]: once it shuts down, servers lose their
    /// connections and cannot be restarted.
    pub fn io_runtime(mut self, io: tokio::runtime::Handle) -> Self {
        self.io = Io::Runtime(io);
        self
    }

    /// Runs the servers' connections on the runtime's own actor thread, whatever runtime
    /// builds it: for a [`Runtime`] built on a tokio runtime that may shut down before it,
    /// or whose threads callers block (`block_on`, a `join` inside a task) while they wait
    /// for calls.
    pub fn actor_thread_io(mut self) -> Self {
        self.io = Io::ActorThread;
        self
    }

    /// Records this runtime's metrics into `recorder` instead of the global recorder of the
    /// `metrics` facade (ignored with [`metrics_listener`](Self::metrics_listener), whose
    /// recorder is the runtime's own).
    pub fn metrics_recorder(
        mut self,
        recorder: Arc<dyn ::metrics::Recorder + Send + Sync>,
    ) -> Self {
        self.metrics = Some(Sink::Own(recorder));
        self
    }

    /// How catalogue names are made.
    pub fn naming(mut self, naming: Naming) -> Self {
        self.defaults.naming = naming;
        self
    }

    /// Ranks [`Runtime::search_tools`] hybrid: the lexical rank fused with `scorer`'s
    /// semantic one (see [`search::semantic`](crate::search::semantic)), the catalogue's
    /// tools embedded on the scorer's thread whenever it changes. A search given a scorer
    /// of its own ([`ToolSearch::scorer`](crate::search::ToolSearch::scorer)) uses that one.
    #[cfg(feature = "semantic")]
    pub fn semantic_search(mut self, scorer: Arc<crate::search::semantic::SemanticScorer>) -> Self {
        self.semantic = Some(scorer);
        self
    }

    /// Reads `MCP_TIMEOUT` (startup) and `MCP_TOOL_TIMEOUT` (tool calls), in integer
    /// milliseconds as Claude Code reads them, into the runtime defaults. Servers' and tools'
    /// own values still win. Unset or unparsable variables change nothing.
    pub fn with_env_defaults(mut self) -> Self {
        let millis = |var: &str| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
        };
        if let Some(t) = millis("MCP_TIMEOUT") {
            self.defaults.startup_timeout = t;
        }
        if let Some(t) = millis("MCP_TOOL_TIMEOUT") {
            self.defaults.timeout = t;
        }
        self
    }

    /// Starts the actor thread and every server, concurrently, and waits until each is ready
    /// or has failed. A server that fails does not fail the build: its status says why (and
    /// it is retried under its restart policy), and calls to it fail with
    /// [`ErrorKind::Unavailable`].
    pub async fn build(self) -> Result<Runtime> {
        #[cfg(feature = "prometheus")]
        let (exporter, sink) = match self.metrics_listener {
            Some(addr) => {
                let (exporter, sink) = crate::metrics::Exporter::start(addr).map_err(|source| {
                    ErrorContext::new().error(ErrorKind::MetricsListener {
                        addr,
                        source: Arc::new(source),
                    })
                })?;
                (Some(exporter), Some(sink))
            }
            None => (None, self.metrics),
        };
        #[cfg(not(feature = "prometheus"))]
        let sink = self.metrics;
        let metrics = match self.instance_of {
            Some(parent) => Arc::new(parent.for_instance()),
            None => Arc::new(RuntimeMetrics::new(sink.unwrap_or(Sink::Global))),
        };
        let kept_metrics = metrics.clone();
        let (system_tx, system_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("switchboard-actors".into())
            .spawn(move || {
                let system = actix::System::new();
                let _ = system_tx.send((actix::System::current(), actix::Arbiter::current()));
                let _ = system.run();
                let _ = done_tx.send(());
            })
            .map_err(|e| {
                ErrorContext::new().error(ErrorKind::ActorThread {
                    source: Arc::new(e),
                })
            })?;
        // The thread ends only by `System::stop`: before it answers, only by a panic in
        // actix itself, after which the runtime is as good as shut down.
        let (system, arbiter) = system_rx.await.map_err(|_| Error::shutdown())?;
        let kills: Kills = Arc::new(Mutex::new(HashMap::new()));
        let registry = Arc::new(Registry::new(self.defaults.naming.clone(), metrics.clone()));
        #[cfg(feature = "semantic")]
        if let Some(scorer) = self.semantic {
            let _ = registry.semantic.set(scorer);
        }
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let io = match self.io {
            Io::Runtime(handle) => IoPlaces {
                lines: Some(handle.clone()),
                http: Some(handle),
            },
            Io::ActorThread => IoPlaces::default(),
            // HTTP connections stay on the actor thread, off the callers' workers: the latest
            // run measured the two places level (BENCHMARKS.md), the earlier ones the actor
            // thread ahead (benches/HISTORY.md).
            Io::Builder => IoPlaces {
                lines: tokio::runtime::Handle::try_current()
                    .ok()
                    .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread),
                http: None,
            },
        };
        let task_store = self.defaults.task_store.clone();
        let defaults = self.defaults.clone();
        let supervisor = {
            let registry = registry.clone();
            let kills = kills.clone();
            let defaults = self.defaults.clone();
            Supervisor::start_in_arbiter(&arbiter, move |ctx| {
                ctx.add_stream(futures_util::StreamExt::ready_chunks(
                    tokio_stream::wrappers::UnboundedReceiverStream::new(events_rx),
                    EVENT_BATCH,
                ));
                Supervisor::new(registry, defaults, kills, events_tx, metrics, io)
            })
        };
        let metrics = kept_metrics;
        let runtime = Runtime {
            inner: Arc::new(Inner {
                registry,
                supervisor,
                system,
                kills,
                done: Mutex::new(Some(done_rx)),
                stopped: AtomicBool::new(false),
                task_store,
                metrics,
                defaults,
                #[cfg(feature = "prometheus")]
                exporter,
            }),
        };
        let mut handles = Vec::new();
        for (name, config) in self.servers {
            handles.push(runtime.start_server(name.into(), config).await?);
        }
        for handle in &handles {
            handle.wait_started().await;
        }
        runtime.inner.registry.rebuild();
        Ok(runtime)
    }
}

/// A running Switchboard: an actor thread, the servers it supervises, and their tools.
///
/// `Clone + Send + Sync`; every clone refers to the same runtime.
///
/// # Drop behavior
///
/// Prefer [`shutdown`](Self::shutdown), which closes every server gracefully. Dropping the
/// last clone without it sends `SIGKILL`, synchronously and from the dropping thread, to the
/// process group of every live server (no await, no join), then asks the actor thread to
/// stop. No server process outlives the runtime either way; children that left their process
/// group on purpose (`setsid`, daemons) are out of reach.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) registry: Arc<Registry>,
    supervisor: Addr<Supervisor>,
    system: actix::System,
    kills: Kills,
    done: Mutex<Option<oneshot::Receiver<()>>>,
    stopped: AtomicBool,
    /// Where the runtime's tasks are kept.
    pub(crate) task_store: Arc<dyn crate::task_store::TaskStore>,
    /// What the runtime records into.
    metrics: Arc<RuntimeMetrics>,
    /// What it was built with, for the runtimes of instances it starts.
    defaults: crate::config::Defaults,
    /// Dropped with the runtime, which stops the listener.
    #[cfg(feature = "prometheus")]
    exporter: Option<crate::metrics::Exporter>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("servers", &self.servers())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts configuring a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    async fn start_server(&self, name: Arc<str>, config: ServerConfig) -> Result<ServerHandle> {
        self.inner
            .supervisor
            .send(AddServer { name, config })
            .await
            .map_err(|_| Error::shutdown())?
    }

    /// Starts one more instance of server `name` in a runtime of its own, and waits until it
    /// is ready or has failed (its status says which): the server's configuration and this
    /// runtime's defaults (timeouts, restarts, handlers), its series recorded under the
    /// server's name into this runtime's recorder, but for `switchboard_server_up`,
    /// `switchboard_server_tools` and `switchboard_catalogue_tools`, which stay this runtime's.
    /// What a gateway runs for each client of an isolated server (see
    /// [`isolation`](crate::isolation)); shut it down to stop the instance.
    pub async fn start_instance(&self, name: &str) -> Result<Runtime> {
        let config = self.server(name)?.core.config.clone();
        self.start_instance_of(name, config).await
    }

    /// Starts one more instance of server `name` as [`start_instance`](Self::start_instance)
    /// does, its per-client values (see [`client_values`](crate::client_values)) filled from
    /// `values`. A value that cannot be filled is an [`ErrorKind::Spawn`] error naming it,
    /// and nothing is started.
    pub async fn start_instance_as(&self, name: &str, values: &ClientValues) -> Result<Runtime> {
        let (config, _) = self
            .server(name)?
            .core
            .config
            .fill_for(values)
            .map_err(|e| {
                ErrorContext::of_server(name.into()).error(ErrorKind::Spawn {
                    source: Arc::new(e),
                })
            })?;
        self.start_instance_of(name, config).await
    }

    async fn start_instance_of(&self, name: &str, config: ServerConfig) -> Result<Runtime> {
        let builder = RuntimeBuilder {
            servers: vec![(name.to_owned(), config)],
            defaults: self.inner.defaults.clone(),
            instance_of: Some(self.inner.metrics.clone()),
            ..RuntimeBuilder::default()
        };
        builder.build().await
    }

    /// Adds a server to the running runtime and waits until it is ready or has failed.
    pub async fn add_server(
        &self,
        name: &str,
        config: impl Into<ServerConfig>,
    ) -> Result<ServerHandle> {
        let handle = self.start_server(name.into(), config.into()).await?;
        handle.wait_started().await;
        self.inner.registry.rebuild();
        Ok(handle)
    }

    /// Stops a server gracefully and removes it (and its tools): its tools leave the
    /// catalogue at once, and the calls in flight there finish (within the longest deadline
    /// its settings and its tools' give; a call's own longer timeout is cut short) before it
    /// stops.
    ///
    /// What a reload calls for a server that is gone from the configuration.
    pub async fn remove_server(&self, name: &str) -> Result<()> {
        self.inner
            .supervisor
            .send(RemoveServer { name: name.into() })
            .await
            .map_err(|_| Error::shutdown())?
    }

    /// Runs server `name` with `config` from now on, without failing a call: the old server
    /// goes on serving the name while the new one starts; once the new one is ready (or has
    /// failed) it takes the name and every call routed from then on, while the old one
    /// finishes the calls it has (within the longest deadline its settings give) and then
    /// stops, in the background. Returns then, with the new server's handle.
    ///
    /// What a reload calls for a server whose configuration changed.
    pub async fn replace_server(
        &self,
        name: &str,
        config: impl Into<ServerConfig>,
    ) -> Result<ServerHandle> {
        let new = self
            .inner
            .supervisor
            .send(ReplaceServer {
                name: name.into(),
                config: config.into(),
            })
            .await
            .map_err(|_| Error::shutdown())??;
        new.wait_started().await;
        self.inner.registry.rebuild();
        Ok(new)
    }

    /// Starts a server that is down or failed (for example after a crash loop) again, with
    /// its backoff reset; waits until it is ready or has failed again.
    pub async fn restart_server(&self, name: &str) -> Result<ServerHandle> {
        let handle = self.server(name)?;
        self.inner
            .supervisor
            .send(RestartServer { name: name.into() })
            .await
            .map_err(|_| Error::shutdown())??;
        handle.wait_started().await;
        self.inner.registry.rebuild();
        Ok(handle)
    }

    /// Tells every ready server whose [`ClientHandlers`] answer roots that the application's
    /// roots changed (`notifications/roots/list_changed`), so that it asks again with
    /// `roots/list`. Returns once the notification is written to each of them; servers that
    /// are still starting ask for the roots after their handshake anyway.
    pub async fn roots_changed(&self) -> Result<()> {
        self.inner
            .supervisor
            .send(RootsChanged)
            .await
            .map_err(|_| Error::shutdown())
    }

    /// The handle of the server with this name.
    pub fn server(&self, name: &str) -> Result<ServerHandle> {
        self.inner.registry.server(name)
    }

    /// How the catalogues name entries of several servers (what
    /// [`RuntimeBuilder::naming`] set): for an aggregator that names more the same way.
    pub fn naming(&self) -> &Naming {
        self.inner.registry.naming()
    }

    /// Every server's handle, ordered by name.
    pub fn servers(&self) -> Vec<ServerHandle> {
        self.inner.registry.servers().values().cloned().collect()
    }

    /// The tool catalogue of every server that offers its tools now: ready, or restarting
    /// (see [`ServerStatus::offers_entries`](crate::ServerStatus::offers_entries)). A
    /// stateless server's tool list past its `ttlMs` is in it as it is, and fetched again in
    /// the background.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.inner.registry.touch(|lists| &lists.tools);
        self.inner.registry.tools()
    }

    /// The tools of the [`catalogue`](Self::catalogue) that best match `query`, best first,
    /// at most `limit`: see [`search`](crate::search) for the ranking. The index is built on
    /// the first search after the catalogue changed, analysing again only the servers whose
    /// tools changed; a search itself never waits on a server.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<ToolMatch> {
        self.search_tools_with(&ToolSearch::new(query).limit(limit))
    }

    /// [`search_tools`](Self::search_tools) with a filter over the tools considered (applied
    /// before the limit) and an embedder's [`ToolScorer`](crate::search::ToolScorer), as
    /// `search` says.
    pub fn search_tools_with(&self, search: &ToolSearch<'_>) -> Vec<ToolMatch> {
        #[cfg(feature = "semantic")]
        if let Some(scorer) = self.inner.registry.semantic.get() {
            return self
                .catalogue()
                .search_fused(search, Some(&**scorer as &dyn crate::search::ToolScorer));
        }
        self.catalogue().search_with(search)
    }

    /// Starts a `tools/call` of a catalogue tool (by its catalogue name, or its prefixed
    /// form `<prefix><separator><tool>`), routed to the server that owns it.
    ///
    /// The name is resolved when the call is sent. When the owner is a stateless
    /// (2026-07-28) server whose tool list is past its `ttlMs` (or, for a name no server
    /// lists, any such server), that list is fetched again first, within the call's
    /// deadline, once for every call of the burst.
    pub fn call_tool(&self, name: &str, arguments: serde_json::Value) -> Call {
        Call::new(
            Route::Catalogue(Arc::downgrade(&self.inner.registry)),
            name.into(),
            Arguments::Tree(arguments),
        )
    }

    /// [`call_tool`](Self::call_tool) with the arguments as JSON text, written into the
    /// request as they are: for a caller that holds them as text already (a gateway passing
    /// its client's on), so that they are not read into a tree only to be written out again.
    /// They must be an object; the caller answers for the text being valid JSON (a
    /// [`RawValue`](serde_json::value::RawValue) read by serde_json is, but for a string's
    /// escapes, which it does not decode).
    pub fn call_tool_json(&self, name: &str, arguments: Box<serde_json::value::RawValue>) -> Call {
        Call::new(
            Route::Catalogue(Arc::downgrade(&self.inner.registry)),
            name.into(),
            Arguments::Text(arguments),
        )
    }

    /// Every offered prompt (of a server ready or restarting), named as the tool catalogue
    /// names tools: a prompt is prefixed with its server only when another server has one
    /// of the same name (with the default naming). The entries' `tool` is the prompt's name,
    /// title and description.
    pub fn prompt_catalogue(&self) -> Arc<Catalogue> {
        // Stateless servers' prompt lists past their `ttlMs` are listed again meanwhile.
        self.inner.registry.touch(|lists| &lists.prompts);
        self.inner.registry.prompts()
    }

    /// Fetches a prompt by its name in [`prompt_catalogue`](Self::prompt_catalogue), from
    /// the server that offers it. A stateless server's prompt list past its `ttlMs` that
    /// decides the route (the owner's, or any, for a name nobody offers) is fetched again
    /// first, within the server's timeout.
    pub async fn get_prompt<K, V>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<crate::model::GetPromptResult>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let (server, prompt) = self.inner.registry.route_prompt(name).await?;
        server.get_prompt(&prompt, arguments).await
    }

    /// The server that offers the prompt named `name` in
    /// [`prompt_catalogue`](Self::prompt_catalogue), and the prompt's name on that server,
    /// routed as [`get_prompt`](Self::get_prompt) routes: for a caller that sends the
    /// request itself (a gateway passing `prompts/get` or `completion/complete` through).
    pub async fn prompt_owner(&self, name: &str) -> Result<(ServerHandle, String)> {
        self.inner.registry.route_prompt(name).await
    }

    /// The one server to read `uri` from, routed as [`read_resource`](Self::read_resource)
    /// routes: for a caller that sends the request itself.
    pub async fn resource_owner(&self, uri: &str) -> Result<ServerHandle> {
        self.inner.registry.route_resource(uri).await
    }

    /// Waits until the resource and prompt lists of every server are as listed: a server
    /// that has just become ready lists them after its status says so, and one that
    /// announced a change lists them again. Each server is waited for within its timeout.
    /// What [`resource_owners`](Self::resource_owners) and the statuses' lists say after it
    /// includes those listings; routing by a URI or a prompt name
    /// ([`read_resource`](Self::read_resource), [`get_prompt`](Self::get_prompt)) waits for
    /// them by itself.
    pub async fn lists_settled(&self) {
        self.inner.registry.settle_lists().await;
    }

    /// The servers (ready or restarting) that list `uri` as a resource, or else a template
    /// matching it.
    pub fn resource_owners(&self, uri: &str) -> Vec<ServerHandle> {
        // Stateless servers' resource lists past their `ttlMs` are listed again meanwhile.
        self.inner.registry.touch(|lists| &lists.resources);
        self.inner.registry.resource_owners(uri)
    }

    /// Reads a resource from the one server that lists it (or a template matching it). A
    /// stateless server's resource list past its `ttlMs` that decides the route (the
    /// owner's, or any, when not exactly one server has the URI) is fetched again first,
    /// within the server's timeout.
    pub async fn read_resource(&self, uri: &str) -> Result<crate::model::ReadResourceResult> {
        let server = self.inner.registry.route_resource(uri).await?;
        server.read_resource(uri).await
    }

    /// A watch on the runtime: wakes on every change of a server's status or of the
    /// catalogue (for example to refresh an LLM's tool list).
    pub fn watch(&self) -> RuntimeWatch {
        RuntimeWatch {
            rx: self.inner.registry.subscribe(),
            registry: Arc::downgrade(&self.inner.registry),
        }
    }

    /// Closes every server gracefully (close stdin, wait, `SIGTERM`, wait, `SIGKILL`, reap;
    /// pending calls fail with [`ErrorKind::Unavailable`]) and stops the actor thread.
    ///
    /// The servers are closed all at once, so the whole shutdown takes as long as the
    /// slowest server's close: at most its two waits (2 s each by default,
    /// [`ServerConfig::close_timeouts`]) and a moment for the reaping.
    ///
    /// Idempotent: later calls (of this or [`shutdown_within`](Self::shutdown_within))
    /// return at once.
    pub async fn shutdown(&self) {
        self.stop(None).await;
    }

    /// Closes every server as [`shutdown`](Self::shutdown) does, within `grace`: for a host
    /// with a deadline of its own (a command line leaving on a Ctrl-C or a timeout, a
    /// service given so long to stop). A stdio server keeps the steps of its close with its
    /// waits cut to fit (at most half of `grace` after its stdin is closed, the rest after
    /// `SIGTERM`), then its process group is sent `SIGKILL` and reaped: no process is left
    /// when this returns, a moment after `grace`. A server that leaves when its stdin
    /// closes, as most do, still leaves on its own. An HTTP server's close (its session's
    /// `DELETE`) is waited for `grace` at most, and may go on in the background.
    ///
    /// Idempotent: later calls (of this or [`shutdown`](Self::shutdown)) return at once;
    /// [`kill`](Self::kill) cuts a shutdown under way short.
    ///
    /// ```no_run
    /// # async fn run(runtime: switchboard::Runtime) {
    /// // Interrupted: the servers get 50 ms to leave, then they are killed.
    /// runtime.shutdown_within(std::time::Duration::from_millis(50)).await;
    /// # }
    /// ```
    pub async fn shutdown_within(&self, grace: Duration) {
        self.stop(Some(grace)).await;
    }

    /// The shutdown, the servers' closes capped by `within` when given.
    async fn stop(&self, within: Option<Duration>) {
        if self.inner.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self.inner.supervisor.send(StopAll { within }).await;
        self.inner.registry.stop();
        self.inner.system.stop();
        let done = self.inner.done.lock().ok().and_then(|mut d| d.take());
        if let Some(done) = done {
            let _ = done.await;
        }
    }

    /// Kills every server's process at once: `SIGKILL` to each stdio server's process
    /// group (harmless for one already gone), as dropping the runtime without
    /// [`shutdown`](Self::shutdown) does. For a caller that cannot wait for a graceful
    /// shutdown (a second Ctrl-C): a [`shutdown`](Self::shutdown) under way then ends as
    /// soon as the processes are reaped. HTTP and in-process servers are not affected.
    pub fn kill(&self) {
        self.inner.kill_all();
    }

    /// Runs `f` with the recorder this runtime's metrics go to (its own, with
    /// [`RuntimeBuilder::metrics_listener`] or [`RuntimeBuilder::metrics_recorder`], else the
    /// global one), so that a layer built on the runtime (the gateway) registers its series
    /// where the runtime's are exported.
    pub fn with_metrics_recorder<T>(&self, f: impl FnOnce(&dyn ::metrics::Recorder) -> T) -> T {
        self.inner.metrics.with_recorder(f)
    }

    /// The address the metrics endpoint listens on, with
    /// [`RuntimeBuilder::metrics_listener`].
    #[cfg(feature = "prometheus")]
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.inner.exporter.as_ref().map(|e| e.addr)
    }

    /// This runtime's metrics in the Prometheus text format, as `/metrics` serves them, with
    /// [`RuntimeBuilder::metrics_listener`] (for an application that serves them itself).
    #[cfg(feature = "prometheus")]
    pub fn render_metrics(&self) -> Option<String> {
        self.inner.exporter.as_ref().map(|e| e.handle.render())
    }

    /// Makes a server's actor panic, to prove that a panic counts as a crash. Tests only.
    #[doc(hidden)]
    pub fn inject_actor_panic(&self, server: &str) {
        self.inner.supervisor.do_send(PanicServer {
            name: server.into(),
            replacement: false,
        });
    }

    /// Makes the actor of a server still starting to replace `server` (in
    /// [`replace_server`](Self::replace_server)) panic. Tests only.
    #[doc(hidden)]
    pub fn inject_replacement_panic(&self, server: &str) {
        self.inner.supervisor.do_send(PanicServer {
            name: server.into(),
            replacement: true,
        });
    }
}

/// Wakes on every change of a server's status or of the catalogue.
#[derive(Debug)]
pub struct RuntimeWatch {
    rx: watch::Receiver<u64>,
    // Weak, so that a watch does not keep a dropped runtime's servers alive.
    registry: Weak<Registry>,
}

impl RuntimeWatch {
    /// Waits for the next change; `false` once the runtime is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a change that happens while nobody waits is seen by the next call.
    pub async fn changed(&mut self) -> bool {
        self.rx.changed().await.is_ok()
    }

    /// The catalogue now (empty once the runtime is gone).
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.registry
            .upgrade()
            .map(|r| r.tools())
            .unwrap_or_default()
    }

    /// Every server's handle now (none once the runtime is gone).
    pub fn servers(&self) -> Vec<ServerHandle> {
        self.registry
            .upgrade()
            .map(|r| r.servers().values().cloned().collect())
            .unwrap_or_default()
    }
}

impl Inner {
    /// `SIGKILL` to every server process group still registered.
    fn kill_all(&self) {
        if let Ok(kills) = self.kills.lock() {
            for kill in kills.values() {
                kill.kill();
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.registry.stop();
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.kill_all();
        self.system.stop();
    }
}
