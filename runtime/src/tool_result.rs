//! A tool call's raw answer made typed: parsed as a `CallToolResult` and checked against the
//! tool's output schema, for plain calls and for tasks alike.

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::error::{ErrorContext, ErrorKind, Result};
use crate::handle::ServerHandle;
use crate::model::CallToolResult;

/// A call's raw answer, with the server and tool it went to.
pub(crate) type Sent = (Box<RawValue>, ServerHandle, Arc<str>);

/// The typed result of a sent call, checked against the tool's output schema.
pub(crate) fn typed((raw, handle, tool): Sent) -> Result<CallToolResult> {
    let core = &handle.core;
    match serde_json::from_str::<CallToolResult>(raw.get()) {
        Ok(mut result) => {
            if let (Some(structured), false) = (&result.structured_content, result.is_error()) {
                result.output_schema_mismatch =
                    core.tool_rules.load().output_mismatch(&tool, structured);
                if result.output_schema_mismatch.is_some() {
                    core.metrics.output_mismatches.increment(1);
                }
            }
            Ok(result)
        }
        Err(e) => Err(
            ErrorContext::of_request(core.name.clone(), "tools/call".into(), Some(tool)).error(
                ErrorKind::Protocol {
                    detail: format!("the result is not a CallToolResult: {e}"),
                },
            ),
        ),
    }
}
