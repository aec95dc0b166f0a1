//! Protocol eras per server: `auto` probes with `server/discover`, `modern` and `legacy` are
//! forced; modern requests carry `_meta`; input-required results are answered by the
//! client handlers and retried; the stateless era's errors are typed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
use switchboard::ErrorKind;
use switchboard::{
    Era, Liveness, Protocol, RestartPolicy, Runtime, ServerConfig, ServerHandle, ServerState,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{demo_memory, eventually};

/// The opaque state the scripted server hands out: escapes that a re-encoding would change.
const STATE: &str = r#""st\u00e4te\/1""#;

/// How the scripted modern server answers `server/discover`.
#[derive(Clone, Copy)]
enum Discover {
    /// A discover result for 2026-07-28.
    Modern,
    /// `-32022`, naming only a version nobody speaks.
    OnlyNewer,
    /// `-32022` the first time (naming 2026-07-28 all the same), then a result.
    RefuseFirst,
    /// As `Modern`, with tool listings that are stale at once (`ttlMs` 0; otherwise 60 s).
    StaleLists,
}

/// A 2026-07-28 server: answers `server/discover`, lists one tool `book`, and answers a call
/// of `book` with an input-required result (an elicitation and `STATE`) until the retry
/// brings the answer; `needs_sampling` answers -32021; `version_once` answers -32022 the
/// first time. Records every request.
fn modern_peer(
    discover: Discover,
    seen: Arc<Mutex<Vec<Value>>>,
) -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(move |io| {
        let seen = seen.clone();
        let refused_discover = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let refused_call = Arc::new(std::sync::atomic::AtomicBool::new(false));
        async move {
            let refuse = |flag: &std::sync::atomic::AtomicBool| {
                !flag.swap(true, std::sync::atomic::Ordering::SeqCst)
            };
            let unsupported = |id: &Value| {
                json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}
                }})
            };
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                // The state is checked as text: byte for byte, as the server wrote it.
                let echoed_state = line.contains(&format!(r#""requestState":{STATE}"#));
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                seen.lock().unwrap().push(msg.clone());
                let id = msg["id"].clone();
                let result = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
                let answer = match (msg["method"].as_str(), discover) {
                    (Some("server/discover"), Discover::RefuseFirst)
                        if refuse(&refused_discover) =>
                    {
                        unsupported(&id)
                    }
                    (Some("tools/call"), _)
                        if msg["params"]["name"] == "version_once" && refuse(&refused_call) =>
                    {
                        unsupported(&id)
                    }
                    (Some("tools/call"), _) if msg["params"]["name"] == "weird" => result(json!({
                        "resultType": "later", "content": []
                    })),
                    (Some("tools/call"), _) if msg["params"]["name"] == "version_once" => {
                        result(json!({
                            "resultType": "complete", "content": [{"type": "text", "text": "second try"}]
                        }))
                    }
                    (
                        Some("server/discover"),
                        Discover::Modern | Discover::RefuseFirst | Discover::StaleLists,
                    ) => {
                        let mut discovered = json!({
                            "resultType": "complete", "supportedVersions": ["2026-07-28"],
                            "capabilities": {"tools": {}}, "instructions": "book things",
                            "ttlMs": 0, "cacheScope": "private"
                        });
                        // `RefuseFirst` names nobody here (only in its listing's `_meta`).
                        if matches!(discover, Discover::Modern) {
                            discovered["_meta"] = json!({"io.modelcontextprotocol/serverInfo":
                                {"name": "modern-peer", "version": "2"}});
                        }
                        result(discovered)
                    }
                    (Some("server/discover"), Discover::OnlyNewer) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {
                            "code": -32022, "message": "Unsupported protocol version",
                            "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}
                        }})
                    }
                    (Some("tools/list"), _) => result(json!({"resultType": "complete",
                        "ttlMs": if matches!(discover, Discover::StaleLists) { 0 } else { 60_000 },
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "from-list", "version": "3"}},
                        "tools": [
                        {"name": "book", "inputSchema": {"type": "object"}},
                        {"name": "needs_sampling", "inputSchema": {"type": "object"}}
                    ]})),
                    (Some("tools/call"), _) if msg["params"]["name"] == "needs_sampling" => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {
                            "code": -32021, "message": "sampling required",
                            "data": {"requiredCapabilities": {"sampling": {}}}
                        }})
                    }
                    (Some("tools/call"), _) => match msg["params"].get("inputResponses") {
                        Some(responses) if echoed_state => result(json!({
                            "resultType": "complete",
                            "content": [{"type": "text", "text": format!("answered {}", responses["confirm"]["content"]["ok"])}]
                        })),
                        _ => result(json!({
                            "resultType": "input_required",
                            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                                "mode": "form", "message": "Book it?",
                                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                            }}},
                            // Replaced by `STATE` as it is written, below.
                            "requestState": "__STATE__"
                        })),
                    },
                    _ => continue,
                };
                let mut out = answer
                    .to_string()
                    .replace("\"__STATE__\"", STATE)
                    .into_bytes();
                out.push(b'\n');
                if writer.write_all(&out).await.is_err() {
                    break;
                }
            }
        }
    })
}

/// Accepts every form with `{"ok": true}` and records the questions.
#[derive(Debug, Default, Clone)]
struct Accept {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ElicitationHandler for Accept {
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        self.asked.lock().unwrap().push(request.message);
        let mut content = serde_json::Map::new();
        content.insert("ok".into(), json!(true));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

async fn start(config: impl Into<ServerConfig>) -> (Runtime, ServerHandle) {
    crate::support::scripted(config, Duration::from_secs(10)).await
}

#[tokio::test]
async fn auto_finds_a_modern_server_and_every_request_carries_the_stateless_meta() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let accept = Accept::default();
    let handlers = ClientHandlers::new().elicitation(accept.clone());
    let (rt, server) =
        start(modern_peer(Discover::Modern, seen.clone()).client_handlers(handlers)).await;
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.era, Some(Era::Modern));
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(
        status.server_info.as_ref().map(|i| i.name.as_str()),
        Some("modern-peer")
    );
    assert_eq!(status.instructions.as_deref(), Some("book things"));
    assert_eq!(server.tools().len(), 2);

    // One input-required round: the handler answers, the retry echoes the state.
    let result = server
        .call_tool("book", json!({"when": "now"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "answered true");
    assert_eq!(*accept.asked.lock().unwrap(), ["Book it?"]);

    let seen = seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["server/discover", "tools/list", "tools/call", "tools/call"]
    );
    for request in &seen {
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{request}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}},
                   "extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "switchboard"
        );
    }
    let (first, retry) = (&seen[2], &seen[3]);
    assert_ne!(first["id"], retry["id"], "a retry has a new id");
    assert_eq!(retry["params"]["name"], "book");
    assert_eq!(retry["params"]["arguments"], json!({"when": "now"}));
    assert_eq!(
        retry["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"ok": true}})
    );
    assert_eq!(retry["params"]["_meta"]["progressToken"], retry["id"]);
    assert!(first["params"].get("inputResponses").is_none());
    rt.shutdown().await;
}

#[tokio::test]
async fn input_rounds_past_the_cap_and_undeclared_capabilities_are_typed_errors() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handlers = ClientHandlers::new().elicitation(Accept::default());
    let peer = modern_peer(Discover::Modern, seen.clone())
        .client_handlers(handlers)
        .max_input_rounds(0);
    let (rt, server) = start(peer).await;
    let err = server.call_tool("book", json!({})).await.unwrap_err();
    let ErrorKind::InputLoop { rounds } = err.kind() else {
        panic!("{err:?}")
    };
    assert_eq!((*rounds, err.tool()), (0, Some("book")));
    assert!(err.to_string().contains("`s`"), "{err}");

    let err = server
        .call_tool("needs_sampling", json!({}))
        .await
        .unwrap_err();
    let ErrorKind::MissingClientCapability { missing, .. } = err.kind() else {
        panic!("{err:?}")
    };
    assert_eq!(
        (&missing[..], err.tool()),
        (&["sampling".to_owned()][..], Some("needs_sampling"))
    );
    rt.shutdown().await;

    // No elicitation handler: the input request cannot be answered.
    let (rt, server) = start(modern_peer(Discover::Modern, seen)).await;
    let err = server.call_tool("book", json!({})).await.unwrap_err();
    let ErrorKind::InputUnsupported { request, .. } = err.kind() else {
        panic!("{err:?}")
    };
    assert_eq!(request.as_deref(), Some("elicitation/create"));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_modern_server_without_a_common_version_fails_to_start_naming_its_versions() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (rt, server) = start(modern_peer(Discover::OnlyNewer, seen.clone())).await;
    let ServerState::Failed { error } = server.wait_started().await.state else {
        panic!("{:?}", server.status().state)
    };
    assert!(
        matches!(error.kind(), ErrorKind::UnsupportedVersion { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("2099-01-01"), "{error}");
    // Modern by its error: no `initialize` follows.
    let methods: Vec<Value> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(methods, [json!("server/discover")]);
    rt.shutdown().await;
}

#[tokio::test]
async fn auto_falls_back_to_initialize_and_forced_eras_are_obeyed() {
    let (rt, server) = start(demo_memory(&[])).await;
    let status = server.status();
    assert_eq!(
        (status.era, status.protocol_version.as_deref()),
        (Some(Era::Legacy), Some("2025-11-25"))
    );
    assert!(server.call_tool("echo", json!({"text": "x"})).await.is_ok());
    rt.shutdown().await;

    let (rt, server) = start(demo_memory(&[]).protocol(Protocol::Legacy)).await;
    assert_eq!(server.status().era, Some(Era::Legacy));
    rt.shutdown().await;

    // Forced modern: a legacy server's refusal of `server/discover` is a failed start.
    let (rt, server) = start(demo_memory(&[]).protocol(Protocol::Modern)).await;
    let ServerState::Failed { error } = server.wait_started().await.state else {
        panic!("{:?}", server.status().state)
    };
    assert!(error.to_string().contains("server/discover"), "{error}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_modern_server_is_probed_with_discover_for_liveness_never_pinged() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let liveness =
        Liveness::default().with_ping(Duration::from_millis(100), Duration::from_secs(5));
    let config = modern_peer(Discover::Modern, seen.clone())
        .restart(RestartPolicy::off())
        .liveness(liveness);
    let rt = Runtime::builder()
        .server("s", config)
        .build()
        .await
        .unwrap();
    let discovers = || {
        let seen = seen.lock().unwrap();
        assert!(seen.iter().all(|m| m["method"] != "ping"), "{seen:?}");
        seen.iter()
            .filter(|m| m["method"] == "server/discover")
            .count()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while discovers() < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        discovers() >= 3,
        "an idle modern server is probed with server/discover"
    );
    assert!(rt.server("s").unwrap().status().is_ready());
    rt.shutdown().await;
}

#[tokio::test]
async fn an_unsupported_version_error_is_retried_once_with_a_version_from_the_list() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (rt, server) = start(modern_peer(Discover::RefuseFirst, seen.clone())).await;
    assert_eq!(
        server.status().era,
        Some(Era::Modern),
        "{:?}",
        server.status().state
    );
    let result = server
        .call_tool("version_once", json!({"k": 1}))
        .await
        .unwrap();
    assert_eq!(result.text(), "second try");
    let seen = seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "server/discover",
            "tools/list",
            "tools/call",
            "tools/call"
        ]
    );
    let (first, retry) = (&seen[3], &seen[4]);
    assert_ne!(first["id"], retry["id"]);
    assert_eq!(retry["params"]["arguments"], json!({"k": 1}));
    assert_eq!(
        retry["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(retry["params"].get("inputResponses").is_none(), "{retry}");
    rt.shutdown().await;
}

/// Answers after `delay`, then records that it finished; counts the times its task was
/// stopped before.
#[derive(Debug, Clone)]
struct Slow {
    delay: Duration,
    finished: Arc<std::sync::atomic::AtomicBool>,
    stopped: Arc<std::sync::atomic::AtomicUsize>,
}

/// Counts a handler's task dropped before it finished.
struct CountsStop {
    stopped: Arc<std::sync::atomic::AtomicUsize>,
    finished: bool,
}

impl Drop for CountsStop {
    fn drop(&mut self) {
        if !self.finished {
            self.stopped
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl ElicitationHandler for Slow {
    fn elicit(
        &self,
        _server: &str,
        _request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let (delay, finished) = (self.delay, self.finished.clone());
        let guard = CountsStop {
            stopped: self.stopped.clone(),
            finished: false,
        };
        Box::pin(async move {
            // The whole guard, not only the field the block names, lives in the task.
            let mut guard = guard;
            tokio::time::sleep(delay).await;
            guard.finished = true;
            finished.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(ElicitationResponse::decline())
        })
    }
}

#[tokio::test]
async fn the_call_deadline_covers_the_input_rounds_and_dropping_the_call_stops_the_handler() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let slow = Slow {
        delay: Duration::from_secs(30),
        finished: Arc::default(),
        stopped: Arc::default(),
    };
    let handlers = ClientHandlers::new().elicitation(slow.clone());
    let (rt, server) =
        start(modern_peer(Discover::Modern, seen.clone()).client_handlers(handlers)).await;

    // The handler would take 30 s; the call has 1.5 s for everything (time enough to reach the handler on a loaded machine).
    let started = std::time::Instant::now();
    let err = server
        .call_tool("book", json!({}))
        .timeout(Duration::from_millis(1500))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not after the handler: {:?}",
        started.elapsed()
    );

    // Dropped while the handler works: the handler's task stops with it.
    let call = server.call_tool("book", json!({}));
    assert!(tokio::time::timeout(Duration::from_millis(1500), call)
        .await
        .is_err());
    let stopped = || slow.stopped.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(5), || stopped() == 2).await,
        "the handlers of the call past its deadline and of the dropped call were stopped: {}",
        stopped()
    );
    assert!(!slow.finished.load(std::sync::atomic::Ordering::SeqCst));
    let calls = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .count();
    assert_eq!(calls, 2, "no retry after the deadline or the drop");
    rt.shutdown().await;
}

#[tokio::test]
async fn an_unknown_result_type_is_a_protocol_error() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (rt, server) = start(modern_peer(Discover::Modern, seen)).await;
    let err = server.call_tool("weird", json!({})).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Protocol { detail, .. } if detail.contains("later")),
        "{err:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn input_rounds_are_counted_per_server() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handlers = ClientHandlers::new().elicitation(Accept::default());
    let config = modern_peer(Discover::Modern, seen)
        .client_handlers(handlers)
        .restart(RestartPolicy::off())
        .liveness(Liveness::off());
    let rt = Runtime::builder()
        .server("s", config)
        .metrics_listener(([127, 0, 0, 1], 0).into())
        .build()
        .await
        .unwrap();
    let server = rt.server("s").unwrap();
    for _ in 0..2 {
        server.call_tool("book", json!({})).await.unwrap();
    }
    let addr = rt.metrics_addr().unwrap();
    let body = tokio::task::spawn_blocking(move || crate::metrics::scrape(addr))
        .await
        .unwrap();
    let rounds = crate::metrics::value(&body, r#"switchboard_input_rounds_total{server="s"}"#);
    assert_eq!(rounds, Some(2.0), "{body}");
    // A caller's request is measured once, whatever its rounds: two calls, two requests.
    let ok = crate::metrics::value(
        &body,
        r#"switchboard_requests_total{server="s",method="tools/call",tool="book",outcome="ok"}"#,
    );
    assert_eq!(ok, Some(2.0), "{body}");
    rt.shutdown().await;
}

/// A handshake-era peer that never answers `server/discover` (it drops what it does not
/// know), and answers `initialize` and `tools/list`.
fn silent_to_discover() -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(|io| async move {
        let (reader, mut writer) = tokio::io::split(io);
        let mut lines = BufReader::new(reader).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let result = match msg["method"].as_str() {
                Some("initialize") => json!({"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "quiet", "version": "1"}}),
                Some("tools/list") => json!({"tools": []}),
                _ => continue,
            };
            let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
            let mut out = answer.to_string().into_bytes();
            out.push(b'\n');
            if writer.write_all(&out).await.is_err() {
                break;
            }
        }
    })
}

#[tokio::test]
async fn a_probe_that_goes_unanswered_falls_back_to_initialize_within_half_the_startup_timeout() {
    let started = std::time::Instant::now();
    let (rt, server) = start(silent_to_discover().startup_timeout(Duration::from_secs(6))).await;
    let status = server.wait_started().await;
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.era, Some(Era::Legacy));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_millis(5500),
        "the probe waits half the startup timeout, then initialize: {took:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_after_the_listing_went_stale_has_the_tools_listed_again() {
    for (discover, relisted) in [(Discover::StaleLists, true), (Discover::Modern, false)] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handlers = ClientHandlers::new().elicitation(Accept::default());
        let peer = modern_peer(discover, seen.clone())
            .client_handlers(handlers)
            .min_list_freshness(Duration::from_millis(300));
        let (rt, server) = start(peer).await;
        let lists = || {
            let seen = seen.lock().unwrap();
            seen.iter().filter(|m| m["method"] == "tools/list").count()
        };
        assert_eq!(lists(), 1);
        // Past the shortest freshness, then a call: a stale list is fetched again before
        // the call is routed by it.
        tokio::time::sleep(Duration::from_millis(350)).await;
        server.call_tool("book", json!({})).await.unwrap();
        if relisted {
            assert_eq!(
                lists(),
                2,
                "ttlMs 0: the next call has the tools listed again"
            );
        } else {
            assert_eq!(lists(), 1, "ttlMs 60 s: still fresh, not listed again");
        }
        rt.shutdown().await;
    }
}
