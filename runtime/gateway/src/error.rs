//! How a runtime error reaches the front client: as the JSON-RPC error it would have got
//! from the upstream itself, or one that names the upstream and the tool.
//!
//! An upstream's JSON-RPC error passes through with its code, message and data (a -32042,
//! URL elicitations the user must complete first, too: only the front client can show
//! them). A name nobody offers, or that several upstreams offer, and a request the runtime
//! refused before sending it, are the client's mistake: -32602. A resource nobody lists is
//! the spec's resource-not-found. Everything else (a timeout, an upstream that is down,
//! restarting or crashed mid-call, an answer that is not valid JSON) is -32603 with the
//! runtime's message, which names the server and the tool, and `data` saying which
//! (`server`, `name`, `kind`). A tool of an upstream that is restarting is still in the
//! catalogue, so its call is never -32602: it waits for the restart, and past its deadline
//! is -32603 saying the server is restarting.

use switchboard::{Error, JsonRpcMapping};
use switchboard_server::{ErrorObject, HandlerError};

/// What the front client gets for `error`, raised while serving `what` (a tool, prompt or
/// resource name): the JSON-RPC error the runtime's kind maps to
/// ([`Error::to_jsonrpc`]), with `what` added to the `data` of the errors the runtime
/// describes itself.
pub(crate) fn to_front(error: &Error, what: &str) -> HandlerError {
    let answer = error.to_jsonrpc();
    let mut data = answer.data;
    if let (
        JsonRpcMapping::InvalidParams | JsonRpcMapping::InternalError,
        Some(serde_json::Value::Object(fields)),
    ) = (error.kind().jsonrpc(), data.as_mut())
    {
        fields.insert("name".to_owned(), what.into());
    }
    let mut object = ErrorObject::new(answer.code, answer.message);
    object.data = data.and_then(|d| serde_json::value::to_raw_value(&d).ok());
    HandlerError::Rpc(object)
}

/// The upstream answered something the front client cannot be given as it is (not JSON
/// that parses, a lone surrogate in a string).
pub(crate) fn unreadable(what: &str, detail: &serde_json::Error) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(
        ErrorObject::INTERNAL_ERROR,
        format!("the answer for `{what}` is not valid JSON for the client: {detail}"),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use switchboard::{ErrorContext, ErrorKind};

    use super::*;

    fn object(error: HandlerError) -> ErrorObject {
        match error {
            HandlerError::Rpc(object) => object,
            other => panic!("not an rpc error: {other:?}"),
        }
    }

    #[test]
    fn an_upstream_error_passes_through_with_its_code_and_data() {
        let error = ErrorContext::of_request(
            Arc::from("files"),
            Arc::from("tools/call"),
            Some(Arc::from("read")),
        )
        .error(ErrorKind::Rpc {
            code: -32042,
            message: "needs a url".into(),
            data: Some(Arc::new(json!({"elicitations": []}))),
        });
        let object = object(to_front(&error, "read"));
        assert_eq!(object.code, -32042);
        assert_eq!(object.message, "needs a url");
        assert_eq!(object.data.unwrap().get(), r#"{"elicitations":[]}"#);
    }

    #[test]
    fn a_missing_client_capability_stays_what_the_upstream_said() {
        let error = ErrorContext::of_request(
            Arc::from("files"),
            Arc::from("tools/call"),
            Some(Arc::from("ask")),
        )
        .error(ErrorKind::MissingClientCapability {
            missing: Arc::from(vec!["sampling".to_owned()]),
            message: "needs sampling".into(),
        });
        let object = object(to_front(&error, "ask"));
        assert_eq!(object.code, -32021);
        assert_eq!(
            object.data.unwrap().get(),
            r#"{"requiredCapabilities":{"sampling":{}}}"#
        );
    }

    #[test]
    fn an_unknown_tool_is_invalid_params_naming_it() {
        let error = ErrorContext::new()
            .with_tool(Some(Arc::from("nope")))
            .error(ErrorKind::UnknownTool);
        let object = object(to_front(&error, "nope"));
        assert_eq!(object.code, ErrorObject::INVALID_PARAMS);
        assert!(object.message.contains("nope"), "{}", object.message);
    }

    #[test]
    fn a_tool_whose_server_is_restarting_is_an_internal_error_saying_so_not_invalid_params() {
        let reason = "not ready within the call's deadline: it is restarting (last error: it disconnected: the server was killed by signal 9)";
        let error = ErrorContext::of_server(Arc::from("demo"))
            .with_tool(Some(Arc::from("echo")))
            .error(ErrorKind::Unavailable {
                because: switchboard::Unavailability::Restarting,
                reason: reason.into(),
                cause: None,
            });
        let object = object(to_front(&error, "echo"));
        assert_eq!(object.code, ErrorObject::INTERNAL_ERROR);
        assert!(object.message.contains("demo"), "{}", object.message);
        assert!(object.message.contains("restarting"), "{}", object.message);
        let data: serde_json::Value = serde_json::from_str(object.data.unwrap().get()).unwrap();
        assert_eq!(data["name"], "echo");
        assert_eq!(data["kind"], "Unavailable");
    }

    #[test]
    fn a_timeout_is_an_internal_error_naming_server_and_tool() {
        let error = ErrorContext::of_request(
            Arc::from("files"),
            Arc::from("tools/call"),
            Some(Arc::from("read")),
        )
        .with_request_id(7)
        .error(ErrorKind::Timeout {
            elapsed: std::time::Duration::from_millis(200),
            dropped_frames: 0,
        });
        let object = object(to_front(&error, "read"));
        assert_eq!(object.code, ErrorObject::INTERNAL_ERROR);
        assert!(object.message.contains("files"), "{}", object.message);
        assert!(object.message.contains("read"), "{}", object.message);
        let data: serde_json::Value = serde_json::from_str(object.data.unwrap().get()).unwrap();
        assert_eq!(data["server"], "files");
        assert_eq!(data["kind"], "Timeout");
    }
}
