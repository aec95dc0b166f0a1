//! Every tool server-everything lists, called with valid arguments (or refused locally when
//! it can only run as a task), and what each known one must answer.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use switchboard::model::{CallToolResult, Content, ResourceContents, Tool};
use switchboard::{Error, ServerHandle};

use super::{base64_decode, tool_names};

/// Tools that send the client task-augmented requests, which Switchboard does not run. The
/// server registers them only for a client that declares `tasks.requests`, which this one
/// does not, so they are never listed; should one be listed anyway, it is not called.
const NEED_CLIENT_TASKS: &[&str] = &[
    "trigger-sampling-request-async",
    "trigger-elicitation-request-async",
];

/// Tools called by the logging and subscription checks, which need them in a set order.
const CALLED_BY_OTHER_CHECKS: &[&str] = &["toggle-simulated-logging", "toggle-subscriber-updates"];

/// The tools the server always lists, plus the conditional ones this client's capabilities
/// (roots, sampling, form and URL elicitation) make it register after `initialized`.
const EXPECTED_TOOLS: &[&str] = &[
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
    "simulate-research-query",
    "trigger-elicitation-request",
    "get-roots-list",
    "trigger-sampling-request",
    "trigger-url-elicitation",
];

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
        "trigger-sampling-request" => json!({"prompt": "name a colour", "maxTokens": 20}),
        "trigger-url-elicitation" => json!({
            "url": "https://example.invalid/authorize",
            "message": "Authorize Switchboard"
        }),
        // No internet on test machines: the file comes in a `data:` URI.
        "gzip-file-as-resource" => json!({
            "name": "interop.txt.gz",
            "data": "data:text/plain,hello%20from%20switchboard",
            "outputType": "resourceLink",
        }),
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

pub(super) async fn every_tool(server: &ServerHandle) {
    let tools = server.tools();
    let listed = tool_names(&tools);
    for expected in EXPECTED_TOOLS {
        assert!(
            listed.contains(*expected),
            "{expected} not listed: {listed:?}"
        );
    }
    let mut called = BTreeSet::new();
    for tool in tools.iter() {
        let name = tool.name.as_str();
        if NEED_CLIENT_TASKS.contains(&name) || CALLED_BY_OTHER_CHECKS.contains(&name) {
            continue;
        }
        if tool.requires_task() {
            match server
                .call_tool(name, derive_arguments(&tool.input_schema))
                .await
            {
                Err(Error::TaskRequired { tool: refused, .. }) => assert_eq!(&*refused, name),
                other => panic!("{name} needs a task: expected TaskRequired, got {other:?}"),
            }
            called.insert(name.to_owned());
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
        check_tool_result(server, name, &result).await;
        called.insert(name.to_owned());
    }
    let expected: BTreeSet<String> = listed
        .iter()
        .filter(|n| {
            !NEED_CLIENT_TASKS.contains(&n.as_str())
                && !CALLED_BY_OTHER_CHECKS.contains(&n.as_str())
        })
        .cloned()
        .collect();
    assert_eq!(called, expected);
}

/// What each known tool must have answered, beyond success.
async fn check_tool_result(server: &ServerHandle, name: &str, result: &CallToolResult) {
    let text = result.text();
    match name {
        "echo" => assert_eq!(text, "Echo: hello from switchboard"),
        // The roots the runtime's handler gave, as the server got them.
        "get-roots-list" => {
            assert!(text.contains(super::INTEROP_ROOT), "{text}");
            assert!(text.contains("interop"), "{text}");
        }
        // The handler saw the server's prompt, and its answer came back in the result.
        "trigger-sampling-request" => {
            assert!(text.contains("sampled: Resource trigger-sampling-request context: name a colour"), "{text}");
            assert!(text.contains("switchboard-test-model"), "{text}");
        }
        "trigger-url-elicitation" => assert!(text.to_lowercase().contains("accept"), "{text}"),
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
        "trigger-elicitation-request" => {
            assert!(
                text.contains("User provided the requested information"),
                "{text}"
            );
        }
        "trigger-long-running-operation" => {
            assert!(text.contains("Steps: 3"), "{text}");
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
