//! Instances of isolated servers: each client (or each session) of a server whose config
//! says `"isolation": "client"` (or `"session"`) gets an instance of its own, started on its
//! first use, and its requests go there.
//!
//! The runtime's own instance of such a server lists its tools, resources and prompts (the
//! catalogue every client sees) and answers completions and skills, but no call, read or
//! prompt of any client goes to it. An instance is a runtime of its own
//! ([`Runtime::start_instance`]): supervised like any server (restarts, deadlines, the
//! server's name as the metrics label), its process stopped with it.
//!
//! A client is its principal's subject (the `--auth` key's name, the token's subject): a
//! request with none is refused for a `client` server, and a 2026-07-28 request, which has
//! no session, for a `session` one. A server has at most `maxInstances` instances: past it
//! the request is refused (-32603, "too many instances"), never a busy instance stopped. An
//! instance with no request in flight for `idleTimeout` is stopped, and so is a session's once
//! its session has ended. How many run is the gauge `switchboard_gateway_instances{server}`.
//!
//! A server whose config uses per-client values (`${client.…}`, see
//! [`switchboard::client_values`]) starts each client's instance with that client's: its
//! name, its token's claims, its secrets from the credentials file. A value that cannot be
//! filled refuses the request with an error naming it, and nothing is started.
//!
//! The state of instances is a map behind a lock, taken briefly (never across an `.await`)
//! and only for requests to isolated servers: a gateway without one never takes it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use futures_util::future::{BoxFuture, FutureExt, Shared};
use switchboard::client_values::ClientValues;
use switchboard::{Isolation, Runtime, ServerHandle, ServerState};
use switchboard_server::{Context, ErrorObject, HandlerError};
use tokio::sync::OnceCell;

use crate::credentials::Credentials;

/// How often idle instances are looked for.
const REAP_EVERY: Duration = Duration::from_millis(250);

/// Whose instance: a client's, or a session's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Whose {
    Client(String),
    Session(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    server: String,
    whose: Whose,
}

/// An instance's start, run on a task of its own (a request that stops waiting does not
/// stop it), shared by every request that waits for it.
type Start = Shared<BoxFuture<'static, Result<Runtime, HandlerError>>>;

/// One instance: started once, however many requests wait for it.
struct Slot {
    runtime: OnceCell<Runtime>,
    /// The start, once begun, and its task (aborted when the instances stop).
    start: Mutex<Option<(Start, tokio::task::AbortHandle)>>,
    in_flight: AtomicUsize,
    last_used: Mutex<Instant>,
    idle_timeout: Duration,
    /// A session's instance: the request that started it, to see when its session ends.
    session: Option<Context>,
    /// The per-client values it was started with (none for a server that takes none): a
    /// client whose values changed gets a new instance.
    used: Vec<String>,
}

impl Slot {
    /// The start of this instance: the one begun, or `begin`'s.
    fn start<F>(&self, begin: impl FnOnce() -> F) -> Start
    where
        F: std::future::Future<Output = Result<Runtime, HandlerError>> + Send + 'static,
    {
        let mut start = self.start.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((start, _)) = &*start {
            return start.clone();
        }
        let task = tokio::spawn(begin());
        let abort = task.abort_handle();
        let shared = async move {
            task.await.unwrap_or_else(|e| {
                Err(refused(format!("the instance's start did not finish: {e}")))
            })
        }
        .boxed()
        .shared();
        *start = Some((shared.clone(), abort));
        shared
    }

    /// Whether its start is still running.
    fn starting(&self) -> bool {
        self.runtime.get().is_none()
            && self
                .start
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .is_some_and(|(start, _)| start.peek().is_none())
    }

    /// Stops it: its start, if running, and the instance, if started (whether or not a
    /// request was there to take it).
    async fn stop(&self) {
        let finished = {
            let start = self.start.lock().unwrap_or_else(PoisonError::into_inner);
            match &*start {
                Some((start, abort)) => {
                    abort.abort();
                    start
                        .peek()
                        .and_then(|started| started.as_ref().ok())
                        .cloned()
                }
                None => None,
            }
        };
        if let Some(runtime) = self.runtime.get().cloned().or(finished) {
            runtime.shutdown().await;
        }
    }

    fn idle(&self, now: Instant) -> bool {
        if self.in_flight.load(Ordering::Acquire) > 0 || self.starting() {
            return false;
        }
        let last = *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        now.duration_since(last) >= self.idle_timeout
            || self.session.as_ref().is_some_and(Context::session_closed)
    }
}

/// The instances of every isolated server.
pub(crate) struct Instances {
    slots: Mutex<HashMap<Key, Arc<Slot>>>,
    /// Instances replaced because their client's values changed: stopped once idle.
    retired: Mutex<Vec<(String, Arc<Slot>)>>,
    /// Each client's secrets, for servers that take per-client values.
    credentials: ArcSwap<Credentials>,
    /// Per-user OAuth, when a server uses it.
    per_user: std::sync::OnceLock<Arc<crate::per_user::PerUser>>,
    /// The gauge of running instances per server is recorded where the runtime records.
    runtime: Runtime,
    /// Whether any server is isolated: the lists say, each time they are built.
    any: AtomicBool,
}

impl std::fmt::Debug for Instances {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instances")
            .field("running", &self.lock().len())
            .finish()
    }
}

/// A request's hold on an instance: while it is held, the instance is not idle.
pub(crate) struct Lease {
    slot: Arc<Slot>,
    server: String,
}

impl Lease {
    /// The instance's runtime.
    pub(crate) fn runtime(&self) -> &Runtime {
        // Set before a lease is handed out.
        self.slot
            .runtime
            .get()
            .expect("a lease is handed out once its instance started")
    }

    /// The instance's server.
    pub(crate) fn server(&self) -> Result<ServerHandle, HandlerError> {
        self.runtime()
            .server(&self.server)
            .map_err(|e| crate::error::to_front(&e, &self.server))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        *self
            .slot
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.slot.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn refused(message: String) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(ErrorObject::INTERNAL_ERROR, message))
}

impl Instances {
    pub(crate) fn new(runtime: Runtime, any: bool) -> Instances {
        Instances {
            slots: Mutex::default(),
            retired: Mutex::default(),
            credentials: ArcSwap::default(),
            per_user: std::sync::OnceLock::new(),
            runtime,
            any: AtomicBool::new(any),
        }
    }

    /// Sets the gauge of `server`'s running instances.
    fn gauge(&self, server: &str, slots: &HashMap<Key, Arc<Slot>>) {
        let running = slots.keys().filter(|k| k.server == server).count();
        crate::metrics::instances(&self.runtime, server, running);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Uses `credentials` for the instances started from now on; a running instance whose
    /// client's values changed is replaced on that client's next request.
    pub(crate) fn set_credentials(&self, credentials: Credentials) {
        self.credentials.store(Arc::new(credentials));
    }

    /// Asks clients for the authorizations of per-user servers through `per_user`.
    pub(crate) fn set_per_user(&self, per_user: Arc<crate::per_user::PerUser>) -> bool {
        self.per_user.set(per_user).is_ok()
    }

    /// Says whether any of the runtime's servers is isolated.
    pub(crate) fn set_any(&self, any: bool) {
        self.any.store(any, Ordering::Release);
    }

    /// The instance of catalogue tool `name`'s server that `ctx`'s client uses, and the
    /// tool's name there; `None` when the tool's server is shared (or unknown: the call
    /// then fails as it would).
    pub(crate) async fn for_tool(
        &self,
        runtime: &Runtime,
        name: &str,
        ctx: &Context,
    ) -> Result<Option<(Lease, String)>, HandlerError> {
        if !self.any.load(Ordering::Acquire) {
            return Ok(None);
        }
        let catalogue = runtime.catalogue();
        let Ok(entry) = catalogue.resolve(name) else {
            return Ok(None);
        };
        let Ok(server) = runtime.server(&entry.server) else {
            return Ok(None);
        };
        let tool = entry.tool.name.clone();
        Ok(self
            .lease(runtime, &server, ctx)
            .await?
            .map(|lease| (lease, tool)))
    }

    /// The instance of `server` that `ctx`'s client uses; `None` when `server` is shared.
    pub(crate) async fn lease(
        &self,
        runtime: &Runtime,
        server: &ServerHandle,
        ctx: &Context,
    ) -> Result<Option<Lease>, HandlerError> {
        if !self.any.load(Ordering::Acquire) {
            return Ok(None);
        }
        let policy = server.isolation();
        let name = server.name();
        let whose = match policy.isolation {
            Isolation::Client => match ctx.principal() {
                Some(principal) => Whose::Client(principal.subject.clone()),
                None => {
                    return Err(refused(format!(
                        "server `{name}` gives each client an instance of its own \
                         (isolation: client), and this request comes from no authenticated \
                         client: serve it with --auth"
                    )))
                }
            },
            Isolation::Session => match ctx.session_key() {
                Some(key) => Whose::Session(key),
                None => {
                    return Err(refused(format!(
                        "server `{name}` gives each session an instance of its own \
                         (isolation: session), and a 2026-07-28 request has no session: \
                         connect with a session (protocol 2025-11-25 or earlier)"
                    )))
                }
            },
            _ => return Ok(None),
        };
        let values = if server.per_client() {
            Some(self.values_for(server, ctx)?)
        } else {
            None
        };
        let used = match &values {
            Some((values, subject)) => server.client_values_used(values).map_err(|e| {
                refused(format!(
                    "server `{name}` is started with each client's own values, and cannot be \
                     for client `{subject}`: {e}"
                ))
            })?,
            None => Vec::new(),
        };
        let key = Key {
            server: name.to_owned(),
            whose,
        };
        let slot = {
            let mut slots = self.lock();
            let revoked = |slot: &Slot| {
                slot.runtime.get().is_some()
                    && values
                        .as_ref()
                        .zip(self.per_user.get())
                        .is_some_and(|((_, subject), per_user)| per_user.revoked(name, subject))
            };
            if let Some(stale) = slots
                .get(&key)
                .filter(|slot| slot.used != used || revoked(slot))
                .cloned()
            {
                // The client's values changed (a secret in the credentials file), or its
                // authorization was revoked: a new instance from now on, the old one
                // stopped once its calls are done.
                slots.remove(&key);
                tracing::info!(server = %name, "the client's values or authorization changed: a new instance");
                self.retired
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((key.server.clone(), stale));
            }
            let slot = match slots.get(&key) {
                Some(slot) => slot.clone(),
                None => {
                    let running = slots.keys().filter(|k| k.server == key.server).count();
                    if running >= policy.max_instances {
                        return Err(refused(format!(
                            "too many instances of server `{name}` ({running}, its \
                             maxInstances): try again once one is idle"
                        )));
                    }
                    let slot = Arc::new(Slot {
                        runtime: OnceCell::new(),
                        start: Mutex::new(None),
                        in_flight: AtomicUsize::new(0),
                        last_used: Mutex::new(Instant::now()),
                        idle_timeout: policy.idle_timeout,
                        session: matches!(key.whose, Whose::Session(_)).then(|| ctx.clone()),
                        used,
                    });
                    slots.insert(key.clone(), slot.clone());
                    self.gauge(name, &slots);
                    slot
                }
            };
            // Held from here: the reaper leaves it alone.
            slot.in_flight.fetch_add(1, Ordering::AcqRel);
            slot
        };
        let lease = Lease {
            slot,
            server: name.to_owned(),
        };
        if lease.slot.runtime.get().is_some() {
            return Ok(Some(lease));
        }
        let start = lease.slot.start(|| {
            let (runtime, name) = (runtime.clone(), name.to_owned());
            let values = values.as_ref().map(|(values, _)| values.clone());
            async move { start_instance(runtime, name, values, policy.isolation).await }
        });
        // A per-user server's start may wait for its client's authorization: asked here.
        let prompts = match (&values, self.per_user.get()) {
            (Some((_, subject)), Some(per_user)) if per_user.serves(name) => {
                Some(per_user.prompts(name, subject))
            }
            _ => None,
        };
        let started = match prompts {
            // When asking fails (or waits for the client's next round), the start goes on.
            Some(prompts) => crate::per_user::start_through(start, prompts, name, ctx).await?,
            None => start.await,
        };
        match started {
            Ok(instance) => {
                let _ = lease.slot.runtime.set(instance);
                Ok(Some(lease))
            }
            Err(e) => {
                // Not kept: the next request tries again.
                let mut slots = self.lock();
                if slots
                    .get(&key)
                    .is_some_and(|slot| Arc::ptr_eq(slot, &lease.slot))
                {
                    slots.remove(&key);
                    self.gauge(name, &slots);
                }
                Err(e)
            }
        }
    }

    /// The values `ctx`'s client starts `server`'s instance with, and the client's subject.
    fn values_for(
        &self,
        server: &ServerHandle,
        ctx: &Context,
    ) -> Result<(ClientValues, String), HandlerError> {
        let Some(principal) = ctx.principal() else {
            return Err(refused(format!(
                "server `{}` is started with each client's own values (`${{client.…}}`), and \
                 this request comes from no authenticated client: serve it with --auth",
                server.name()
            )));
        };
        if let Some(exchange) = server.token_exchange() {
            let Some(token) = &principal.token else {
                return Err(refused(format!(
                    "server `{}` exchanges each client's token for its own, and client `{}` \
                     presented a key, not a token an authorization server can exchange",
                    server.name(),
                    principal.subject
                )));
            };
            exchange.present(&principal.subject, token.expose());
        }
        let credentials = self.credentials.load();
        let secrets = credentials
            .of(&principal.subject)
            .cloned()
            .unwrap_or_default();
        let values = ClientValues::new(principal.name.clone())
            .with_principal(principal.subject.clone())
            .with_claims(principal.claims.clone())
            .with_secrets(secrets);
        Ok((values, principal.subject.clone()))
    }

    /// Stops the retired instances that are done with their calls.
    async fn stop_retired(&self) {
        let done: Vec<(String, Arc<Slot>)> = {
            let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
            let (done, busy) = std::mem::take(&mut *retired)
                .into_iter()
                .partition(|(_, slot)| {
                    slot.in_flight.load(Ordering::Acquire) == 0 && !slot.starting()
                });
            *retired = busy;
            done
        };
        for (server, slot) in done {
            tracing::info!(server = %server, "replaced instance stopped");
            slot.stop().await;
        }
    }

    /// Stops the instances that are idle (or whose session ended), until `instances` is
    /// gone.
    pub(crate) async fn reap(instances: std::sync::Weak<Instances>) {
        loop {
            tokio::time::sleep(REAP_EVERY).await;
            let Some(instances) = instances.upgrade() else {
                return;
            };
            instances.stop_retired().await;
            let now = Instant::now();
            let stopped: Vec<(String, Arc<Slot>)> = {
                let mut slots = instances.lock();
                let idle: Vec<Key> = slots
                    .iter()
                    .filter(|(_, slot)| slot.idle(now))
                    .map(|(key, _)| key.clone())
                    .collect();
                let stopped: Vec<_> = idle
                    .into_iter()
                    .filter_map(|key| {
                        let slot = slots.remove(&key)?;
                        Some((key.server, slot))
                    })
                    .collect();
                for (server, _) in &stopped {
                    instances.gauge(server, &slots);
                }
                stopped
            };
            for (server, slot) in stopped {
                tracing::info!(server = %server, "idle instance stopped");
                slot.stop().await;
            }
        }
    }

    /// Stops every instance.
    pub(crate) async fn shutdown(&self) {
        let retired =
            std::mem::take(&mut *self.retired.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, slot) in retired {
            slot.stop().await;
        }
        let slots: Vec<_> = self.lock().drain().collect();
        for (key, slot) in slots {
            slot.stop().await;
            crate::metrics::instances(&self.runtime, &key.server, 0);
        }
    }
}

/// Starts an instance of server `name` of `runtime` (with `values`, for a server that takes
/// per-client values): ready, or why not.
async fn start_instance(
    runtime: Runtime,
    name: String,
    values: Option<ClientValues>,
    isolation: Isolation,
) -> Result<Runtime, HandlerError> {
    let name = name.as_str();
    let instance = match &values {
        Some(values) => runtime.start_instance_as(name, values).await,
        None => runtime.start_instance(name).await,
    }
    .map_err(|e| crate::error::to_front(&e, name))?;
    let status = instance
        .server(name)
        .map_err(|e| crate::error::to_front(&e, name))?
        .status();
    if status.is_ready() {
        tracing::info!(server = %name, isolation = %isolation, "instance started");
        Ok(instance)
    } else {
        instance.shutdown().await;
        Err(refused(format!(
            "an instance of server `{name}` did not start: {}",
            why_not_ready(&status.state)
        )))
    }
}

/// Why an instance that finished starting is not ready.
fn why_not_ready(state: &ServerState) -> String {
    match state {
        ServerState::Failed { error } => error.to_string(),
        ServerState::Restarting { last_error, .. } => last_error.to_string(),
        ServerState::Down { reason } => reason.to_string(),
        other => format!("{other:?}"),
    }
}
