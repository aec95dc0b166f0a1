//! Everything the slice forwards, seen from the front client: lists, calls and their
//! errors, progress, cancellation, resources, prompts, completion and list changes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::model::CompletionReference;

use crate::support::{demo, Setup, WAIT};

#[tokio::test]
async fn tools_pass_through_under_their_own_names_and_calls_reach_the_upstream() {
    let setup = Setup::start().await;
    let upstream: Vec<String> = setup
        .upstream
        .catalogue()
        .iter()
        .map(|e| e.name.clone())
        .collect();
    let front: Vec<String> = setup
        .front
        .catalogue()
        .iter()
        .map(|e| e.tool.name.clone())
        .collect();
    assert!(upstream.contains(&"echo".to_owned()), "{upstream:?}");
    assert_eq!(front, upstream);
    let front_echo = setup.front.catalogue().get("echo").unwrap().tool.clone();
    let upstream_echo = setup.upstream.catalogue().get("echo").unwrap().tool.clone();
    assert_eq!(front_echo.input_schema, upstream_echo.input_schema);

    let echo = setup
        .front
        .call_tool("echo", json!({"text": "through"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "through");
    let failed = setup
        .front
        .call_tool("fail", json!({"message": "on purpose"}))
        .await
        .unwrap();
    assert!(failed.is_error(), "an isError result is a result");
    assert_eq!(failed.text(), "on purpose");

    // A name the gateway's catalogue lacks: the front server answers with an error naming it.
    let unknown = setup
        .gateway
        .call_tool("nope", json!({}))
        .await
        .unwrap_err();
    match unknown.kind() {
        switchboard::ErrorKind::Rpc { code, message, .. } => {
            assert_eq!(*code, -32602);
            assert!(message.contains("nope"), "{message}");
        }
        other => panic!("not the gateway's error: {other:?}"),
    }
    setup.stop().await;
}

#[tokio::test]
async fn progress_reaches_the_front_client_before_the_result() {
    let setup = Setup::start().await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let result = setup
        .front
        .call_tool("sleep", json!({"ms": 30, "steps": 3}))
        .on_progress(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert!(!result.is_error(), "{}", result.text());
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    setup.stop().await;
}

#[tokio::test]
async fn a_front_cancel_cancels_the_upstream_call() {
    let setup = Setup::start().await;
    let hung = setup
        .front
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(hung.is_timeout(), "{hung}");
    // The front runtime sent the gateway `notifications/cancelled`; the gateway dropped its
    // upstream call, whose drop sends the demo server one in turn.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = setup
            .upstream
            .call_tool("cancellations", json!({}))
            .await
            .unwrap();
        let cancelled = seen.structured_content.unwrap_or(Value::Null)["cancelled"].clone();
        if cancelled.as_array().is_some_and(|c| !c.is_empty()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream heard no cancel"
        );
        tokio::task::yield_now().await;
    }
    setup.stop().await;
}

#[tokio::test]
async fn resources_prompts_and_completion_are_routed_to_their_owner() {
    let setup = Setup::start().await;
    let resources = setup.gateway.list_resources().await.unwrap();
    assert!(
        resources.iter().any(|r| r.uri == "demo://text/hello"),
        "{resources:?}"
    );
    let templates = setup.gateway.list_resource_templates().await.unwrap();
    assert!(templates
        .iter()
        .any(|t| t.uri_template == "demo://note/{id}"));
    let read = setup
        .front
        .read_resource("demo://text/hello")
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    let missing = setup
        .gateway
        .read_resource("demo://nowhere")
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");

    let prompts = setup.gateway.list_prompts().await.unwrap();
    let greeting = prompts.iter().find(|p| p.name == "greeting").unwrap();
    assert_eq!(greeting.arguments.as_ref().map(Vec::len), Some(2));
    let prompt = setup
        .front
        .get_prompt("greeting", [("name", "Ada")])
        .await
        .unwrap();
    assert_eq!(prompt.messages.len(), 1);

    let names = setup
        .gateway
        .complete(
            CompletionReference::Prompt {
                name: "greeting".into(),
            },
            "name",
            "A",
            [("x", "y")],
        )
        .await
        .unwrap();
    assert!(names.completion.values.contains(&"Ada".to_owned()));
    let ids = setup
        .gateway
        .complete(
            CompletionReference::Resource {
                uri: "demo://note/{id}".into(),
            },
            "id",
            "4",
            std::iter::empty::<(String, String)>(),
        )
        .await
        .unwrap();
    assert_eq!(ids.completion.values, ["42"]);
    setup.stop().await;
}

#[tokio::test]
async fn a_catalogue_change_reaches_the_front_client_as_list_changed() {
    let setup = Setup::start().await;
    let mut watch = setup.front.watch();
    // A second upstream with the same tools: with the default naming, both are prefixed.
    setup.upstream.add_server("more", demo(&[])).await.unwrap();
    tokio::time::timeout(WAIT, async {
        while setup.front.catalogue().get("more__echo").is_none() {
            assert!(watch.changed().await, "the front runtime is gone");
        }
    })
    .await
    .expect("the front client relisted after list_changed");
    let echo = setup
        .front
        .call_tool("more__echo", json!({"text": "new"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "new");
    setup.stop().await;
}

#[tokio::test]
async fn a_subscribed_resource_update_reaches_the_front_client() {
    let setup = Setup::start().await;
    let uri = "demo://text/hello";
    let mut updates = setup.gateway.subscribe(uri).await.unwrap();
    // The gateway subscribes upstream in the background: wait until the demo server has
    // heard the subscription before touching the resource.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let stats = setup.upstream.call_tool("stats", json!({})).await.unwrap();
        let counts = stats.structured_content.unwrap_or(Value::Null);
        if counts["methods"]["resources/subscribe"].as_u64() >= Some(1) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never subscribed upstream"
        );
        tokio::task::yield_now().await;
    }
    let touched = setup
        .upstream
        .call_tool("touch", json!({"uri": uri}))
        .await
        .unwrap();
    assert_eq!(touched.text(), "touched");
    let update = tokio::time::timeout(WAIT, updates.recv())
        .await
        .expect("the update arrived")
        .unwrap();
    assert_eq!(update.uri, uri);
    assert_eq!(&*update.server, "gateway");
    setup.stop().await;
}

/// A front client's lines to the gateway's server, read back as they come.
struct Lines {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Lines {
    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    /// Sends `line`, a request with id `id`, and returns the message of the invalid-params
    /// error it must get.
    async fn refusal(&mut self, id: i64, line: &str) -> String {
        self.send(line).await;
        let answer = self.answer().await;
        assert_eq!(answer["id"], id);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        answer["error"]["message"].as_str().unwrap().to_owned()
    }

    /// The next answer (a line with an `id`), skipping notifications.
    async fn answer(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(WAIT, self.read.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("the gateway's stream is open");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id").is_some() {
                return message;
            }
        }
    }
}

#[tokio::test]
async fn a_call_s_arguments_reach_the_upstream_unless_they_are_no_valid_json_object() {
    use tokio::io::AsyncBufReadExt;
    let setup = Setup::start().await;
    let served = switchboard_gateway::Gateway::new(setup.upstream.clone())
        .serve(switchboard_server::Options::default());
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let server = served.server().clone();
    let serving = tokio::spawn(async move {
        let (reader, writer) = tokio::io::split(theirs);
        let _ = server.serve(reader, writer).await;
    });
    let (read, write) = tokio::io::split(ours);
    let mut front = Lines {
        write,
        read: tokio::io::BufReader::new(read).lines(),
    };
    front
        .send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .await;
    assert!(front.answer().await.get("result").is_some());
    front
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    // Escapes and spacing as the client wrote them reach the upstream, which decodes them
    // (that the text is written as it came is the framer's test).
    front
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments": { "text" : "\u00e9t\u00e9 \"q\"" }}}"#)
        .await;
    let answer = front.answer().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["content"][0]["text"], "été \"q\"",
        "{answer}"
    );

    // A lone surrogate is no valid JSON text to pass on: the front client's error.
    let message = front
        .refusal(3, r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud800"}}}"#)
        .await;
    assert!(message.contains("invalid arguments"), "{message}");
    // Arguments that are not an object: the runtime's error, as with a tree.
    let message = front
        .refusal(4, r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":["x"]}}"#)
        .await;
    assert!(message.contains("got an array"), "{message}");

    drop(front);
    let _ = tokio::time::timeout(WAIT, serving).await;
    drop(served);
    setup.stop().await;
}
