//! The supervisor: starts and stops server actors, restarts one whose actor panicked, and
//! keeps the registry's catalogues up to date as statuses change.
//!
//! Restarts after a server *process* dies are the server actor's own business (its core and
//! handles outlive it); the supervisor only replaces an actor that died itself, with a new
//! incarnation on the same core.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{
    Actor, Addr, AsyncContext, Context, Handler, Message as ActixMessage, ResponseActFuture,
    StreamHandler,
};
use tokio::sync::mpsc;

use super::server::{
    InjectPanic, IoPlaces, Kills, NotifyRootsChanged, Restart, ServerActor, ServerEvent, Shutdown,
    Wiring,
};
use crate::config::{Defaults, ServerConfig};
use crate::core::ServerCore;
use crate::era_memory::EraMemory;
use crate::error::{Error, ErrorContext, ErrorKind};
use crate::handle::ServerHandle;
use crate::metrics::RuntimeMetrics;
use crate::routing::Registry;
use crate::status::{ServerState, ServerStatus};

/// How far apart the first incarnations of replacements are (see `next_replacement`).
const REPLACEMENT_BLOCK: u64 = 1 << 32;

/// One supervised server.
struct Managed {
    addr: Addr<ServerActor>,
    handle: ServerHandle,
    incarnation: u64,
    removing: bool,
}

/// The one supervisor of a runtime.
pub(crate) struct Supervisor {
    registry: Arc<Registry>,
    defaults: Defaults,
    metrics: Arc<RuntimeMetrics>,
    /// What every server's actor is given: where connections do their I/O, the kill
    /// handles, the era verdicts of auto servers (by origin or command, shared by every
    /// server), and this supervisor's inbox.
    wiring: Wiring,
    servers: BTreeMap<Arc<str>, Managed>,
    /// Servers started to take over a name in use, until they have started, by a number of
    /// their own. Kept here, not only by the waiting replacement, so that a panic of one's
    /// actor revives it like any other and a shutdown stops it.
    replacing: BTreeMap<u64, (Arc<str>, Managed)>,
    /// The first incarnation of the next replacement: blocks of 2^32 apart, so that no
    /// actor's incarnation (revivals count up by one) is another live actor's of its name.
    next_replacement: u64,
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
            wiring: Wiring {
                io,
                kills,
                eras: Arc::<EraMemory>::default(),
                events,
            },
            registry,
            defaults,
            metrics,
            servers: BTreeMap::new(),
            replacing: BTreeMap::new(),
            next_replacement: REPLACEMENT_BLOCK,
            stopping: false,
        }
    }

    /// Starts an actor on `core`.
    fn spawn_actor(
        core: Arc<ServerCore>,
        wiring: Wiring,
        incarnation: u64,
        restarts: u32,
    ) -> Addr<ServerActor> {
        // Silences: at most one per timed-out request, so bounded by the in-flight bound.
        let (silence_tx, silence_rx) = mpsc::unbounded_channel();
        ServerActor::create(move |ctx| {
            ctx.add_stream(tokio_stream::wrappers::UnboundedReceiverStream::new(
                silence_rx,
            ));
            ServerActor::new(core, wiring, incarnation, restarts, silence_tx)
        })
    }

    fn add(&mut self, name: Arc<str>, config: ServerConfig) -> Result<ServerHandle, Error> {
        if self.stopping {
            return Err(Error::shutdown());
        }
        if self.servers.contains_key(&name) {
            return Err(ErrorContext::of_server(name).error(ErrorKind::DuplicateServer));
        }
        let managed = self.spawn_server(name.clone(), config, 0);
        let handle = managed.handle.clone();
        self.servers.insert(name, managed);
        self.publish_servers();
        Ok(handle)
    }

    /// Starts a server's actor, neither kept nor routed to yet.
    fn spawn_server(&self, name: Arc<str>, config: ServerConfig, incarnation: u64) -> Managed {
        let config = config.resolve(&self.defaults);
        let core = Arc::new(
            ServerCore::new(
                name.clone(),
                config,
                self.defaults.timeout,
                Arc::new(self.metrics.server(&name)),
            )
            .with_task_store(self.defaults.task_store.clone()),
        );
        let addr = Self::spawn_actor(core.clone(), self.wiring.clone(), incarnation, 0);
        Managed {
            addr,
            handle: ServerHandle { core },
            incarnation,
            removing: false,
        }
    }

    fn publish_servers(&mut self) {
        let servers = self
            .servers
            .iter()
            .filter(|(_, m)| !m.removing)
            .map(|(name, m)| (name.clone(), m.handle.clone()))
            .collect();
        self.registry.set_servers(servers);
    }

    /// A server actor died without being stopped: replace it, keeping its handles working.
    fn revive(&mut self, name: &Arc<str>, incarnation: u64) {
        if self.stopping {
            return;
        }
        let serving = self
            .servers
            .get_mut(name)
            .filter(|m| !m.removing && m.incarnation == incarnation);
        let Some(managed) = serving.or_else(|| {
            self.replacing
                .values_mut()
                .find(|(n, m)| n == name && m.incarnation == incarnation)
                .map(|(_, m)| m)
        }) else {
            return;
        };
        tracing::error!(server = %name, "the server's actor stopped unexpectedly; restarting it");
        let core = managed.handle.core.clone();
        // Clone before replacing: a borrow held across send_replace would deadlock.
        let last = core.status.borrow().clone();
        let previous = last.restarts;
        core.status.send_replace(ServerStatus {
            state: ServerState::Restarting {
                attempt: 1,
                next_retry_at: Instant::now(),
                last_error: "its actor panicked".into(),
            },
            since: Instant::now(),
            ..last
        });
        managed.incarnation += 1;
        core.metrics.up.set(0.0);
        managed.addr =
            Self::spawn_actor(core, self.wiring.clone(), managed.incarnation, previous + 1);
        self.registry.rebuild();
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
            self.registry.rebuild();
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
            let error = ErrorContext::of_server(msg.name).error(ErrorKind::UnknownServer);
            return Box::pin(async move { Err(error) }.into_actor(self));
        };
        managed.removing = true;
        // Out of the catalogue first, so that nothing new is routed to it; then the calls
        // in flight there finish (within the longest deadline it gives them) before it stops.
        let core = managed.handle.core.clone();
        let addr = managed.addr.clone();
        let close = async move {
            core.drain(core.longest_deadline()).await;
            addr.send(Shutdown::GRACEFUL).await
        };
        self.publish_servers();
        let name = msg.name;
        Box::pin(close.into_actor(self).map(move |_, act, _| {
            act.servers.remove(&name);
            act.publish_servers();
            Ok(())
        }))
    }
}

/// Start a server anew under a name in use, with another configuration: the old one goes on
/// serving the name until the new one has started (ready or failed); then the new one takes
/// the name, and every call routed from then on, while the old one finishes the calls it
/// has and stops, in the background. A name never routes to nothing meanwhile, so no call
/// made during the swap fails for want of the tool.
pub(crate) struct ReplaceServer {
    pub(crate) name: Arc<str>,
    pub(crate) config: ServerConfig,
}

impl ActixMessage for ReplaceServer {
    type Result = Result<ServerHandle, Error>;
}

impl Handler<ReplaceServer> for Supervisor {
    type Result = ResponseActFuture<Self, Result<ServerHandle, Error>>;

    fn handle(&mut self, msg: ReplaceServer, _ctx: &mut Context<Self>) -> Self::Result {
        let old = match self.servers.get(&msg.name) {
            _ if self.stopping => Err(Error::shutdown()),
            Some(old) if !old.removing => Ok(old.handle.core.clone()),
            _ => Err(ErrorContext::of_server(msg.name.clone()).error(ErrorKind::UnknownServer)),
        };
        let old_core = match old {
            Ok(old) => old,
            Err(error) => return Box::pin(actix::fut::ready(Err(error))),
        };
        // Another incarnation than any actor of this name has: a late word of the old actor's
        // death is not taken for the new one's, nor the other way round.
        let key = self.next_replacement;
        self.next_replacement = self.next_replacement.saturating_add(REPLACEMENT_BLOCK);
        let new = self.spawn_server(msg.name.clone(), msg.config, key);
        let started = new.handle.clone();
        self.replacing.insert(key, (msg.name.clone(), new));
        let name = msg.name;
        Box::pin(
            async move {
                // A revived actor reports `Restarting`, which ends this wait as well.
                started.wait_started().await;
            }
            .into_actor(self)
            .map(move |(), act, ctx| {
                // The shutdown took it and stopped it.
                let Some((_, new)) = act.replacing.remove(&key) else {
                    return Err(Error::shutdown());
                };
                // Removed, replaced again or shut down meanwhile: the new one is not wanted.
                let still_old = act
                    .servers
                    .get(&name)
                    .is_some_and(|m| !m.removing && Arc::ptr_eq(&m.handle.core, &old_core));
                if act.stopping || !still_old {
                    new.addr.do_send(Shutdown::GRACEFUL);
                    return Err(if act.stopping {
                        Error::shutdown()
                    } else {
                        ErrorContext::of_server(name).error(ErrorKind::UnknownServer)
                    });
                }
                let handle = new.handle.clone();
                let old = act.servers.insert(name, new);
                act.publish_servers();
                if let Some(old) = old {
                    let registry = act.registry.clone();
                    let retire = async move {
                        old_core.drain(old_core.longest_deadline()).await;
                        let _ = old.addr.send(Shutdown::GRACEFUL).await;
                        registry.rebuild();
                    };
                    ctx.spawn(actix::fut::wrap_future(retire));
                }
                Ok(handle)
            }),
        )
    }
}

/// Stop every server gracefully, all at once (each close runs beside the others); `within`,
/// when given, caps each one's close.
pub(crate) struct StopAll {
    pub(crate) within: Option<Duration>,
}

impl ActixMessage for StopAll {
    type Result = ();
}

impl Handler<StopAll> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: StopAll, _ctx: &mut Context<Self>) -> Self::Result {
        self.stopping = true;
        let replacing = std::mem::take(&mut self.replacing);
        let closing: Vec<_> = self
            .servers
            .values()
            .chain(replacing.values().map(|(_, m)| m))
            .map(|m| m.addr.send(Shutdown { within: msg.within }))
            .collect();
        Box::pin(
            async move {
                // Awaited together: a request to an actor whose mailbox was full is sent only
                // when polled, and must not wait for the other servers' closes. An actor that
                // is already gone has nothing left to close.
                futures_util::future::join_all(closing).await;
            }
            .into_actor(self)
            .map(|(), act, _| act.registry.rebuild()),
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
            _ => Err(ErrorContext::of_server(msg.name).error(ErrorKind::UnknownServer)),
        };
        Box::pin(
            async move {
                match restarted {
                    Ok(sent) => sent.await.map_err(|_| Error::shutdown()),
                    Err(e) => Err(e),
                }
            }
            .into_actor(self),
        )
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

/// Make a server's actor panic (hidden test hook): the one serving the name, or the ones
/// starting to replace it.
pub(crate) struct PanicServer {
    pub(crate) name: Arc<str>,
    pub(crate) replacement: bool,
}

impl ActixMessage for PanicServer {
    type Result = ();
}

impl Handler<PanicServer> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: PanicServer, _ctx: &mut Context<Self>) {
        if msg.replacement {
            for (_, managed) in self.replacing.values().filter(|(n, _)| *n == msg.name) {
                managed.addr.do_send(InjectPanic);
            }
        } else if let Some(managed) = self.servers.get(&msg.name) {
            managed.addr.do_send(InjectPanic);
        }
    }
}
