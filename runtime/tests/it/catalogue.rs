//! One catalogue across servers: naming modes, prefixed names, filters on list and on call.

use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{Naming, NamingMode, Runtime, ServerConfig};

use crate::support::*;

async fn two_demos(naming: Naming, second: impl Into<ServerConfig>) -> Runtime {
    Runtime::builder()
        .naming(naming)
        .server("alpha", demo_memory(&["--name", "alpha"]))
        .server("beta", second)
        .build()
        .await
        .unwrap()
}

fn names(rt: &Runtime) -> Vec<String> {
    rt.catalogue().iter().map(|e| e.name.clone()).collect()
}

#[tokio::test]
async fn conditional_naming_prefixes_only_colliding_tools_and_routes_by_name() {
    let rt = two_demos(
        Naming::default(),
        demo_memory(&["--faults", "--name", "beta"]),
    )
    .await;
    let names = names(&rt);
    assert!(names.contains(&"alpha__greet".to_string()), "{names:?}");
    assert!(names.contains(&"beta__greet".to_string()), "{names:?}");
    assert!(names.contains(&"hang".to_string()), "{names:?}");
    assert!(!names.contains(&"greet".to_string()), "{names:?}");
    // Ordered by server, then tool.
    let servers: Vec<_> = rt
        .catalogue()
        .iter()
        .map(|e| e.server.to_string())
        .collect();
    let mut sorted = servers.clone();
    sorted.sort();
    assert_eq!(servers, sorted);

    let r = rt
        .call_tool("beta__greet", json!({"name": "B"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, B!");
    let r = rt.call_tool("sleep", json!({"ms": 1})).await.unwrap();
    assert_eq!(r.text(), "slept 1 ms");
    // The prefixed form works for unprefixed tools too.
    let r = rt
        .call_tool("beta__echo", json!({"text": "p"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "p");
    let err = rt
        .call_tool("greet", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::AmbiguousTool { .. }),
        "{err:?}"
    );
    let err = rt.call_tool("nope", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::UnknownTool) && err.server().is_none(),
        "{err:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn always_and_never_modes() {
    let rt = two_demos(
        Naming::new(NamingMode::Always).with_separator("."),
        demo_memory(&["--name", "beta"]).prefix("b"),
    )
    .await;
    let names = names(&rt);
    assert!(names.contains(&"alpha_greet".to_string()), "{names:?}");
    assert!(names.contains(&"b_greet".to_string()), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("alpha_") || n.starts_with("b_")),
        "{names:?}"
    );
    let r = rt
        .call_tool("b.add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.text(), "3");
    rt.shutdown().await;

    let rt = two_demos(
        Naming::new(NamingMode::Never),
        demo_memory(&["--name", "beta"]),
    )
    .await;
    let collisions = rt.catalogue().collisions().to_vec();
    assert!(
        collisions.iter().any(|c| c.name == "greet"),
        "{collisions:?}"
    );
    let err = rt
        .call_tool("greet", json!({"name": "x"}))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("alpha") && text.contains("beta"), "{text}");
    assert_eq!(
        rt.call_tool("alpha__greet", json!({"name": "A"}))
            .await
            .unwrap()
            .text(),
        "Hello, A!"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn allow_and_deny_filter_the_catalogue_and_calls() {
    let rt = Runtime::builder()
        .server(
            "demo",
            demo_memory(&["--faults"])
                .allow_tools(["e*", "greet", "crash"])
                .deny_tools(["crash"]),
        )
        .build()
        .await
        .unwrap();
    let names = names(&rt);
    assert_eq!(names, ["echo", "greet"]);
    let err = rt.call_tool("crash", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::UnknownTool) && err.server().is_none(),
        "{err:?}"
    );
    // Not by its server handle either.
    let server = rt.server("demo").unwrap();
    let err = server.call_tool("crash", json!({})).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::ToolDenied), "{err:?}");
    let err = server
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::ToolDenied), "{err:?}");
    assert!(server.status().is_ready());
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_restarting_keeps_its_tools_and_every_name_until_it_is_back() {
    let policy = switchboard::RestartPolicy::default()
        .with_initial_delay(Duration::from_millis(300))
        .with_jitter(0.0);
    let rt = Runtime::builder()
        .server("alpha", demo_memory(&[]))
        .server("beta", demo_stdio(&["--faults"]).restart(policy))
        .build()
        .await
        .unwrap();
    let beta = rt.server("beta").unwrap();
    let before = names(&rt);
    assert!(before.contains(&"hang".to_string()));
    assert!(before.contains(&"alpha__greet".to_string()), "{before:?}");
    let _ = rt.call_tool("crash", json!({})).await;
    let restarting = || {
        matches!(
            beta.status().state,
            switchboard::ServerState::Restarting { .. }
        )
    };
    assert!(
        eventually(Duration::from_secs(5), restarting).await,
        "{:?}",
        beta.status().state
    );
    // While beta restarts: its tools are still offered, under the same names.
    assert_eq!(names(&rt), before);
    assert!(
        eventually(Duration::from_secs(10), || beta.status().is_ready()).await,
        "{:?}",
        beta.status().state
    );
    assert_eq!(names(&rt), before);
    rt.shutdown().await;
}

#[tokio::test]
async fn once_a_server_is_seen_down_the_catalogue_no_longer_routes_to_it() {
    let rt = Runtime::builder()
        .server("alpha", demo_memory(&[]))
        .server(
            "beta",
            demo_stdio(&["--faults"]).restart(switchboard::RestartPolicy::off()),
        )
        .build()
        .await
        .unwrap();
    let beta = rt.server("beta").unwrap();
    assert!(names(&rt).contains(&"hang".to_string()));
    let _ = rt.call_tool("crash", json!({})).await;
    let failed = || matches!(beta.status().state, switchboard::ServerState::Down { .. });
    assert!(
        eventually(Duration::from_secs(5), failed).await,
        "{:?}",
        beta.status().state
    );
    // No waiting: the status and the catalogue agree from the moment the status says so.
    assert!(
        !names(&rt).contains(&"hang".to_string()),
        "{:?}",
        names(&rt)
    );
    let err = rt.call_tool("hang", json!({})).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownTool), "{err:?}");
    // The other server's tools stay.
    rt.call_tool("alpha__greet", json!({"name": "a"}))
        .await
        .expect("alpha still routes");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_catalogue_call_not_sent_yet_keeps_no_dropped_runtime_alive() {
    let rt = two_demos(Naming::default(), demo_memory(&["--name", "beta"])).await;
    let call = rt.call_tool("hang", json!({}));
    let unknown = rt.call_tool("alpha__greet", json!({"name": "x"}));
    drop(rt);
    // The runtime went away with its last handle (the calls did not hold it): they fail,
    // they do not reach a server.
    assert!(matches!(call.await, Err(e) if matches!(e.kind(), ErrorKind::Shutdown)));
    assert!(matches!(unknown.await, Err(e) if matches!(e.kind(), ErrorKind::Shutdown)));
}

#[tokio::test]
async fn search_finds_catalogue_tools_only_and_follows_servers_as_they_come_and_go() {
    let rt = Runtime::builder()
        .server(
            "alpha",
            demo_memory(&["--name", "alpha"]).deny_tools(["add"]),
        )
        .build()
        .await
        .unwrap();
    // alpha denies `add`: nothing adds numbers.
    let found = rt.search_tools("sum of two numbers", 5);
    assert!(found.iter().all(|m| m.tool.name != "add"), "{found:?}");

    rt.add_server("beta", demo_memory(&["--name", "beta"]))
        .await
        .unwrap();
    let found = rt.search_tools("sum of two numbers", 5);
    assert_eq!(found[0].name, "add", "{found:?}");
    assert_eq!(&*found[0].server, "beta");
    let greet = rt.search_tools("greet someone", 2);
    let names: Vec<&str> = greet.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["alpha__greet", "beta__greet"]);
    // A filter (a client's permissions) applies before the limit.
    let only_beta = rt.search_tools_with(
        &switchboard::search::ToolSearch::new("greet someone")
            .limit(1)
            .filter(|entry| &*entry.server == "beta"),
    );
    assert_eq!(only_beta.len(), 1);
    assert_eq!(only_beta[0].name, "beta__greet");

    rt.remove_server("beta").await.unwrap();
    let found = rt.search_tools("sum of two numbers", 5);
    assert!(found.iter().all(|m| &*m.server == "alpha"), "{found:?}");
    assert_eq!(rt.search_tools("greet someone", 1)[0].name, "greet");
    rt.shutdown().await;
}
