//! The checks a request passes before any MCP is read: `Host` and `Origin` (DNS rebinding),
//! `Content-Type` and `Accept`, and for a 2026-07-28 request the headers that must agree
//! with its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).

use std::borrow::Cow;

use hyper::header::{AsHeaderName, HeaderMap, HeaderName, ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_codecs::jsonrpc::Request;
use switchboard_codecs::mcp::modern::{self, headers::encode, headers::ParamHeader};

use super::Config;

// Names made once: a header looked up by a `&str` is parsed and checked at every lookup.
/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `traceparent` (W3C Trace Context).
pub(crate) const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// `X-Forwarded-For`, read from a trusted proxy only.
pub(crate) const FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The handshake-era versions a session's `MCP-Protocol-Version` may name.
pub(crate) const LEGACY_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Why a request is refused, with the status it gets.
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl Refusal {
    fn new(status: u16, code: i64, message: impl Into<String>) -> Self {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }
}

/// The host part of `host[:port]` (IPv6 in brackets), as written: [`allowed`] compares
/// without regard to case.
fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if authority.starts_with('[') {
        if let Some(end) = authority.find(']') {
            return &authority[..=end];
        }
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host
        }
        _ => authority,
    }
}

fn allowed(list: &Option<Vec<String>>, host: &str) -> bool {
    match list {
        None => true,
        Some(list) => list.iter().any(|h| h.eq_ignore_ascii_case(host)),
    }
}

/// `Host` must name an allowed host, and `Origin`, when present, too: 403 otherwise.
pub(crate) fn origin_and_host(headers: &HeaderMap, config: &Config) -> Result<(), Refusal> {
    let forbidden = |what: &str| Refusal::new(403, -32000, format!("forbidden {what}"));
    if config.allowed_hosts.is_some() {
        let host = headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or_else(|| forbidden("host: none given"))?;
        if !allowed(&config.allowed_hosts, host_name(host)) {
            return Err(forbidden(&format!("host {host:?}")));
        }
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(""));
        match authority {
            Some(authority) if allowed(&config.allowed_origins, host_name(authority)) => {}
            _ if config.allowed_origins.is_none() => {}
            _ => return Err(forbidden(&format!("origin {origin:?}"))),
        }
    }
    Ok(())
}

/// Which of JSON and an event stream the `Accept` headers list (`*/*` counts for both).
/// Read as bytes, in one pass: every POST asks.
fn accepted(headers: &HeaderMap) -> (bool, bool) {
    let (mut json, mut stream) = (false, false);
    for value in headers.get_all(ACCEPT) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let media = part
                .split(|&b| b == b';')
                .next()
                .unwrap_or_default()
                .trim_ascii();
            let any = media == b"*/*";
            json |= any || media.eq_ignore_ascii_case(b"application/json");
            stream |= any || media.eq_ignore_ascii_case(b"text/event-stream");
        }
    }
    (json, stream)
}

/// A POST must be JSON (415) and accept both JSON and an event stream (406).
pub(crate) fn post(headers: &HeaderMap) -> Result<(), Refusal> {
    let json = headers.get(CONTENT_TYPE).is_some_and(|v| {
        let media = v
            .as_bytes()
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default();
        media.trim_ascii().eq_ignore_ascii_case(b"application/json")
    });
    if !json {
        return Err(Refusal::new(
            415,
            -32000,
            "Content-Type must be application/json",
        ));
    }
    if accepted(headers) != (true, true) {
        return Err(Refusal::new(
            406,
            -32000,
            "Accept must list application/json and text/event-stream",
        ));
    }
    Ok(())
}

/// A GET must accept an event stream (406).
pub(crate) fn get(headers: &HeaderMap) -> Result<(), Refusal> {
    if accepted(headers).1 {
        Ok(())
    } else {
        Err(Refusal::new(
            406,
            -32000,
            "Accept must list text/event-stream",
        ))
    }
}

fn header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What the checks of a request outside a session read of its params, borrowed from their
/// text: nothing else of them is built, so that an `initialize` of megabytes costs a scan,
/// not a tree ten times its size. Params that do not read are an empty peek: the protocol
/// layer says what is wrong with them.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Peek<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<PeekMeta<'a>>,
    #[serde(default, borrow)]
    name: Option<&'a RawValue>,
    #[serde(default, borrow)]
    uri: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
struct PeekMeta<'a> {
    // `modern::meta::PROTOCOL_VERSION`, spelled out: serde needs a literal.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default, borrow)]
    version: Option<&'a RawValue>,
}

impl<'a> Peek<'a> {
    /// The peek of `params` (the request's raw params, if any).
    pub(crate) fn of(params: Option<&'a RawValue>) -> Self {
        params
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default()
    }

    /// The `_meta` protocol version, as it was written (any JSON), if there is one.
    fn meta_version_raw(&self) -> Option<&'a RawValue> {
        self.meta.as_ref()?.version
    }

    /// The `name` a `tools/call` gives, if it is a string.
    pub(crate) fn tool(&self) -> Option<Cow<'a, str>> {
        string(self.name)
    }

    /// The version a stateless request's `_meta` names, if it names one as a string.
    pub(crate) fn meta_version(&self) -> Option<Cow<'a, str>> {
        string(self.meta_version_raw())
    }
}

/// The string `raw` holds, if it holds one.
fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    serde_json::from_str(raw?.get()).ok()
}

/// Whether a request without a session is a 2026-07-28 one: its `_meta` names a protocol
/// version (whichever: a wrong one is the protocol's -32022 to give), or its
/// `MCP-Protocol-Version` one that is not of the handshake era.
pub(crate) fn is_stateless(headers: &HeaderMap, params: &Peek<'_>) -> bool {
    let in_meta = params.meta_version_raw().is_some();
    in_meta || header(headers, PROTOCOL_VERSION).is_some_and(|v| !LEGACY_VERSIONS.contains(&v))
}

/// A stateless request's headers agree with its body: -32020 (HTTP 400) otherwise.
pub(crate) fn modern_headers(
    headers: &HeaderMap,
    request: &Request,
    params: &Peek<'_>,
) -> Result<(), Refusal> {
    let mismatch = |message: String| Refusal::new(400, modern::HEADER_MISMATCH, message);
    let version = header(headers, PROTOCOL_VERSION)
        .ok_or_else(|| mismatch("missing MCP-Protocol-Version header".to_owned()))?;
    if let Some(meta) = params.meta_version_raw() {
        if string(Some(meta)).as_deref() != Some(version) {
            return Err(mismatch(format!(
                "MCP-Protocol-Version {version:?} does not match _meta's {}",
                meta.get()
            )));
        }
    }
    match header(headers, MCP_METHOD) {
        Some(method) if method == request.method => {}
        Some(method) => {
            return Err(mismatch(format!(
                "Mcp-Method {method:?} does not match the body's {:?}",
                request.method
            )))
        }
        None => return Err(mismatch("missing Mcp-Method header".to_owned())),
    }
    let named = match request.method.as_str() {
        "tools/call" | "prompts/get" => params.name,
        "resources/read" => params.uri,
        _ => return Ok(()),
    };
    let Some(name) = string(named) else {
        // The body itself is invalid; the protocol layer says so.
        return Ok(());
    };
    let name = &*name;
    match header(headers, MCP_NAME) {
        Some(given) if given.trim() == name || given.trim() == encode(name) => Ok(()),
        Some(given) => Err(mismatch(format!(
            "Mcp-Name {given:?} does not match the body's {name:?}"
        ))),
        None => Err(mismatch("missing Mcp-Name header".to_owned())),
    }
}

/// A stateless `tools/call`'s `Mcp-Param-*` headers agree with its arguments, as the tool's
/// `x-mcp-header` annotations ask: each present exactly when its argument is, and saying the
/// same (-32020 otherwise).
pub(crate) fn param_headers(
    headers: &HeaderMap,
    schema: &Value,
    params: &Peek<'_>,
) -> Result<(), Refusal> {
    let mismatch = |message: String| Refusal::new(400, modern::HEADER_MISMATCH, message);
    // A tool whose annotations are invalid is the server's own mistake, not the client's.
    let Ok(wanted) = ParamHeader::from_schema(schema) else {
        return Ok(());
    };
    if wanted.is_empty() {
        return Ok(());
    }
    // Only a tool whose arguments go into headers has them read here.
    let arguments: Value = params
        .arguments
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null);
    for param in wanted {
        let name = param.header_name();
        let given = header(headers, name.to_ascii_lowercase());
        match (param.text(&arguments), given) {
            (None, None) => {}
            (Some(_), None) => return Err(mismatch(format!("missing {name} header"))),
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "{name} header for an argument the body lacks"
                )))
            }
            (Some(text), Some(given)) => {
                let said = switchboard_codecs::mcp::modern::headers::decode(given)
                    .map_err(|e| mismatch(format!("{name}: {e}")))?;
                if said != text {
                    return Err(mismatch(format!(
                        "{name} {said:?} does not match the argument's {text:?}"
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port() {
        assert_eq!(host_name("LocalHost:3000"), "LocalHost");
        assert_eq!(host_name(" [::1]:80"), "[::1]");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("evil.com:1"), "evil.com");
        assert!(allowed(
            &Some(vec!["localhost".into()]),
            host_name("LocalHost:3000")
        ));
    }

    fn with(pairs: &[(hyper::header::HeaderName, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn a_post_must_be_json_and_accept_json_and_an_event_stream() {
        let json = (CONTENT_TYPE, "Application/JSON; charset=utf-8");
        let both = (ACCEPT, "application/json, text/event-stream;q=0.9");
        assert!(post(&with(&[json.clone(), both.clone()])).is_ok());
        assert!(post(&with(&[json.clone(), (ACCEPT, "*/*")])).is_ok());
        // Listed over two headers.
        let split = [
            json.clone(),
            (ACCEPT, "application/json"),
            (ACCEPT, " text/event-stream "),
        ];
        assert!(post(&with(&split)).is_ok());
        let status = |pairs: &[(hyper::header::HeaderName, &str)]| {
            post(&with(pairs)).err().map(|r| r.status)
        };
        assert_eq!(
            status(&[json.clone(), (ACCEPT, "application/json")]),
            Some(406)
        );
        assert_eq!(
            status(&[
                json.clone(),
                (ACCEPT, "text/event-streamx, application/json")
            ]),
            Some(406)
        );
        assert_eq!(status(&[json,]), Some(406));
        assert_eq!(
            status(&[(CONTENT_TYPE, "text/plain"), both.clone()]),
            Some(415)
        );
        assert_eq!(
            status(&[(CONTENT_TYPE, "application/jsonx"), both.clone()]),
            Some(415)
        );
        assert_eq!(status(&[both]), Some(415));
    }

    fn peek(params: &str) -> (Option<String>, bool, Option<String>) {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        let peek = Peek::of(Some(&raw));
        (
            peek.meta_version().map(Cow::into_owned),
            is_stateless(&HeaderMap::new(), &peek),
            peek.tool().map(Cow::into_owned),
        )
    }

    #[test]
    fn a_peek_reads_the_version_and_the_name_and_builds_nothing_else() {
        let key = modern::meta::PROTOCOL_VERSION;
        let params = format!(
            r#"{{"name":"e\u0063ho","arguments":{{"a":[1,2,{{"b":null}}]}},"_meta":{{"{key}":"2026-07-28","x":{{}}}}}}"#
        );
        assert_eq!(
            peek(&params),
            (Some("2026-07-28".into()), true, Some("echo".into()))
        );
        // A version that is not a string still makes the request a stateless one: the
        // protocol layer gives its -32022.
        let params = format!(r#"{{"_meta":{{"{key}":7}}}}"#);
        assert_eq!(peek(&params), (None, true, None));
        assert_eq!(
            peek(r#"{"name":3,"capabilities":{"experimental":{}}}"#),
            (None, false, None)
        );
        // Params that do not read (a duplicate key) are an empty peek.
        assert_eq!(peek(r#"{"name":"a","name":"b"}"#), (None, false, None));
    }

    #[test]
    fn a_foreign_host_or_origin_is_forbidden() {
        let config = Config::default();
        let mut headers = HeaderMap::new();
        headers.insert(HOST, "127.0.0.1:8080".parse().unwrap());
        assert!(origin_and_host(&headers, &config).is_ok());
        headers.insert(ORIGIN, "http://localhost:5173".parse().unwrap());
        assert!(origin_and_host(&headers, &config).is_ok());
        headers.insert(ORIGIN, "http://evil.example".parse().unwrap());
        assert_eq!(
            origin_and_host(&headers, &config).err().map(|r| r.status),
            Some(403)
        );
        headers.remove(ORIGIN);
        headers.insert(HOST, "evil.example".parse().unwrap());
        assert_eq!(
            origin_and_host(&headers, &config).err().map(|r| r.status),
            Some(403)
        );
        assert!(origin_and_host(&headers, &Config::default().allow_any_host()).is_ok());
    }
}
