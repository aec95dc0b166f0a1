//! The Streamable HTTP engine: one task per POST, the optional GET stream, resumption,
//! session loss, and the Auto-mode probe. See the [module docs](super) for the behaviour.

use std::sync::Arc;

use bytes::BytesMut;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use switchboard_codecs::jsonrpc::Id;
use switchboard_codecs::sse::{SseCodec, SseFrame};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::codec::Decoder;

use super::client::{self, Body, Shared};
use super::session::{self, resume_delay};
use super::{Command, End, Error, Inputs};
use crate::connection::{CloseCause, Event, Facts, Outbound, RequestFacts};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
/// The longest requests wait for the GET stream to open (see `run`).
const LISTEN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// The most of an error body read to look for a session error.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How one POST ended, for the engine.
#[derive(Debug)]
enum PostEnd {
    /// Done (answered, failed and reported, or not a request).
    Done,
    /// The server cannot be reached: the connection is over.
    Fatal(CloseCause),
    /// Auto mode: the `initialize` was refused in a way that means "legacy server".
    Fallback(Outbound),
}

/// Runs a Streamable HTTP connection until it ends. With `probe`, the first `initialize`
/// decides whether the server speaks Streamable HTTP at all.
pub(crate) async fn run(shared: &Arc<Shared>, inputs: &mut Inputs, mut probe: bool) -> End {
    let mut posts: JoinSet<PostEnd> = JoinSet::new();
    let mut listener: Option<(u64, JoinHandle<()>)> = None;
    // The POST that later messages wait for: the Auto-mode probe, which decides the
    // transport, and `notifications/initialized`, which must reach the server before any
    // request of the session does (each message is its own POST, and POSTs race).
    let mut gate: Option<tokio::task::Id> = None;
    // Whether this connection speaks the stateless era (it has sent such a request).
    let mut stateless_era = false;
    // The POSTs of stateless requests in flight, by request id, to close when cancelled.
    let mut stateless: std::collections::HashMap<Id, tokio::task::AbortHandle> =
        std::collections::HashMap::new();
    // Set while the GET stream is being opened: requests wait (briefly) for it, because a
    // server may send requests of its own there as soon as it sees the session used (the
    // TS SDK drops one sent while no GET stream is open).
    let mut listening: Option<std::pin::Pin<Box<tokio::time::Timeout<oneshot::Receiver<()>>>>> =
        None;
    let end = loop {
        tokio::select! {
            command = inputs.commands.recv() => match command {
                Some(Command::ProtocolVersion) => {
                    let generation = session::lock(&shared.session).generation;
                    let running = listener
                        .as_ref()
                        .is_some_and(|(g, task)| *g == generation && !task.is_finished());
                    if !running {
                        if let Some((_, old)) = listener.take() {
                            old.abort();
                        }
                        let (opened, open) = oneshot::channel();
                        let task = tokio::spawn(listen(shared.clone(), generation, Some(opened)));
                        listener = Some((generation, task));
                        listening = Some(Box::pin(tokio::time::timeout(LISTEN_WAIT, open)));
                    }
                }
                Some(Command::Close(done)) => {
                    // What was sent before the close is delivered (briefly), the session
                    // deleted, then the streams close (below).
                    let era = stateless_era;
                    super::settle(inputs, &mut posts, |outbound| {
                        // The stateless era cancels by closing streams, as this close
                        // does: its cancels have nothing to POST.
                        if era && matches!(outbound.facts, Facts::Cancel { .. }) {
                            return Box::pin(async { PostEnd::Done });
                        }
                        Box::pin(post(shared.clone(), outbound, false, false))
                    })
                    .await;
                    delete_session(shared).await;
                    break End::Over { cause: CloseCause::Closed, done: Some(done) };
                }
                None => break End::Over {
                    cause: CloseCause::Aborted("the connection's control was dropped".into()),
                    done: None,
                },
            },
            _ = async { if let Some(open) = listening.as_mut() { let _ = open.as_mut().await; } }, if listening.is_some() => {
                listening = None;
            }
            outbound = inputs.outbound.recv(), if inputs.outbound_open && gate.is_none() && listening.is_none() => match outbound {
                Some(outbound) => {
                    let initialize = outbound.method() == Some("initialize");
                    let this_probe = probe && initialize;
                    // The first `initialize` probes, even after the stateless era's probe
                    // (`server/discover`) was refused.
                    if initialize {
                        probe = false;
                    }
                    // A stateless request is cancelled by closing its stream: the
                    // transport has no `notifications/cancelled` then.
                    if let Facts::Cancel { request } = &outbound.facts {
                        if let Some(task) = stateless.remove(request) {
                            tracing::debug!(server = %shared.name, "closing a cancelled request's stream");
                            task.abort();
                            continue;
                        }
                        // Its request already ended (its answer crossed the cancel): on a
                        // stateless connection there is nothing to send, and the era has no
                        // such notification.
                        if stateless_era {
                            continue;
                        }
                    }
                    let modern = match &outbound.facts {
                        Facts::Request(r) => r.stateless.is_some().then(|| r.id.clone()),
                        _ => None,
                    };
                    let gates =
                        this_probe || outbound.method() == Some("notifications/initialized");
                    let task = posts.spawn(post(shared.clone(), outbound, initialize, this_probe));
                    if gates {
                        gate = Some(task.id());
                    }
                    if let Some(request) = modern {
                        stateless_era = true;
                        stateless.insert(request, task);
                    }
                }
                None => inputs.outbound_open = false,
            },
            Some(joined) = posts.join_next_with_id(), if !posts.is_empty() => {
                let id = match &joined {
                    Ok((id, _)) => *id,
                    Err(e) => e.id(),
                };
                if gate == Some(id) {
                    gate = None;
                }
                stateless.retain(|_, task| task.id() != id);
                match joined {
                    Ok((_, PostEnd::Done)) => {}
                    Ok((_, PostEnd::Fatal(cause))) => break End::Over { cause, done: None },
                    Ok((_, PostEnd::Fallback(initialize))) => break End::Fallback(initialize),
                    Err(e) => {
                        if e.is_panic() {
                            tracing::error!(server = %shared.name, "a request task panicked");
                        }
                    }
                }
            },
            _ = shared.events.closed() => break End::Over {
                cause: CloseCause::Aborted("the connection's events were dropped".into()),
                done: None,
            },
        }
    };
    if let Some((_, task)) = listener {
        task.abort();
    }
    posts.shutdown().await;
    end
}

/// Ends the session with DELETE (any answer is fine, 405 included), bounded by the
/// connect timeout.
async fn delete_session(shared: &Shared) {
    let (id, version) = {
        let mut state = session::lock(&shared.session);
        (state.id.take(), state.protocol_version.clone())
    };
    let Some(id) = id else { return };
    let url = &shared.url;
    let request = shared.send(url, || {
        let mut request = shared
            .client
            .delete(url.clone())
            .header(SESSION_HEADER, id.clone());
        if let Some(version) = &version {
            request = request.header(VERSION_HEADER, version.clone());
        }
        request
    });
    match tokio::time::timeout(shared.connect_timeout, request).await {
        Ok(Ok(response)) => {
            tracing::debug!(server = %shared.name, status = response.status().as_u16(), "session deleted")
        }
        Ok(Err(e)) => {
            tracing::debug!(server = %shared.name, error = %e, "deleting the session failed")
        }
        Err(_) => tracing::debug!(server = %shared.name, "deleting the session timed out"),
    }
}

/// POSTs one message and delivers what comes back.
async fn post(shared: Arc<Shared>, outbound: Outbound, initialize: bool, probe: bool) -> PostEnd {
    let (session_id, generation, version) = {
        let state = session::lock(&shared.session);
        if initialize {
            (None, state.generation, None)
        } else {
            (
                state.id.clone(),
                state.generation,
                state.protocol_version.clone(),
            )
        }
    };
    // A stateless-era request: its headers mirror its body, as its framer built them.
    let modern = match &outbound.facts {
        Facts::Request(RequestFacts {
            method,
            stateless: Some(stateless),
            ..
        }) => super::modern::headers(method, stateless),
        _ => reqwest::header::HeaderMap::new(),
    };
    let url = &shared.url;
    let sent = shared
        .send(url, || {
            let mut request = shared
                .client
                .post(url.clone())
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(outbound.payload.clone());
            if let Some(id) = &session_id {
                request = request.header(SESSION_HEADER, id.clone());
            }
            if let Some(version) = &version {
                request = request.header(VERSION_HEADER, version.clone());
            }
            if !modern.is_empty() {
                request = request.headers(modern.clone());
            }
            request
        })
        .await;
    let mut response = match sent {
        Ok(response) => response,
        Err(e @ Error::Connect { .. }) => {
            tracing::warn!(server = %shared.name, error = %e, "the server cannot be reached");
            shared.unreachable(outbound.request_id().cloned(), &e).await;
            return PostEnd::Fatal(CloseCause::WriteFailed(e.to_string()));
        }
        // Connected, then broken (a reset, a truncated head): the server may have run it.
        Err(e @ Error::Request { .. }) => {
            match outbound.request_id().cloned() {
                Some(id) => shared.broken(id, &e.to_string()).await,
                None => shared.fail(None, &e.to_string()).await,
            }
            return PostEnd::Done;
        }
        Err(e) => {
            shared.fail_error(outbound.request_id().cloned(), &e).await;
            return PostEnd::Done;
        }
    };
    let status = response.status();
    let request = outbound.request_id().cloned();

    if !status.is_success() {
        let body = match status {
            StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND => {
                match client::read_body(&mut response, ERROR_BODY_LIMIT, shared.idle_timeout).await
                {
                    Ok(Body::Complete(body)) => Some(body),
                    _ => None,
                }
            }
            _ => None,
        };
        let session_error = body.as_deref().is_some_and(client::is_session_error);
        let lost = session_id.is_some()
            && (status == StatusCode::NOT_FOUND
                || (status == StatusCode::BAD_REQUEST && session_error));
        if lost {
            session_lost(&shared, generation, request).await;
            return PostEnd::Done;
        }
        if probe && matches!(status.as_u16(), 400 | 404 | 405) && !session_error {
            return PostEnd::Fallback(outbound);
        }
        // A JSON-RPC error answering this request (the stateless era's -32020, -32021,
        // -32022 and -32601 come with 400 or 404) reaches the caller as that error.
        if let (Some(body), Some(id)) = (&body, &request) {
            if client::is_error_answer(body, id) && shared.emit_json(body, Some(id)).await {
                return PostEnd::Done;
            }
        }
        let e = shared.http_error(url, status);
        shared.fail(request, &e.to_string()).await;
        return PostEnd::Done;
    }

    if initialize {
        capture_session(&shared, &response, generation);
    }
    if status == StatusCode::ACCEPTED {
        if request.is_some() {
            shared
                .fail(
                    request,
                    "the server accepted the request without answering it",
                )
                .await;
        }
        return PostEnd::Done;
    }
    let content_type = client::content_type(&response);
    if content_type == "text/event-stream" {
        // The stateless era has no resumption: its streams are not resumed with GET.
        return answer_stream(&shared, response, request, generation, !modern.is_empty()).await;
    }
    if request.is_none() {
        // A notification or a response needs no answer; whatever came is ignored.
        return PostEnd::Done;
    }
    match client::read_body(&mut response, shared.max_event_size, shared.idle_timeout).await {
        Ok(Body::Complete(body)) => {
            if content_type != "application/json" && !body.is_empty() {
                tracing::debug!(server = %shared.name, content_type, "unexpected content type; reading the body as json");
            }
            if !shared.emit_json(&body, request.as_ref()).await {
                shared
                    .fail(request, "the server's answer did not contain the response")
                    .await;
            }
        }
        Ok(Body::TooLong { seen, excerpt }) => {
            shared
                .skip(client::too_long(seen, excerpt, shared.max_event_size))
                .await;
            shared
                .fail(request, "the answer is longer than the limit")
                .await;
        }
        // An answer that broke off is lost: the request may have run.
        Err(reason) => match request {
            Some(id) => {
                shared
                    .broken(id, &format!("reading the answer failed: {reason}"))
                    .await
            }
            None => {
                shared
                    .fail(None, &format!("reading the answer failed: {reason}"))
                    .await
            }
        },
    }
    PostEnd::Done
}

/// Keeps the session id of an `initialize` answer (when it has one and the session was not
/// lost meanwhile).
fn capture_session(shared: &Shared, response: &Response, generation: u64) {
    let Some(id) = response.headers().get(SESSION_HEADER) else {
        return;
    };
    if !session::valid_session_id(id) {
        tracing::warn!(server = %shared.name, "ignoring a session id that is not visible ascii");
        return;
    }
    let mut id = id.clone();
    id.set_sensitive(true);
    let mut state = session::lock(&shared.session);
    if state.generation == generation {
        state.id = Some(id);
    }
}

/// The server forgot the session: the first request rejected on it reports
/// [`Event::SessionExpired`]; later ones on the same session fail.
async fn session_lost(shared: &Shared, generation: u64, request: Option<Id>) {
    let first = {
        let mut state = session::lock(&shared.session);
        let first = state.generation == generation;
        if first {
            state.id = None;
            state.generation += 1;
        }
        first
    };
    if first {
        tracing::info!(server = %shared.name, "the server lost the session");
        shared.emit(Event::SessionExpired { id: request }).await;
    } else {
        shared.fail(request, "the session expired").await;
    }
}

/// What a stream's reader keeps across reconnections.
#[derive(Debug, Default)]
struct StreamState {
    last_event_id: Option<String>,
    retry: Option<std::time::Duration>,
    answered: bool,
}

/// Reads a POST's SSE answer, resuming it with GET and `Last-Event-ID` if it drops first;
/// a `stateless` request's stream is never resumed (the era has no resumption), and its
/// request is reported lost instead.
async fn answer_stream(
    shared: &Arc<Shared>,
    mut response: Response,
    request: Option<Id>,
    generation: u64,
    stateless: bool,
) -> PostEnd {
    let mut state = StreamState::default();
    let mut attempt = 0;
    loop {
        if read_stream(shared, &mut response, &mut state, request.as_ref()).await {
            attempt = 0;
        }
        if state.answered {
            return PostEnd::Done;
        }
        let Some(id) = &request else {
            return PostEnd::Done;
        };
        if stateless {
            shared
                .broken(id.clone(), "the response stream ended before the answer")
                .await;
            return PostEnd::Done;
        }
        let Some(last_event_id) = state.last_event_id.clone() else {
            shared
                .broken(
                    id.clone(),
                    "the response stream ended before the answer and cannot be resumed (it carried no event id)",
                )
                .await;
            return PostEnd::Done;
        };
        loop {
            let Some(delay) = resume_delay(attempt, state.retry, session::jitter()) else {
                shared
                    .broken(
                        id.clone(),
                        "the response stream broke before the answer and could not be resumed",
                    )
                    .await;
                return PostEnd::Done;
            };
            attempt += 1;
            tokio::time::sleep(delay).await;
            if session::lock(&shared.session).generation != generation {
                shared.fail(request, "the session expired").await;
                return PostEnd::Done;
            }
            match open_get(shared, Some(&last_event_id)).await {
                Ok(Opened::Stream(r)) => {
                    tracing::debug!(server = %shared.name, attempt, "resumed a stream");
                    response = r;
                    break;
                }
                Ok(Opened::Refused(status)) if status.is_client_error() => {
                    let e = shared.http_error(&shared.url, status);
                    shared
                        .broken(
                            id.clone(),
                            &format!("the response stream broke before the answer and resuming it was refused: {e}"),
                        )
                        .await;
                    return PostEnd::Done;
                }
                Ok(Opened::Refused(_)) | Err(_) => continue,
            }
        }
    }
}

/// The answer to a GET for an event stream.
#[derive(Debug)]
enum Opened {
    /// A 2xx event stream.
    Stream(Response),
    /// Anything else.
    Refused(StatusCode),
}

/// GETs the endpoint for an event stream, resuming after `last_event_id` if given.
async fn open_get(shared: &Shared, last_event_id: Option<&str>) -> Result<Opened, Error> {
    let (session_id, version) = {
        let state = session::lock(&shared.session);
        (state.id.clone(), state.protocol_version.clone())
    };
    let last = last_event_id.and_then(|id| HeaderValue::from_str(id).ok());
    let url = &shared.url;
    let response = shared
        .send(url, || {
            let mut request = shared
                .client
                .get(url.clone())
                .header(ACCEPT, "text/event-stream");
            if let Some(id) = &session_id {
                request = request.header(SESSION_HEADER, id.clone());
            }
            if let Some(version) = &version {
                request = request.header(VERSION_HEADER, version.clone());
            }
            if let Some(last) = &last {
                request = request.header(LAST_EVENT_ID, last.clone());
            }
            request
        })
        .await?;
    let status = response.status();
    if status.is_success() && client::content_type(&response) == "text/event-stream" {
        Ok(Opened::Stream(response))
    } else {
        Ok(Opened::Refused(status))
    }
}

/// Reads one SSE response to its end (or until it answered `request`, or stalls), delivering
/// every `message` event in order. Returns whether any event arrived.
async fn read_stream(
    shared: &Shared,
    response: &mut Response,
    state: &mut StreamState,
    request: Option<&Id>,
) -> bool {
    let mut codec = SseCodec::with_max_event_size(shared.max_event_size);
    let mut buf = BytesMut::new();
    let mut got_events = false;
    loop {
        let chunk = tokio::time::timeout(shared.idle_timeout, response.chunk()).await;
        let eof = match chunk {
            Err(_) => {
                tracing::debug!(server = %shared.name, "an event stream went idle");
                return got_events;
            }
            Ok(Err(e)) => {
                tracing::debug!(server = %shared.name, error = %client::describe(e), "an event stream broke");
                return got_events;
            }
            Ok(Ok(None)) => true,
            Ok(Ok(Some(chunk))) => {
                buf.extend_from_slice(&chunk);
                false
            }
        };
        loop {
            let frame = if eof {
                codec.decode_eof(&mut buf)
            } else {
                codec.decode(&mut buf)
            };
            // The codec never fails on content.
            let Ok(Some(frame)) = frame else { break };
            got_events = true;
            match frame {
                SseFrame::Event(event) => {
                    if let Some(id) = &event.id {
                        state.last_event_id = (!id.is_empty()).then(|| id.clone());
                    }
                    if let Some(retry) = event.retry {
                        state.retry = Some(retry);
                    }
                    if event.is_message() && shared.emit_data(&event.data, request).await {
                        state.answered = true;
                    }
                }
                SseFrame::Skipped { len, reason } => {
                    let mut skipped = client::too_long(len, String::new(), shared.max_event_size);
                    skipped.detail = reason;
                    shared.skip(skipped).await;
                }
            }
        }
        if eof || state.answered {
            return got_events;
        }
    }
}

/// The GET stream for server-initiated messages: opened after the protocol version is set,
/// reopened (resuming when it can) after it drops, until the session changes, the server
/// has none (405), or the attempts run out.
async fn listen(shared: Arc<Shared>, generation: u64, mut opened: Option<oneshot::Sender<()>>) {
    let mut state = StreamState::default();
    let mut attempt = 0;
    loop {
        let attempt_result = open_get(&shared, state.last_event_id.as_deref()).await;
        // The first answer (a stream, a refusal or a failure) lets requests go on.
        if let Some(opened) = opened.take() {
            let _ = opened.send(());
        }
        match attempt_result {
            Ok(Opened::Stream(mut response)) => {
                tracing::debug!(server = %shared.name, "the get stream is open");
                if read_stream(&shared, &mut response, &mut state, None).await {
                    attempt = 0;
                }
            }
            Ok(Opened::Refused(StatusCode::METHOD_NOT_ALLOWED)) => {
                tracing::debug!(server = %shared.name, "the server offers no get stream");
                return;
            }
            Ok(Opened::Refused(status)) if status.is_client_error() => {
                tracing::debug!(server = %shared.name, status = status.as_u16(), "the get stream was refused");
                return;
            }
            Ok(Opened::Refused(status)) => {
                tracing::debug!(server = %shared.name, status = status.as_u16(), "the get stream failed")
            }
            Err(e) => tracing::debug!(server = %shared.name, error = %e, "the get stream failed"),
        }
        let Some(delay) = resume_delay(attempt, state.retry, session::jitter()) else {
            tracing::warn!(server = %shared.name, "giving up on the get stream");
            return;
        };
        attempt += 1;
        tokio::time::sleep(delay).await;
        if session::lock(&shared.session).generation != generation {
            return;
        }
    }
}
