//! The JSON-RPC 2.0 envelope: requests, notifications and responses.
//!
//! Params and results stay raw JSON ([`RawValue`]) so that routing an answer parses only the
//! envelope: the runtime reads `id` and whether it is a result or an error, and hands the raw
//! result to whoever asked for it.
//!
//! ```
//! use switchboard_codecs::jsonrpc::{Id, Message};
//!
//! let msg = Message::from_slice(br#"{"jsonrpc":"2.0","id":7,"result":{"ok":true}}"#).unwrap();
//! let Message::Response(resp) = msg else { panic!("a response") };
//! assert_eq!(resp.id, Some(Id::Number(7)));
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Error as _, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A request id: a number or a string. A request id is never null.
///
/// `-0` is read as `0`, so that an answer matches its request however the peer spells the
/// zero; other numbers must be integers written without a fraction or an exponent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    /// An integer id (Switchboard numbers its own requests).
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.into())
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => s.serialize_i64(*n),
            Id::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&RawValue>::deserialize(d)?;
        Id::from_raw(raw).map_err(D::Error::custom)
    }
}

impl Id {
    /// Parses an id from its raw JSON; `null`, floats and other types are refused.
    fn from_raw(raw: &RawValue) -> Result<Id, &'static str> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text)
                .map(|s| Id::String(s.into()))
                .map_err(|_| "id is not a valid string"),
            Some(b'-' | b'0'..=b'9') => text
                .parse::<i64>()
                .map(Id::Number)
                .map_err(|_| "id is not an integer"),
            Some(b'n') => Err("id is null"),
            _ => Err("id is neither a number nor a string"),
        }
    }
}

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id.
    pub id: Id,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The params, raw.
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, never answered.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The params, raw.
    pub params: Option<Box<RawValue>>,
}

/// The error object of an error response. It is read only from a JSON object (unknown fields
/// ignored), never from an array.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorObject {
    /// The error code (`-32601` method not found, …).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra data, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// Method not found (`-32601`).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params (`-32602`).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error (`-32603`).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Parse error (`-32700`).
    pub const PARSE_ERROR: i64 = -32700;
    /// Invalid request (`-32600`).
    pub const INVALID_REQUEST: i64 = -32600;

    /// An error object with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// The fields of [`ErrorObject`] as serde derives them, read through [`ObjectOnly`].
#[derive(Deserialize)]
struct ErrorFields {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Box<RawValue>>,
}

impl<'de> Deserialize<'de> for ErrorObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let ObjectOnly(ErrorFields {
            code,
            message,
            data,
        }) = ObjectOnly::deserialize(d)?;
        Ok(ErrorObject {
            code,
            message,
            data,
        })
    }
}

/// Reads `T` from a JSON object only. serde's derived impls also read a struct from an array
/// of its fields in order, so `["2.0",7,"tools/call",{}]` would pass for a request; no peer
/// means that, and JSON-RPC says objects.
#[derive(Debug)]
pub struct ObjectOnly<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }

        d.deserialize_map(Fields(PhantomData)).map(ObjectOnly)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A response: a result or an error. Only an error response may lack an id (the peer could
/// not read the request's id).
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request this answers.
    pub id: Option<Id>,
    /// The result or the error.
    pub outcome: Outcome,
}

/// What a response carries.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A successful result, raw (`null` is a result).
    Result(Box<RawValue>),
    /// An error.
    Error(ErrorObject),
}

/// Any JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// Why bytes are not a JSON-RPC message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not a JSON-RPC 2.0 message. `id` is the message's id when it could be read,
    /// so that a malformed answer can still fail the request it answers.
    #[error("not JSON-RPC 2.0: {reason}")]
    NotJsonRpc {
        /// What is wrong.
        reason: String,
        /// The id, when readable.
        id: Option<Id>,
    },
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    // `Option`'s own impl reads `null` as absent; a null request id must stay visible to be
    // refused.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    // `null` is a valid result.
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// For `#[serde(deserialize_with = "present")]` on an `Option` field: `Some` when the field is
/// there, whatever its value, `null` included (`Option`'s own impl reads `null` as absent).
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

impl Message {
    /// Parses one message from JSON bytes (one object; batches are the codec's business).
    pub fn from_slice(bytes: &[u8]) -> Result<Message, ParseError> {
        Self::from_parsed(serde_json::from_slice(bytes))
    }

    /// Parses one message from JSON text: as [`from_slice`](Self::from_slice), without
    /// checking the UTF-8 of every string again (the codec has checked the whole line).
    pub fn parse(text: &str) -> Result<Message, ParseError> {
        Self::from_parsed(serde_json::from_str(text))
    }

    fn from_parsed(
        parsed: serde_json::Result<ObjectOnly<Envelope<'_>>>,
    ) -> Result<Message, ParseError> {
        let env: Envelope<'_> = match parsed {
            Ok(ObjectOnly(env)) => env,
            Err(e) if e.is_data() => {
                // Valid JSON that is not an object with the expected field types.
                return Err(ParseError::NotJsonRpc {
                    reason: e.to_string(),
                    id: None,
                });
            }
            Err(e) => return Err(ParseError::NotJson(e.to_string())),
        };
        Self::from_envelope(env)
    }

    fn from_envelope(env: Envelope<'_>) -> Result<Message, ParseError> {
        let id = match env.id {
            None => None,
            Some(raw) if raw.get() == "null" => None,
            Some(raw) => Some(Id::from_raw(raw).map_err(|reason| ParseError::NotJsonRpc {
                reason: reason.to_owned(),
                id: None,
            })?),
        };
        let bad = |reason: &str, id: Option<Id>| ParseError::NotJsonRpc {
            reason: reason.to_owned(),
            id,
        };
        if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            return Err(bad("missing or wrong \"jsonrpc\" (must be \"2.0\")", id));
        }
        // JSON-RPC 1.0 peers write the member they do not use as `null`: beside a method or
        // the other outcome, a null `result` or `error` is a placeholder, not an outcome.
        let error = env.error.filter(|e| !is_null(e));
        if let Some(method) = env.method {
            if env.result.as_deref().is_some_and(|r| !is_null(r)) || error.is_some() {
                return Err(bad(
                    "a message with \"method\" has \"result\" or \"error\"",
                    id,
                ));
            }
            if env.id.is_some() && id.is_none() {
                return Err(bad("a request id is null", None));
            }
            return Ok(match id {
                Some(id) => Message::Request(Request {
                    id,
                    method,
                    params: env.params,
                }),
                None => Message::Notification(Notification {
                    method,
                    params: env.params,
                }),
            });
        }
        let result = match env.result {
            Some(r) if is_null(&r) && error.is_some() => None,
            result => result,
        };
        let outcome = match (result, error) {
            (Some(result), None) => {
                if id.is_none() {
                    return Err(bad("a result without an id", None));
                }
                Outcome::Result(result)
            }
            (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
                Ok(error) => Outcome::Error(error),
                Err(e) => return Err(bad(&format!("invalid error object: {e}"), id)),
            },
            (Some(_), Some(_)) => return Err(bad("both \"result\" and \"error\"", id)),
            (None, None) => return Err(bad("neither \"method\", \"result\" nor \"error\"", id)),
        };
        Ok(Message::Response(Response { id, outcome }))
    }

    /// Serializes the message as one line of JSON (no trailing newline).
    ///
    /// Raw params, results and error data are written as they came, except that their raw line
    /// breaks (whitespace, in valid JSON) become spaces: the text is always a single line.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.write_to(&mut out);
        out
    }

    /// Appends the message as one line of JSON to `out` (no trailing newline), as
    /// [`to_vec`](Message::to_vec) does.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        // Serializing owned, already-valid JSON into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, self);
        unbreak(&mut out[start..]);
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }

    /// The id, for requests and responses that have one.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Notification(_) => None,
            Message::Response(r) => r.id.as_ref(),
        }
    }
}

/// Turns the raw line breaks of JSON text into spaces, in place, so that it is one line.
///
/// In valid JSON a raw `\n` or `\r` can only be whitespace between tokens (strings must escape
/// control characters), so the value is unchanged. Pretty-printed raw params keep their breaks
/// through serialization; a peer reading lines would see them as broken frames.
pub(crate) fn unbreak(json: &mut [u8]) {
    // Compact JSON has no break: one vectorized scan and nothing else.
    let Some(first) = memchr::memchr2(b'\n', b'\r', json) else {
        return;
    };
    for b in &mut json[first..] {
        if matches!(*b, b'\n' | b'\r') {
            *b = b' ';
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Outcome::Result(v) => map.serialize_entry("result", v)?,
                    Outcome::Error(e) => map.serialize_entry("error", e)?,
                }
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let ObjectOnly(env) = ObjectOnly::<Envelope<'de>>::deserialize(d)?;
        Message::from_envelope(env).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Message, ParseError> {
        Message::from_slice(s.as_bytes())
    }

    #[test]
    fn classifies_the_three_kinds() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            Ok(Message::Request(Request {
                id: Id::String(_),
                ..
            }))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        let Ok(Message::Response(r)) =
            parse(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}}"#)
        else {
            panic!("error response")
        };
        assert_eq!(r.id, Some(Id::Number(3)));
        assert!(matches!(
            r.outcome,
            Outcome::Error(ErrorObject { code: -32601, .. })
        ));
    }

    #[test]
    fn result_stays_raw() {
        let Ok(Message::Response(r)) = parse(r#"{"jsonrpc":"2.0","id":1,"result":{"a": [1, 2]}}"#)
        else {
            panic!("response")
        };
        let Outcome::Result(raw) = r.outcome else {
            panic!("result")
        };
        assert_eq!(raw.get(), r#"{"a": [1, 2]}"#);
    }

    #[test]
    fn null_request_id_is_refused() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Err(ParseError::NotJsonRpc { .. })
        ));
    }

    #[test]
    fn error_without_id_is_a_response() {
        let Ok(Message::Response(r)) =
            parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#)
        else {
            panic!("response")
        };
        assert_eq!(r.id, None);
    }

    #[test]
    fn malformed_answer_keeps_its_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":9}"#,
            r#"{"jsonrpc":"2.0","id":9,"result":1,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":9,"error":{"code":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":9,"result":1}"#,
        ] {
            match parse(line) {
                Err(ParseError::NotJsonRpc { id, .. }) => assert_eq!(id, Some(Id::Number(9))),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn not_json_and_not_jsonrpc_differ() {
        assert!(matches!(parse("hello"), Err(ParseError::NotJson(_))));
        assert!(matches!(parse("[1,2]"), Err(ParseError::NotJsonRpc { .. })));
        assert!(matches!(parse("42"), Err(ParseError::NotJsonRpc { .. })));
        assert!(matches!(
            parse(r#"{"id":1.5,"jsonrpc":"2.0","result":1}"#),
            Err(ParseError::NotJsonRpc { .. })
        ));
    }

    #[test]
    fn round_trips() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":"s","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
        ] {
            let msg = parse(line).unwrap();
            assert_eq!(String::from_utf8(msg.to_vec()).unwrap(), line);
        }
    }

    #[test]
    fn arrays_are_not_messages_nor_error_objects() {
        // serde's derived impls read an array of the fields in order; JSON-RPC means objects.
        for line in [
            r#"["2.0",7,"tools/call",{}]"#,
            r#"["2.0",7,null,null,null,null]"#,
            r#"{"jsonrpc":"2.0","id":1,"error":[-32601,"x"]}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":[-32601,"x",null]}"#,
        ] {
            assert!(
                matches!(parse(line), Err(ParseError::NotJsonRpc { .. })),
                "{line} was accepted"
            );
        }
        assert!(serde_json::from_str::<ErrorObject>(r#"[-32601,"x"]"#).is_err());
        assert!(serde_json::from_str::<Message>(r#"["2.0",7,"tools/call",{}]"#).is_err());
        let Err(ParseError::NotJsonRpc { id, .. }) =
            parse(r#"{"jsonrpc":"2.0","id":1,"error":[-32601,"x"]}"#)
        else {
            panic!("refused")
        };
        assert_eq!(id, Some(Id::Number(1)));
        // Objects still work, unknown fields still ignored.
        let e: ErrorObject = serde_json::from_str(r#"{"code":1,"message":"m","x":2}"#).unwrap();
        assert_eq!((e.code, e.message.as_str()), (1, "m"));
    }

    #[test]
    fn null_result_is_a_result() {
        let line = r#"{"jsonrpc":"2.0","id":1,"result":null}"#;
        let Ok(Message::Response(r)) = parse(line) else {
            panic!("a response")
        };
        assert_eq!(r.id, Some(Id::Number(1)));
        let Outcome::Result(raw) = &r.outcome else {
            panic!("a result")
        };
        assert_eq!(raw.get(), "null");
        assert_eq!(Message::Response(r).to_vec(), line.as_bytes());
        // A null beside the other member is a placeholder (JSON-RPC 1.0 peers write both).
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":1,"message":"m"}}"#),
            Ok(Message::Response(Response {
                outcome: Outcome::Error(_),
                ..
            }))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":2,"error":null}"#),
            Ok(Message::Response(Response {
                outcome: Outcome::Result(_),
                ..
            }))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"x","result":null}"#),
            Ok(Message::Request(_))
        ));
        // Still an answer needs one of them, and a result needs an id.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"error":null}"#,
            r#"{"jsonrpc":"2.0","result":null}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
        ] {
            assert!(parse(line).is_err(), "{line} was accepted");
        }
    }

    #[test]
    fn negative_zero_id_is_zero_everywhere() {
        let request = parse(r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#).unwrap();
        assert_eq!(request.id(), Some(&Id::Number(0)));
        // The answer to request 0 matches it, whichever way the peer spelled the zero.
        for line in [
            r#"{"jsonrpc":"2.0","id":-0,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
        ] {
            assert_eq!(parse(line).unwrap().id(), Some(&Id::from(0)), "{line}");
        }
        let Err(ParseError::NotJsonRpc { id, .. }) = parse(r#"{"jsonrpc":"2.0","id":-0}"#) else {
            panic!("refused")
        };
        assert_eq!(id, Some(Id::Number(0)));
        assert_eq!(serde_json::from_str::<Id>("-0").unwrap(), Id::Number(0));
        let cancelled: crate::mcp::CancelledNotificationParams =
            serde_json::from_str(r#"{"requestId":-0}"#).unwrap();
        assert_eq!(cancelled.request_id, Id::Number(0));
        let progress: crate::mcp::ProgressNotificationParams =
            serde_json::from_str(r#"{"progressToken":-0,"progress":1}"#).unwrap();
        assert_eq!(
            progress.progress_token,
            crate::mcp::ProgressToken::Number(0)
        );
        // Other spellings of a number that is not plainly an integer stay refused.
        for id in ["0.0", "1e2", "-1.0"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":1}}"#);
            assert!(parse(&line).is_err(), "{line} was accepted");
        }
    }
}
