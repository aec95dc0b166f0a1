//! Every tool server-everything lists, called with valid arguments (the task-only
//! `simulate-research-query` as a task, which the runtime runs to its result), and what each
//! known one must answer.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use switchboard::model::{CallToolResult, Content, ResourceContents, Role, Tool};
use switchboard::ErrorKind;
use switchboard::ServerHandle;

use super::client::{self, Recorder, MODEL, SAMPLED_PREFIX};
use super::{base64_decode, tool_names};

/// Tools called by the logging and subscription checks, which need them in a set order.
const CALLED_BY_OTHER_CHECKS: &[&str] = &["toggle-simulated-logging", "toggle-subscriber-updates"];

/// The tools the server always lists.
const ALWAYS_LISTED: &[&str] = &[
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
];

/// The tools the server registers after `initialized` for this client's capabilities (roots,
/// sampling, form and URL elicitation), announced with `tools/list_changed`.
pub(super) const CONDITIONAL_TOOLS: &[&str] = &[
    "simulate-research-query",
    "get-roots-list",
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    // Registered for a client that declares `tasks.requests.sampling.createMessage` and
    // `tasks.requests.elicitation.create`, as the runtime does with those handlers: the
    // server sends the request as a task (`params.task`) and polls the client for it.
    "trigger-sampling-request-async",
    "trigger-elicitation-request-async",
];

/// The prompt given to `trigger-sampling-request`.
const SAMPLING_PROMPT: &str = "what does switchboard do?";

/// The URL given to `trigger-url-elicitation` (request path), and its elicitation id.
const CONSENT_URL: &str = "https://example.com/switchboard/consent";
const CONSENT_ID: &str = "switchboard-interop-consent";

/// Arguments for a tool: chosen here where the values matter, else derived from its input
/// schema (each required property gets its default, its first enum value, or a value of its
/// type).
fn arguments_for(tool: &Tool) -> Value {
    match tool.name.as_str() {
        "echo" => json!({"message": "hello from switchboard"}),
        "get-sum" => json!({"a": 19.5, "b": 22.5}),
        "get-annotated-message" => json!({"messageType": "success", "includeImage": true}),
        "get-resource-links" => json!({"count": 2}),
        "get-resource-reference" => json!({"resourceType": "Blob", "resourceId": 2}),
        // No internet on test machines: the file comes in a `data:` URI.
        "gzip-file-as-resource" => json!({
            "name": "interop.txt.gz",
            "data": "data:text/plain,hello%20from%20switchboard",
            "outputType": "resourceLink",
        }),
        "trigger-sampling-request" => json!({"prompt": SAMPLING_PROMPT, "maxTokens": 64}),
        "trigger-url-elicitation" => json!({"url": CONSENT_URL, "elicitationId": CONSENT_ID}),
        _ => derive_arguments(&tool.input_schema),
    }
}

fn derive_arguments(schema: &Value) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let mut arguments = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        let value = property
            .get("default")
            .or_else(|| property.get("enum").and_then(|e| e.get(0)))
            .cloned()
            .unwrap_or_else(|| match property.get("type").and_then(Value::as_str) {
                Some("number" | "integer") => json!(1),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("switchboard"),
            });
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

pub(super) async fn every_tool(server: &ServerHandle, client: &Recorder) {
    let tools = server.tools();
    let listed = tool_names(&tools);
    for expected in ALWAYS_LISTED.iter().chain(CONDITIONAL_TOOLS) {
        assert!(
            listed.contains(*expected),
            "{expected} not listed: {listed:?}"
        );
    }
    let mut called = BTreeSet::new();
    for tool in tools.iter() {
        let name = tool.name.as_str();
        if CALLED_BY_OTHER_CHECKS.contains(&name) {
            continue;
        }
        let result = if name == "trigger-long-running-operation" {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let sink = seen.clone();
            let result = server
                .call_tool(name, json!({"duration": 1, "steps": 3}))
                .on_progress(move |p| {
                    sink.lock().unwrap().push((p.progress, p.total));
                })
                .await
                .unwrap();
            let seen = seen.lock().unwrap().clone();
            assert!(!seen.is_empty(), "no progress from {name}");
            // Progress must increase; the server counts steps out of the total asked for.
            assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
            assert!(
                seen.iter().all(|(_, total)| *total == Some(3.0)),
                "{seen:?}"
            );
            result
        } else {
            server.call_tool(name, arguments_for(tool)).await.unwrap()
        };
        assert!(!result.is_error(), "{name} failed: {}", result.text());
        assert!(!result.content.is_empty(), "{name}: no content");
        if tool.output_schema.is_some() {
            assert!(
                result.structured_content.is_some(),
                "{name} has an outputSchema but sent no structuredContent"
            );
            assert_eq!(result.output_schema_mismatch, None, "{name}");
        }
        check_tool_result(server, client, name, &result).await;
        called.insert(name.to_owned());
    }
    let expected: BTreeSet<String> = listed
        .iter()
        .filter(|n| !CALLED_BY_OTHER_CHECKS.contains(&n.as_str()))
        .cloned()
        .collect();
    assert_eq!(called, expected);
}

/// What each known tool must have answered, beyond success.
async fn check_tool_result(
    server: &ServerHandle,
    client: &Recorder,
    name: &str,
    result: &CallToolResult,
) {
    let text = result.text();
    match name {
        "echo" => assert_eq!(text, "Echo: hello from switchboard"),
        "get-sum" => assert!(text.contains("42"), "{text}"),
        "get-annotated-message" => {
            assert!(text.contains("Operation completed successfully"), "{text}");
            assert!(has_png(result), "{:?}", result.content);
        }
        "get-tiny-image" => assert!(has_png(result), "{:?}", result.content),
        "get-resource-links" => {
            let links = result
                .content
                .iter()
                .filter(|c| matches!(c, Content::ResourceLink(_)))
                .count();
            assert_eq!(links, 2, "{:?}", result.content);
        }
        "get-resource-reference" => assert!(
            result.content.iter().any(|c| matches!(
                c,
                Content::Resource(r) if matches!(&r.resource, ResourceContents::Blob(b) if b.uri == "demo://resource/dynamic/blob/2")
            )),
            "{:?}",
            result.content
        ),
        "get-structured-content" => {
            let structured = result.structured_content.as_ref().unwrap();
            assert!(structured.get("temperature").is_some(), "{structured}");
        }
        "gzip-file-as-resource" => {
            let link = result
                .content
                .iter()
                .find_map(|c| match c {
                    Content::ResourceLink(link) => Some(link),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no resource link: {:?}", result.content));
            assert_eq!(link.uri, "demo://resource/session/interop.txt.gz");
            // The session resource it made is readable, as gzip bytes in base64.
            let read = server.read_resource(&link.uri).await.unwrap();
            let ResourceContents::Blob(blob) = &read.contents[0] else {
                panic!("expected a blob: {:?}", read.contents);
            };
            assert_eq!(blob.mime_type.as_deref(), Some("application/gzip"));
            let bytes = base64_decode(&blob.blob).expect("base64");
            assert_eq!(bytes[..2], [0x1f, 0x8b], "not gzip");
        }
        "get-roots-list" => roots_listed(client, &text),
        "trigger-sampling-request" => sampled(client, &text),
        "trigger-elicitation-request" => form_elicited(client, &text),
        "trigger-url-elicitation" => url_elicited(server, client, &text).await,
        "trigger-long-running-operation" => {
            assert!(text.contains("Steps: 3"), "{text}");
        }
        // Task-only: run as a task to its report.
        "simulate-research-query" => assert!(text.contains("# Research Report"), "{text}"),
        "trigger-sampling-request-async" => {
            assert!(text.starts_with("[COMPLETED] Async sampling completed!"), "{text}");
            assert!(text.contains(SAMPLED_PREFIX), "{text}");
            assert!(text.contains("Task created: "), "{text}");
        }
        "trigger-elicitation-request-async" => {
            assert!(text.contains("[COMPLETED] User provided the requested information!"), "{text}");
        }
        _ => {}
    }
}

fn has_png(result: &CallToolResult) -> bool {
    result.content.iter().any(|c| {
        matches!(c, Content::Image(image)
            if image.mime_type == "image/png"
                && base64_decode(&image.data).is_some_and(|b| b.starts_with(b"\x89PNG")))
    })
}

/// `get-roots-list` shows the roots the handler gave, which the server asked for itself.
fn roots_listed(client: &Recorder, text: &str) {
    assert!(
        client.seen(|s| s.roots) >= 1,
        "roots/list never reached the handler"
    );
    let roots = client::roots();
    assert!(
        text.starts_with(&format!("Current MCP Roots ({} total):", roots.len())),
        "{text}"
    );
    for (i, root) in roots.iter().enumerate() {
        let name = root.name.as_deref().unwrap_or("Unnamed Root");
        let entry = format!("{}. {name}\n   URI: {}", i + 1, root.uri);
        assert!(text.contains(&entry), "{entry:?} not in {text}");
    }
}

/// `trigger-sampling-request` sent one `sampling/createMessage` with the prompt, and its
/// result is the handler's answer.
fn sampled(client: &Recorder, text: &str) {
    let expected_prompt = format!("Resource trigger-sampling-request context: {SAMPLING_PROMPT}");
    client.seen(|seen| {
        // One request with this prompt (the async trigger sends one of its own).
        let sent: Vec<_> = seen
            .sampling
            .iter()
            .filter(|r| {
                r.messages.first().map(|m| &m.content)
                    == Some(&vec![Content::text(expected_prompt.clone())])
            })
            .collect();
        assert_eq!(sent.len(), 1, "{:?}", seen.sampling);
        let request = sent[0];
        assert_eq!(request.messages.len(), 1, "{:?}", request.messages);
        assert_eq!(request.messages[0].role, Role::User);
        assert_eq!(
            request.messages[0].content,
            [Content::text(expected_prompt.clone())]
        );
        assert_eq!(
            request.system_prompt.as_deref(),
            Some("You are a helpful test server.")
        );
        assert_eq!(request.max_tokens, 64);
        assert_eq!(request.temperature, Some(0.7));
        assert!(request.tools.is_none() && request.tool_choice.is_none());
    });
    // The server returns the `CreateMessageResult` it got, as JSON after a header line.
    let json = text
        .strip_prefix("LLM sampling result: \n")
        .unwrap_or_else(|| panic!("unexpected result: {text}"));
    let answer: Value = serde_json::from_str(json).unwrap();
    assert_eq!(answer["model"], MODEL, "{answer}");
    assert_eq!(answer["role"], "assistant", "{answer}");
    assert_eq!(answer["stopReason"], "endTurn", "{answer}");
    assert_eq!(
        answer["content"],
        json!({"type": "text", "text": format!("{SAMPLED_PREFIX}{expected_prompt}")}),
        "{answer}"
    );
}

/// `trigger-elicitation-request` sent its form; the handler's answer (defaults and a name)
/// came back.
fn form_elicited(client: &Recorder, text: &str) {
    client.seen(|seen| {
        // One form with this message (the async trigger sends one of its own).
        let sent: Vec<_> = seen
            .forms
            .iter()
            .filter(|f| f.message == "Please provide inputs for the following fields:")
            .collect();
        assert_eq!(sent.len(), 1, "{:?}", seen.forms);
        let form = sent[0];
        assert_eq!(form.requested_schema["type"], "object");
        assert_eq!(form.requested_schema["required"], json!(["name"]));
        assert_eq!(form.defaults()["integer"], 42);
    });
    assert!(
        text.contains("User provided the requested information"),
        "{text}"
    );
    assert!(text.contains("- Name: Switchboard"), "{text}");
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
}

/// `trigger-url-elicitation`: the request path reached the URL handler; then the error path
/// (-32042) comes back as a typed error naming the prerequisite URL, and the retry goes
/// through the request path.
async fn url_elicited(server: &ServerHandle, client: &Recorder, text: &str) {
    client.seen(|seen| {
        assert_eq!(seen.urls.len(), 1, "{:?}", seen.urls);
        let request = &seen.urls[0];
        assert_eq!(request.url, CONSENT_URL);
        assert_eq!(request.elicitation_id, CONSENT_ID);
        assert_eq!(
            request.message,
            "Please open the link to complete this action."
        );
        assert_eq!(request.raw["mode"], "url");
    });
    assert!(
        text.contains("User completed the URL elicitation flow"),
        "{text}"
    );
    assert!(
        text.contains(&format!("Elicitation ID: {CONSENT_ID}")),
        "{text}"
    );
    assert!(text.contains(&format!("URL: {CONSENT_URL}")), "{text}");

    let name = "trigger-url-elicitation";
    let arguments = json!({"url": "https://example.com/switchboard/retry", "errorPath": true});
    match server.call_tool(name, arguments.clone()).await {
        Err(e) if matches!(e.kind(), ErrorKind::UrlElicitationRequired { .. }) => {
            let ErrorKind::UrlElicitationRequired { elicitations, .. } = e.kind() else {
                unreachable!()
            };
            assert_eq!(e.tool(), Some(name));
            assert_eq!(elicitations.len(), 1, "{elicitations:?}");
            assert_eq!(elicitations[0].url, "https://modelcontextprotocol.io");
            assert!(!elicitations[0].elicitation_id.is_empty());
        }
        other => panic!("{name} with errorPath: expected UrlElicitationRequired, got {other:?}"),
    }
    // The error path went to the caller, not to the handler.
    assert_eq!(client.seen(|s| s.urls.len()), 1);
    let retried = server.call_tool(name, arguments).await.unwrap();
    assert!(!retried.is_error(), "{}", retried.text());
    let last = client.seen(|s| s.urls.last().map(|u| u.url.clone()));
    assert_eq!(
        last.as_deref(),
        Some("https://example.com/switchboard/retry")
    );
}
