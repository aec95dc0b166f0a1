//! A tool call's raw answer made typed: parsed as a `CallToolResult` and checked against the
//! tool's output schema, for plain calls and for tasks alike.

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::core::Connected;
use crate::error::{ErrorContext, ErrorKind, Result};
use crate::handle::ServerHandle;
use crate::model::CallToolResult;
use crate::tool_rules::ToolRules;

/// A call's raw answer, with the server and tool it went to.
pub(crate) struct Sent {
    pub(crate) raw: Box<RawValue>,
    pub(crate) server: ServerHandle,
    pub(crate) tool: Arc<str>,
    /// The snapshot the call went by, whose tool checks apply; `None` (a task's result):
    /// those of the server's listing now.
    pub(crate) via: Option<Arc<Connected>>,
}

/// The typed result of a sent call, checked against the tool's output schema.
pub(crate) fn typed(sent: Sent) -> Result<CallToolResult> {
    let Sent {
        raw,
        server: handle,
        tool,
        via,
    } = sent;
    let core = &handle.core;
    match serde_json::from_str::<CallToolResult>(raw.get()) {
        Ok(mut result) => {
            if let (Some(structured), false) = (&result.structured_content, result.is_error()) {
                let now;
                let rules: &ToolRules = match &via {
                    Some(connected) => &connected.tool_rules,
                    None => {
                        now = core.tool_rules_now();
                        &now
                    }
                };
                result.output_schema_mismatch = rules.output_mismatch(&tool, structured);
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
