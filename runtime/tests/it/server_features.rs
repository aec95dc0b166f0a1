//! Resources, prompts, completion and logging through the typed methods of `ServerHandle`,
//! against the demo server: every method, paging, the not-found error whatever its code,
//! capability gating by negotiated version, and what the runtime re-applies after a restart.

use std::time::Duration;

use serde_json::json;

use switchboard::model::{CompletionReference, Content, LoggingLevel, ResourceContents, Role};
use switchboard::ErrorKind;
use switchboard::RestartPolicy;

use crate::support::*;

#[tokio::test]
async fn resources_are_listed_across_pages_and_read_as_text_or_base64() {
    let (rt, server) = runtime_with(demo_memory(&["--page-size", "2"])).await;
    let uris: Vec<String> = server
        .list_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(
        uris,
        [
            "demo://text/hello",
            "demo://blob/bytes",
            "demo://text/readme"
        ]
    );
    let first = server.list_resources_page(None).await.unwrap();
    assert_eq!(first.resources.len(), 2);
    let rest = server
        .list_resources_page(first.next_cursor.as_deref())
        .await
        .unwrap();
    assert_eq!(rest.resources.len(), 1);
    assert!(rest.next_cursor.is_none());

    let templates = server.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "demo://note/{id}");

    let hello = server.read_resource("demo://text/hello").await.unwrap();
    assert!(matches!(&hello.contents[0], ResourceContents::Text(t) if t.text == "Hello, world!"));
    let blob = server.read_resource("demo://blob/bytes").await.unwrap();
    let ResourceContents::Blob(blob) = &blob.contents[0] else {
        panic!("{blob:?}")
    };
    assert!(
        blob.blob.starts_with("AAECAwQF"),
        "base64 kept: {}",
        blob.blob
    );
    let note = server.read_resource("demo://note/42").await.unwrap();
    assert!(matches!(&note.contents[0], ResourceContents::Text(t) if t.text == "note 42"));
    rt.shutdown().await;
}

#[tokio::test]
async fn an_unknown_resource_is_one_error_whichever_code_the_server_uses() {
    for args in [&[][..], &["--not-found-code", "-32602"][..]] {
        let (rt, server) = runtime_with(demo_memory(args)).await;
        let err = server.read_resource("demo://nothing").await.unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::ResourceNotFound { uri, .. } if &**uri == "demo://nothing"),
            "{args:?}: {err:?}"
        );
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn prompts_are_listed_and_fetched_with_their_messages() {
    let (rt, server) = runtime_with(demo_memory(&[])).await;
    let prompts = server.list_prompts().await.unwrap();
    let greeting = prompts.iter().find(|p| p.name == "greeting").unwrap();
    assert_eq!(greeting.required_arguments().collect::<Vec<_>>(), ["name"]);

    let got = server
        .get_prompt("greeting", [("name", "Ada"), ("style", "pirate")])
        .await
        .unwrap();
    assert_eq!(got.messages[0].role, Role::User);
    assert!(
        matches!(&got.messages[0].content, Content::Text(t) if t.text == "Say hello to Ada in a pirate style."),
        "{got:?}"
    );
    let embedded = server
        .get_prompt("with_resource", [] as [(&str, &str); 0])
        .await
        .unwrap();
    assert!(matches!(embedded.messages[0].content, Content::Resource(_)));
    let missing = server
        .get_prompt("greeting", [] as [(&str, &str); 0])
        .await
        .unwrap_err();
    assert!(
        matches!(missing.kind(), ErrorKind::Rpc { code: -32602, .. }),
        "{missing:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn completion_answers_for_prompt_and_template_arguments_with_context() {
    let (rt, server) = runtime_with(demo_memory(&[])).await;
    let prompt = CompletionReference::Prompt {
        name: "greeting".into(),
    };
    let names = server
        .complete(prompt.clone(), "name", "al", [] as [(&str, &str); 0])
        .await
        .unwrap();
    assert_eq!(names.completion.values, ["Alan", "Alice"]);
    let styles = server
        .complete(prompt, "style", "", [("name", "Ada")])
        .await
        .unwrap();
    assert_eq!(styles.completion.values, ["formal", "pirate"]);
    let template = CompletionReference::Resource {
        uri: "demo://note/{id}".into(),
    };
    let ids = server
        .complete(template, "id", "4", [] as [(&str, &str); 0])
        .await
        .unwrap();
    assert_eq!(ids.completion.values, ["42"]);
    rt.shutdown().await;
}

#[tokio::test]
async fn an_undeclared_capability_fails_locally_from_2025_06_18_and_is_asked_before() {
    let (rt, server) = runtime_with(demo_memory(&["--no-server-features", "--faults"])).await;
    let err = server.list_resources().await.unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::NotSupported {
                capability: "resources",
                ..
            }
        ),
        "{err:?}"
    );
    let err = server.list_prompts().await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NotSupported { .. }),
        "{err:?}"
    );
    // Nothing was sent: the server never saw either method.
    let stats = server.call_tool("stats", json!({})).await.unwrap();
    let methods = &stats.structured_content.unwrap()["methods"];
    assert!(methods.get("tools/call").is_some(), "{methods}");
    assert!(methods.get("resources/list").is_none(), "{methods}");
    assert!(methods.get("prompts/list").is_none(), "{methods}");
    // ping is never gated.
    server.ping().await.unwrap();
    rt.shutdown().await;

    // A 2024-11-05 server is asked anyway, and answers for itself.
    let (rt, server) = runtime_with(demo_memory(&[
        "--no-server-features",
        "--protocol-version",
        "2024-11-05",
    ]))
    .await;
    let err = server.list_resources().await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Rpc { code: -32601, .. }),
        "{err:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn server_logs_reach_the_broadcast_at_the_level_set() {
    let (rt, server) = runtime_with(demo_memory(&[])).await;
    let mut logs = server.logs();
    server.set_log_level(LoggingLevel::Debug).await.unwrap();
    let logged = server
        .call_tool(
            "log",
            json!({"level": "debug", "message": "fine detail", "logger": "db"}),
        )
        .await
        .unwrap();
    assert_eq!(logged.text(), "logged");
    let message = tokio::time::timeout(Duration::from_secs(5), logs.recv())
        .await
        .expect("a log message")
        .unwrap();
    assert_eq!(message.level, LoggingLevel::Debug);
    assert_eq!(message.logger.as_deref(), Some("db"));
    assert_eq!(message.data, json!("fine detail"));
    rt.shutdown().await;
}

#[tokio::test]
async fn subscriptions_and_the_log_level_are_restored_after_a_restart() {
    let config = demo_stdio(&["--faults"]).restart(
        RestartPolicy::default()
            .with_initial_delay(Duration::from_millis(100))
            .with_jitter(0.0),
    );
    let (rt, server) = runtime_with(config).await;
    server.set_log_level(LoggingLevel::Warning).await.unwrap();
    let mut updates = server.subscribe("demo://text/hello").await.unwrap();
    let touch = || server.call_tool("touch", json!({"uri": "demo://text/hello"}));
    assert_eq!(touch().await.unwrap().text(), "touched");
    let update = tokio::time::timeout(Duration::from_secs(5), updates.recv())
        .await
        .expect("an update")
        .unwrap();
    assert_eq!(update.uri, "demo://text/hello");

    let _ = server.call_tool("crash", json!({"code": 3})).await;
    let restarted = || server.status().restarts >= 1 && server.status().is_ready();
    assert!(eventually(Duration::from_secs(10), restarted).await);
    // The runtime subscribes and sets the level again on the new session by itself.
    let level_restored = async {
        loop {
            let level = server.call_tool("log_level", json!({})).await.unwrap();
            if level.text() == "warning" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), level_restored)
        .await
        .expect("the log level set again");
    let again = async {
        loop {
            touch().await.unwrap();
            if let Ok(Ok(update)) =
                tokio::time::timeout(Duration::from_millis(200), updates.recv()).await
            {
                return update;
            }
        }
    };
    let update = tokio::time::timeout(Duration::from_secs(5), again)
        .await
        .expect("an update after the restart");
    assert_eq!(update.uri, "demo://text/hello");
    rt.shutdown().await;
}

/// Two demo servers in one runtime, both offering the same resources and prompts.
async fn two_servers() -> switchboard::Runtime {
    switchboard::Runtime::builder()
        .server("alpha", demo_memory(&["--faults", "--name", "alpha"]))
        .server("beta", demo_memory(&["--name", "beta"]))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_runtime_routes_a_uri_to_the_one_server_that_lists_it_and_names_both_when_two_do() {
    let rt = two_servers().await;
    let (alpha, beta) = (rt.server("alpha").unwrap(), rt.server("beta").unwrap());
    // Both servers' lists are cached in their statuses, each once it is ready.
    let listed = || alpha.status().resources.len() == 3 && beta.status().resources.len() == 3;
    assert!(
        eventually(Duration::from_secs(5), listed).await,
        "resources cached in the status"
    );
    let err = rt.read_resource("demo://text/hello").await.unwrap_err();
    let ErrorKind::AmbiguousResource { servers, .. } = err.kind() else {
        panic!("{err:?}")
    };
    assert_eq!(
        servers.iter().map(|s| &**s).collect::<Vec<_>>(),
        ["alpha", "beta"]
    );
    let by_template = rt.resource_owners("demo://note/9");
    assert_eq!(by_template.len(), 2, "both templates match");
    let none = rt.read_resource("other://x").await.unwrap_err();
    assert!(
        matches!(none.kind(), ErrorKind::ResourceNotFound { .. }) && none.server().is_none(),
        "{none:?}"
    );
    rt.remove_server("beta").await.unwrap();
    let read = rt.read_resource("demo://note/9").await.unwrap();
    assert!(matches!(&read.contents[0], ResourceContents::Text(t) if t.text == "note 9"));
    rt.shutdown().await;
}

#[tokio::test]
async fn prompts_are_named_like_tools_across_servers() {
    let rt = two_servers().await;
    let both = || rt.prompt_catalogue().iter().count() >= 6;
    assert!(eventually(Duration::from_secs(5), both).await);
    let names: Vec<String> = rt
        .prompt_catalogue()
        .iter()
        .map(|e| e.name.clone())
        .collect();
    assert!(names.contains(&"alpha__greeting".to_owned()), "{names:?}");
    let err = rt
        .get_prompt("greeting", [("name", "Ada")])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::AmbiguousPrompt { .. } | ErrorKind::UnknownPrompt { .. }
        ),
        "{err:?}"
    );
    let got = rt
        .get_prompt("beta__greeting", [("name", "Ada")])
        .await
        .unwrap();
    assert!(matches!(&got.messages[0].content, Content::Text(t) if t.text == "Say hello to Ada."));
    rt.shutdown().await;
}

#[tokio::test]
async fn resources_list_changed_refreshes_the_cached_list() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let lists = || async {
        let stats = server.call_tool("stats", json!({})).await.unwrap();
        stats.structured_content.unwrap()["methods"]["resources/list"]
            .as_u64()
            .unwrap_or(0)
    };
    let listed = || server.status().resources.len() == 3;
    assert!(eventually(Duration::from_secs(5), listed).await);
    let before = lists().await;
    assert!(before >= 1, "listed once the server was ready");
    server
        .call_tool("resources_changed", json!({}))
        .await
        .unwrap();
    let mut after = before;
    for _ in 0..100 {
        after = lists().await;
        if after > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(after, before + 1, "listed again once");
    rt.shutdown().await;
}

/// A runtime of a demo server with resources and prompts, and one with neither.
async fn one_with_features_beside_one_without() -> switchboard::Runtime {
    switchboard::Runtime::builder()
        .server("one", demo_memory(&["--name", "one"]))
        .server("plain", demo_memory(&["--no-server-features"]))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_uri_or_prompt_right_after_start_waits_for_the_first_listings() {
    // Resources and prompts are listed after the server is ready: routing by them right
    // after `build` waits for those listings instead of calling the URI unknown.
    for _ in 0..10 {
        let rt = one_with_features_beside_one_without().await;
        let read = rt.read_resource("demo://text/hello").await.unwrap();
        assert!(
            matches!(&read.contents[0], ResourceContents::Text(t) if t.text == "Hello, world!")
        );
        rt.shutdown().await;

        let rt = one_with_features_beside_one_without().await;
        rt.lists_settled().await;
        let owners: Vec<String> = rt
            .resource_owners("demo://text/hello")
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        assert_eq!(owners, ["one"]);
        let got = rt.get_prompt("greeting", [("name", "Ada")]).await.unwrap();
        assert!(
            matches!(&got.messages[0].content, Content::Text(t) if t.text == "Say hello to Ada.")
        );
        rt.shutdown().await;
    }
}
