//! `elicitation/create`: forms (in band) and URLs the user opens (out of band, 2025-11-25).

use std::fmt;

use serde_json::{Map, Value};

use super::BoxFuture;

/// Answers `elicitation/create`.
pub trait ElicitationHandler: Send + Sync + fmt::Debug + 'static {
    /// Asks the user to fill in a form (or decides for them). `Err` answers the server with a
    /// JSON-RPC error.
    fn elicit(
        &self,
        server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>>;

    /// Whether this handler takes URL-mode requests ([`elicit_url`](Self::elicit_url)); declares
    /// `elicitation.url`. Without it a URL-mode request is refused with -32602.
    fn handles_url(&self) -> bool {
        false
    }

    /// Asks the user whether to open `request.url` (show them its host first, as the
    /// specification requires). Answer [`ElicitationResponse::accept_url`] once they agreed:
    /// the interaction itself happens out of band, and the server may say when it is over
    /// ([`elicitation_complete`](Self::elicitation_complete)).
    fn elicit_url(
        &self,
        server: &str,
        request: UrlElicitation,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let _ = (server, request);
        Box::pin(async { Err("this client does not handle URL-mode elicitation".to_owned()) })
    }

    /// The server says a URL-mode elicitation finished (`notifications/elicitation/complete`).
    ///
    /// Delivered as the server sent it: the application knows which elicitations it started
    /// (from [`elicit_url`](Self::elicit_url) and from
    /// [`ErrorKind::UrlElicitationRequired`](crate::ErrorKind::UrlElicitationRequired)) and ignores
    /// other ids, as the specification requires of clients. Called in a task of its own on
    /// the runtime's thread: hand the id on (a channel) rather than block.
    fn elicitation_complete(&self, server: &str, elicitation_id: String) {
        let _ = (server, elicitation_id);
    }
}

/// A form-mode `elicitation/create` request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// What to ask the user.
    pub message: String,
    /// The JSON Schema of the form (a flat object of primitive properties).
    pub requested_schema: Value,
    /// The params as received.
    pub raw: Value,
}

impl ElicitationRequest {
    pub(crate) fn from_params(params: Value) -> Result<Self, String> {
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .ok_or("elicitation/create needs a string `message`")?
            .to_owned();
        let requested_schema = params
            .get("requestedSchema")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        Ok(ElicitationRequest {
            message,
            requested_schema,
            raw: params,
        })
    }

    /// The `default` of every property of the requested schema that has one.
    pub fn defaults(&self) -> Map<String, Value> {
        self.requested_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter_map(|(name, schema)| {
                        schema.get("default").map(|d| (name.clone(), d.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A URL-mode elicitation (2025-11-25): a URL the server wants the user to open, from an
/// `elicitation/create` request or from a -32042 error answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UrlElicitation {
    /// Why the user should open it.
    pub message: String,
    /// The URL.
    pub url: String,
    /// The server's id for this elicitation (opaque), named again by
    /// `notifications/elicitation/complete`.
    pub elicitation_id: String,
    /// The params as received.
    pub raw: Value,
}

impl UrlElicitation {
    pub(crate) fn from_params(params: Value) -> Result<Self, String> {
        let field = |name: &str| {
            params
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("a URL-mode elicitation needs a string `{name}`"))
        };
        let (message, url, elicitation_id) =
            (field("message")?, field("url")?, field("elicitationId")?);
        Ok(UrlElicitation {
            message,
            url,
            elicitation_id,
            raw: params,
        })
    }
}

/// Which mode an `elicitation/create` request is in.
#[derive(Debug)]
pub(crate) enum Elicitation {
    Form(ElicitationRequest),
    Url(UrlElicitation),
}

impl Elicitation {
    /// Reads the params by their `mode` (absent means form, as the specification says).
    pub(crate) fn from_params(params: Value) -> Result<Self, String> {
        match params.get("mode").map(|m| m.as_str()) {
            None | Some(Some("form")) => ElicitationRequest::from_params(params).map(Self::Form),
            Some(Some("url")) => UrlElicitation::from_params(params).map(Self::Url),
            Some(other) => Err(format!(
                "unknown elicitation mode {}",
                other.unwrap_or("(not a string)")
            )),
        }
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationResponse {
    action: &'static str,
    content: Option<Map<String, Value>>,
}

impl ElicitationResponse {
    /// The user submitted the form.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitationResponse {
            action: "accept",
            content: Some(content),
        }
    }

    /// The user agreed to open the URL (URL mode, where an answer has no content).
    pub fn accept_url() -> Self {
        ElicitationResponse {
            action: "accept",
            content: None,
        }
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitationResponse {
            action: "decline",
            content: None,
        }
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        ElicitationResponse {
            action: "cancel",
            content: None,
        }
    }

    /// The `ElicitResult`. URL-mode answers never carry content (the specification omits
    /// it: the data went to the server out of band), whatever the handler gave.
    pub(crate) fn into_result(self, url_mode: bool) -> Value {
        let mut result = Map::new();
        result.insert("action".into(), Value::from(self.action));
        if let (Some(content), false) = (self.content, url_mode) {
            result.insert("content".into(), Value::Object(content));
        }
        Value::Object(result)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug)]
    pub(crate) struct FormOnly;

    impl ElicitationHandler for FormOnly {
        fn elicit(
            &self,
            _: &str,
            _: ElicitationRequest,
        ) -> BoxFuture<Result<ElicitationResponse, String>> {
            Box::pin(async { Ok(ElicitationResponse::decline()) })
        }
    }

    #[derive(Debug)]
    pub(crate) struct WithUrl;

    impl ElicitationHandler for WithUrl {
        fn elicit(
            &self,
            _: &str,
            _: ElicitationRequest,
        ) -> BoxFuture<Result<ElicitationResponse, String>> {
            Box::pin(async { Ok(ElicitationResponse::decline()) })
        }

        fn handles_url(&self) -> bool {
            true
        }
    }

    #[test]
    fn defaults_come_from_the_schema() {
        let request = ElicitationRequest::from_params(json!({
            "message": "who?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "nick": {"type": "string"}
            }}
        }))
        .unwrap();
        let d = request.defaults();
        assert_eq!(d.len(), 2);
        assert_eq!(d["name"], "John Doe");
        assert_eq!(d["age"], 30);
        let result = ElicitationResponse::accept(d).into_result(false);
        assert_eq!(result["action"], "accept");
        assert_eq!(result["content"]["age"], 30);
        assert_eq!(
            ElicitationResponse::decline().into_result(false),
            json!({"action": "decline"})
        );
    }

    #[test]
    fn modes_are_read_from_the_params() {
        let form = Elicitation::from_params(json!({"message": "m", "requestedSchema": {}}));
        assert!(matches!(form, Ok(Elicitation::Form(_))), "{form:?}");
        let url = Elicitation::from_params(json!({
            "mode": "url", "message": "m", "url": "https://x.example/a", "elicitationId": "e1"
        }));
        let Ok(Elicitation::Url(url)) = url else {
            panic!("{url:?}")
        };
        assert_eq!(
            (url.url.as_str(), url.elicitation_id.as_str()),
            ("https://x.example/a", "e1")
        );
        assert!(
            Elicitation::from_params(json!({"mode": "url", "message": "m", "url": "u"})).is_err()
        );
        assert!(Elicitation::from_params(json!({"mode": "telepathy", "message": "m"})).is_err());
        assert!(Elicitation::from_params(json!({"mode": 3, "message": "m"})).is_err());
        // A URL-mode answer never carries content.
        let answer = ElicitationResponse::accept(Map::new()).into_result(true);
        assert_eq!(answer, json!({"action": "accept"}));
    }
}
