//! What the runtime checks about a server's tools, compiled once per listing: which tools
//! it must refuse to call (they can only run as tasks), the validators of their output
//! schemas, and for a stateless server over HTTP the `Mcp-Param-{Name}` headers each tool's
//! calls carry.
//!
//! A `structuredContent` that does not match its tool's `outputSchema` does not fail the
//! call: the server did answer, and a caller may still want what it sent. The result says
//! so (`CallToolResult::output_schema_mismatch`) and
//! `switchboard_output_schema_mismatches_total` counts it. Schemas are compiled without
//! any resolver, so a remote `$ref` is never fetched: a schema that needs one is not
//! checked (a warning says so), nor is the content of a result with `isError: true`.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use switchboard_codecs::mcp::modern::headers::ParamHeader;
use switchboard_codecs::mcp::{TaskSupport, Tool};

/// The checks for one listing of one server's tools.
#[derive(Default)]
pub(crate) struct ToolRules {
    task_required: HashSet<String>,
    /// Tools that may run either way (`taskSupport: "optional"`).
    task_optional: HashSet<String>,
    outputs: HashMap<String, Arc<jsonschema::Validator>>,
    /// The `Mcp-Param-{Name}` headers of each tool that has some.
    param_headers: HashMap<String, Vec<ParamHeader>>,
}

impl fmt::Debug for ToolRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRules")
            .field("task_required", &self.task_required)
            .field("outputs", &self.outputs.keys().collect::<Vec<_>>())
            .field(
                "param_headers",
                &self.param_headers.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ToolRules {
    /// Compiles the rules of `tools`, as listed by `server`.
    pub(crate) fn compile(server: &str, tools: &[Tool]) -> ToolRules {
        let mut rules = ToolRules::default();
        for tool in tools {
            match tool.task_support() {
                TaskSupport::Required => {
                    rules.task_required.insert(tool.name.clone());
                }
                TaskSupport::Optional => {
                    rules.task_optional.insert(tool.name.clone());
                }
                _ => {}
            }
            let Some(schema) = &tool.output_schema else {
                continue;
            };
            match jsonschema::validator_for(schema) {
                Ok(validator) => {
                    rules.outputs.insert(tool.name.clone(), Arc::new(validator));
                }
                Err(error) => tracing::warn!(
                    server,
                    tool = %tool.name,
                    %error,
                    "the tool's outputSchema cannot be compiled here; its results are not checked"
                ),
            }
        }
        rules
    }

    /// With the `Mcp-Param-{Name}` headers of each tool (a stateless server over HTTP).
    pub(crate) fn with_param_headers(mut self, headers: HashMap<String, Vec<ParamHeader>>) -> Self {
        self.param_headers = headers;
        self
    }

    /// The `Mcp-Param-{Name}` headers of a call of `tool`.
    pub(crate) fn param_headers(&self, tool: &str) -> &[ParamHeader] {
        self.param_headers.get(tool).map_or(&[], Vec::as_slice)
    }

    /// Whether the tool can only be run as a task.
    pub(crate) fn requires_task(&self, tool: &str) -> bool {
        !self.task_required.is_empty() && self.task_required.contains(tool)
    }

    /// Whether the tool may run as a task (`taskSupport` `optional` or `required`).
    pub(crate) fn allows_task(&self, tool: &str) -> bool {
        self.requires_task(tool) || self.task_optional.contains(tool)
    }

    /// Why `structured` does not match the tool's output schema, if it does not.
    pub(crate) fn output_mismatch(&self, tool: &str, structured: &Value) -> Option<String> {
        mismatch_of(self.outputs.get(tool)?, structured)
    }
}

/// Why `value` does not match the JSON Schema `schema` (a tool's `inputSchema`, say), in the
/// validator's words (at most three, each with where in `value` unless at its root), or
/// `None` when it matches. A schema that cannot be compiled here (one that needs a remote
/// `$ref`, which is never fetched, or that is no schema) checks nothing: `None`.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}});
/// assert_eq!(switchboard::schema_mismatch(&schema, &json!({"a": 1})), None);
/// let why = switchboard::schema_mismatch(&schema, &json!({"a": "one"})).unwrap();
/// assert!(why.ends_with("at `/a`"), "{why}");
/// ```
pub fn schema_mismatch(schema: &Value, value: &Value) -> Option<String> {
    mismatch_of(&jsonschema::validator_for(schema).ok()?, value)
}

/// What [`schema_mismatch`] says, with the validator compiled.
fn mismatch_of(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let at = e.instance_path.to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{e} at `{at}`")
            }
        })
        .collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).expect("a tool")
    }

    #[test]
    fn tools_that_need_tasks_are_known_and_others_are_not() {
        let rules = ToolRules::compile(
            "s",
            &[
                tool(json!({"name": "a", "execution": {"taskSupport": "required"}})),
                tool(json!({"name": "b", "execution": {"taskSupport": "optional"}})),
                tool(json!({"name": "c", "execution": {"taskSupport": "someday"}})),
            ],
        );
        assert!(rules.requires_task("a"));
        assert!(!rules.requires_task("b"));
        assert!(!rules.requires_task("c"));
        assert!(rules.allows_task("a") && rules.allows_task("b"));
        assert!(!rules.allows_task("c") && !rules.allows_task("d"));
    }

    #[test]
    fn structured_content_is_checked_against_the_output_schema() {
        let rules = ToolRules::compile(
            "s",
            &[tool(json!({"name": "t", "outputSchema": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            }}))],
        );
        assert_eq!(rules.output_mismatch("t", &json!({"n": 3})), None);
        let why = rules.output_mismatch("t", &json!({"n": "three"}));
        assert!(why.is_some_and(|w| w.contains("/n")), "names where");
        assert!(rules.output_mismatch("t", &json!({})).is_some());
        assert_eq!(rules.output_mismatch("other", &json!(1)), None);
    }

    #[test]
    fn a_remote_ref_is_never_fetched() {
        let rules = ToolRules::compile(
            "s",
            &[tool(json!({"name": "t", "outputSchema": {
                "$ref": "https://example.invalid/schema.json"
            }}))],
        );
        assert_eq!(rules.output_mismatch("t", &json!({"anything": 1})), None);
    }
}
