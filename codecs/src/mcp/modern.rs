//! The shapes of protocol 2026-07-28, the stateless era: `server/discover`, the `_meta`
//! keys every request carries, `resultType`, input-required results (MRTR) and the era's
//! error codes.
//!
//! A modern client sends no `initialize`: each request says who it is and what it can do
//! in `params._meta` (the [`meta`] keys), and each result says in `resultType` whether it
//! is complete or asks for input first ([`ResultType`], [`InputRequired`]).
//!
//! ```
//! use switchboard_codecs::mcp::modern::{DiscoverResult, ResultType};
//!
//! let discover: DiscoverResult = serde_json::from_str(
//!     r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
//!         "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
//! )?;
//! assert_eq!(discover.server_info().map(|i| i.name), Some("s".to_owned()));
//! assert_eq!(ResultType::of(r#"{"content":[]}"#), Ok(ResultType::Complete));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{Implementation, ServerCapabilities};

pub mod headers;
pub mod listen;

/// The stateless protocol version Switchboard speaks, and asks for first.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// Every stateless protocol version Switchboard speaks, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// Request: what the server supports (`_meta` only → [`DiscoverResult`]).
pub const SERVER_DISCOVER: &str = "server/discover";

/// Error: the HTTP headers of a request do not match its body.
pub const HEADER_MISMATCH: i64 = -32020;
/// Error: the server needs a client capability the request did not declare
/// (`data.requiredCapabilities`).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// Error: the server does not speak the request's protocol version (`data.supported`,
/// `data.requested`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

pub mod meta {
    //! The reserved `_meta` keys of the stateless era.

    /// Request, required: the protocol version of this request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Request, required: the client's capabilities.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Request, recommended: who the client is.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Request, optional: the least severe log level the client wants for this request.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Result: who the server is.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Notification (and the result closing a listen): the id of the
    /// `subscriptions/listen` request whose stream carried it.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// The result of `server/discover`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The protocol versions the server speaks (required: a result without them is no
    /// discover result).
    pub supported_versions: Vec<String>,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// How to use the server, for a model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Protocol metadata (the server's identity).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know (`resultType`, `ttlMs`, `cacheScope`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// The server's identity from `_meta`, when it sent a valid one.
    pub fn server_info(&self) -> Option<Implementation> {
        server_info(self.meta.as_ref()?)
    }
}

/// The server's identity in a result's `_meta`, when it is there and valid.
pub fn server_info(meta: &Map<String, Value>) -> Option<Implementation> {
    serde_json::from_value(meta.get(meta::SERVER_INFO)?.clone()).ok()
}

/// The error data of `-32022`: what the server speaks.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct UnsupportedVersionData {
    /// The versions the server speaks.
    #[serde(default)]
    pub supported: Vec<String>,
    /// The version the request asked for.
    #[serde(default)]
    pub requested: Option<String>,
}

impl UnsupportedVersionData {
    /// The newest version of ours that the server speaks too.
    pub fn pick(&self) -> Option<&'static str> {
        SUPPORTED_VERSIONS
            .iter()
            .copied()
            .find(|ours| self.supported.iter().any(|theirs| theirs == ours))
    }
}

/// A modern result's `resultType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultType {
    /// The request is done (also what an absent `resultType` means).
    Complete,
    /// The server needs input first: the result is an [`InputRequired`].
    InputRequired,
    /// The server runs the request as a task (the tasks extension,
    /// [`tasks::EXTENSION`](super::tasks::EXTENSION)): the result is the task.
    Task,
}

/// A `resultType` this version does not know (the spec makes it invalid).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown resultType {0:?}")]
pub struct UnknownResultType(pub String);

impl ResultType {
    /// Reads `resultType` from a raw result without parsing the rest of it (the fields are
    /// read as borrowed raw values and dropped).
    pub fn of(result: &str) -> Result<ResultType, UnknownResultType> {
        #[derive(Deserialize)]
        struct Peek<'a> {
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<&'a RawValue>,
        }
        let Ok(peek) = serde_json::from_str::<Peek<'_>>(result) else {
            // Not an object: not ours to judge here; whoever parses it will say why.
            return Ok(ResultType::Complete);
        };
        match peek.result_type.map(|raw| raw.get()) {
            None | Some("\"complete\"") => Ok(ResultType::Complete),
            Some("\"input_required\"") => Ok(ResultType::InputRequired),
            Some("\"task\"") => Ok(ResultType::Task),
            Some(other) => Err(UnknownResultType(other.to_owned())),
        }
    }
}

/// An input-required result: requests the client must fulfil, and state to echo, before
/// it retries the original request.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequired {
    /// The server's requests, by key; each answer goes back under the same key.
    #[serde(default)]
    pub input_requests: Option<Map<String, Value>>,
    /// Opaque state, echoed byte for byte in the retry.
    #[serde(default)]
    pub request_state: Option<Box<RawValue>>,
}

/// One embedded request of an [`InputRequired`].
#[derive(Debug, Clone, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its parameters.
    #[serde(default)]
    pub params: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_type_defaults_to_complete_and_refuses_unknown_values() {
        assert_eq!(ResultType::of("{}"), Ok(ResultType::Complete));
        assert_eq!(
            ResultType::of(r#"{"resultType":"complete","x":[1,{"a":2}]}"#),
            Ok(ResultType::Complete)
        );
        assert_eq!(
            ResultType::of(r#"{"resultType":"input_required","requestState":"s"}"#),
            Ok(ResultType::InputRequired)
        );
        assert_eq!(
            ResultType::of(r#"{"resultType":"task","taskId":"t"}"#),
            Ok(ResultType::Task)
        );
        assert_eq!(
            ResultType::of(r#"{"resultType":"later"}"#),
            Err(UnknownResultType("\"later\"".into()))
        );
    }

    #[test]
    fn request_state_is_kept_byte_for_byte() {
        let text = r#"{"resultType":"input_required","requestState":"a\u00e9\"b",
                       "inputRequests":{"k":{"method":"roots/list"}}}"#;
        let input: InputRequired = serde_json::from_str(text).unwrap();
        assert_eq!(input.request_state.unwrap().get(), r#""a\u00e9\"b""#);
        let request: InputRequest =
            serde_json::from_value(input.input_requests.unwrap()["k"].clone()).unwrap();
        assert_eq!(request.method, "roots/list");
    }

    #[test]
    fn a_version_is_picked_from_the_supported_list() {
        let data: UnsupportedVersionData =
            serde_json::from_str(r#"{"supported":["2099-01-01","2026-07-28"],"requested":"x"}"#)
                .unwrap();
        assert_eq!(data.pick(), Some(PROTOCOL_VERSION));
        let none: UnsupportedVersionData = serde_json::from_str(r#"{"supported":["1"]}"#).unwrap();
        assert_eq!(none.pick(), None);
    }
}
