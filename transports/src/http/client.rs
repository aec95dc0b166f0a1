//! What both HTTP engines share: the client and its headers, credentials and the 401
//! retry, error descriptions without secrets, bounded body reads and JSON bodies to events.

use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::value::RawValue;
use switchboard_codecs::jsonrpc::{Id, Message, Outcome, ParseError, Response as RpcResponse};
use switchboard_codecs::lines::{SkipKind, Skipped};
use tokio::sync::mpsc;
use url::Url;

use super::challenge::Challenge;
use super::session::SessionState;
use super::{Auth, Config, Error, MAX_AUTH_ROUNDS};
use crate::connection::Event;
pub(crate) use switchboard_codecs::lines::excerpt;

/// Most redirects followed (same origin only).
const MAX_REDIRECTS: usize = 5;
/// How many characters of a skipped body go into [`Skipped::excerpt`].
const EXCERPT_CHARS: usize = 80;

/// A connection's settings and state, shared by its tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) client: reqwest::Client,
    pub(crate) url: Url,
    /// The URL as it may appear in logs and errors.
    pub(crate) display_url: String,
    /// The configured headers (secrets marked sensitive), bearer token included.
    headers: HeaderMap,
    auth: Option<Arc<dyn Auth>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_event_size: usize,
    pub(crate) events: mpsc::Sender<Event>,
    pub(crate) transport: Arc<AtomicU8>,
    pub(crate) session: Arc<Mutex<SessionState>>,
}

impl Shared {
    pub(crate) fn new(
        name: &str,
        config: &Config,
        events: mpsc::Sender<Event>,
        transport: Arc<AtomicU8>,
    ) -> Result<Shared, Error> {
        let server: Arc<str> = name.into();
        let invalid = |reason: String| Error::InvalidConfig {
            server: server.clone(),
            reason,
        };
        let url = Url::parse(&config.url).map_err(|e| {
            invalid(format!(
                "the url {} is not valid: {e}",
                redact_url_str(&config.url)
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "the url scheme must be http or https, not {}",
                url.scheme()
            )));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(format!("{name:?} is not a valid header name")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| invalid(format!("the value of header {name} is not valid")))?;
            value.set_sensitive(config.is_secret(name));
            headers.append(header, value);
        }
        if let Some(token) = &config.bearer_token {
            let value = bearer(token)
                .ok_or_else(|| invalid("the bearer token is not a valid header value".into()))?;
            headers.insert(AUTHORIZATION, value);
        }
        let origin = url.origin();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS || attempt.url().origin() != origin {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| invalid(format!("cannot build the http client: {}", describe(e))))?;
        Ok(Shared {
            display_url: redact_url(&url),
            name: server,
            client,
            url,
            headers,
            auth: config.auth.clone(),
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
            max_event_size: config.max_event_size,
            events,
            transport,
            session: Arc::default(),
        })
    }

    /// Sends the request `build` makes, with the configured headers and a token; when the
    /// server refuses it with a challenge (401, or 403 `insufficient_scope`) and there is an
    /// auth hook, asks the hook for a new token and sends it again, at most
    /// [`MAX_AUTH_ROUNDS`] times, and after a 401 only once.
    ///
    /// `url` is the request's URL for errors. A 401 that remains is
    /// [`Error::Unauthorized`]; a failure to connect is [`Error::Connect`]; other network
    /// failures are [`Error::Request`]. Any other status (a 403 that remains too) is
    /// returned for the caller.
    pub(crate) async fn send(
        &self,
        url: &Url,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response, Error> {
        let mut token = self.token(None).await?;
        let mut rounds = 0;
        // A 401 is retried once: a fresh token refused again means the server does not take
        // this client's tokens, and asking again would only loop.
        let mut retried_unauthorized = false;
        loop {
            let response = self.send_once(url, build(), token.clone()).await?;
            let status = response.status();
            let challenge = match status {
                StatusCode::UNAUTHORIZED => Challenge::from_headers(response.headers()),
                StatusCode::FORBIDDEN => {
                    let challenge = Challenge::from_headers(response.headers());
                    if challenge.param("error") != Some("insufficient_scope") {
                        return Ok(response);
                    }
                    challenge
                }
                _ => return Ok(response),
            };
            let again = status == StatusCode::UNAUTHORIZED && retried_unauthorized;
            let Some(auth) = self
                .auth
                .as_ref()
                .filter(|_| rounds < MAX_AUTH_ROUNDS && !again)
            else {
                return if status == StatusCode::UNAUTHORIZED {
                    Err(self.unauthorized(url, challenge))
                } else {
                    Ok(response)
                };
            };
            rounds += 1;
            retried_unauthorized |= status == StatusCode::UNAUTHORIZED;
            tracing::debug!(
                server = %self.name,
                status = status.as_u16(),
                scheme = %challenge.scheme,
                "refused: asking the auth hook for a new token",
            );
            let rejected = token
                .as_ref()
                .and_then(|t| t.to_str().ok())
                .and_then(|t| t.strip_prefix("Bearer "));
            let new = auth
                .refused(rejected, &challenge)
                .await
                .map_err(|reason| self.auth_failed(reason))?;
            token = self.bearer_value(new)?;
        }
    }

    async fn send_once(
        &self,
        url: &Url,
        request: RequestBuilder,
        token: Option<HeaderValue>,
    ) -> Result<Response, Error> {
        let mut headers = self.headers.clone();
        if let Some(token) = token {
            headers.insert(AUTHORIZATION, token);
        }
        request
            .headers(headers)
            .send()
            .await
            .map_err(|e| self.network_error(url, e))
    }

    /// The token from the auth hook, as a sensitive header value.
    async fn token(&self, challenge: Option<&Challenge>) -> Result<Option<HeaderValue>, Error> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        let token = auth
            .token(challenge)
            .await
            .map_err(|reason| self.auth_failed(reason))?;
        self.bearer_value(token)
    }

    fn auth_failed(&self, reason: String) -> Error {
        Error::Auth {
            server: self.name.clone(),
            reason,
        }
    }

    /// A token as a sensitive `Authorization` value.
    fn bearer_value(&self, token: Option<String>) -> Result<Option<HeaderValue>, Error> {
        match token {
            Some(token) => bearer(&token)
                .map(Some)
                .ok_or_else(|| self.auth_failed("the token is not a valid header value".into())),
            None => Ok(None),
        }
    }

    /// The error for a 401 that stays.
    pub(crate) fn unauthorized(&self, url: &Url, challenge: Challenge) -> Error {
        Error::Unauthorized {
            server: self.name.clone(),
            url: redact_url(url),
            resource_metadata: challenge.resource_metadata,
        }
    }

    /// A legacy event-stream request: the configured headers and a token.
    pub(crate) async fn headers_with_token(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<HeaderMap, Error> {
        let mut headers = self.headers.clone();
        if let Some(token) = self.token(challenge).await? {
            headers.insert(AUTHORIZATION, token);
        }
        Ok(headers)
    }

    pub(crate) fn has_auth(&self) -> bool {
        self.auth.is_some()
    }

    pub(crate) fn network_error(&self, url: &Url, e: reqwest::Error) -> Error {
        let connect = e.is_connect();
        let reason = describe(e);
        if connect {
            Error::Connect {
                server: self.name.clone(),
                url: redact_url(url),
                reason,
            }
        } else {
            Error::Request {
                server: self.name.clone(),
                url: redact_url(url),
                reason,
            }
        }
    }

    pub(crate) fn http_error(&self, url: &Url, status: StatusCode) -> Error {
        Error::Http {
            server: self.name.clone(),
            url: redact_url(url),
            status: status.as_u16(),
        }
    }

    /// Delivers an event; a consumer that is gone is ignored (the engine notices it).
    pub(crate) async fn emit(&self, event: Event) {
        let _ = self.events.send(event).await;
    }

    /// Reports a failed message: [`Event::SendFailed`] for a request, a log line otherwise.
    pub(crate) async fn fail(&self, id: Option<Id>, reason: &str) {
        match id {
            Some(id) => {
                tracing::debug!(server = %self.name, id = %id, reason, "request failed");
                self.emit(Event::SendFailed {
                    id,
                    reason: reason.into(),
                })
                .await;
            }
            None => tracing::warn!(server = %self.name, reason, "a message to the server failed"),
        }
    }

    /// Reports a request whose response broke before its answer (and could not be
    /// resumed): [`Event::StreamBroken`].
    pub(crate) async fn broken(&self, id: Id, reason: &str) {
        tracing::debug!(server = %self.name, id = %id, reason, "a request's response broke");
        self.emit(Event::StreamBroken {
            id,
            reason: reason.into(),
        })
        .await;
    }

    /// Reports a message that could not be sent because the server could not be reached
    /// ([`Error::Connect`]): [`Event::Unreachable`] for a request, a log line otherwise.
    pub(crate) async fn unreachable(&self, id: Option<Id>, error: &Error) {
        let reason = error.to_string();
        match id {
            Some(id) => {
                tracing::debug!(server = %self.name, id = %id, %reason, "the server cannot be reached");
                self.emit(Event::Unreachable {
                    id,
                    reason: reason.into(),
                })
                .await;
            }
            None => {
                tracing::warn!(server = %self.name, %reason, "a message to the server failed")
            }
        }
    }

    /// Reports a failed message with its typed cause: a 401 that stays becomes
    /// [`Event::Unauthorized`], a server that cannot be reached [`Event::Unreachable`],
    /// anything else goes to [`fail`](Self::fail).
    pub(crate) async fn fail_error(&self, id: Option<Id>, error: &Error) {
        match error {
            Error::Connect { .. } => self.unreachable(id, error).await,
            Error::Unauthorized {
                resource_metadata, ..
            } => {
                tracing::warn!(server = %self.name, %error, "the server refused our credentials");
                self.emit(Event::Unauthorized {
                    id,
                    resource_metadata: resource_metadata.clone(),
                    reason: error.to_string().into(),
                })
                .await;
            }
            other => self.fail(id, &other.to_string()).await,
        }
    }

    /// Emits the messages of a JSON body (one message or a batch) in order; returns whether
    /// one of them is the response to `request`.
    pub(crate) async fn emit_json(&self, body: &[u8], request: Option<&Id>) -> bool {
        let mut answered = false;
        for frame in json_frames(body) {
            match frame {
                Ok(message) => {
                    answered |= is_answer(&message, request);
                    self.emit(Event::Message(message)).await;
                }
                Err(skipped) => self.skip(skipped).await,
            }
        }
        answered
    }

    /// Emits one parsed SSE `message` payload; returns whether it answers `request`.
    pub(crate) async fn emit_data(&self, data: &str, request: Option<&Id>) -> bool {
        self.emit_json(data.as_bytes(), request).await
    }

    pub(crate) async fn skip(&self, skipped: Skipped) {
        tracing::warn!(
            server = %self.name,
            kind = skipped.kind.as_str(),
            len = skipped.len,
            excerpt = %skipped.excerpt,
            "skipped an inbound message",
        );
        self.emit(Event::Skipped(skipped)).await;
    }
}

/// `Bearer <token>`, marked sensitive.
fn bearer(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Whether `message` is the response to `request`.
pub(crate) fn is_answer(message: &Message, request: Option<&Id>) -> bool {
    match (message, request) {
        (Message::Response(r), Some(id)) => r.id.as_ref() == Some(id),
        _ => false,
    }
}

/// The text of a network error, without the URL (which may hold secrets) but with its
/// causes.
pub(crate) fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `scheme://host[:port]/path`: no user info, no query, no fragment.
pub(crate) fn redact_url(url: &Url) -> String {
    let mut text = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        text.push_str(host);
    }
    if let Some(port) = url.port() {
        text.push_str(&format!(":{port}"));
    }
    text.push_str(url.path());
    text
}

/// [`redact_url`] for a string that may not parse.
pub(crate) fn redact_url_str(url: &str) -> String {
    match Url::parse(url) {
        Ok(url) => redact_url(&url),
        Err(_) => "<invalid url>".into(),
    }
}

/// The content type's essence (`text/event-stream`), lower-cased.
pub(crate) fn content_type(response: &Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// A body read to its end, or how much was seen when it crossed the limit.
#[derive(Debug)]
pub(crate) enum Body {
    /// The whole body.
    Complete(Bytes),
    /// Longer than the limit: reading stopped after `seen` bytes.
    TooLong { seen: usize, excerpt: String },
}

/// Reads a body chunk by chunk, stopping past `max` bytes or when a chunk takes longer
/// than `idle`.
pub(crate) async fn read_body(
    response: &mut Response,
    max: usize,
    idle: Duration,
) -> Result<Body, String> {
    let mut body = BytesMut::new();
    loop {
        let chunk = match tokio::time::timeout(idle, response.chunk()).await {
            Err(_) => return Err(format!("the body stalled for {idle:?}")),
            Ok(Err(e)) => return Err(describe(e)),
            Ok(Ok(None)) => return Ok(Body::Complete(body.freeze())),
            Ok(Ok(Some(chunk))) => chunk,
        };
        if body.len() + chunk.len() > max {
            let seen = body.len() + chunk.len();
            body.extend_from_slice(&chunk[..chunk.len().min(EXCERPT_CHARS * 4)]);
            return Ok(Body::TooLong {
                seen,
                excerpt: excerpt(&body),
            });
        }
        body.extend_from_slice(&chunk);
    }
}

/// A skip report for an oversized body or event.
pub(crate) fn too_long(len: usize, excerpt: String, max: usize) -> Skipped {
    Skipped {
        kind: SkipKind::TooLong,
        len,
        excerpt,
        id: None,
        detail: format!("longer than the limit of {max} bytes"),
    }
}

/// The messages of a JSON body: one object, or an array of them (a batch).
pub(crate) fn json_frames(body: &[u8]) -> Vec<Result<Message, Skipped>> {
    let trimmed = body.trim_ascii_start();
    if !trimmed.starts_with(b"[") {
        return vec![parse(body)];
    }
    match serde_json::from_slice::<Vec<Box<RawValue>>>(body) {
        Ok(elements) if elements.is_empty() => vec![Err(skipped(
            SkipKind::BadBatch,
            body,
            "empty batch".into(),
            None,
        ))],
        Ok(elements) => elements
            .iter()
            .map(|raw| parse(raw.get().as_bytes()))
            .collect(),
        Err(e) => {
            let kind = if e.is_data() {
                SkipKind::BadBatch
            } else {
                SkipKind::NotJson
            };
            vec![Err(skipped(kind, body, e.to_string(), None))]
        }
    }
}

fn parse(bytes: &[u8]) -> Result<Message, Skipped> {
    Message::from_slice(bytes).map_err(|e| match e {
        ParseError::NotJson(detail) => skipped(SkipKind::NotJson, bytes, detail, None),
        ParseError::NotJsonRpc { reason, id } => skipped(SkipKind::NotJsonRpc, bytes, reason, id),
        other => skipped(SkipKind::NotJson, bytes, other.to_string(), None),
    })
}

fn skipped(kind: SkipKind, bytes: &[u8], detail: String, id: Option<Id>) -> Skipped {
    Skipped {
        kind,
        len: bytes.len(),
        excerpt: excerpt(bytes),
        id,
        detail,
    }
}

/// Whether a body is a JSON-RPC error whose message speaks of a session: how a 400 to a
/// request that carried a session id is recognised as a lost session.
pub(crate) fn is_session_error(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        error: ErrorField,
    }
    #[derive(serde::Deserialize)]
    struct ErrorField {
        message: String,
    }
    serde_json::from_slice::<ErrorBody>(body)
        .is_ok_and(|b| b.error.message.to_ascii_lowercase().contains("session"))
}

/// Whether `body` is a JSON-RPC error response to request `id`.
pub(crate) fn is_error_answer(body: &[u8], id: &Id) -> bool {
    matches!(
        Message::from_slice(body),
        Ok(Message::Response(RpcResponse { id: Some(answered), outcome: Outcome::Error(_) })) if answered == *id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_user_info_and_query() {
        let url = Url::parse("https://u:p@example.com:8443/a/mcp?token=t#f").unwrap();
        assert_eq!(redact_url(&url), "https://example.com:8443/a/mcp");
        assert_eq!(redact_url_str("nope"), "<invalid url>");
    }

    #[test]
    fn session_errors_are_recognised() {
        assert!(is_session_error(
            br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#
        ));
        assert!(!is_session_error(
            br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Unsupported protocol version"},"id":null}"#
        ));
        assert!(!is_session_error(b"<html>session</html>"));
    }

    #[test]
    fn json_bodies_and_batches() {
        let one = json_frames(br#" {"jsonrpc":"2.0","id":1,"result":{}} "#);
        assert!(matches!(one.as_slice(), [Ok(Message::Response(_))]));
        let batch = json_frames(
            br#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x","error":{"code":"bad"}}]"#,
        );
        assert!(matches!(batch[0], Ok(Message::Notification(_))));
        let Err(s) = &batch[1] else { panic!("a skip") };
        assert_eq!(
            (s.kind, s.id.clone()),
            (SkipKind::NotJsonRpc, Some(Id::from("x")))
        );
        let bad = json_frames(b"[]");
        assert!(matches!(&bad[0], Err(s) if s.kind == SkipKind::BadBatch));
        let bad = json_frames(b"not json");
        assert!(matches!(&bad[0], Err(s) if s.kind == SkipKind::NotJson));
    }
}
