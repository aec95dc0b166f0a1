//! A tool call's arguments, as its request carried them.
//!
//! A handshake-era call's arguments come as the JSON text of the request's line, and a tool
//! reads them straight into the type it takes ([`Arguments::parse`], borrowing its strings
//! where it can). Building a tree of them first, for every call, then dropping it, was the
//! largest single cost of serving a call that does little; a tool that wants the tree asks
//! for it ([`Arguments::into_value`]).

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A tool call's arguments: an object, unless the client sent something else (which the
/// tool refuses, with an `isError` result, as MCP wants).
#[derive(Debug, Clone)]
pub struct Arguments(Repr);

#[derive(Debug, Clone)]
enum Repr {
    /// The request's own text of them, checked as JSON syntax but not yet read.
    Raw(Box<RawValue>),
    /// A tree: read by a path that had to read the whole params, or built by the caller.
    Value(Value),
}

impl Arguments {
    /// The arguments as the request's text, which [`parse`](Self::parse) reads on demand.
    pub(crate) fn raw(raw: Box<RawValue>) -> Arguments {
        Arguments(Repr::Raw(raw))
    }

    /// Whether they are a JSON object (`{}` when the request had none).
    pub fn is_object(&self) -> bool {
        match &self.0 {
            // A raw value is the value's own text, with no whitespace around it.
            Repr::Raw(raw) => raw.get().starts_with('{'),
            Repr::Value(value) => value.is_object(),
        }
    }

    /// Reads them into `T`, borrowing from them where `T` borrows (a `&str` or a
    /// `Cow<str>` field with `#[serde(borrow)]`).
    ///
    /// # Errors
    /// When they are not a `T`, or (raw) hold a string that is not valid JSON text, such as
    /// a lone surrogate escape.
    pub fn parse<'de, T: Deserialize<'de>>(&'de self) -> Result<T, serde_json::Error> {
        match &self.0 {
            Repr::Raw(raw) => serde_json::from_str(raw.get()),
            Repr::Value(value) => T::deserialize(value),
        }
    }

    /// Reads them into `T`, or says why not: the path of the field that failed and what
    /// was wrong with it (`items[2].price: invalid type: string "x", expected f64`).
    pub(crate) fn read<T: DeserializeOwned>(&self) -> Result<T, String> {
        let read = match &self.0 {
            Repr::Raw(raw) => {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(raw.get()))
            }
            Repr::Value(value) => serde_path_to_error::deserialize(value),
        };
        read.map_err(|e| crate::schema::describe(&e))
    }

    /// The arguments as a tree.
    ///
    /// # Errors
    /// When (raw) they hold a string that is not valid JSON text, such as a lone surrogate
    /// escape.
    pub fn into_value(self) -> Result<Value, serde_json::Error> {
        match self.0 {
            Repr::Raw(raw) => serde_json::from_str(raw.get()),
            Repr::Value(value) => Ok(value),
        }
    }

    /// The arguments as JSON text: the request's own (its strings' escapes not decoded,
    /// so a lone surrogate escape passes), or a tree's, written.
    ///
    /// # Errors
    /// When a tree cannot be written (a map with keys that are not strings).
    pub fn into_json(self) -> Result<Box<RawValue>, serde_json::Error> {
        match self.0 {
            Repr::Raw(raw) => Ok(raw),
            Repr::Value(value) => serde_json::value::to_raw_value(&value),
        }
    }
}

/// No arguments: `{}`.
impl Default for Arguments {
    fn default() -> Self {
        Arguments(Repr::Value(Value::Object(Map::new())))
    }
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Self {
        Arguments(Repr::Value(value))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[derive(Deserialize)]
    struct Text<'a> {
        #[serde(borrow)]
        text: Cow<'a, str>,
    }

    fn raw(text: &str) -> Arguments {
        Arguments::raw(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn raw_and_tree_arguments_read_the_same() {
        for args in [
            raw(r#"{"text":"hi \u00e9"}"#),
            Arguments::from(serde_json::json!({"text": "hi é"})),
        ] {
            assert!(args.is_object());
            assert_eq!(args.parse::<Text<'_>>().unwrap().text, "hi é");
            assert_eq!(
                args.into_value().unwrap(),
                serde_json::json!({"text": "hi é"})
            );
        }
    }

    #[test]
    fn a_plain_string_is_borrowed_from_the_request() {
        let args = raw(r#"{"text":"hello"}"#);
        assert!(matches!(
            args.parse::<Text<'_>>().unwrap().text,
            Cow::Borrowed("hello")
        ));
    }

    #[test]
    fn what_is_not_an_object_says_so() {
        for args in [raw(r#"["x"]"#), raw(r#""x""#), Arguments::from(Value::Null)] {
            assert!(!args.is_object());
        }
        assert!(Arguments::default().is_object());
    }

    #[test]
    fn as_json_text_raw_arguments_are_the_request_s_own() {
        let text = r#"{"b":1, "a":"\u00e9"}"#;
        assert_eq!(raw(text).into_json().unwrap().get(), text);
        let tree = Arguments::from(serde_json::json!({"a": "é"}));
        assert_eq!(tree.into_json().unwrap().get(), r#"{"a":"é"}"#);
    }

    #[test]
    fn a_lone_surrogate_fails_to_read_rather_than_passing_on() {
        let args = raw(r#"{"text":"\ud800"}"#);
        assert!(args.parse::<Text<'_>>().is_err());
        assert!(args.into_value().is_err());
    }
}
