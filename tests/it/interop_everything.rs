//! Every server feature of `@modelcontextprotocol/server-everything` (pinned in
//! `.ci/peers`), through the typed methods of `ServerHandle`: the same test body over stdio
//! and over Streamable HTTP.
//!
//! `#[ignore = "needs …"]` (see `interop.rs`). The runtime has roots, sampling
//! and elicitation (form and URL mode) handlers ([`client::Recorder`]), so after `initialized`
//! the server registers the tools that send those requests, beside its always-present tools
//! and `simulate-research-query` (task-only).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::model::{CompletionReference, Content, LoggingLevel, ResourceContents, Tool};
use switchboard::transport::HttpKind;
use switchboard::ErrorKind;
use switchboard::{Runtime, ServerConfig, ServerHandle};
use tokio::sync::broadcast;

use crate::interop::{one_server_runtime, HttpPeer};

mod client;
mod tools;

/// The static documents the server lists under `demo://resource/static/document/`.
const STATIC_DOCUMENTS: &[&str] = &[
    "architecture",
    "extension",
    "features",
    "how-it-works",
    "instructions",
    "startup",
    "structure",
];

/// How long to wait for something the server sends on its own (it logs and sends updates
/// every 5 s).
const NOTIFICATION_WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn interop_everything_features_over_stdio() {
    let bin = crate::peers::npm_bin("mcp-server-everything");
    assert!(bin.exists(), "peer not installed at {}", bin.display());
    let client = client::Recorder::default();
    let rt = one_server_runtime(
        ServerConfig::stdio(&bin)
            .arg("stdio")
            .client_handlers(client.handlers()),
    )
    .await;
    every_feature(&rt, &client).await;
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs server-everything in .ci/peers (.ci/run installs it)"]
async fn interop_everything_features_over_streamable_http() {
    let peer = HttpPeer::everything("streamableHttp");
    let client = client::Recorder::default();
    let rt = one_server_runtime(
        ServerConfig::http(peer.url("/mcp"), HttpKind::StreamableHttp)
            .client_handlers(client.handlers()),
    )
    .await;
    every_feature(&rt, &client).await;
    rt.shutdown().await;
}

/// The test body shared by both transports.
async fn every_feature(rt: &Runtime, client: &client::Recorder) {
    let server = rt.server("everything").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert_eq!(
        server.status().protocol_version.as_deref(),
        Some("2025-11-25")
    );
    // The conditional tools come with a `tools/list_changed` after `initialized`; the runtime
    // must have listed them before the task-only one can be refused locally.
    wait_for_tools(&server, tools::CONDITIONAL_TOOLS).await;

    static_resources(&server).await;
    resource_templates(&server).await;
    unknown_resource(&server).await;
    prompts(&server).await;
    completion(&server).await;
    logs(&server).await;
    subscription(&server).await;
    tools::every_tool(&server, client).await;
}

async fn wait_for_tools(server: &ServerHandle, names: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = tool_names(&server.tools());
        if names.iter().all(|n| listed.contains(*n)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{names:?} not listed within 20 s; listed: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn tool_names(tools: &[Tool]) -> BTreeSet<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

async fn static_resources(server: &ServerHandle) {
    let resources = server.list_resources().await.unwrap();
    let uris: BTreeSet<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    for doc in STATIC_DOCUMENTS {
        let uri = format!("demo://resource/static/document/{doc}.md");
        assert!(uris.contains(uri.as_str()), "{uri} not listed: {uris:?}");
    }
    for resource in &resources {
        let read = server.read_resource(&resource.uri).await.unwrap();
        assert!(!read.contents.is_empty(), "{}: no contents", resource.uri);
        for part in &read.contents {
            match part {
                ResourceContents::Text(text) => {
                    assert_eq!(text.uri, resource.uri);
                    assert!(!text.text.is_empty(), "{}: empty text", resource.uri);
                }
                ResourceContents::Blob(blob) => {
                    assert_eq!(blob.uri, resource.uri);
                    assert!(
                        base64_decode(&blob.blob).is_some(),
                        "{}: the blob is not base64",
                        resource.uri
                    );
                }
            }
        }
        if resource.uri.starts_with("demo://resource/static/document/") {
            assert!(
                matches!(&read.contents[0], ResourceContents::Text(t) if t.text.contains('#')),
                "{}: a markdown document should read as text: {:?}",
                resource.uri,
                read.contents
            );
        }
    }
}

async fn resource_templates(server: &ServerHandle) {
    let templates = server.list_resource_templates().await.unwrap();
    let listed: BTreeSet<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    for expected in [
        "demo://resource/dynamic/text/{resourceId}",
        "demo://resource/dynamic/blob/{resourceId}",
    ] {
        assert!(
            listed.contains(expected),
            "{expected} not listed: {listed:?}"
        );
    }
    for template in &templates {
        let uri = template.uri_template.replace("{resourceId}", "7");
        assert!(!uri.contains('{'), "a template with other variables: {uri}");
        let read = server.read_resource(&uri).await.unwrap();
        assert_eq!(read.contents.len(), 1, "{uri}: {:?}", read.contents);
        match &read.contents[0] {
            ResourceContents::Text(text) => {
                assert!(uri.contains("/text/"), "{uri} read as text");
                assert_eq!(text.uri, uri);
                assert!(
                    text.text
                        .starts_with("Resource 7: This is a plaintext resource"),
                    "{}",
                    text.text
                );
            }
            ResourceContents::Blob(blob) => {
                assert!(uri.contains("/blob/"), "{uri} read as a blob");
                assert_eq!(blob.uri, uri);
                // Still the base64 the server sent: decoding it is the caller's business.
                let bytes = base64_decode(&blob.blob).expect("the blob is base64");
                let decoded = String::from_utf8(bytes).unwrap();
                assert!(
                    decoded.starts_with("Resource 7: This is a base64 blob"),
                    "{decoded}"
                );
                assert_ne!(blob.blob, decoded);
            }
        }
    }
}

async fn unknown_resource(server: &ServerHandle) {
    let uri = "demo://resource/static/document/no-such-document.md";
    match server.read_resource(uri).await {
        Err(e) if matches!(e.kind(), ErrorKind::ResourceNotFound { uri: got, .. } if &**got == uri) =>
            {}
        other => panic!("expected ResourceNotFound for {uri}, got {other:?}"),
    }
}

fn no_arguments() -> Vec<(String, String)> {
    Vec::new()
}

/// The text of a prompt message's content, or a panic naming what it was.
fn message_text(content: &Content) -> &str {
    match content {
        Content::Text(text) => &text.text,
        other => panic!("expected a text message, got {other:?}"),
    }
}

async fn prompts(server: &ServerHandle) {
    let prompts = server.list_prompts().await.unwrap();
    let names: BTreeSet<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    for expected in [
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    ] {
        assert!(names.contains(expected), "{expected} not listed: {names:?}");
    }

    let simple = server
        .get_prompt("simple-prompt", no_arguments())
        .await
        .unwrap();
    assert_eq!(simple.messages.len(), 1, "{simple:?}");
    assert!(!message_text(&simple.messages[0].content).is_empty());

    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    assert_eq!(args.required_arguments().collect::<Vec<_>>(), ["city"]);
    let got = server
        .get_prompt("args-prompt", [("city", "Paris"), ("state", "Texas")])
        .await
        .unwrap();
    assert_eq!(
        message_text(&got.messages[0].content),
        "What's weather in Paris, Texas?"
    );

    let got = server
        .get_prompt(
            "completable-prompt",
            [("department", "Engineering"), ("name", "Alice")],
        )
        .await
        .unwrap();
    assert_eq!(
        message_text(&got.messages[0].content),
        "Please promote Alice to the head of the Engineering team."
    );

    for (kind, id) in [("Text", "3"), ("Blob", "4")] {
        let got = server
            .get_prompt(
                "resource-prompt",
                [("resourceType", kind), ("resourceId", id)],
            )
            .await
            .unwrap();
        assert_eq!(got.messages.len(), 2, "{got:?}");
        let Content::Resource(embedded) = &got.messages[1].content else {
            panic!("expected an embedded resource, got {:?}", got.messages[1]);
        };
        match (&embedded.resource, kind) {
            (ResourceContents::Text(text), "Text") => {
                assert_eq!(text.uri, "demo://resource/dynamic/text/3");
            }
            (ResourceContents::Blob(blob), "Blob") => {
                assert_eq!(blob.uri, "demo://resource/dynamic/blob/4");
                assert!(base64_decode(&blob.blob).is_some(), "{}", blob.blob);
            }
            (other, _) => panic!("{kind} resource prompt embedded {other:?}"),
        }
    }
}

async fn completion(server: &ServerHandle) {
    let prompt = || CompletionReference::Prompt {
        name: "completable-prompt".into(),
    };
    let all = server
        .complete(prompt(), "department", "", no_arguments())
        .await
        .unwrap();
    assert_eq!(
        all.completion.values,
        ["Engineering", "Sales", "Marketing", "Support"]
    );
    let s = server
        .complete(prompt(), "department", "S", no_arguments())
        .await
        .unwrap();
    assert_eq!(s.completion.values, ["Sales", "Support"]);
    // The second argument's values depend on the first, sent as context.
    let names = server
        .complete(prompt(), "name", "", [("department", "Engineering")])
        .await
        .unwrap();
    assert_eq!(names.completion.values, ["Alice", "Bob", "Charlie"]);
    // A resource template's variable too.
    let id = server
        .complete(
            CompletionReference::Resource {
                uri: "demo://resource/dynamic/text/{resourceId}".into(),
            },
            "resourceId",
            "5",
            no_arguments(),
        )
        .await
        .unwrap();
    assert_eq!(id.completion.values, ["5"]);
}

/// Receives from `rx` until `pick` returns something, for at most [`NOTIFICATION_WAIT`].
async fn wait_for<T: Clone, R>(
    rx: &mut broadcast::Receiver<T>,
    what: &str,
    mut pick: impl FnMut(T) -> Option<R>,
) -> R {
    let deadline = tokio::time::Instant::now() + NOTIFICATION_WAIT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => panic!("no {what} within {NOTIFICATION_WAIT:?}"),
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(broadcast::error::RecvError::Closed)) => panic!("{what}: channel closed"),
            Ok(Ok(item)) => {
                if let Some(found) = pick(item) {
                    return found;
                }
            }
        }
    }
}

/// The level a simulated message names in its text ("Warning-level message", "Alert
/// level-message").
fn level_in_text(text: &str) -> Option<LoggingLevel> {
    let word = text.split(['-', ' ']).next()?.to_ascii_lowercase();
    serde_json::from_value(Value::String(word)).ok()
}

async fn logs(server: &ServerHandle) {
    let mut logs = server.logs();
    server.set_log_level(LoggingLevel::Info).await.unwrap();
    let started = server
        .call_tool("toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    assert!(!started.is_error(), "{}", started.text());
    assert!(started.text().contains("Started"), "{}", started.text());
    // One message at once, then one every 5 s, each at a random level; debug is filtered.
    let (level, text) = wait_for(&mut logs, "simulated log message", |log| {
        let text = log.data.as_str()?.to_owned();
        text.contains("level")
            .then_some(())
            .and_then(|()| level_in_text(&text))
            .map(|_| (log.level, text))
    })
    .await;
    assert_eq!(Some(level), level_in_text(&text), "{text}");
    assert!(
        level >= LoggingLevel::Info,
        "below the level set: {level:?}"
    );
    let stopped = server
        .call_tool("toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    assert!(stopped.text().contains("Stopped"), "{}", stopped.text());
}

async fn subscription(server: &ServerHandle) {
    let uri = "demo://resource/static/document/features.md";
    let mut updates = server.subscribe(uri).await.unwrap();
    let started = server
        .call_tool("toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    assert!(!started.is_error(), "{}", started.text());
    let update = wait_for(&mut updates, "resource update", Some).await;
    assert_eq!(update.uri, uri);
    assert_eq!(&*update.server, "everything");
    let stopped = server
        .call_tool("toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    assert!(!stopped.is_error(), "{}", stopped.text());
    server.unsubscribe(uri).await.unwrap();
}

/// Standard base64 (with or without padding); `None` if `text` is not base64.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for byte in text.trim_end_matches('=').bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(out)
}
