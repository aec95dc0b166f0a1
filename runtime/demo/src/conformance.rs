//! The fixture the official conformance suite's server scenarios call (`--conformance`):
//! the tools, resources and prompts named in its scenarios, with the contents its reference
//! server answers (`examples/servers/typescript/everything-server.ts` of
//! `modelcontextprotocol/conformance`).
//!
//! The same code serves both eras: a tool that needs the client (sampling, elicitation,
//! roots) asks through [`Context::input`], which is a request to the client in the
//! handshake era and an input-required round in 2026-07-28.

use std::time::Duration;

use serde_json::{json, Value};
use switchboard_server::{Context, HandlerError, Reply};

/// A 1×1 red PNG.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file.
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const WATCHED: &str = "Watched resource content";

fn tool(name: &str, description: &str, input: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input})
}

fn empty() -> Value {
    json!({"type": "object", "properties": {}})
}

fn strings(fields: &[(&str, &str)]) -> Value {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(name, description)| {
            (
                name.to_string(),
                json!({"type": "string", "description": description}),
            )
        })
        .collect();
    let required: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The fixture's tools.
pub(super) fn tools() -> Vec<Value> {
    let mut tools = vec![
        tool(
            "test_simple_text",
            "Tests simple text content response",
            empty(),
        ),
        tool(
            "test_image_content",
            "Tests image content response",
            empty(),
        ),
        tool(
            "test_audio_content",
            "Tests audio content response",
            empty(),
        ),
        tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
            empty(),
        ),
        tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            empty(),
        ),
        tool(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            empty(),
        ),
        tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            empty(),
        ),
        tool(
            "test_error_handling",
            "Tests error response handling",
            empty(),
        ),
        tool(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699)",
            empty(),
        ),
        tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            strings(&[("prompt", "The prompt to send to the LLM")]),
        ),
        tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            strings(&[("message", "The message to show the user")]),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            empty(),
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            empty(),
        ),
        json!({
            "name": "json_schema_2020_12_tool",
            "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"},
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false,
            },
        }),
        tool(
            "test_missing_capability",
            "Test tool requiring sampling",
            empty(),
        ),
        tool(
            "test_header_param",
            "Echoes its region, which travels in the Mcp-Param-Region header too (SEP-2243)",
            json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}),
        ),
    ];
    for (name, description) in [
        (
            "test_input_required_result_elicitation",
            "MRTR: returns InputRequiredResult with elicitation request",
        ),
        (
            "test_input_required_result_sampling",
            "MRTR: returns InputRequiredResult with sampling request",
        ),
        (
            "test_input_required_result_list_roots",
            "MRTR: returns InputRequiredResult with roots/list request",
        ),
        (
            "test_input_required_result_request_state",
            "MRTR: returns InputRequiredResult with requestState",
        ),
        (
            "test_input_required_result_multiple_inputs",
            "MRTR: returns InputRequiredResult with multiple input requests",
        ),
        (
            "test_input_required_result_multi_round",
            "MRTR: multi-round InputRequiredResult workflow",
        ),
        (
            "test_input_required_result_tampered_state",
            "MRTR: HMAC-signed requestState integrity test",
        ),
        (
            "test_input_required_result_capabilities",
            "MRTR: respects client capabilities in inputRequests",
        ),
        (
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
        ),
        ("test_logging_tool", "Diagnostic logging validator tool"),
        (
            "test_trigger_tool_change",
            "Sends notifications/tools/list_changed to listen streams",
        ),
        (
            "test_trigger_prompt_change",
            "Sends notifications/prompts/list_changed to listen streams",
        ),
    ] {
        tools.push(tool(name, description, empty()));
    }
    tools
}

/// The fixture's static resources.
pub(super) fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource", "description": "A static text resource for testing", "mimeType": "text/plain"}),
        json!({"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource", "description": "A static binary resource (image) for testing", "mimeType": "image/png"}),
        json!({"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource", "description": "A resource that changes", "mimeType": "text/plain"}),
    ]
}

/// The fixture's template.
pub(super) fn templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template",
        "title": "Resource Template",
        "description": "A resource template with parameter substitution",
        "mimeType": "application/json",
    })]
}

/// The contents of one of the fixture's resources.
pub(super) fn read(uri: &str) -> Option<Value> {
    let text = |mime: &str, text: &str| json!({"uri": uri, "mimeType": mime, "text": text});
    match uri {
        "test://static-text" => Some(text(
            "text/plain",
            "This is the content of the static text resource.",
        )),
        "test://static-binary" => Some(json!({"uri": uri, "mimeType": "image/png", "blob": IMAGE})),
        "test://watched-resource" => Some(text("text/plain", WATCHED)),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Some(text("application/json", &body.to_string()))
        }
    }
}

/// The fixture's prompts.
pub(super) fn prompts() -> Vec<Value> {
    vec![
        json!({"name": "test_simple_prompt", "title": "Simple Test Prompt", "description": "A simple prompt without arguments"}),
        json!({"name": "test_prompt_with_arguments", "title": "Prompt With Arguments", "description": "A prompt with required arguments", "arguments": [
            {"name": "arg1", "description": "First test argument", "required": true},
            {"name": "arg2", "description": "Second test argument", "required": true},
        ]}),
        json!({"name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource", "description": "A prompt that includes an embedded resource", "arguments": [
            {"name": "resourceUri", "description": "URI of the resource to embed", "required": true},
        ]}),
        json!({"name": "test_prompt_with_image", "title": "Prompt With Image", "description": "A prompt that includes image content"}),
        json!({"name": "test_input_required_result_prompt", "description": "MRTR: prompt that requires elicitation input"}),
    ]
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// Answers one of the fixture's prompts, or `None` if `name` is not one.
pub(super) async fn get_prompt(
    name: &str,
    args: &Value,
    ctx: &Context,
) -> Option<Result<Value, HandlerError>> {
    let arg = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let messages = match name {
        "test_simple_prompt" => vec![user(text_block("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => vec![user(text_block(&format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            arg("arg1"),
            arg("arg2")
        )))],
        "test_prompt_with_embedded_resource" => vec![
            user(
                json!({"type": "resource", "resource": {"uri": arg("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."}}),
            ),
            user(text_block("Please process the embedded resource above.")),
        ],
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": IMAGE, "mimeType": "image/png"})),
            user(text_block("Please analyze the image above.")),
        ],
        "test_input_required_result_prompt" => {
            let answer = ctx
                .input(
                    "user_context",
                    "elicitation/create",
                    elicit("What context should the prompt use?", "context", "string"),
                )
                .await;
            match answer {
                Ok(answer) => vec![user(text_block(&format!(
                    "Prompt with context: {}",
                    field(&answer, "context")
                )))],
                Err(e) => return Some(Err(e)),
            }
        }
        _ => return None,
    };
    Some(Ok(json!({ "messages": messages })))
}

/// An `elicitation/create` asking for one field.
fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]},
    })
}

fn sample(prompt: &str, max_tokens: u64) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    })
}

/// A field of an elicitation's accepted content, as text.
fn field(answer: &Value, key: &str) -> String {
    match &answer["content"][key] {
        Value::String(s) => s.clone(),
        Value::Null => "unknown".to_owned(),
        other => other.to_string(),
    }
}

/// The text of a sampling answer.
fn sampled(answer: &Value) -> String {
    answer["content"]["text"]
        .as_str()
        .or_else(|| answer["message"]["content"]["text"].as_str())
        .unwrap_or("No response")
        .to_owned()
}

/// Runs one of the fixture's tools, or `None` if `name` is not one.
pub(super) async fn call(
    name: &str,
    args: &Value,
    ctx: &Context,
) -> Option<Result<Reply, HandlerError>> {
    let text = |t: &str| Ok(Reply::text(t));
    let result = match name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_image_content" => Ok(Reply::Result(
            json!({"content": [{"type": "image", "data": IMAGE, "mimeType": "image/png"}]}),
        )),
        "test_audio_content" => Ok(Reply::Result(
            json!({"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]}),
        )),
        "test_embedded_resource" => Ok(Reply::Result(
            json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}]}),
        )),
        "test_multiple_content_types" => Ok(Reply::Result(json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": IMAGE, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": json!({"test": "data", "value": 123}).to_string()}},
        ]}))),
        "test_tool_with_logging" => {
            for (i, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.log("info", None, json!(message)).await;
            }
            text("Tool with logging executed successfully")
        }
        "test_tool_with_progress" => {
            for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let message = format!("Completed step {step} of 100");
                ctx.progress(step, Some(100.0), Some(&message)).await;
            }
            let token = match ctx.progress_token() {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "0".to_owned(),
            };
            text(&token)
        }
        "test_error_handling" => Ok(Reply::tool_error(
            "This tool intentionally returns an error for testing",
        )),
        "test_reconnection" => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.")
        }
        "test_sampling" => {
            let prompt = args["prompt"].as_str().unwrap_or("");
            match ctx
                .input("sampling", "sampling/createMessage", sample(prompt, 100))
                .await
            {
                Ok(answer) => text(&format!("LLM response: {}", sampled(&answer))),
                Err(HandlerError::InputRequired) => Err(HandlerError::InputRequired),
                Err(e) => text(&format!("Sampling not supported or error: {e:?}")),
            }
        }
        "test_elicitation" => {
            let message = args["message"].as_str().unwrap_or("");
            let request = json!({"message": message, "requestedSchema": {"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}}, "required": ["response"]}});
            elicited(ctx, request, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let request = json!({"message": "Please review and update the form fields with defaults", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true},
            }, "required": []}});
            elicited(ctx, request, "Elicitation completed").await
        }
        "test_elicitation_sep1330_enums" => {
            let request = json!({"message": "Please select options from the enum fields", "requestedSchema": {"type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                    {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}},
            }, "required": []}});
            elicited(ctx, request, "Elicitation completed").await
        }
        "test_header_param" => text(&format!("region {}", args["region"].as_str().unwrap_or(""))),
        "json_schema_2020_12_tool" => {
            text(&format!("JSON Schema 2020-12 tool called with: {args}"))
        }
        "test_missing_capability" => {
            if ctx.client_supports("sampling") {
                text("Success")
            } else {
                Err(HandlerError::MissingCapability {
                    capability: "sampling".to_owned(),
                })
            }
        }
        "test_input_required_result_elicitation" => {
            match ctx
                .input(
                    "user_name",
                    "elicitation/create",
                    elicit("What is your name?", "name", "string"),
                )
                .await
            {
                Ok(answer) => text(&format!("Hello, {}!", field(&answer, "name"))),
                Err(e) => Err(e),
            }
        }
        "test_input_required_result_sampling" => {
            match ctx
                .input(
                    "sample_request",
                    "sampling/createMessage",
                    sample("What is the capital of France?", 100),
                )
                .await
            {
                Ok(answer) => text(&format!(
                    "Sampling result: {}",
                    answer["content"]["text"].as_str().unwrap_or("no response")
                )),
                Err(e) => Err(e),
            }
        }
        "test_input_required_result_list_roots" => {
            match ctx.input("roots_request", "roots/list", json!({})).await {
                Ok(answer) => text(&format!("Found {} root(s)", roots(&answer))),
                Err(e) => Err(e),
            }
        }
        "test_input_required_result_request_state" => {
            if ctx.state().is_none() {
                ctx.set_state(json!({"kind": "request-state"}));
            }
            let confirm = elicit("Please confirm", "ok", "boolean");
            match ctx.input("confirm", "elicitation/create", confirm).await {
                Ok(answer) if answer["content"]["ok"] == json!(true) => {
                    text("state-ok: requestState validated")
                }
                Ok(_) => text("state-not-confirmed"),
                Err(e) => Err(e),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let requests = vec![
                (
                    "user_name".to_owned(),
                    "elicitation/create".to_owned(),
                    elicit("What is your name?", "name", "string"),
                ),
                (
                    "greeting".to_owned(),
                    "sampling/createMessage".to_owned(),
                    sample("Generate a greeting", 50),
                ),
                (
                    "client_roots".to_owned(),
                    "roots/list".to_owned(),
                    json!({}),
                ),
            ];
            match ctx.inputs(requests).await {
                Ok(answers) => text(&format!(
                    "Name: {}; Greeting: {}; Roots: {}",
                    field(&answers[0], "name"),
                    answers[1]["content"]["text"]
                        .as_str()
                        .unwrap_or("Hello there!"),
                    roots(&answers[2]),
                )),
                Err(e) => Err(e),
            }
        }
        "test_input_required_result_multi_round" => {
            let round = async {
                let first = ctx
                    .input(
                        "step1",
                        "elicitation/create",
                        elicit("Step 1: What is your name?", "name", "string"),
                    )
                    .await?;
                let second = ctx
                    .input(
                        "step2",
                        "elicitation/create",
                        elicit("Step 2: What is your favorite color?", "color", "string"),
                    )
                    .await?;
                Ok::<_, HandlerError>(format!(
                    "Multi-round complete for {} who likes {}",
                    field(&first, "name"),
                    field(&second, "color")
                ))
            };
            round.await.map(Reply::text)
        }
        "test_input_required_result_tampered_state" => {
            match ctx
                .input(
                    "confirm",
                    "elicitation/create",
                    elicit("Please confirm", "ok", "boolean"),
                )
                .await
            {
                Ok(_) => text("integrity-ok: state verified"),
                Err(e) => Err(e),
            }
        }
        "test_input_required_result_capabilities" => {
            let mut requests = Vec::new();
            if ctx.client_supports("elicitation") {
                requests.push((
                    "elicit_input".to_owned(),
                    "elicitation/create".to_owned(),
                    elicit("Elicitation input", "value", "string"),
                ));
            }
            if ctx.client_supports("sampling") {
                requests.push((
                    "sample_input".to_owned(),
                    "sampling/createMessage".to_owned(),
                    sample("Sample request", 50),
                ));
            }
            if requests.is_empty() {
                text("No supported capabilities declared")
            } else {
                let keys: Vec<String> = requests.iter().map(|(k, _, _)| k.clone()).collect();
                match ctx.inputs(requests).await {
                    Ok(_) => text(&format!("capabilities-ok: received {}", keys.join(","))),
                    Err(e) => Err(e),
                }
            }
        }
        "test_streaming_elicitation" => {
            ctx.progress(50.0, Some(100.0), None).await;
            text("Streaming complete")
        }
        "test_logging_tool" => {
            ctx.log("info", None, json!("Diagnostic trace logging activated"))
                .await;
            text("Logging evaluated")
        }
        "test_trigger_tool_change" => {
            ctx.tools_changed();
            text("Mutation triggered")
        }
        "test_trigger_prompt_change" => {
            ctx.prompts_changed();
            text("Mutation triggered")
        }
        _ => return None,
    };
    Some(result)
}

fn roots(answer: &Value) -> usize {
    answer["roots"].as_array().map_or(0, Vec::len)
}

async fn elicited(ctx: &Context, request: Value, prefix: &str) -> Result<Reply, HandlerError> {
    match ctx
        .input("elicitation", "elicitation/create", request)
        .await
    {
        Ok(answer) => {
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            Ok(Reply::text(format!(
                "{prefix}: action={}, content={content}",
                answer["action"].as_str().unwrap_or("unknown")
            )))
        }
        Err(HandlerError::InputRequired) => Err(HandlerError::InputRequired),
        Err(e) => Ok(Reply::text(format!(
            "Elicitation not supported or error: {e:?}"
        ))),
    }
}
