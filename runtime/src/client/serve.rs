//! Answering a server's request (`roots/list`, `sampling/createMessage`,
//! `elicitation/create`) with the application's handlers: the one place that reads the
//! request, refuses what no handler declared, and turns the handler's answer into a result.
//!
//! Used for the requests a handshake-era server sends, and for the requests a stateless
//! server embeds in an input-required result: the same handlers answer both.

use std::sync::Arc;

use serde_json::Value;
use switchboard_codecs::jsonrpc::ErrorObject;
use switchboard_codecs::mcp::methods;

use super::elicitation::Elicitation;
use super::{roots, BoxFuture, ClientHandlers, SamplingRequest};

/// A handler's work: the result to send, or why the handler failed.
pub(crate) type Work = BoxFuture<Result<Value, String>>;

/// The work that answers `method`, or the error to answer at once (also for the
/// embedded requests of input-required results).
pub(crate) fn prepare(
    method: &str,
    params: Result<Value, String>,
    handlers: &ClientHandlers,
    server: Arc<str>,
) -> Result<(&'static str, Work), ErrorObject> {
    let not_found = || {
        ErrorObject::new(
            ErrorObject::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    };
    if let Some(forward) = handlers.forward.clone() {
        if matches!(
            method,
            methods::ROOTS_LIST | methods::SAMPLING_CREATE_MESSAGE | methods::ELICITATION_CREATE
        ) {
            let params = params.map_err(invalid_params)?;
            let method = method.to_owned();
            return Ok((
                "forwarded",
                Box::pin(async move { forward.forward(&server, &method, params).await }),
            ));
        }
    }
    match method {
        methods::ROOTS_LIST => {
            let handler = handlers.roots.clone().ok_or_else(not_found)?;
            Ok((
                "roots",
                Box::pin(async move { roots::into_result(handler.list_roots(&server).await?) }),
            ))
        }
        methods::SAMPLING_CREATE_MESSAGE => {
            let handler = handlers.sampling.clone().ok_or_else(not_found)?;
            let request = params
                .and_then(SamplingRequest::from_params)
                .map_err(invalid_params)?;
            if request.uses_tools() && !handler.handles_tools() {
                // The specification requires an error: tools were not declared.
                return Err(invalid_params(
                    "this client did not declare sampling.tools".into(),
                ));
            }
            Ok((
                "sampling",
                Box::pin(async move {
                    handler
                        .create_message(&server, request)
                        .await?
                        .into_result()
                }),
            ))
        }
        methods::ELICITATION_CREATE => {
            let handler = handlers.elicitation.clone().ok_or_else(not_found)?;
            let work: Work = match params
                .and_then(Elicitation::from_params)
                .map_err(invalid_params)?
            {
                Elicitation::Form(request) => Box::pin(async move {
                    Ok(handler.elicit(&server, request).await?.into_result(false))
                }),
                Elicitation::Url(_) if !handler.handles_url() => {
                    return Err(invalid_params(
                        "this client did not declare URL-mode elicitation".into(),
                    ))
                }
                Elicitation::Url(request) => Box::pin(async move {
                    Ok(handler
                        .elicit_url(&server, request)
                        .await?
                        .into_result(true))
                }),
            };
            Ok(("elicitation", work))
        }
        _ => Err(not_found()),
    }
}

fn invalid_params(message: String) -> ErrorObject {
    ErrorObject::new(ErrorObject::INVALID_PARAMS, message)
}
