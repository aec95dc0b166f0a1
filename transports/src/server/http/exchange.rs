//! One HTTP request to the MCP endpoint, from its headers to its response: the checks, the
//! session it belongs to, the message handed to the service, and the answer as JSON or as
//! an event stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER,
    WWW_AUTHENTICATE,
};
use hyper::{Method, Request as HttpRequest, Response, StatusCode};
use serde_json::Value;
use switchboard_codecs::jsonrpc::{ErrorObject, Id, Message};
use tokio::sync::mpsc;

use super::super::stdio::error_frame;
use super::super::{Inbound, Notifier, Outgoing, Responder, Service};
use super::auth::{self, AuthRefusal, Principal};
use super::body::{Holds, ResponseBody};
use super::clients::{self, now_us, Client, ClientKey, Clients, Quota};
use super::config::{ClientLimits, Rejection};
use super::connections::{Conn, Connections, Holding};
use super::guard::{self, Refusal, SESSION_ID};
use super::sessions::{new_id, Busy, Entry, Inserted, Sessions};
use super::{Config, Counters};

/// What every connection's tasks share.
pub(crate) struct Shared<S: Service> {
    pub(crate) service: Arc<S>,
    pub(crate) config: Config,
    pub(crate) sessions: Sessions<S>,
    pub(crate) counters: Counters,
    pub(crate) connections: Arc<Connections>,
    pub(crate) clients: Clients,
    /// What one client may hold and ask.
    limits: ClientLimits,
}

/// A count held while something is open, released by drop.
pub(crate) struct Count(Arc<AtomicUsize>);

impl Count {
    pub(crate) fn new(counter: &Arc<AtomicUsize>) -> Count {
        counter.fetch_add(1, Ordering::Relaxed);
        Count(counter.clone())
    }
}

impl Drop for Count {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Closes a stateless request's session when the request's stream is done with it.
struct CloseOnDrop<S: Service> {
    service: Arc<S>,
    session: Arc<S::Session>,
}

impl<S: Service> Drop for CloseOnDrop<S> {
    fn drop(&mut self) {
        self.service.close(&self.session);
    }
}

/// What a request holds until its answer is delivered or abandoned: its counts (the
/// server's, its client's, a listen stream's place in its client's streams), and for a
/// stateless request the close of its session. Each releases by drop.
struct Guards {
    _in_flight: Count,
    _body: Holding,
    _client: clients::Held,
    _stream: Option<clients::Held>,
    /// The session's count (and a stateless session's close), typed by the service.
    _session: Box<dyn std::any::Any + Send + Sync>,
}

type HttpResponse = Response<ResponseBody>;

fn response(status: u16, body: ResponseBody) -> HttpResponse {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    response
}

fn json(status: u16, frame: Bytes) -> HttpResponse {
    let mut response = response(status, ResponseBody::full(frame));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn refused(refusal: Refusal, id: Option<&Id>) -> HttpResponse {
    json(
        refusal.status,
        error_frame(id, refusal.code, &refusal.message),
    )
}

fn error(status: u16, code: i64, message: &str, id: Option<&Id>) -> HttpResponse {
    json(status, error_frame(id, code, message))
}

/// A refusal the client may try again after `after` (rounded up to whole seconds).
fn retry_after(mut response: HttpResponse, after: std::time::Duration) -> HttpResponse {
    let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// 429 or 503 for a bound the client may meet again shortly.
fn busy(status: u16, message: &str, id: Option<&Id>) -> HttpResponse {
    retry_after(
        error(status, -32000, message, id),
        std::time::Duration::from_secs(1),
    )
}

fn event_stream(body: ResponseBody) -> HttpResponse {
    let mut response = response(200, body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The status of a stateless answer with this error code (the spec's mapping).
fn stateless_status(code: Option<i64>) -> u16 {
    match code {
        None => 200,
        Some(ErrorObject::METHOD_NOT_FOUND) => 404,
        Some(
            ErrorObject::INVALID_PARAMS
            | ErrorObject::INVALID_REQUEST
            | ErrorObject::PARSE_ERROR
            | -32020
            | -32021
            | -32022,
        ) => 400,
        Some(_) => 200,
    }
}

/// What a request's `Mcp-Session-Id` names.
enum Lookup<S: Service> {
    /// No header.
    Unnamed,
    /// An open session, with the header that named it (the answer's own, as it came).
    Found(HeaderValue, Arc<Entry<S>>),
    /// No session of ours (ended, or never opened): 404, so that the client starts anew.
    Unknown,
    /// A session another principal opened: 403.
    Foreign,
    /// A sealed session this replica has no room to restore now: 429 or 503, to try again.
    Full(Rejection),
}

fn foreign_session() -> HttpResponse {
    error(403, -32000, "the session belongs to another client", None)
}

fn session_not_found() -> HttpResponse {
    error(404, -32001, "session not found", None)
}

/// The answer to a request refused for `rejection`, a bound the client may meet again.
fn refused_for(rejection: Rejection, limits: &ClientLimits, config: &Config) -> HttpResponse {
    let (status, message) = match rejection {
        Rejection::Sessions => (503, format!("too many sessions ({})", config.max_sessions)),
        Rejection::ClientSessions => (
            429,
            format!(
                "too many sessions for this client ({}), none idle enough to end",
                limits.sessions
            ),
        ),
        Rejection::ClientStreams => (
            429,
            format!("too many streams open for this client ({})", limits.streams),
        ),
        Rejection::ClientInFlight => (
            429,
            format!(
                "too many requests in flight for this client ({})",
                limits.in_flight
            ),
        ),
        Rejection::SessionInFlight => (
            429,
            format!(
                "too many requests in flight in this session ({})",
                config.max_in_flight_per_session
            ),
        ),
        Rejection::BodyBudget => (
            503,
            format!(
                "too many bytes held for clients (the budget is {} bytes)",
                config.answer_budget
            ),
        ),
        _ => (
            503,
            format!("too many requests in flight ({})", config.max_in_flight),
        ),
    };
    busy(status, &message, None)
}

/// Where a POST's message goes.
enum Route<S: Service> {
    Session(HeaderValue, Arc<Entry<S>>),
    /// A new session: `initialize` without a session id.
    Opening,
    Stateless,
}

impl<S: Service> Shared<S> {
    /// The 403 for a session another principal opened, counted as a rejection.
    fn foreign_session(&self) -> HttpResponse {
        if let Some(hook) = &self.config.rejections {
            (hook.0)(Rejection::Forbidden);
        }
        foreign_session()
    }

    pub(crate) fn new(service: Arc<S>, config: Config) -> Self {
        Shared {
            service,
            // A sealed session ended to make room is restored from its id when next used:
            // ending it loses nothing, so no grace period spares it.
            sessions: Sessions::new(
                config.max_sessions,
                match config.sealing {
                    Some(_) => std::time::Duration::ZERO,
                    None => config.session_grace,
                },
            ),
            connections: Connections::new(&config),
            clients: Clients::new(),
            limits: config.client_limits(),
            config,
            counters: Counters::default(),
        }
    }

    /// The answer on the lane past the connection cap: a probe's, or 503.
    pub(crate) fn shed(&self, request: &HttpRequest<Incoming>) -> HttpResponse {
        if let Some(answer) = self.probe(request) {
            return answer;
        }
        busy(503, "too many connections", None)
    }

    /// Who a request on `conn` comes from: its principal, else the address a trusted
    /// proxy forwarded it for, else the connection's address. The connection keeps the
    /// last one it looked up: no lookup while they stay the same.
    fn client_of(
        &self,
        conn: &Arc<Conn>,
        principal: Option<&Arc<Principal>>,
        headers: &hyper::HeaderMap,
    ) -> Arc<Client> {
        /// Who a request says it comes from, before it is looked up.
        enum Who<'a> {
            Principal(&'a str),
            Address(ClientKey),
        }
        let who = match principal {
            Some(principal) => Who::Principal(principal.subject.as_str()),
            None if self.config.trusted_proxies.contains(&conn.addr) => {
                let forwarded = clients::forwarded_for(
                    headers
                        .get_all(guard::FORWARDED_FOR)
                        .iter()
                        .map(|v| v.as_bytes()),
                    &self.config.trusted_proxies,
                );
                match forwarded {
                    Some(ip) => Who::Address(ClientKey::address(ip)),
                    None => return conn.peer.clone(),
                }
            }
            None => return conn.peer.clone(),
        };
        let mut last = conn
            .last_client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let same = |client: &Client| match (&who, &client.key) {
            (Who::Principal(subject), ClientKey::Principal(held)) => **held == **subject,
            (Who::Address(address), held) => address == held,
            _ => false,
        };
        if let Some(client) = last.as_ref().filter(|c| same(c)) {
            return client.clone();
        }
        let key = match who {
            Who::Principal(subject) => ClientKey::Principal(subject.into()),
            Who::Address(key) => key,
        };
        if key == conn.peer.key {
            return conn.peer.clone();
        }
        let client = self.clients.get(key);
        *last = Some(client.clone());
        client
    }

    /// Admits one request of `client` under its rate; the 429 otherwise.
    fn rate(&self, client: &Client) -> Result<(), Box<HttpResponse>> {
        client.admit(&self.limits, now_us()).map_err(|wait| {
            client.reject(Rejection::Rate, self.config.rejections.as_ref());
            let message = format!(
                "rate limit: more than {} requests a second from this client",
                self.limits.rate.unwrap_or_default()
            );
            Box::new(retry_after(error(429, -32000, &message, None), wait))
        })
    }

    pub(crate) async fn handle(
        self: &Arc<Self>,
        request: HttpRequest<Incoming>,
        conn: &Arc<Conn>,
    ) -> HttpResponse {
        if request.uri().path() != self.config.path {
            if let Some(answer) = self.probe(&request) {
                return answer;
            }
            if let Some(answer) = self.metadata(&request) {
                return answer;
            }
            if let Some(page) = self
                .config
                .pages
                .iter()
                .find(|p| p.path == request.uri().path() && request.method() == Method::GET)
            {
                if let Err(refusal) = guard::origin_and_host(request.headers(), &self.config) {
                    return refused(refusal, None);
                }
                if let Err(limited) = self.rate(&conn.peer) {
                    return *limited;
                }
                let query = request.uri().query().unwrap_or_default().to_owned();
                let (status, text) = (page.answer)(query).await;
                let mut answer = response(status, ResponseBody::full(Bytes::from(text)));
                answer.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                return answer;
            }
            return error(404, -32000, "not found", None);
        }
        if let Err(refusal) = guard::origin_and_host(request.headers(), &self.config) {
            return refused(refusal, None);
        }
        let principal = match self.authenticate(&request).await {
            Ok(principal) => principal,
            Err(refusal) => {
                // Refused requests count against their address's rate: a flood of bad
                // tokens is limited like any other.
                if let Err(limited) = self.rate(&conn.peer) {
                    return *limited;
                }
                return refusal;
            }
        };
        let principal = principal.as_ref();
        let client = self.client_of(conn, principal, request.headers());
        if let Err(limited) = self.rate(&client) {
            return *limited;
        }
        match *request.method() {
            Method::POST => self.post(request, principal, &client, conn).await,
            Method::GET => self.get(request, principal, &client, conn),
            Method::DELETE => self.delete(request, principal, &client),
            _ => {
                let mut response = error(405, -32000, "method not allowed", None);
                response
                    .headers_mut()
                    .insert("allow", HeaderValue::from_static("GET, POST, DELETE"));
                response
            }
        }
    }

    /// Who sent `request`, with inbound authentication (`None` without it); the `401` or
    /// `403` to answer when it is nobody let in.
    async fn authenticate(
        &self,
        request: &HttpRequest<Incoming>,
    ) -> Result<Option<Arc<Principal>>, HttpResponse> {
        let Some(auth) = &self.config.auth else {
            return Ok(None);
        };
        let token = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(auth::bearer);
        match auth.authenticator.authenticate(token).await {
            Ok(principal) => Ok(Some(principal)),
            Err(refusal) => {
                if let Some(hook) = &self.config.rejections {
                    (hook.0)(match refusal {
                        AuthRefusal::InsufficientScope(_) => Rejection::Forbidden,
                        _ => Rejection::Unauthenticated,
                    });
                }
                let (status, message) = match &refusal {
                    AuthRefusal::Missing => (401, "authentication required".to_owned()),
                    AuthRefusal::Invalid(why) => {
                        tracing::debug!("a token was refused: {why}");
                        (401, "invalid token".to_owned())
                    }
                    AuthRefusal::InsufficientScope(scope) => {
                        (403, format!("insufficient scope: needs {scope}"))
                    }
                };
                let mut response = error(status, -32000, &message, None);
                if let Ok(value) = HeaderValue::from_str(&auth.challenge(&refusal)) {
                    response.headers_mut().insert(WWW_AUTHENTICATE, value);
                }
                Err(response)
            }
        }
    }

    /// The protected-resource metadata (RFC 9728), when `request` asks for it.
    fn metadata(&self, request: &HttpRequest<Incoming>) -> Option<HttpResponse> {
        let auth = self.config.auth.as_ref()?;
        if request.method() != Method::GET
            || !auth.serves_metadata(request.uri().path(), &self.config.path)
        {
            return None;
        }
        let frame = serde_json::to_vec(&*auth.metadata).ok()?;
        Some(json(200, Bytes::from(frame)))
    }

    /// The answer of a health probe, when `request` is one.
    fn probe(&self, request: &HttpRequest<Incoming>) -> Option<HttpResponse> {
        if request.method() != Method::GET {
            return None;
        }
        let (status, word) = self.config.probes.as_ref()?.answer(request.uri().path())?;
        let mut answer = response(
            status,
            ResponseBody::full(Bytes::from_static(word.as_bytes())),
        );
        answer
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        Some(answer)
    }

    /// The session a request names with `Mcp-Session-Id`, if `principal` may use it.
    fn session_of(
        &self,
        request: &HttpRequest<Incoming>,
        principal: Option<&Arc<Principal>>,
        client: &Arc<Client>,
    ) -> Lookup<S> {
        let Some(header) = request.headers().get(SESSION_ID) else {
            return Lookup::Unnamed;
        };
        let id = header.to_str().unwrap_or("");
        let entry = match self.sessions.get(id) {
            Some(entry) => entry,
            None => match self.restore(id, client) {
                Ok(Some(entry)) => entry,
                Ok(None) => return Lookup::Unknown,
                Err(rejection) => return Lookup::Full(rejection),
            },
        };
        if entry.admits(principal.map(|p| &**p)) {
            Lookup::Found(header.clone(), entry)
        } else {
            Lookup::Foreign
        }
    }

    async fn post(
        self: &Arc<Self>,
        request: HttpRequest<Incoming>,
        principal: Option<&Arc<Principal>>,
        client: &Arc<Client>,
        conn: &Arc<Conn>,
    ) -> HttpResponse {
        if let Err(refusal) = guard::post(request.headers()) {
            return refused(refusal, None);
        }
        let too_large = || {
            client.reject(Rejection::BodyTooLarge, self.config.rejections.as_ref());
            error(
                413,
                ErrorObject::INVALID_REQUEST,
                &format!(
                    "request body too large (over {} bytes)",
                    self.config.max_body
                ),
                None,
            )
        };
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.config.max_body as u64) {
            return too_large();
        }
        // What clients make the server hold is bounded in all: a body is read only when it
        // fits in the budget, and counts against it while its request is served.
        if declared.is_some_and(|n| !conn.fits(n as usize)) {
            return self.refuse(Rejection::BodyBudget, client);
        }
        let session = match self.session_of(&request, principal, client) {
            Lookup::Found(id, entry) => Some((id, entry)),
            Lookup::Unnamed => None,
            Lookup::Unknown => return session_not_found(),
            Lookup::Foreign => return self.foreign_session(),
            Lookup::Full(rejection) => return self.refuse(rejection, client),
        };
        let (parts, body) = request.into_parts();
        let reading = conn.reading_body();
        let collected = http_body_util::Limited::new(body, self.config.max_body)
            .collect()
            .await;
        drop(reading);
        let bytes = match collected {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
            Err(e) => return error(400, -32000, &format!("cannot read the body: {e}"), None),
        };
        // A chunked body says its length only once read.
        let body_len = bytes.len();
        if declared.is_none() && !conn.fits(body_len) {
            return self.refuse(Rejection::BodyBudget, client);
        }
        if bytes.trim_ascii_start().first() == Some(&b'[') {
            return error(
                400,
                ErrorObject::INVALID_REQUEST,
                "batches are not supported: send one message per POST",
                None,
            );
        }
        let request = match Message::from_slice(&bytes) {
            Ok(Message::Request(request)) => request,
            Ok(other) => {
                // A notification or a client's answer: accepted, nothing to say back.
                let inbound = match other {
                    Message::Notification(n) => Inbound::Notification(n),
                    Message::Response(r) => Inbound::Response(r),
                    Message::Request(_) => unreachable!("matched above"),
                };
                if let Some((_, entry)) = session {
                    self.service.receive(&entry.session, inbound);
                }
                return response(202, ResponseBody::empty());
            }
            Err(e) => {
                let code = match e {
                    switchboard_codecs::jsonrpc::ParseError::NotJson(_) => ErrorObject::PARSE_ERROR,
                    _ => ErrorObject::INVALID_REQUEST,
                };
                return error(400, code, &e.to_string(), None);
            }
        };
        let headers = &parts.headers;
        let route = match session {
            Some((id, entry)) => {
                if let Some(version) = headers.get(guard::PROTOCOL_VERSION) {
                    let version = version.to_str().unwrap_or("");
                    if !guard::LEGACY_VERSIONS.contains(&version) {
                        return error(
                            400,
                            -32000,
                            &format!("unsupported MCP-Protocol-Version {version:?}"),
                            Some(&request.id),
                        );
                    }
                }
                Route::Session(id, entry)
            }
            // Only a request outside a session needs its params read here (the service
            // reads them again): which era it is, and its headers' checks.
            None => match self.sessionless_route(headers, &request) {
                Ok(route) => route,
                Err(refused) => return *refused,
            },
        };
        if self.counters.in_flight.load(Ordering::Relaxed) >= self.config.max_in_flight {
            return self.refuse(Rejection::InFlight, client);
        }
        let id = request.id.clone();
        let Some(client_in_flight) = client.take(Quota::InFlight, self.limits.in_flight) else {
            return self.refuse(Rejection::ClientInFlight, client);
        };
        // A listen stream may stay open for as long as its client likes: one of its
        // client's streams.
        let listening = matches!(
            (&route, &request),
            (Route::Stateless, r) if r.method == "subscriptions/listen"
        );
        let stream = match listening {
            true => match client.take(Quota::Streams, self.limits.streams) {
                Some(held) => Some(held),
                None => return self.refuse(Rejection::ClientStreams, client),
            },
            false => None,
        };
        let (mut session_id, entry, opening, stateless) = match route {
            Route::Session(session_id, entry) => {
                if entry.in_flight.load(Ordering::Relaxed) >= self.config.max_in_flight_per_session
                {
                    return self.refuse(Rejection::SessionInFlight, client);
                }
                (Some(session_id), entry, false, false)
            }
            // Not in the table until `initialize` succeeds: a sealed id carries what it
            // negotiated, and a refused one opens nothing.
            Route::Opening => {
                let notifier = Notifier::default();
                let session = self.service.open(notifier.clone(), false);
                (None, Arc::new(Entry::new(session, notifier)), true, false)
            }
            Route::Stateless => {
                let notifier = Notifier::default();
                let session = self.service.open(notifier.clone(), true);
                let entry = Arc::new(Entry::new(session, notifier));
                (None, entry, false, true)
            }
        };
        if let Some(principal) = principal {
            let _ = entry.owner.set(principal.subject.as_str().into());
            self.service.authenticated(&entry.session, principal);
        }
        let busy = Busy::new(&entry);
        let session: Box<dyn std::any::Any + Send + Sync> = if stateless {
            let close = CloseOnDrop {
                service: self.service.clone(),
                session: entry.session.clone(),
            };
            Box::new((busy, close))
        } else {
            Box::new(busy)
        };
        let guards = Guards {
            _in_flight: Count::new(&self.counters.in_flight),
            _body: conn.hold(body_len),
            _client: client_in_flight,
            _stream: stream,
            _session: session,
        };
        let (responder, mut rx) = Responder::channel(self.config.stream_queue);
        let responder = responder.charged_to(conn.clone()).with_traceparent(
            headers
                .get(guard::TRACEPARENT)
                .and_then(|v| v.to_str().ok())
                .map(Arc::from),
        );
        self.service
            .receive(&entry.session, Inbound::Request { request, responder });
        // Dropped with this future if the client goes away first: that cancels the request.
        let first = rx.recv().await;
        if opening {
            let refused = match &first {
                Some(Outgoing::Answer { error, .. }) => error.is_some(),
                Some(_) => false,
                None => true,
            };
            if refused {
                self.close(&entry);
            } else {
                match self.admit(entry.clone(), client) {
                    Ok(admitted) => session_id = HeaderValue::from_str(&admitted).ok(),
                    Err(rejection) => {
                        self.close(&entry);
                        return self.refuse(rejection, client);
                    }
                }
            }
        }
        let mut response = match first {
            Some(Outgoing::Answer { frame, error }) => {
                drop(guards);
                let status = if stateless {
                    stateless_status(error)
                } else {
                    200
                };
                json(status, frame)
            }
            Some(first) => {
                let keep_alive = listening.then_some(self.config.stream_keep_alive).flatten();
                event_stream(ResponseBody::request_stream(
                    first,
                    rx,
                    Box::new(guards),
                    keep_alive,
                ))
            }
            None => {
                drop(guards);
                error(
                    500,
                    ErrorObject::INTERNAL_ERROR,
                    "the request was dropped unanswered",
                    Some(&id),
                )
            }
        };
        if let Some(session_id) = session_id {
            response.headers_mut().insert(SESSION_ID, session_id);
        }
        response
    }

    /// Counts and logs `rejection` of `client`, and answers it.
    fn refuse(&self, rejection: Rejection, client: &Client) -> HttpResponse {
        client.reject(rejection, self.config.rejections.as_ref());
        refused_for(rejection, &self.limits, &self.config)
    }

    /// Puts an initialized session of `client` in the table, under a sealed id when keys
    /// are set (and its state fits one), else a random one; why not, when the table (or
    /// the client's share of it) is full of sessions in use.
    fn admit(&self, entry: Arc<Entry<S>>, client: &Arc<Client>) -> Result<String, Rejection> {
        let sealed = self.config.sealing.as_ref().and_then(|seal| {
            let state = self.service.session_state(&entry.session)?;
            // The owner travels with the state: every replica refuses it to anyone else.
            seal.seal(
                &serde_json::json!({"state": state, "owner": entry.owner.get().map(|o| &**o)}),
            )
        });
        // Without randomness there is no id to give: as full as can be.
        let id = sealed.or_else(new_id).ok_or(Rejection::Sessions)?;
        match self.insert(id.clone(), entry, client) {
            Inserted::Added { .. } => Ok(id),
            // A fresh random or sealed id (its nonce is random) is never in the table.
            Inserted::Present(_) => Err(Rejection::Sessions),
            Inserted::Refused(rejection) => Err(rejection),
        }
    }

    /// Puts `entry` of `client` in the table under `id`, ending the session it evicts to
    /// make room.
    fn insert(&self, id: String, entry: Arc<Entry<S>>, client: &Arc<Client>) -> Inserted<S> {
        let inserted = self
            .sessions
            .insert(id, entry, client, self.limits.sessions);
        if let Inserted::Added {
            evicted: Some(evicted),
        } = &inserted
        {
            client.reject(Rejection::SessionEvicted, self.config.rejections.as_ref());
            self.close(evicted);
        }
        inserted
    }

    /// The session a sealed id carries, rebuilt here and kept in the table (`None`: not a
    /// session of ours; `Err`: no room for it now).
    fn restore(&self, id: &str, client: &Arc<Client>) -> Result<Option<Arc<Entry<S>>>, Rejection> {
        let Some(seal) = self.config.sealing.as_ref() else {
            return Ok(None);
        };
        if self.sessions.has_ended(id) {
            return Ok(None);
        }
        let Some(sealed) = seal.open(id) else {
            return Ok(None);
        };
        let notifier = Notifier::default();
        let Some(session) = sealed
            .get("state")
            .and_then(|state| self.service.restore(notifier.clone(), state))
        else {
            return Ok(None);
        };
        let entry = Arc::new(Entry::new(session, notifier));
        if let Some(owner) = sealed.get("owner").and_then(Value::as_str) {
            let _ = entry.owner.set(owner.into());
        }
        match self.insert(id.to_owned(), entry.clone(), client) {
            Inserted::Added { .. } => Ok(Some(entry)),
            Inserted::Present(present) => {
                self.close(&entry);
                Ok(Some(present))
            }
            Inserted::Refused(rejection) => {
                self.close(&entry);
                Err(rejection)
            }
        }
    }

    /// Where a request without `Mcp-Session-Id` goes: `initialize` opens a session, a
    /// 2026-07-28 request (whose headers must agree with its body) is served statelessly,
    /// anything else is refused.
    fn sessionless_route(
        &self,
        headers: &hyper::HeaderMap,
        request: &switchboard_codecs::jsonrpc::Request,
    ) -> Result<Route<S>, Box<HttpResponse>> {
        let params = guard::Peek::of(request.params.as_deref());
        if request.method == "initialize" && params.meta_version().is_none() {
            return Ok(Route::Opening);
        }
        if !guard::is_stateless(headers, &params) {
            return Err(Box::new(error(
                400,
                -32000,
                "missing Mcp-Session-Id: send initialize first, or a 2026-07-28 request",
                Some(&request.id),
            )));
        }
        if let Err(refusal) = guard::modern_headers(headers, request, &params) {
            return Err(Box::new(refused(refusal, Some(&request.id))));
        }
        let tool = (request.method == "tools/call")
            .then(|| params.tool())
            .flatten();
        if let Some(schema) = tool.and_then(|t| self.service.tool_input_schema(&t)) {
            if let Err(refusal) = guard::param_headers(headers, &schema, &params) {
                return Err(Box::new(refused(refusal, Some(&request.id))));
            }
        }
        Ok(Route::Stateless)
    }

    fn get(
        self: &Arc<Self>,
        request: HttpRequest<Incoming>,
        principal: Option<&Arc<Principal>>,
        client: &Arc<Client>,
        conn: &Arc<Conn>,
    ) -> HttpResponse {
        let session = match self.session_of(&request, principal, client) {
            Lookup::Full(rejection) => return self.refuse(rejection, client),
            Lookup::Foreign => return self.foreign_session(),
            Lookup::Found(_, entry) => entry,
            Lookup::Unnamed => {
                // A stateless server has no stream of its own to offer.
                let mut response = error(405, -32000, "GET needs an Mcp-Session-Id", None);
                response
                    .headers_mut()
                    .insert("allow", HeaderValue::from_static("POST"));
                return response;
            }
            Lookup::Unknown => return session_not_found(),
        };
        if let Err(refusal) = guard::get(request.headers()) {
            return refused(refusal, None);
        }
        let Some(stream) = client.take(Quota::Streams, self.limits.streams) else {
            return self.refuse(Rejection::ClientStreams, client);
        };
        let (tx, rx) = mpsc::channel(self.config.stream_queue.max(1));
        session
            .notifier
            .attach_responder(Responder::from_sender(tx).charged_to(conn.clone()));
        let holds: Holds = Box::new(stream);
        event_stream(ResponseBody::session_stream(
            rx,
            holds,
            self.config.stream_keep_alive,
        ))
    }

    fn delete(
        self: &Arc<Self>,
        request: HttpRequest<Incoming>,
        principal: Option<&Arc<Principal>>,
        client: &Arc<Client>,
    ) -> HttpResponse {
        match self.session_of(&request, principal, client) {
            Lookup::Full(rejection) => self.refuse(rejection, client),
            Lookup::Foreign => self.foreign_session(),
            Lookup::Found(id, _) => {
                self.end(id.to_str().unwrap_or(""));
                response(200, ResponseBody::empty())
            }
            Lookup::Unnamed => error(400, -32000, "DELETE needs an Mcp-Session-Id", None),
            Lookup::Unknown => session_not_found(),
        }
    }

    fn end(&self, id: &str) {
        if self.config.sealing.is_some() {
            self.sessions.remember_ended(id);
        }
        if let Some(entry) = self.sessions.remove(id) {
            self.close(&entry);
        }
    }

    /// Ends the sessions quiet for longer than `idle`.
    pub(crate) fn expire(&self, idle: std::time::Duration) {
        for entry in self.sessions.expire(idle) {
            tracing::debug!("a handshake-era session ended after {idle:?} without use");
            self.close(&entry);
        }
    }

    /// Ends a session already out of the table.
    fn close(&self, entry: &Entry<S>) {
        entry.notifier.detach();
        self.service.close(&entry.session);
    }
}
