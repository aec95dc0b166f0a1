//! The legacy HTTP+SSE engine (2024-11-05): one event stream through `reqwest-eventsource`
//! (never reconnecting by itself), the `endpoint` event, and a POST per message. See the
//! [module docs](super) for the behaviour and the `# Security` note on event sizes.

use std::fmt;
use std::sync::Arc;

use futures_util::StreamExt;
use reqwest::header::CONTENT_TYPE;
use reqwest::StatusCode;
use reqwest_eventsource::retry::Never;
use reqwest_eventsource::{Error as EsError, Event as EsEvent, EventSource};
use tokio::task::JoinSet;
use tokio::time::Instant;
use url::Url;

use super::challenge::Challenge;
use super::client::{self, Shared};
use super::{Command, End, Error, Inputs};
use crate::connection::{CloseCause, Outbound};

/// The most of a POST's answer body read (it is normally `Accepted`).
const ANSWER_BODY_LIMIT: usize = 64 * 1024;

/// An open event stream and the endpoint it announced.
pub(crate) struct Opened {
    source: EventSource,
    endpoint: Url,
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened")
            .field("endpoint", &client::redact_url(&self.endpoint))
            .finish_non_exhaustive()
    }
}

/// GETs the event stream and waits for its `endpoint` event (within the connect timeout),
/// asking the auth hook once more after a 401.
pub(crate) async fn open(shared: &Shared) -> Result<Opened, Error> {
    let mut challenge: Option<Challenge> = None;
    loop {
        let headers = shared.headers_with_token(challenge.as_ref()).await?;
        let builder = shared.client.get(shared.url.clone()).headers(headers);
        let mut source = EventSource::new(builder).map_err(|_| Error::Protocol {
            server: shared.name.clone(),
            reason: "the event stream request cannot be built".into(),
        })?;
        source.set_retry_policy(Box::new(Never));
        let waited = tokio::time::timeout(shared.connect_timeout, endpoint(shared, &mut source));
        match waited.await {
            Err(_) => {
                return Err(Error::Timeout {
                    server: shared.name.clone(),
                    what: "waiting for the endpoint event",
                    after: shared.connect_timeout,
                })
            }
            Ok(Ok(data)) => {
                let endpoint = resolve(shared, &data)?;
                tracing::debug!(server = %shared.name, endpoint = %client::redact_url(&endpoint), "legacy sse endpoint");
                return Ok(Opened { source, endpoint });
            }
            Ok(Err(EsError::InvalidStatusCode(StatusCode::UNAUTHORIZED, response))) => {
                let c = Challenge::from_headers(response.headers());
                if challenge.is_some() || !shared.has_auth() {
                    return Err(shared.unauthorized(&shared.url, c));
                }
                challenge = Some(c);
            }
            Ok(Err(e)) => return Err(open_error(shared, e)),
        }
    }
}

/// Waits for the `endpoint` event; anything before it is dropped.
async fn endpoint(shared: &Shared, source: &mut EventSource) -> Result<String, EsError> {
    loop {
        match source.next().await {
            None => return Err(EsError::StreamEnded),
            Some(Ok(EsEvent::Open)) => {}
            Some(Ok(EsEvent::Message(m))) if m.event == "endpoint" => return Ok(m.data),
            Some(Ok(EsEvent::Message(m))) => {
                tracing::warn!(server = %shared.name, event = %m.event, "dropped an event that came before the endpoint")
            }
            Some(Err(e)) => return Err(e),
        }
    }
}

/// Resolves the endpoint against the stream URL; it must keep the stream's origin.
fn resolve(shared: &Shared, data: &str) -> Result<Url, Error> {
    let endpoint = shared.url.join(data.trim()).map_err(|_| Error::Protocol {
        server: shared.name.clone(),
        reason: "the endpoint event does not hold a valid url".into(),
    })?;
    if endpoint.origin() != shared.url.origin() {
        return Err(Error::CrossOriginEndpoint {
            server: shared.name.clone(),
            stream_url: shared.display_url.clone(),
            endpoint: client::redact_url(&endpoint),
        });
    }
    Ok(endpoint)
}

fn open_error(shared: &Shared, e: EsError) -> Error {
    let protocol = |reason: String| Error::Protocol {
        server: shared.name.clone(),
        reason,
    };
    match e {
        EsError::InvalidStatusCode(status, _) => shared.http_error(&shared.url, status),
        EsError::InvalidContentType(..) => {
            protocol("the answer to the event stream request is not text/event-stream".into())
        }
        EsError::Transport(e) => shared.network_error(&shared.url, e),
        EsError::StreamEnded => protocol("the event stream ended before the endpoint event".into()),
        other => protocol(format!(
            "the event stream is malformed: {}",
            stream_error(other)
        )),
    }
}

/// The text of a stream error, without URLs.
fn stream_error(e: EsError) -> String {
    match e {
        EsError::Transport(e) => client::describe(e),
        EsError::InvalidStatusCode(status, _) => format!("http status {}", status.as_u16()),
        EsError::InvalidContentType(..) => "not an event stream".into(),
        EsError::StreamEnded => "the stream ended".into(),
        EsError::Utf8(e) => format!("not utf-8: {e}"),
        EsError::Parser(e) => format!("not an event stream: {e}"),
        EsError::InvalidLastEventId(_) => "invalid last event id".into(),
    }
}

/// Runs a legacy connection until its stream ends or it is closed. `first` (Auto mode's
/// `initialize`) is POSTed before anything else.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    inputs: &mut Inputs,
    opened: Opened,
    first: Option<Outbound>,
) -> End {
    let Opened {
        mut source,
        endpoint,
    } = opened;
    let endpoint = Arc::new(endpoint);
    let mut posts = JoinSet::new();
    // The POST that later messages wait for: `notifications/initialized`, which must reach
    // the server before any request of the session does. Each message is its own POST, and
    // POSTs race: a `tools/list` that overtakes it finds a server that adds tools once it is
    // initialized (server-everything does) without them.
    let mut gate: Option<tokio::task::Id> = None;
    if let Some(first) = first {
        posts.spawn(post(shared.clone(), endpoint.clone(), first));
    }
    let idle = tokio::time::sleep(shared.idle_timeout);
    tokio::pin!(idle);
    let over = |cause| End::Over { cause, done: None };
    let end = loop {
        tokio::select! {
            command = inputs.commands.recv() => match command {
                Some(Command::ProtocolVersion) => {}
                Some(Command::Close(done)) => {
                    super::settle(inputs, &mut posts, |outbound| {
                        Box::pin(post(shared.clone(), endpoint.clone(), outbound))
                    })
                    .await;
                    break End::Over { cause: CloseCause::Closed, done: Some(done) };
                }
                None => break over(CloseCause::Aborted("the connection's control was dropped".into())),
            },
            outbound = inputs.outbound.recv(), if inputs.outbound_open && gate.is_none() => match outbound {
                Some(outbound) => {
                    let gates = outbound.method() == Some("notifications/initialized");
                    let task = posts.spawn(post(shared.clone(), endpoint.clone(), outbound));
                    if gates {
                        gate = Some(task.id());
                    }
                }
                None => inputs.outbound_open = false,
            },
            Some(joined) = posts.join_next_with_id(), if !posts.is_empty() => {
                let id = match &joined {
                    Ok((id, ())) => *id,
                    Err(e) => e.id(),
                };
                if gate == Some(id) {
                    gate = None;
                }
            }
            _ = &mut idle => {
                break over(CloseCause::ReadFailed(format!("no event for {:?}", shared.idle_timeout)));
            }
            next = source.next() => {
                idle.as_mut().reset(Instant::now() + shared.idle_timeout);
                match next {
                    None | Some(Err(EsError::StreamEnded)) => break over(CloseCause::Eof),
                    Some(Ok(EsEvent::Open)) => {}
                    Some(Ok(EsEvent::Message(m))) => match m.event.as_str() {
                        "message" if m.data.len() > shared.max_event_size => {
                            let skipped = client::too_long(m.data.len(), client::excerpt(m.data.as_bytes()), shared.max_event_size);
                            shared.skip(skipped).await;
                        }
                        "message" if !m.data.is_empty() => {
                            shared.emit_data(&m.data, None).await;
                        }
                        other => tracing::debug!(server = %shared.name, event = other, "ignored an event"),
                    },
                    Some(Err(e)) => break over(CloseCause::ReadFailed(stream_error(e))),
                }
            }
            _ = shared.events.closed() => {
                break over(CloseCause::Aborted("the connection's events were dropped".into()));
            }
        }
    };
    source.close();
    drop(source);
    posts.shutdown().await;
    end
}

/// POSTs one message to the endpoint (2xx expected, normally 202).
async fn post(shared: Arc<Shared>, endpoint: Arc<Url>, outbound: Outbound) {
    let sent = shared
        .send(&endpoint, || {
            shared
                .client
                .post((*endpoint).clone())
                .header(CONTENT_TYPE, "application/json")
                .body(outbound.payload.clone())
        })
        .await;
    match sent {
        Ok(mut response) if response.status().is_success() => {
            // Read the short answer so the connection can be reused.
            let _ = client::read_body(&mut response, ANSWER_BODY_LIMIT, shared.idle_timeout).await;
        }
        Ok(response) => {
            let e = shared.http_error(&endpoint, response.status());
            shared
                .fail(outbound.request_id().cloned(), &e.to_string())
                .await;
        }
        // Connected, then broken before the 202: the server may have taken the message
        // (its answer would come on the event stream, or never).
        Err(e @ Error::Request { .. }) => match outbound.request_id().cloned() {
            Some(id) => shared.broken(id, &e.to_string()).await,
            None => shared.fail(None, &e.to_string()).await,
        },
        Err(e) => shared.fail_error(outbound.request_id().cloned(), &e).await,
    }
}
