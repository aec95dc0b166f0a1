//! `switchboard conformance-client URL`: the client that the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) drives.
//!
//! The suite's harness starts a Streamable HTTP test server, sets `MCP_CONFORMANCE_SCENARIO`,
//! and runs this command with the server's URL appended; the scenario's checks are made by
//! that server, so all this client does is what a scenario expects of an ordinary client,
//! through the public API only: connect (one server, never restarted, no liveness pings,
//! elicitation answered by accepting the form's defaults), call the scenario's tool, shut
//! down. Exit 0 when every step worked, else the usual one stderr line and exit 2 (no
//! scenario) or 3.
//!
//! ```text
//! conformance client --command "switchboard conformance-client" --scenario tools_call
//! ```

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{json, Map, Value};

use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::model::Tool;
use switchboard::transport::HttpKind;
use switchboard::{ErrorContext, ErrorKind};
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig, ServerHandle};

use super::{ready, start, Failure, Interrupt};

/// The environment variable the harness names the scenario in.
const SCENARIO_VAR: &str = "MCP_CONFORMANCE_SCENARIO";
/// The environment variable of a scenario's context (JSON), for the scenarios that have one.
const CONTEXT_VAR: &str = "MCP_CONFORMANCE_CONTEXT";
/// The server's name in the runtime (and in messages).
const SERVER: &str = "conformance";
/// Bounds on the handshake and on each call, well inside the harness's 30 s kill.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Accepts every elicitation with the defaults its form's schema gives (SEP-1034).
#[derive(Debug)]
struct AcceptDefaults;

impl ElicitationHandler for AcceptDefaults {
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        Box::pin(async move { Ok(ElicitationResponse::accept(request.defaults())) })
    }
}

/// What a scenario asks of the client once it is connected.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    /// Nothing beyond the handshake (`initialize`).
    Handshake,
    /// Call this listed tool with these arguments; its text must contain the last field
    /// (the fixtures report a failed step as an ordinary result).
    Call(&'static str, Value, &'static str),
    /// Call every listed tool with arguments made from its input schema, or the calls the
    /// scenario's context names (`toolCalls`), in its order.
    CallEvery,
    /// List the tools and call nothing (the fixture answers nothing else).
    ListOnly,
    /// Call `json_schema_echo` with the input schema of `json_schema_2020_12_tool`, as
    /// listed: the fixture checks that no keyword was lost on the way.
    EchoSchema,
}

impl Plan {
    fn for_scenario(scenario: &str) -> Plan {
        match scenario {
            "initialize" => Plan::Handshake,
            "tools_call" => Plan::Call("add_numbers", json!({"a": 5, "b": 3}), "8"),
            "elicitation-sep1034-client-defaults" => Plan::Call(
                "test_client_elicitation_defaults",
                json!({}),
                "Elicitation completed",
            ),
            "sse-retry" => Plan::Call("test_reconnection", json!({}), "completed"),
            "json-schema-ref-no-deref" => Plan::ListOnly,
            "json-schema-2020-12-preservation" => Plan::EchoSchema,
            _ => Plan::CallEvery,
        }
    }
}

/// Runs the scenario named by `MCP_CONFORMANCE_SCENARIO` against `url`.
pub(crate) async fn run(url: String, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let scenario = std::env::var(SCENARIO_VAR)
        .ok()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Failure::Usage(format!(
                "conformance-client: {SCENARIO_VAR} names no scenario"
            ))
        })?;
    let plan = Plan::for_scenario(&scenario);
    let auth = super::conformance_auth::hook(&scenario, SERVER, &url)?;
    let mut config = ServerConfig::http(url, HttpKind::StreamableHttp);
    if let Some(auth) = auth {
        config = config.auth(auth);
    }
    let config = config
        .restart(RestartPolicy::off())
        .startup_timeout(STARTUP_TIMEOUT)
        .client_handlers(ClientHandlers::new().elicitation(AcceptDefaults));
    let builder = Runtime::builder()
        .liveness(Liveness::off())
        .default_timeout(CALL_TIMEOUT)
        .server(SERVER, config);
    let runtime = start(
        builder,
        format!("scenario `{scenario}` was starting"),
        interrupt,
    )
    .await?;
    let calls = std::env::var(CONTEXT_VAR)
        .ok()
        .and_then(|context| context_calls(&context));
    let outcome = match interrupt.guard(follow(&runtime, &plan, calls)).await {
        Ok(outcome) => outcome,
        Err(interrupted) => Err(interrupted.into()),
    };
    runtime.shutdown().await;
    outcome
        .map(|()| ExitCode::SUCCESS)
        .map_err(|failure| match failure {
            Failure::Run(m) => Failure::Run(format!("scenario `{scenario}`: {m}")),
            other => other,
        })
}

async fn follow(
    runtime: &Runtime,
    plan: &Plan,
    calls: Option<Vec<(String, Value)>>,
) -> Result<(), Failure> {
    let server = runtime.server(SERVER)?;
    ready(&server, None)?;
    match plan {
        Plan::Handshake => Ok(()),
        Plan::Call(tool, arguments, expected) => {
            if !server.tools().iter().any(|t| t.name == *tool) {
                return Err(ErrorContext::of_tool(SERVER.into(), (*tool).into())
                    .error(ErrorKind::UnknownTool)
                    .into());
            }
            let text = call(&server, tool, arguments.clone()).await?;
            if !text.contains(expected) {
                return Err(Failure::Run(format!(
                    "tool `{tool}` answered {text:?}, which lacks {expected:?}"
                )));
            }
            Ok(())
        }
        Plan::CallEvery => {
            let calls = calls.unwrap_or_else(|| {
                let tools = server.tools();
                tools
                    .iter()
                    .map(|t| (t.name.clone(), arguments_for(t)))
                    .collect()
            });
            for (tool, arguments) in calls {
                call(&server, &tool, arguments).await?;
            }
            Ok(())
        }
        Plan::ListOnly => Ok(()),
        Plan::EchoSchema => {
            let tools = server.tools();
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or_else(|| Failure::Run("json_schema_2020_12_tool is not listed".into()))?;
            let arguments = json!({ "schema": focal.input_schema });
            call(&server, "json_schema_echo", arguments).await?;
            Ok(())
        }
    }
}

/// The calls a scenario's context names: `{"toolCalls": [{"name", "arguments"}]}`.
fn context_calls(context: &str) -> Option<Vec<(String, Value)>> {
    let context: Value = serde_json::from_str(context).ok()?;
    let calls = context.get("toolCalls")?.as_array()?;
    calls
        .iter()
        .map(|c| {
            let name = c.get("name")?.as_str()?.to_owned();
            let arguments = c.get("arguments").cloned().unwrap_or_else(|| json!({}));
            Some((name, arguments))
        })
        .collect()
}

/// Calls `tool` and returns the text of its result; `isError: true` is a failure too.
async fn call(server: &ServerHandle, tool: &str, arguments: Value) -> Result<String, Failure> {
    let result = server.call_tool(tool, arguments).await?;
    if result.is_error() {
        return Err(Failure::Run(format!(
            "tool `{tool}` reported an error: {}",
            result.text()
        )));
    }
    Ok(result.text())
}

/// Arguments a tool's input schema accepts: every required property (all of them when the
/// schema names none as required) with a value of its type.
fn arguments_for(tool: &Tool) -> Value {
    value_for(&tool.input_schema)
}

fn value_for(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // A list of types: the first that is not null.
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut object = Map::new();
            for (name, property) in properties.into_iter().flatten() {
                if required.is_empty() || required.contains(&name.as_str()) {
                    object.insert(name.clone(), value_for(property));
                }
            }
            Value::Object(object)
        }
        "array" => Value::Array(Vec::new()),
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "number" => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!("test"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_scenarios_call_their_tools() {
        assert_eq!(Plan::for_scenario("initialize"), Plan::Handshake);
        assert_eq!(
            Plan::for_scenario("tools_call"),
            Plan::Call("add_numbers", json!({"a": 5, "b": 3}), "8")
        );
        assert_eq!(
            Plan::for_scenario("sse-retry"),
            Plan::Call("test_reconnection", json!({}), "completed")
        );
        assert_eq!(Plan::for_scenario("something-new"), Plan::CallEvery);
        assert_eq!(
            Plan::for_scenario("json-schema-ref-no-deref"),
            Plan::ListOnly
        );
    }

    #[test]
    fn a_context_names_the_calls() {
        let context = r#"{"toolCalls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b"}]}"#;
        assert_eq!(
            context_calls(context),
            Some(vec![("a".into(), json!({"x": 1})), ("b".into(), json!({}))])
        );
        assert_eq!(context_calls(r#"{"other": 1}"#), None);
    }

    #[test]
    fn arguments_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "n": {"type": "integer", "minimum": 3},
                "s": {"type": "string"},
                "e": {"type": "string", "enum": ["x", "y"]},
                "d": {"type": "boolean", "default": false},
                "o": {"type": "object", "properties": {"k": {"type": ["null", "string"]}}},
                "l": {"type": "array"},
                "optional": {"type": "string"}
            },
            "required": ["a", "n", "s", "e", "d", "o", "l"]
        });
        assert_eq!(
            value_for(&schema),
            json!({"a": 1.0, "n": 3, "s": "test", "e": "x", "d": false, "o": {"k": "test"}, "l": []})
        );
        assert_eq!(value_for(&json!({"type": "object"})), json!({}));
    }
}
