//! [`Runtime`]: the actor system on its own thread, and the servers it runs.
//!
//! The actix `System` lives on a thread the runtime owns, so any tokio application (single-
//! or multi-threaded) can embed it; callers only ever hold plain handles.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Addr, AsyncContext};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use crate::actor::server::{Kills, ServerActor, Shutdown};
use crate::call::Call;
use crate::config::ServerConfig;
use crate::deadline::DEFAULT_TIMEOUT;
use crate::error::{Error, Result};
use crate::handle::{ServerHandle, Shared};
use crate::status::ServerStatus;

/// How many submitted calls may queue in a server actor's mailbox.
const MAILBOX: usize = 1024;

/// Builds a [`Runtime`].
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    servers: Vec<(String, ServerConfig)>,
    default_timeout: Option<Duration>,
}

impl RuntimeBuilder {
    /// Adds a server under a unique name (a later server with the same name replaces it).
    pub fn server(mut self, name: impl Into<String>, config: ServerConfig) -> Self {
        let name = name.into();
        self.servers.retain(|(n, _)| *n != name);
        self.servers.push((name, config));
        self
    }

    /// The request timeout when neither the call, the tool nor the server sets one
    /// (default 60 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Starts the actor thread and every server, concurrently, and waits until each is ready
    /// or has failed. A server that fails does not fail the build: its status says why, and
    /// calls to it fail with [`Error::Unavailable`].
    pub async fn build(self) -> Result<Runtime> {
        let default_timeout = self.default_timeout.unwrap_or(DEFAULT_TIMEOUT);
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
            .map_err(|e| Error::Runtime {
                detail: e.to_string().into(),
            })?;
        let (system, arbiter) = system_rx.await.map_err(|_| Error::Runtime {
            detail: "the actor thread stopped while starting".into(),
        })?;
        let kills: Kills = Arc::new(Mutex::new(HashMap::new()));
        let mut servers = BTreeMap::new();
        let mut addrs = Vec::new();
        for (name, config) in self.servers {
            let name: Arc<str> = name.into();
            let (handle, addr) =
                start_server(&arbiter, name.clone(), config, default_timeout, &kills);
            servers.insert(name, handle);
            addrs.push(addr);
        }
        let runtime = Runtime {
            inner: Arc::new(Inner {
                servers,
                addrs,
                system,
                kills,
                done: Mutex::new(Some(done_rx)),
                stopped: AtomicBool::new(false),
            }),
        };
        for handle in runtime.inner.servers.values() {
            handle.wait_started().await;
        }
        Ok(runtime)
    }
}

fn start_server(
    arbiter: &actix::ArbiterHandle,
    name: Arc<str>,
    config: ServerConfig,
    default_timeout: Duration,
    kills: &Kills,
) -> (ServerHandle, Addr<ServerActor>) {
    let (submit_tx, submit_rx) = mpsc::channel(MAILBOX);
    let (cancel_tx, cancel_rx) = mpsc::unbounded_channel();
    let (status_tx, status_rx) = watch::channel(ServerStatus::starting());
    // Ids start at 1 and are never reused during the actor's life.
    let ids = Arc::new(AtomicI64::new(1));
    let shared = Shared {
        name: name.clone(),
        ids: ids.clone(),
        permits: Arc::new(Semaphore::new(config.max_in_flight)),
        max_in_flight: config.max_in_flight,
        submits: submit_tx,
        cancels: cancel_tx,
        status: status_rx,
        timeout: config.timeout,
        tools: config.tools.clone(),
        default_timeout,
    };
    let kills = kills.clone();
    let addr = ServerActor::start_in_arbiter(arbiter, move |ctx| {
        ctx.add_stream(tokio_stream::wrappers::ReceiverStream::new(submit_rx));
        ctx.add_stream(tokio_stream::wrappers::UnboundedReceiverStream::new(
            cancel_rx,
        ));
        ServerActor::new(name, config, ids, kills, status_tx)
    });
    (
        ServerHandle {
            shared: Arc::new(shared),
        },
        addr,
    )
}

/// A running Switchboard: an actor thread and the servers it supervises.
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
    inner: Arc<Inner>,
}

struct Inner {
    servers: BTreeMap<Arc<str>, ServerHandle>,
    addrs: Vec<Addr<ServerActor>>,
    system: actix::System,
    kills: Kills,
    done: Mutex<Option<oneshot::Receiver<()>>>,
    stopped: AtomicBool,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("servers", &self.inner.servers.values().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts configuring a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The handle of the server with this name.
    pub fn server(&self, name: &str) -> Result<ServerHandle> {
        self.inner
            .servers
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownServer { name: name.into() })
    }

    /// Every server's handle, ordered by name.
    pub fn servers(&self) -> Vec<ServerHandle> {
        self.inner.servers.values().cloned().collect()
    }

    /// Starts a `tools/call` on the named server; configure it, then `.await` it.
    pub fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<Call> {
        Ok(self.server(server)?.call_tool(tool, arguments))
    }

    /// Closes every server gracefully (close stdin, wait, `SIGTERM`, wait, `SIGKILL`, reap;
    /// pending calls fail with [`Error::Unavailable`]) and stops the actor thread.
    ///
    /// Idempotent: later calls return at once.
    pub async fn shutdown(&self) {
        if self.inner.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let closing: Vec<_> = self
            .inner
            .addrs
            .iter()
            .map(|addr| addr.send(Shutdown))
            .collect();
        for close in closing {
            // An actor that is already gone has nothing left to close.
            let _ = close.await;
        }
        self.inner.system.stop();
        let done = self.inner.done.lock().ok().and_then(|mut d| d.take());
        if let Some(done) = done {
            let _ = done.await;
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(kills) = self.kills.lock() {
            for kill in kills.values() {
                kill.kill();
            }
        }
        self.system.stop();
    }
}
