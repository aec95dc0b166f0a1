//! The supervisor: starts and stops server actors, restarts one whose actor panicked, and
//! keeps the shared snapshots handles read (the servers, the tool catalogue) up to date.
//!
//! Restarts after a server *process* dies are the server actor's own business (it keeps its
//! handles' channels); the supervisor only replaces an actor that died itself.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Instant;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{
    Actor, Addr, AsyncContext, Context, Handler, Message as ActixMessage, ResponseActFuture,
    StreamHandler,
};
use arc_swap::ArcSwap;
use tokio::sync::{mpsc, watch, Semaphore};

use super::server::{
    InjectPanic, IoPlaces, Kills, NotifyRootsChanged, Restart, ServerActor, ServerEvent, Shutdown,
    Ties,
};
use crate::calls::Gate;
use crate::catalogue::{Catalogue, ServerTools};
use crate::config::{Defaults, ServerConfig};
use crate::error::Error;
use crate::handle::{ServerHandle, Shared};
use crate::metrics::RuntimeMetrics;
use crate::status::{ServerState, ServerStatus};

/// The snapshots handles read without asking the supervisor.
pub(crate) struct Registry {
    pub(crate) servers: ArcSwap<BTreeMap<Arc<str>, ServerHandle>>,
    pub(crate) catalogue: ArcSwap<Catalogue>,
    /// Every ready server's prompts, named as tools are.
    pub(crate) prompts: ArcSwap<Catalogue>,
    /// Bumped on every status or catalogue change.
    pub(crate) changes: watch::Sender<u64>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            servers: ArcSwap::from_pointee(BTreeMap::new()),
            catalogue: ArcSwap::from_pointee(Catalogue::default()),
            prompts: ArcSwap::from_pointee(Catalogue::default()),
            changes: watch::Sender::new(0),
        }
    }
}

/// One supervised server.
struct Managed {
    config: ServerConfig,
    addr: Addr<ServerActor>,
    handle: ServerHandle,
    status: Arc<watch::Sender<ServerStatus>>,
    incarnation: u64,
    removing: bool,
}

/// The one supervisor of a runtime.
pub(crate) struct Supervisor {
    registry: Arc<Registry>,
    defaults: Defaults,
    kills: Kills,
    events: mpsc::UnboundedSender<ServerEvent>,
    metrics: Arc<RuntimeMetrics>,
    /// Where servers' connections do their I/O (`None`: the actor thread).
    io: IoPlaces,
    servers: BTreeMap<Arc<str>, Managed>,
    /// The era verdicts of auto servers, by origin or command, shared by every server.
    verdicts: Arc<crate::verdicts::Verdicts>,
    version: u64,
    /// Every server's status as of the last rebuild (name, when it changed).
    seen: Vec<(Arc<str>, Instant)>,
    stopping: bool,
}

impl Supervisor {
    pub(crate) fn new(
        registry: Arc<Registry>,
        defaults: Defaults,
        kills: Kills,
        events: mpsc::UnboundedSender<ServerEvent>,
        metrics: Arc<RuntimeMetrics>,
        io: IoPlaces,
    ) -> Self {
        Supervisor {
            io,
            registry,
            defaults,
            kills,
            events,
            metrics,
            servers: BTreeMap::new(),
            verdicts: Arc::default(),
            version: 0,
            seen: Vec::new(),
            stopping: false,
        }
    }

    /// Starts an actor for `ties`.
    fn spawn_actor(ties: Ties, config: ServerConfig) -> Addr<ServerActor> {
        // Silences: at most one per timed-out request, so bounded by the in-flight bound.
        let (silence_tx, silence_rx) = mpsc::unbounded_channel();
        ServerActor::create(move |ctx| {
            ctx.add_stream(tokio_stream::wrappers::UnboundedReceiverStream::new(
                silence_rx,
            ));
            ServerActor::new(ties, config, silence_tx)
        })
    }

    fn add(&mut self, name: Arc<str>, config: ServerConfig) -> Result<ServerHandle, Error> {
        if self.stopping {
            return Err(Error::Shutdown);
        }
        if self.servers.contains_key(&name) {
            return Err(Error::DuplicateServer { name });
        }
        let config = config.resolve(&self.defaults);
        let (status_tx, status_rx) =
            watch::channel(ServerStatus::starting(config.transport.kind()));
        let status_tx = Arc::new(status_tx);
        // Ids start at 1 and are never reused during the server's life, across restarts.
        let ids = Arc::new(AtomicI64::new(1));
        let metrics = Arc::new(self.metrics.server(&name));
        let gate = Arc::new(ArcSwap::from_pointee(Gate::Starting));
        let logging = Arc::new(crate::logging::Logging::new(name.clone()));
        let subscriptions = Arc::new(crate::subscriptions::Subscriptions::new(name.clone()));
        let tool_rules = Arc::new(ArcSwap::from_pointee(
            crate::tool_rules::ToolRules::default(),
        ));
        let dialect: crate::era::Dialect = Arc::default();
        let freshness: Arc<crate::era::ListFreshness> = Arc::default();
        let ties = Ties {
            dialect: dialect.clone(),
            freshness: freshness.clone(),
            verdicts: self.verdicts.clone(),
            tool_rules: tool_rules.clone(),
            logging: logging.clone(),
            subscriptions: subscriptions.clone(),
            gate: gate.clone(),
            io: self.io.clone(),
            name: name.clone(),
            ids: ids.clone(),
            kills: self.kills.clone(),
            status: status_tx.clone(),
            events: self.events.clone(),
            metrics: metrics.clone(),
            incarnation: 0,
            restarts: 0,
        };
        let addr = Self::spawn_actor(ties, config.clone());
        let max_in_flight = config.max_in_flight_value();
        let handle = ServerHandle {
            shared: Arc::new(Shared {
                name: name.clone(),
                ids,
                permits: Arc::new(Semaphore::new(max_in_flight)),
                max_in_flight,
                gate,
                status: status_rx,
                timeout: config.timeout,
                tools: config.tools.clone(),
                default_timeout: self.defaults.timeout,
                allow: config.allow_tools.clone(),
                deny: config.deny_tools.clone(),
                metrics,
                logging,
                subscriptions,
                tool_rules,
                dialect,
                freshness,
                handlers: config.handlers.clone(),
                handler_timeout: config.handler_timeout_value(),
                max_input_rounds: config.max_input_rounds_value(),
                reissue_on_broken_stream: config.reissue_on_broken_stream,
            }),
        };
        self.servers.insert(
            name,
            Managed {
                config,
                addr,
                handle: handle.clone(),
                status: status_tx,
                incarnation: 0,
                removing: false,
            },
        );
        self.publish_servers();
        Ok(handle)
    }

    fn publish_servers(&mut self) {
        let servers = self
            .servers
            .iter()
            .filter(|(_, m)| !m.removing)
            .map(|(name, m)| (name.clone(), m.handle.clone()))
            .collect();
        self.registry.servers.store(Arc::new(servers));
        self.rebuild_catalogue();
    }

    /// Rebuilds the catalogue from every server's last known tools.
    fn rebuild_catalogue(&mut self) {
        let statuses: Vec<(Arc<str>, &Managed, ServerStatus)> = self
            .servers
            .iter()
            .filter(|(_, m)| !m.removing)
            .map(|(name, m)| (name.clone(), m, m.handle.status()))
            .collect();
        let inputs: Vec<ServerTools<'_>> = statuses
            .iter()
            .map(|(name, m, status)| ServerTools {
                server: name,
                prefix: m.config.prefix.as_deref(),
                allow: &m.config.allow_tools,
                deny: &m.config.deny_tools,
                tools: &status.tools,
                available: status.is_ready(),
            })
            .collect();
        let next = Catalogue::build(&inputs, &self.defaults.naming, self.version + 1);
        self.metrics.catalogue_tools.set(next.len() as f64);
        // Prompts take the tools' naming (prefixes, separator, length) as they are, with no
        // allow/deny lists (those name tools).
        let prompt_tools: Vec<Vec<crate::model::Tool>> = statuses
            .iter()
            .map(|(_, _, status)| status.prompts.iter().map(prompt_as_tool).collect())
            .collect();
        let prompt_inputs: Vec<ServerTools<'_>> = statuses
            .iter()
            .zip(&prompt_tools)
            .map(|((name, m, status), tools)| ServerTools {
                server: name,
                prefix: m.config.prefix.as_deref(),
                allow: &[],
                deny: &[],
                tools,
                available: status.is_ready(),
            })
            .collect();
        let prompts = Catalogue::build(&prompt_inputs, &self.defaults.naming, self.version + 1);
        if !prompts.same_entries(&self.registry.prompts.load()) {
            self.registry.prompts.store(Arc::new(prompts));
        }
        let mut changed = false;
        if !next.same_entries(&self.registry.catalogue.load()) {
            self.version += 1;
            self.registry.catalogue.store(Arc::new(next));
            changed = true;
        }
        // Watchers wake for what they have not seen yet, once: a rebuild that finds the same
        // statuses as the last one (a status event that a `Settle` already took in) is none.
        let seen: Vec<(Arc<str>, Instant)> = statuses
            .iter()
            .map(|(name, _, status)| (name.clone(), status.since))
            .collect();
        if seen != self.seen {
            self.seen = seen;
            changed = true;
        }
        if changed {
            self.registry.changes.send_modify(|v| *v += 1);
        }
    }

    /// A server actor died without being stopped: replace it, keeping its handles working.
    fn revive(&mut self, name: &Arc<str>, incarnation: u64) {
        if self.stopping {
            return;
        }
        let Some(managed) = self.servers.get_mut(name) else {
            return;
        };
        if managed.removing || managed.incarnation != incarnation {
            return;
        }
        tracing::error!(server = %name, "the server's actor stopped unexpectedly; restarting it");
        // Clone before replacing: a borrow held across send_replace would deadlock.
        let last = managed.status.borrow().clone();
        let previous = last.restarts;
        managed.status.send_replace(ServerStatus {
            state: ServerState::Restarting {
                attempt: 1,
                next_retry_at: std::time::Instant::now(),
                last_error: "its actor panicked".into(),
            },
            since: Instant::now(),
            ..last
        });
        managed.incarnation += 1;
        managed.handle.shared.metrics.up.set(0.0);
        let ties = Ties {
            dialect: managed.handle.shared.dialect.clone(),
            freshness: managed.handle.shared.freshness.clone(),
            verdicts: self.verdicts.clone(),
            gate: managed.handle.shared.gate.clone(),
            logging: managed.handle.shared.logging.clone(),
            tool_rules: managed.handle.shared.tool_rules.clone(),
            subscriptions: managed.handle.shared.subscriptions.clone(),
            io: self.io.clone(),
            name: name.clone(),
            ids: managed.handle.shared.ids.clone(),
            kills: self.kills.clone(),
            status: managed.status.clone(),
            events: self.events.clone(),
            metrics: managed.handle.shared.metrics.clone(),
            incarnation: managed.incarnation,
            restarts: previous + 1,
        };
        managed.addr = Self::spawn_actor(ties, managed.config.clone());
        self.rebuild_catalogue();
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

/// Events come in batches of whatever is queued: one rebuild of the catalogue per batch, not
/// per status change (starting or stopping 100 servers would otherwise rebuild a catalogue
/// of 5,000 tools some 200 times).
impl StreamHandler<Vec<ServerEvent>> for Supervisor {
    fn handle(&mut self, events: Vec<ServerEvent>, _ctx: &mut Context<Self>) {
        let mut changed = false;
        for event in events {
            match event {
                ServerEvent::StatusChanged => changed = true,
                ServerEvent::Died(name, incarnation) => self.revive(&name, incarnation),
            }
        }
        if changed {
            self.rebuild_catalogue();
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

/// Start supervising a server.
pub(crate) struct AddServer {
    pub(crate) name: Arc<str>,
    pub(crate) config: ServerConfig,
}

impl ActixMessage for AddServer {
    type Result = Result<ServerHandle, Error>;
}

impl Handler<AddServer> for Supervisor {
    type Result = Result<ServerHandle, Error>;

    fn handle(&mut self, msg: AddServer, _ctx: &mut Context<Self>) -> Self::Result {
        self.add(msg.name, msg.config)
    }
}

/// Stop a server gracefully and forget it.
pub(crate) struct RemoveServer {
    pub(crate) name: Arc<str>,
}

impl ActixMessage for RemoveServer {
    type Result = Result<(), Error>;
}

impl Handler<RemoveServer> for Supervisor {
    type Result = ResponseActFuture<Self, Result<(), Error>>;

    fn handle(&mut self, msg: RemoveServer, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(managed) = self.servers.get_mut(&msg.name) else {
            let error = Error::UnknownServer { name: msg.name };
            return Box::pin(async move { Err(error) }.into_actor(self));
        };
        managed.removing = true;
        let close = managed.addr.send(Shutdown);
        self.publish_servers();
        let name = msg.name;
        Box::pin(close.into_actor(self).map(move |_, act, _| {
            act.servers.remove(&name);
            act.publish_servers();
            Ok(())
        }))
    }
}

/// Stop every server gracefully.
pub(crate) struct StopAll;

impl ActixMessage for StopAll {
    type Result = ();
}

impl Handler<StopAll> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: StopAll, _ctx: &mut Context<Self>) -> Self::Result {
        self.stopping = true;
        let closing: Vec<_> = self
            .servers
            .values()
            .map(|m| m.addr.send(Shutdown))
            .collect();
        Box::pin(
            async move {
                for close in closing {
                    // An actor that is already gone has nothing left to close.
                    let _ = close.await;
                }
            }
            .into_actor(self)
            .map(|(), act, _| act.rebuild_catalogue()),
        )
    }
}

/// Start a down or failed server again.
pub(crate) struct RestartServer {
    pub(crate) name: Arc<str>,
}

impl ActixMessage for RestartServer {
    type Result = Result<(), Error>;
}

impl Handler<RestartServer> for Supervisor {
    type Result = ResponseActFuture<Self, Result<(), Error>>;

    fn handle(&mut self, msg: RestartServer, _ctx: &mut Context<Self>) -> Self::Result {
        let restarted = match self.servers.get(&msg.name) {
            // Answer once the actor has handled it, so its status has left "down" by then.
            Some(managed) if !managed.removing => Ok(managed.addr.send(Restart)),
            _ => Err(Error::UnknownServer { name: msg.name }),
        };
        Box::pin(
            async move {
                match restarted {
                    Ok(sent) => sent.await.map_err(|_| Error::Shutdown),
                    Err(e) => Err(e),
                }
            }
            .into_actor(self),
        )
    }
}

/// Rebuild the catalogue from the statuses as they are now, so that a caller who saw a
/// server become ready also sees its tools.
pub(crate) struct Settle;

impl ActixMessage for Settle {
    type Result = ();
}

impl Handler<Settle> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Settle, _ctx: &mut Context<Self>) {
        self.rebuild_catalogue();
    }
}

/// The application's roots changed: every server actor tells its server, if it is ready and
/// was offered roots (each actor knows both). Answered once every actor has written it.
pub(crate) struct RootsChanged;

impl ActixMessage for RootsChanged {
    type Result = ();
}

impl Handler<RootsChanged> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: RootsChanged, _ctx: &mut Context<Self>) -> Self::Result {
        let told: Vec<_> = self
            .servers
            .values()
            .filter(|m| !m.removing)
            .map(|m| m.addr.send(NotifyRootsChanged))
            .collect();
        Box::pin(
            async move {
                for sent in told {
                    // An actor that is gone has no server to tell.
                    let _ = sent.await;
                }
            }
            .into_actor(self),
        )
    }
}

/// Make a server's actor panic (hidden test hook).
pub(crate) struct PanicServer {
    pub(crate) name: Arc<str>,
}

impl ActixMessage for PanicServer {
    type Result = ();
}

impl Handler<PanicServer> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: PanicServer, _ctx: &mut Context<Self>) {
        if let Some(managed) = self.servers.get(&msg.name) {
            managed.addr.do_send(InjectPanic);
        }
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
