//! `roots/list`: the directories and files the application lets servers work on.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::BoxFuture;

/// Answers `roots/list`. When the roots change, call
/// [`Runtime::roots_changed`](crate::Runtime::roots_changed) so servers ask again.
pub trait RootsHandler: Send + Sync + fmt::Debug + 'static {
    /// The roots now. `Err` answers the server with a JSON-RPC error.
    fn list_roots(&self, server: &str) -> BoxFuture<Result<Vec<Root>, String>>;
}

/// A directory or file a server may work on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Root {
    /// Its URI; the specification allows only `file://` for now.
    pub uri: String,
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Protocol metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl Root {
    /// A root at `uri` (`file://…`), without a name.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
            meta: None,
        }
    }

    /// Gives it a display name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The `ListRootsResult`, or why the handler's roots cannot be sent.
pub(crate) fn into_result(roots: Vec<Root>) -> Result<Value, String> {
    // Sending a root the specification does not allow would be a malformed answer: it is
    // the handler's mistake, reported as such.
    if let Some(bad) = roots.iter().find(|r| !r.uri.starts_with("file://")) {
        return Err(format!(
            "the roots handler gave `{}`, but roots must be file:// URIs",
            bad.uri
        ));
    }
    serde_json::to_value(serde_json::json!({ "roots": roots })).map_err(|e| e.to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug)]
    pub(crate) struct Fixed;

    impl RootsHandler for Fixed {
        fn list_roots(&self, _: &str) -> BoxFuture<Result<Vec<Root>, String>> {
            Box::pin(async { Ok(vec![Root::new("file:///tmp")]) })
        }
    }

    #[test]
    fn roots_are_file_uris_with_optional_names() {
        let result = into_result(vec![
            Root::new("file:///home/me/p").name("p"),
            Root::new("file:///tmp"),
        ])
        .unwrap();
        assert_eq!(
            result,
            json!({"roots": [{"uri": "file:///home/me/p", "name": "p"}, {"uri": "file:///tmp"}]})
        );
        let err = into_result(vec![Root::new("https://example.com")]).unwrap_err();
        assert!(err.contains("https://example.com"), "{err}");
    }
}
