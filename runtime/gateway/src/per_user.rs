//! Per-user OAuth: an HTTP upstream whose config says `"auth": {"perUser": "oauth"}` is
//! reached by each client with that client's own authorization, obtained through the client.
//!
//! Each client's instance has an OAuth client of its own (discovery, registration, PKCE, as
//! the runtime's client always does). When it needs a person's approval, the request that
//! started it asks the front client to open the authorization URL, with URL-mode elicitation
//! (2025-11-25; in 2026-07-28 an input-required round), and waits; the authorization server
//! redirects the browser to the gateway's `/oauth/callback`, which hands the redirect back,
//! and the call goes on. A client that did not declare URL elicitation is told the URL in
//! the error's message, and the authorization waits ([`AUTHORIZE_WITHIN`]) for it to be
//! opened. The runtime's own instance, which lists the tools, uses the server's `"oauth"`
//! object as the gateway's own identity.
//!
//! Tokens are kept per principal in a folder (`serve --oauth-dir`), each file sealed with
//! AES-256-GCM under a key derived from the first session key (any of them opens): replicas
//! that share the folder and the session keys share the tokens. A callback that reaches a
//! replica other than the one waiting is handed over through the same folder (sealed, removed
//! once read, forgotten after [`AUTHORIZE_WITHIN`]). `switchboard auth revoke --client NAME
//! SERVER` removes a client's tokens; that client's running instance is then replaced on its
//! next request, which asks for a new authorization. No token, code or verifier is logged.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::json;
use switchboard::client_values::{ClientAuth, ClientValueError, ClientValues};
use switchboard::oauth::{
    self, AuthorizationRequest, Authorizer, Credentials, GrantType, OAuth, StoreError, TokenStore,
};
use switchboard::transport::Auth;
use switchboard_server::http::Page;
use switchboard_server::{Context, ErrorObject, HandlerError};
use tokio::sync::{oneshot, watch};

/// How long an authorization may wait for its person.
pub const AUTHORIZE_WITHIN: Duration = Duration::from_secs(600);

/// How often a waiting authorization looks for a callback another replica received.
const HANDOVER_POLL: Duration = Duration::from_millis(250);

/// The most callbacks waiting in the folder to be handed over: past it, a callback that no
/// authorization here waits for is refused (a flood of made-up ones fills no disk).
const MAX_HANDOVERS: usize = 1024;

/// The path the authorization server redirects to.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// An authorization the person has to open: its URL and the elicitation that asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub(crate) url: String,
    pub(crate) id: String,
}

/// Where an instance's start says which authorization it waits for.
type Prompts = watch::Sender<Option<Prompt>>;

/// The gateway's per-user OAuth: the tokens' folder and seal, the callback, and the
/// authorizations waiting for their person.
pub struct PerUser {
    dir: PathBuf,
    seal: Seal,
    redirect_uri: String,
    /// By `state`: where the callback goes.
    waiting: Mutex<HashMap<String, oneshot::Sender<String>>>,
    /// By (server, principal): the authorization its instance waits for, if any.
    prompts: Mutex<HashMap<(String, String), Prompts>>,
    /// The per-user servers, with the key their credentials are stored under.
    servers: Mutex<HashMap<String, String>>,
}

impl fmt::Debug for PerUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerUser")
            .field("dir", &self.dir)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// Per-user OAuth cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerUserError {
    /// No session key to seal the tokens with.
    #[error("per-user OAuth seals each client's tokens with the session keys: give --session-keys (or SWITCHBOARD_SESSION_KEYS)")]
    NoKeys,
    /// The folder cannot be made.
    #[error("the per-user OAuth folder {dir}: {source}")]
    Folder {
        /// The folder.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
}

impl PerUser {
    /// Per-user OAuth keeping tokens in `dir` sealed with `secrets` (the first seals, all
    /// open), the authorization server redirecting to `redirect_uri` (the gateway's
    /// [`CALLBACK_PATH`] as its clients reach it).
    pub fn new<K: AsRef<[u8]>>(
        dir: impl Into<PathBuf>,
        secrets: &[K],
        redirect_uri: impl Into<String>,
    ) -> Result<Arc<PerUser>, PerUserError> {
        let dir = dir.into();
        let seal = Seal::new(secrets).ok_or(PerUserError::NoKeys)?;
        let folder = |source| PerUserError::Folder {
            dir: dir.display().to_string(),
            source,
        };
        for sub in ["tokens", "callbacks"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(folder)?;
        }
        // Sealed as the files are, they are still nobody else's business.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                .map_err(folder)?;
        }
        Ok(Arc::new(PerUser {
            dir,
            seal,
            redirect_uri: redirect_uri.into(),
            waiting: Mutex::default(),
            prompts: Mutex::default(),
            servers: Mutex::default(),
        }))
    }

    /// The hook that authorizes each client's instance of server `server` at `url`, with
    /// the server's `"oauth"` settings (the authorization code grant, whatever they say).
    pub fn hook(
        self: &Arc<Self>,
        server: &str,
        url: &str,
        settings: &oauth::Settings,
    ) -> Result<Arc<dyn ClientAuth>, oauth::Error> {
        let config = settings.config(server)?.grant(GrantType::AuthorizationCode);
        lock(&self.servers).insert(server.to_owned(), oauth::store_key(server, url)?);
        Ok(Arc::new(ServerHook {
            per_user: self.clone(),
            server: server.to_owned(),
            url: url.to_owned(),
            config,
        }))
    }

    /// The page the authorization server redirects to ([`CALLBACK_PATH`]).
    pub fn callback_page(self: &Arc<Self>) -> Page {
        let per_user = Arc::downgrade(self);
        Page::new(CALLBACK_PATH, move |query| {
            let per_user = per_user.upgrade();
            Box::pin(async move {
                match per_user {
                    Some(per_user) => per_user.callback(&query),
                    None => (503, "the gateway is stopping".to_owned()),
                }
            })
        })
    }

    /// Where `principal`'s credentials for store key `key` are kept.
    fn token_file(&self, principal: &str, key: &str) -> PathBuf {
        token_file(&self.dir, principal, key)
    }

    /// Whether `server` is a per-user server.
    pub(crate) fn serves(&self, server: &str) -> bool {
        lock(&self.servers).contains_key(server)
    }

    /// Whether `principal`'s tokens for per-user server `server` are gone from the folder
    /// (revoked): its running instance, authorized with them, is to be replaced.
    pub(crate) fn revoked(&self, server: &str, principal: &str) -> bool {
        let key = lock(&self.servers).get(server).cloned();
        key.is_some_and(|key| !self.token_file(principal, &key).exists())
    }

    /// The authorizations `principal`'s instance of `server` waits for.
    pub(crate) fn prompts(&self, server: &str, principal: &str) -> watch::Receiver<Option<Prompt>> {
        lock(&self.prompts)
            .entry((server.to_owned(), principal.to_owned()))
            .or_insert_with(|| watch::channel(None).0)
            .subscribe()
    }

    fn publish(&self, server: &str, principal: &str, prompt: Option<Prompt>) {
        let mut prompts = lock(&self.prompts);
        let sender = prompts
            .entry((server.to_owned(), principal.to_owned()))
            .or_insert_with(|| watch::channel(None).0);
        sender.send_replace(prompt);
    }

    /// Hands the redirect whose query is `query` to the authorization waiting for it: here,
    /// or (through the folder) on another replica.
    fn callback(&self, query: &str) -> (u16, String) {
        let state = url_query_param(query, "state");
        let Some(state) = state else {
            return (
                400,
                "no state: this is not an authorization's redirect".to_owned(),
            );
        };
        let redirect = format!("{}?{query}", self.redirect_uri);
        if let Some(waiting) = lock(&self.waiting).remove(&state) {
            let _ = waiting.send(redirect);
            return (200, DONE.to_owned());
        }
        match self.hand_over(&state, &redirect) {
            Ok(()) => (200, DONE.to_owned()),
            Err(why) => (503, why),
        }
    }

    /// Leaves `redirect` in the folder for the replica whose authorization has `state`.
    fn hand_over(&self, state: &str, redirect: &str) -> Result<(), String> {
        let callbacks = self.dir.join("callbacks");
        let entries: Vec<_> = std::fs::read_dir(&callbacks)
            .map_err(|e| format!("the callback cannot be handed over: {e}"))?
            .flatten()
            .collect();
        let now = SystemTime::now();
        let mut kept = 0;
        for entry in entries {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| now.duration_since(at).ok())
                .is_some_and(|age| age > AUTHORIZE_WITHIN);
            if stale {
                let _ = std::fs::remove_file(entry.path());
            } else {
                kept += 1;
            }
        }
        if kept >= MAX_HANDOVERS {
            return Err("too many authorizations waiting: try again later".to_owned());
        }
        let sealed = self.seal.seal(redirect.as_bytes(), state.as_bytes());
        write_atomically(&callbacks.join(digest_name(&[state])), &sealed)
            .map_err(|e| format!("the callback cannot be handed over: {e}"))
    }

    /// The redirect another replica received for `state`, taken from the folder.
    fn handed_over(&self, state: &str) -> Option<String> {
        let path = self.dir.join("callbacks").join(digest_name(&[state]));
        let sealed = std::fs::read(&path).ok()?;
        let _ = std::fs::remove_file(&path);
        let plain = self.seal.open(&sealed, state.as_bytes())?;
        String::from_utf8(plain).ok()
    }
}

/// What the person's browser is told once the redirect is handed over.
const DONE: &str = "Authorized: you can close this window and go back to your client.\n";

/// Removes the tokens `principal` has for `server` at `url` in `dir`: `true` if there were.
/// What `switchboard auth revoke --client` runs; a running gateway replaces that client's
/// instance on its next request.
pub fn revoke(dir: &Path, principal: &str, server: &str, url: &str) -> std::io::Result<bool> {
    let key = oauth::store_key(server, url).map_err(std::io::Error::other)?;
    match std::fs::remove_file(token_file(dir, principal, &key)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn token_file(dir: &Path, principal: &str, key: &str) -> PathBuf {
    dir.join("tokens").join(digest_name(&[principal, key]))
}

/// A file name that says nothing of what it names: the hex of a digest of `parts`.
fn digest_name(parts: &[&str]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        context.update(part.as_bytes());
        context.update(b"\n");
    }
    context
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The value of `name` in a URL query.
fn url_query_param(query: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Writes `bytes` to `path` whole: a reader sees the old file or the new one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}

fn io_error(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_owned(),
        source: Arc::new(e),
    }
}

fn corrupt(path: &Path, e: &serde_json::Error) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// AES-256-GCM under keys derived from the session secrets: the first seals, any opens.
struct Seal {
    keys: Vec<LessSafeKey>,
    random: SystemRandom,
}

impl Seal {
    fn new<K: AsRef<[u8]>>(secrets: &[K]) -> Option<Seal> {
        let keys: Vec<LessSafeKey> = secrets
            .iter()
            .filter_map(|secret| {
                let mut material = b"switchboard serve: per-user oauth\n".to_vec();
                material.extend_from_slice(secret.as_ref());
                let digest = ring::digest::digest(&ring::digest::SHA256, &material);
                UnboundKey::new(&AES_256_GCM, digest.as_ref())
                    .ok()
                    .map(LessSafeKey::new)
            })
            .collect();
        (!keys.is_empty()).then(|| Seal {
            keys,
            random: SystemRandom::new(),
        })
    }

    /// `nonce ‖ ciphertext ‖ tag`, bound to `aad`.
    fn seal(&self, plain: &[u8], aad: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        // A failing system random source leaves the zero nonce only if the OS has none.
        let _ = self.random.fill(&mut nonce);
        let mut sealed = plain.to_vec();
        if self.keys[0]
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut sealed,
            )
            .is_err()
        {
            return Vec::new();
        }
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    fn open(&self, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        self.keys.iter().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut body = body.to_vec();
            let plain = key.open_in_place(nonce, Aad::from(aad), &mut body).ok()?;
            Some(plain.to_vec())
        })
    }
}

/// One per-user server's hook: an OAuth client per client's instance.
#[derive(Debug)]
struct ServerHook {
    per_user: Arc<PerUser>,
    server: String,
    url: String,
    config: oauth::Config,
}

impl ClientAuth for ServerHook {
    fn for_client(&self, values: &ClientValues) -> Result<Arc<dyn Auth>, ClientValueError> {
        let principal = values.principal().ok_or(ClientValueError::NoPrincipal)?;
        let config = self
            .config
            .clone()
            .store(Arc::new(Sealed {
                per_user: self.per_user.clone(),
                principal: principal.to_owned(),
                stored: AtomicBool::new(false),
            }))
            .authorizer(Arc::new(ThroughClient {
                per_user: self.per_user.clone(),
                server: self.server.clone(),
                principal: principal.to_owned(),
            }));
        OAuth::new(&self.server, &self.url, config)
            .map(|client| Arc::new(client) as Arc<dyn Auth>)
            .map_err(|e| ClientValueError::Auth(e.to_string()))
    }
}

/// One principal's credentials in the folder, sealed.
struct Sealed {
    per_user: Arc<PerUser>,
    principal: String,
    /// Whether its file was there when last read or written: a file gone since was revoked,
    /// and a refresh must not write it back.
    stored: AtomicBool,
}

impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealed")
            .field("principal", &self.principal)
            .finish()
    }
}

impl TokenStore for Sealed {
    fn load(&self, key: &str) -> Result<Option<Credentials>, StoreError> {
        let path = self.per_user.token_file(&self.principal, key);
        let sealed = match std::fs::read(&path) {
            Ok(sealed) => sealed,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, e)),
        };
        self.stored.store(true, Ordering::Release);
        let aad = format!("{}\n{key}", self.principal);
        let Some(plain) = self.per_user.seal.open(&sealed, aad.as_bytes()) else {
            // Sealed with keys no longer given: as good as none; a new authorization
            // replaces it.
            tracing::warn!(principal = %self.principal, "stored per-user tokens do not open with the session keys: authorizing again");
            return Ok(None);
        };
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|e| corrupt(&path, &e))
    }

    fn save(&self, key: &str, credentials: &Credentials) -> Result<(), StoreError> {
        let path = self.per_user.token_file(&self.principal, key);
        if self.stored.load(Ordering::Acquire) && !path.exists() {
            return Err(StoreError::Other(format!(
                "{}'s authorization was revoked: not stored again",
                self.principal
            )));
        }
        let plain = serde_json::to_vec(credentials).map_err(|e| corrupt(&path, &e))?;
        let aad = format!("{}\n{key}", self.principal);
        let sealed = self.per_user.seal.seal(&plain, aad.as_bytes());
        write_atomically(&path, &sealed).map_err(|e| io_error(&path, e))?;
        self.stored.store(true, Ordering::Release);
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        let path = self.per_user.token_file(&self.principal, key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        // The names are digests: what they stand for is not kept.
        Ok(Vec::new())
    }
}

/// Has the authorization approved by the person behind the client whose request waits.
#[derive(Debug)]
struct ThroughClient {
    per_user: Arc<PerUser>,
    server: String,
    principal: String,
}

impl Authorizer for ThroughClient {
    fn redirect_uri(&self) -> String {
        self.per_user.redirect_uri.clone()
    }

    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>> {
        let per_user = self.per_user.clone();
        let (server, principal) = (self.server.clone(), self.principal.clone());
        Box::pin(async move {
            let (tx, mut rx) = oneshot::channel();
            lock(&per_user.waiting).insert(request.state.clone(), tx);
            let mut id = [0u8; 12];
            let _ = per_user.seal.random.fill(&mut id);
            let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            per_user.publish(
                &server,
                &principal,
                Some(Prompt {
                    url: request.url.to_string(),
                    id,
                }),
            );
            tracing::info!(server = %server, principal = %principal, "waiting for the client's authorization");
            let deadline = tokio::time::Instant::now() + AUTHORIZE_WITHIN;
            let outcome = loop {
                tokio::select! {
                    redirect = &mut rx => break redirect.map_err(|_| "the gateway is stopping".to_owned()),
                    () = tokio::time::sleep(HANDOVER_POLL) => {
                        if let Some(redirect) = per_user.handed_over(&request.state) {
                            break Ok(redirect);
                        }
                        if tokio::time::Instant::now() >= deadline {
                            break Err(format!(
                                "no authorization within {} s",
                                AUTHORIZE_WITHIN.as_secs()
                            ));
                        }
                    }
                }
            };
            lock(&per_user.waiting).remove(&request.state);
            per_user.publish(&server, &principal, None);
            outcome
        })
    }
}

/// Waits for `start` (an instance's start), asking the client of `ctx` to open each
/// authorization its instance of `server` waits for meanwhile: the start's outcome, or
/// (outside) why the client could not be asked, or that it is asked in its next round
/// (2026-07-28). Once started, the client is told each elicitation it was asked is complete.
pub(crate) async fn start_through<T>(
    start: impl std::future::Future<Output = Result<T, HandlerError>>,
    mut prompts: watch::Receiver<Option<Prompt>>,
    server: &str,
    ctx: &Context,
) -> Result<Result<T, HandlerError>, HandlerError> {
    tokio::pin!(start);
    let mut asked: Vec<String> = Vec::new();
    loop {
        let prompt = prompts.borrow_and_update().clone();
        if let Some(prompt) = prompt {
            if !asked.contains(&prompt.id) {
                ask(ctx, server, &prompt).await?;
                asked.push(prompt.id);
            }
        }
        tokio::select! {
            started = &mut start => {
                if started.is_ok() && ctx.session_key().is_some() {
                    for id in asked {
                        ctx.notify("notifications/elicitation/complete", json!({"elicitationId": id})).await;
                    }
                }
                return Ok(started);
            }
            changed = prompts.changed() => {
                if changed.is_err() {
                    // No one publishes any more: only the start's outcome is left.
                    return Ok(start.await);
                }
            }
        }
    }
}

/// Asks the client to open `prompt`'s URL: an error naming the URL when it cannot be asked,
/// or when the person declines.
async fn ask(ctx: &Context, server: &str, prompt: &Prompt) -> Result<(), HandlerError> {
    let refused =
        |message: String| HandlerError::Rpc(ErrorObject::new(ErrorObject::INTERNAL_ERROR, message));
    let url_mode = ctx
        .client_capabilities()
        .get("elicitation")
        .and_then(|e| e.get("url"))
        .is_some();
    if !url_mode {
        return Err(refused(format!(
            "server `{server}` needs your authorization: open {} in a browser, then call again \
             (this client did not declare URL elicitation, which would have asked)",
            prompt.url
        )));
    }
    let params = json!({
        "mode": "url",
        "message": format!("Server `{server}` needs your authorization to act as you."),
        "url": prompt.url,
        "elicitationId": prompt.id,
    });
    let answer = ctx
        .input(&format!("authorize {server}"), "elicitation/create", params)
        .await?;
    match answer.get("action").and_then(|a| a.as_str()) {
        Some("accept") => Ok(()),
        other => Err(refused(format!(
            "server `{server}` needs your authorization, and it was not given ({}): open {} to \
             give it",
            other.unwrap_or("no answer"),
            prompt.url
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_opens_with_any_key_and_only_for_its_aad() {
        let old = Seal::new(&["o".repeat(32)]).unwrap();
        let both = Seal::new(&["n".repeat(32), "o".repeat(32)]).unwrap();
        let sealed = old.seal(b"tokens", b"alice");
        assert_eq!(
            both.open(&sealed, b"alice").as_deref(),
            Some(&b"tokens"[..])
        );
        assert_eq!(both.open(&sealed, b"bob"), None);
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(both.open(&tampered, b"alice"), None);
        assert!(Seal::new::<&str>(&[]).is_none());
        assert!(!String::from_utf8_lossy(&sealed).contains("tokens"));
    }

    #[test]
    fn a_callback_goes_to_its_waiter_or_across_the_folder() {
        let dir = std::env::temp_dir().join(format!("switchboard-per-user-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let keys = ["k".repeat(32)];
        let here = PerUser::new(&dir, &keys, "https://gw.example.com/oauth/callback").unwrap();
        let there = PerUser::new(&dir, &keys, "https://gw.example.com/oauth/callback").unwrap();
        let (tx, rx) = oneshot::channel();
        lock(&here.waiting).insert("s1".into(), tx);
        assert_eq!(here.callback("code=c1&state=s1").0, 200);
        assert_eq!(
            rx.blocking_recv().unwrap(),
            "https://gw.example.com/oauth/callback?code=c1&state=s1"
        );
        // Another replica's callback: left in the folder, taken once.
        assert_eq!(there.callback("code=c2&state=s2").0, 200);
        assert_eq!(
            here.handed_over("s2").as_deref(),
            Some("https://gw.example.com/oauth/callback?code=c2&state=s2")
        );
        assert_eq!(here.handed_over("s2"), None);
        assert_eq!(here.callback("code=c3").0, 400);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
