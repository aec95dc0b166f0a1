//! Routing by name across servers: the registry of a runtime's servers and the catalogues
//! built from their statuses (tools; prompts, named as tools are), and the resolution of a
//! catalogue name, a prompt name or a resource URI to the one server that offers it.
//!
//! The catalogues are snapshots, rebuilt from every server's status: by the supervisor as
//! statuses change (in batches), and by any caller that finds the snapshot older than the
//! status of the server it is about to route to. So what a caller observes of a server
//! agrees: once its status says it offers nothing (say `Failed`: it gave up), the catalogue
//! no longer routes to it. A server that restarts keeps its entries: a call routed to it
//! waits for the restart within its deadline (see [`ServerStatus::offers_entries`]). Reading a snapshot is lock-free; a rebuild takes a lock (rebuilds are rare,
//! and never on a call's path unless a status changed under it).
//!
//! A stateless (2026-07-28) server's list past its `ttlMs` that decides a route (the
//! owner's, or for a name nobody offers, any such list) is fetched again first, within the
//! call's deadline, once for every call of the burst; only looking at a list serves it
//! stale and has it fetched again in the background. A tool name nobody offers also waits,
//! within the call's deadline, for the re-listing of any server (either era) that
//! announced its tools changed: the name may be one the change brings.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::catalogue::search::SegmentCache;
use crate::catalogue::{Catalogue, Naming, ServerTools, Unresolved};
use crate::deadline::ToolPolicy;
use crate::error::{Error, ErrorContext, ErrorKind, Result};
use crate::freshness::{Freshness, ListFreshness};
use crate::handle::ServerHandle;
use crate::metrics::RuntimeMetrics;
use crate::status::ServerStatus;

/// The catalogues as of one set of statuses.
#[derive(Debug, Default)]
struct Snapshot {
    tools: Arc<Catalogue>,
    prompts: Arc<Catalogue>,
    /// When each server's status (as built in) last changed.
    seen: HashMap<Arc<str>, Instant>,
}

/// A runtime's servers and the catalogues across them.
pub(crate) struct Registry {
    servers: ArcSwap<BTreeMap<Arc<str>, ServerHandle>>,
    snapshot: ArcSwap<Snapshot>,
    naming: Naming,
    metrics: Arc<RuntimeMetrics>,
    /// Bumped on every status or catalogue change.
    changes: watch::Sender<u64>,
    /// Held while a snapshot is rebuilt: the version of the last one.
    rebuilding: Mutex<u64>,
    /// Set once the runtime is shut down or dropped: nothing is routed any more.
    stopped: AtomicBool,
    /// The tool search's per-server segments, shared by the tool catalogue's snapshots.
    search_cache: Arc<SegmentCache>,
    /// The semantic scorer searches fuse with, set once when the runtime is built.
    #[cfg(feature = "semantic")]
    pub(crate) semantic: std::sync::OnceLock<Arc<crate::search::semantic::SemanticScorer>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("servers", &self.servers.load().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Registry {
    pub(crate) fn naming(&self) -> &Naming {
        &self.naming
    }

    pub(crate) fn new(naming: Naming, metrics: Arc<RuntimeMetrics>) -> Self {
        Registry {
            servers: ArcSwap::from_pointee(BTreeMap::new()),
            snapshot: ArcSwap::from_pointee(Snapshot::default()),
            naming,
            metrics,
            changes: watch::Sender::new(0),
            rebuilding: Mutex::new(0),
            stopped: AtomicBool::new(false),
            search_cache: Arc::default(),
            #[cfg(feature = "semantic")]
            semantic: std::sync::OnceLock::new(),
        }
    }

    /// The servers routed to from now on (a server being removed is not among them).
    pub(crate) fn set_servers(&self, servers: BTreeMap<Arc<str>, ServerHandle>) {
        self.servers.store(Arc::new(servers));
        self.rebuild();
    }

    /// Every server's handle, by name.
    pub(crate) fn servers(&self) -> Arc<BTreeMap<Arc<str>, ServerHandle>> {
        self.servers.load_full()
    }

    /// The handle of the server named `name`.
    pub(crate) fn server(&self, name: &str) -> Result<ServerHandle> {
        self.servers
            .load()
            .get(name)
            .cloned()
            .ok_or_else(|| ErrorContext::of_server(name.into()).error(ErrorKind::UnknownServer))
    }

    /// A watch on changes of statuses and catalogues.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Nothing is routed any more.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    fn check_running(&self) -> Result<()> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(Error::shutdown());
        }
        Ok(())
    }

    /// The tool catalogue, rebuilt first if a server's status changed since it was built.
    pub(crate) fn tools(&self) -> Arc<Catalogue> {
        self.fresh().tools.clone()
    }

    /// The prompt catalogue, rebuilt first if a server's status changed since it was built.
    pub(crate) fn prompts(&self) -> Arc<Catalogue> {
        self.fresh().prompts.clone()
    }

    /// The snapshot, rebuilt first if any server's status is newer than it.
    fn fresh(&self) -> Arc<Snapshot> {
        let snapshot = self.snapshot.load_full();
        let servers = self.servers.load();
        let stale = servers.iter().any(|(name, handle)| {
            snapshot.seen.get(name) != Some(&handle.core.status.borrow().since)
        }) || snapshot.seen.len() != servers.len();
        if stale {
            self.rebuild();
            return self.snapshot.load_full();
        }
        snapshot
    }

    /// Rebuilds the catalogues from every server's status now; wakes watchers when
    /// anything changed since the last rebuild.
    pub(crate) fn rebuild(&self) {
        let mut version = self.rebuilding.lock().unwrap_or_else(|e| e.into_inner());
        let servers = self.servers.load();
        let statuses: Vec<(&Arc<str>, &ServerHandle, ServerStatus)> = servers
            .iter()
            .map(|(name, handle)| (name, handle, handle.core.status()))
            .collect();
        let inputs: Vec<ServerTools<'_>> = statuses
            .iter()
            .map(|(name, handle, status)| ServerTools {
                server: name,
                prefix: handle.core.config.prefix.as_deref(),
                allow: &handle.core.config.allow_tools,
                deny: &handle.core.config.deny_tools,
                tools: &status.tools,
                source: Some(&status.tools),
                available: status.offers_entries(),
            })
            .collect();
        let current = self.snapshot.load_full();
        let tools = Catalogue::build(&inputs, &self.naming, *version + 1)
            .with_search_cache(Arc::clone(&self.search_cache));
        self.metrics.catalogue_tools.set(tools.len() as f64);
        // Prompts take the tools' naming (prefixes, separator, length) as they are, with no
        // allow/deny lists (those name tools).
        let prompt_tools: Vec<Vec<crate::model::Tool>> = statuses
            .iter()
            .map(|(_, _, status)| status.prompts.iter().map(prompt_as_tool).collect())
            .collect();
        let prompt_inputs: Vec<ServerTools<'_>> = statuses
            .iter()
            .zip(&prompt_tools)
            .map(|((name, handle, status), tools)| ServerTools {
                server: name,
                prefix: handle.core.config.prefix.as_deref(),
                allow: &[],
                deny: &[],
                tools,
                source: None,
                available: status.offers_entries(),
            })
            .collect();
        let prompts = Catalogue::build(&prompt_inputs, &self.naming, *version + 1);
        let seen: HashMap<Arc<str>, Instant> = statuses
            .iter()
            .map(|(name, _, status)| ((*name).clone(), status.since))
            .collect();
        let same_tools = tools.same_entries(&current.tools);
        let same_prompts = prompts.same_entries(&current.prompts);
        // Watchers wake for what they have not seen yet, once: a rebuild that finds the same
        // statuses as the last one is none.
        let changed = !same_tools || !same_prompts || seen != current.seen;
        if !changed {
            return;
        }
        if !same_tools {
            *version += 1;
        }
        let tools = if same_tools {
            current.tools.clone()
        } else {
            let tools = Arc::new(tools);
            // The new tools are embedded on the scorer's thread, never by a query.
            #[cfg(feature = "semantic")]
            if let Some(scorer) = self.semantic.get() {
                scorer.prepare(tools.clone());
            }
            tools
        };
        self.snapshot.store(Arc::new(Snapshot {
            tools,
            prompts: if same_prompts {
                current.prompts.clone()
            } else {
                Arc::new(prompts)
            },
            seen,
        }));
        self.changes.send_modify(|v| *v += 1);
    }

    /// The server and tool a catalogue name stands for, by the catalogue as it is now
    /// (rebuilt first when the owner's status is newer than it).
    fn resolve_tool(&self, name: &str) -> Result<(ServerHandle, Arc<str>)> {
        self.check_running()?;
        let snapshot = self.snapshot.load_full();
        match resolve_in(&snapshot.tools, name, self) {
            Ok((handle, tool)) => {
                let since = snapshot.seen.get(handle.name());
                if since == Some(&handle.core.status.borrow().since) {
                    return Ok((handle, tool));
                }
                // The owner's status changed since the snapshot: route by the new one.
                self.rebuild();
                resolve_in(&self.snapshot.load().tools, name, self)
            }
            // Perhaps a server that lists it changed since the snapshot: the rare path looks.
            Err(_) => resolve_in(&self.fresh().tools, name, self),
        }
    }

    /// Resolves a catalogue name for a call that began at `started`, by fresh listings:
    /// when the owner's (or for an unknown or ambiguous name, any server's) stateless
    /// listing is stale, it is fetched again and the name resolved again.
    pub(crate) async fn route_tool(
        &self,
        name: &str,
        options: &ToolPolicy,
        started: Instant,
    ) -> Result<(ServerHandle, Arc<str>)> {
        let routed = self.resolve_tool(name);
        let owner = match &routed {
            Ok((owner, _)) => Some(owner),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::UnknownTool | ErrorKind::AmbiguousTool { .. }
                ) =>
            {
                None
            }
            Err(_) => return routed,
        };
        let tool = routed.as_ref().ok().map(|(_, tool)| tool.as_ref());
        let deadline = |server: &ServerHandle| Some(server.core.deadline(tool, options, started));
        let refreshed = match owner {
            Some(_) => {
                self.refresh_route(owner, |lists| &lists.tools, started, deadline)
                    .await
            }
            // A name no list has may be one that a change a server announced brings: its
            // re-listing (either era) is waited for too.
            None => self.settle_names(started, deadline).await,
        };
        if !refreshed {
            return routed;
        }
        // The new listing is in the status; the catalogue is rebuilt from it.
        self.rebuild();
        self.resolve_tool(name)
    }

    /// Has the stale `which` lists that decide a route fetched again (the `owner`'s, or
    /// with no single owner every server's), each server waiting until `deadline` gives
    /// it. `false` when none was stale; `true` when one was, and the route must be found
    /// again (even if a deadline cut the wait short: the call then reports it).
    async fn refresh_route(
        &self,
        owner: Option<&ServerHandle>,
        which: fn(&ListFreshness) -> &Freshness,
        started: Instant,
        deadline: impl Fn(&ServerHandle) -> Option<Instant>,
    ) -> bool {
        let is_stale = |server: &ServerHandle| which(&server.core.freshness).needs_relist(started);
        let stale: Vec<ServerHandle> = match owner {
            // The common case, on every catalogue call: one check, nothing collected.
            Some(owner) if !is_stale(owner) => return false,
            Some(owner) => vec![owner.clone()],
            None => self
                .servers
                .load()
                .values()
                .filter(|s| is_stale(s))
                .cloned()
                .collect(),
        };
        if stale.is_empty() {
            return false;
        }
        let waits = stale
            .iter()
            .map(|server| which(&server.core.freshness).relisted(deadline(server)));
        futures_util::future::join_all(waits).await;
        true
    }

    /// For a tool name no server's list has (or several have): waits for every server whose
    /// tools are due to be listed again (past their `ttlMs`, or after a change the server
    /// announced), each until `deadline` gives it. `false` when none was; `true` when one
    /// was, and the route must be found again.
    async fn settle_names(
        &self,
        started: Instant,
        deadline: impl Fn(&ServerHandle) -> Option<Instant>,
    ) -> bool {
        self.settle(|lists| &lists.tools, started, deadline).await
    }

    /// Waits for every server whose `which` lists may bring names (a listing under way: the
    /// first after it became ready, or one a change it announced causes; a re-list past a
    /// `ttlMs`), each until `deadline` gives it. `false` when none was; `true` when one was.
    async fn settle(
        &self,
        which: fn(&ListFreshness) -> &Freshness,
        started: Instant,
        deadline: impl Fn(&ServerHandle) -> Option<Instant>,
    ) -> bool {
        let due: Vec<ServerHandle> = self
            .servers
            .load()
            .values()
            .filter(|s| which(&s.core.freshness).may_bring_names(started))
            .cloned()
            .collect();
        if due.is_empty() {
            return false;
        }
        let waits = due
            .iter()
            .map(|server| which(&server.core.freshness).names_settled(deadline(server)));
        futures_util::future::join_all(waits).await;
        true
    }

    /// Waits for the resource listings under way, each server within its own timeout.
    async fn settle_resources(&self, started: Instant) -> bool {
        let policy = ToolPolicy::default();
        let deadline = |server: &ServerHandle| Some(server.core.deadline(None, &policy, started));
        self.settle(|lists| &lists.resources, started, deadline)
            .await
    }

    /// Waits, each server within its own timeout, for the resource and prompt listings under
    /// way (the first ones after a server became ready, or re-listings it announced).
    pub(crate) async fn settle_lists(&self) {
        let started = Instant::now();
        let policy = ToolPolicy::default();
        let deadline = |server: &ServerHandle| Some(server.core.deadline(None, &policy, started));
        futures_util::future::join(
            self.settle(|lists| &lists.resources, started, deadline),
            self.settle(|lists| &lists.prompts, started, deadline),
        )
        .await;
    }

    /// Has the stale `which` lists that decide a route by a prompt name or a URI fetched
    /// again, within each server's timeout.
    async fn refresh_lists(
        &self,
        owner: Option<&ServerHandle>,
        which: fn(&ListFreshness) -> &Freshness,
        started: Instant,
    ) -> bool {
        let policy = ToolPolicy::default();
        self.refresh_route(owner, which, started, |server| {
            Some(server.core.deadline(None, &policy, started))
        })
        .await
    }

    /// The server and prompt a prompt catalogue name stands for, by fresh listings.
    pub(crate) async fn route_prompt(&self, name: &str) -> Result<(ServerHandle, String)> {
        let started = Instant::now();
        let mut routed = self.resolve_prompt(name);
        let owner = routed.as_ref().ok().map(|(server, _)| server.clone());
        if self
            .refresh_lists(owner.as_ref(), |lists| &lists.prompts, started)
            .await
        {
            self.rebuild();
            routed = self.resolve_prompt(name);
        }
        // A name no list has yet may be in a listing under way.
        if matches!(&routed, Err(e) if matches!(e.kind(), ErrorKind::UnknownPrompt { .. })) {
            let policy = ToolPolicy::default();
            let deadline =
                |server: &ServerHandle| Some(server.core.deadline(None, &policy, started));
            if self.settle(|lists| &lists.prompts, started, deadline).await {
                self.rebuild();
                routed = self.resolve_prompt(name);
            }
        }
        routed
    }

    fn resolve_prompt(&self, name: &str) -> Result<(ServerHandle, String)> {
        self.check_running()?;
        let prompts = self.prompts();
        match prompts.resolve(name) {
            Ok(entry) => Ok((self.server(&entry.server)?, entry.tool.name.clone())),
            Err(Unresolved::Unknown) => {
                Err(ErrorContext::new().error(ErrorKind::UnknownPrompt { name: name.into() }))
            }
            Err(Unresolved::Ambiguous(collision)) => {
                Err(ErrorContext::new().error(ErrorKind::AmbiguousPrompt {
                    name: name.into(),
                    servers: collision.servers.clone(),
                }))
            }
        }
    }

    /// The servers that offer `uri` as a resource (ready, or restarting: a read waits for
    /// the restart), or else a template matching it.
    pub(crate) fn resource_owners(&self, uri: &str) -> Vec<ServerHandle> {
        let servers = self.servers.load();
        let ready: Vec<(&ServerHandle, ServerStatus)> = servers
            .values()
            .map(|h| (h, h.status()))
            .filter(|(_, status)| status.offers_entries())
            .collect();
        let listing: Vec<ServerHandle> = ready
            .iter()
            .filter(|(_, s)| s.resources.iter().any(|r| r.uri == uri))
            .map(|(h, _)| (*h).clone())
            .collect();
        if !listing.is_empty() {
            return listing;
        }
        ready
            .into_iter()
            .filter(|(_, s)| {
                s.resource_templates
                    .iter()
                    .any(|t| crate::uri_template::matches(&t.uri_template, uri))
            })
            .map(|(h, _)| h.clone())
            .collect()
    }

    /// The one server to read `uri` from, by fresh listings.
    pub(crate) async fn route_resource(&self, uri: &str) -> Result<ServerHandle> {
        self.check_running()?;
        let started = Instant::now();
        let mut owners = self.resource_owners(uri);
        let owner = match &owners[..] {
            [one] => Some(one.clone()),
            _ => None,
        };
        if self
            .refresh_lists(owner.as_ref(), |lists| &lists.resources, started)
            .await
        {
            owners = self.resource_owners(uri);
        }
        // A URI no list has yet may be in a listing under way.
        if owners.is_empty() && self.settle_resources(started).await {
            owners = self.resource_owners(uri);
        }
        match &owners[..] {
            [one] => Ok(one.clone()),
            [] => Err(ErrorContext::new().error(ErrorKind::ResourceNotFound {
                uri: uri.into(),
                message: "no server offers it or a template that matches it".into(),
            })),
            several => Err(ErrorContext::new().error(ErrorKind::AmbiguousResource {
                uri: uri.into(),
                servers: several.iter().map(|h| Arc::from(h.name())).collect(),
            })),
        }
    }

    /// A caller looks at `which` lists without routing by them: stale ones are fetched
    /// again in the background.
    pub(crate) fn touch(&self, which: fn(&ListFreshness) -> &Freshness) {
        let now = Instant::now();
        for server in self.servers.load().values() {
            which(&server.core.freshness).touch(now);
        }
    }
}

/// The server and tool `name` stands for in `catalogue`.
fn resolve_in(
    catalogue: &Catalogue,
    name: &str,
    registry: &Registry,
) -> Result<(ServerHandle, Arc<str>)> {
    match catalogue.resolve(name) {
        Ok(entry) => registry
            .server(&entry.server)
            .map(|handle| (handle, Arc::<str>::from(entry.tool.name.as_str()))),
        Err(Unresolved::Unknown) => Err(ErrorContext::new()
            .with_tool(Some(name.into()))
            .error(ErrorKind::UnknownTool)),
        Err(Unresolved::Ambiguous(collision)) => Err(ErrorContext::new()
            .with_tool(Some(name.into()))
            .error(ErrorKind::AmbiguousTool {
                servers: collision.servers.clone(),
            })),
    }
}

/// A prompt in the shape the catalogue names: its name, title and description.
fn prompt_as_tool(prompt: &crate::model::Prompt) -> crate::model::Tool {
    crate::model::Tool {
        name: prompt.name.clone(),
        title: prompt.title.clone(),
        description: prompt.description.clone(),
        ..Default::default()
    }
}
