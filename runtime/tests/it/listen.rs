//! `subscriptions/listen` with a scripted 2026-07-28 server: opened once the server is ready
//! with what its capabilities allow, list changes on it refresh the catalogue and the
//! status, `subscribe` and `unsubscribe` replace it (the old one cancelled) and updates reach
//! the subscriber, and a listen the server ends is opened again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::{Runtime, ServerConfig, ServerHandle};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::broadcast;

/// What the test has the scripted server do on its open listen.
#[derive(Debug, Clone)]
enum Push {
    /// A notification on the listen (tagged with its subscription id).
    Notify(&'static str, Value),
    /// The graceful end: the listen request answered.
    End,
    /// The stdio way for a server to end a listen: `notifications/cancelled` naming it.
    Cancel,
}

/// The scripted server and what it saw.
pub(crate) struct Peer {
    seen: Arc<Mutex<Vec<Value>>>,
    push: broadcast::Sender<Push>,
    /// The listings' version: tool `t{n}` and prompt `p{n}`.
    version: Arc<AtomicUsize>,
    /// The `ttlMs` of the resource and prompt lists (none when `None`).
    list_ttl: Option<u64>,
    /// Whether `subscriptions/listen` is answered with -32601.
    refuses_listen: bool,
}

impl Peer {
    pub(crate) fn new() -> Self {
        Peer {
            seen: Arc::default(),
            push: broadcast::channel(16).0,
            version: Arc::default(),
            list_ttl: None,
            refuses_listen: false,
        }
    }

    /// A peer whose resource and prompt lists say `ttlMs`.
    pub(crate) fn with_list_ttl(ttl_ms: u64) -> Self {
        Peer {
            list_ttl: Some(ttl_ms),
            ..Peer::new()
        }
    }

    /// A modern server; with `announces`, its capabilities say it sends list changes and
    /// takes resource subscriptions, otherwise they say nothing of the kind.
    pub(crate) fn config(&self, announces: bool) -> ServerConfig<switchboard::transport::Memory> {
        let (seen, push, version) = (self.seen.clone(), self.push.clone(), self.version.clone());
        let (ttl, refuses_listen) = (self.list_ttl, self.refuses_listen);
        ServerConfig::memory(move |io| {
            let (seen, mut pushes, version) = (seen.clone(), push.subscribe(), version.clone());
            let peer = Script {
                announces,
                ttl,
                refuses_listen,
            };
            async move {
                let (reader, mut writer) = tokio::io::split(io);
                let mut lines = BufReader::new(reader).lines();
                let mut listen: Option<Value> = None;
                loop {
                    let out = tokio::select! {
                        line = lines.next_line() => {
                            let Ok(Some(line)) = line else { break };
                            let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
                            seen.lock().unwrap().push(msg.clone());
                            answer(&msg, peer, version.load(Ordering::SeqCst), &mut listen)
                        }
                        push = pushes.recv() => {
                            let Ok(push) = push else { break };
                            let Some(id) = listen.clone() else { continue };
                            let tag = json!({"io.modelcontextprotocol/subscriptionId": id});
                            Some(match push {
                                Push::Notify(method, mut params) => {
                                    params["_meta"] = tag;
                                    json!({"jsonrpc": "2.0", "method": method, "params": params})
                                }
                                Push::End => {
                                    listen = None;
                                    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "_meta": tag}})
                                }
                                Push::Cancel => {
                                    listen = None;
                                    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
                                }
                            })
                        }
                    };
                    for message in out.into_iter().flat_map(|o| match o {
                        Value::Array(many) => many,
                        one => vec![one],
                    }) {
                        let mut bytes = message.to_string().into_bytes();
                        bytes.push(b'\n');
                        if writer.write_all(&bytes).await.is_err() {
                            return;
                        }
                    }
                }
            }
        })
    }

    /// Every `subscriptions/listen` the server saw, oldest first.
    fn listens(&self) -> Vec<Value> {
        self.seen_of("subscriptions/listen")
    }

    /// The listings from now on: tool `t{n}`, prompt `p{n}`, resource `x://r{n}`; with
    /// [`FAILING_LISTS`], every list request fails.
    pub(crate) fn set_version(&self, version: usize) {
        self.version.store(version, Ordering::SeqCst);
    }

    /// Every method the server was sent, in order.
    pub(crate) fn methods(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter_map(|m| m["method"].as_str().map(String::from))
            .collect()
    }

    pub(crate) fn seen_of(&self, method: &str) -> Vec<Value> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|m| m["method"] == method)
            .cloned()
            .collect()
    }
}

/// How the scripted server answers.
#[derive(Clone, Copy)]
struct Script {
    /// Whether its capabilities announce list changes and subscriptions.
    announces: bool,
    /// The `ttlMs` of its resource and prompt lists.
    ttl: Option<u64>,
    /// Whether it answers `subscriptions/listen` with -32601.
    refuses_listen: bool,
}

/// The version at which every list request fails.
pub(crate) const FAILING_LISTS: usize = 99;

/// The version at which list requests are never answered.
pub(crate) const SILENT_LISTS: usize = 98;

/// The scripted server's answer to `msg` (an array: several messages in order).
fn answer(msg: &Value, peer: Script, version: usize, listen: &mut Option<Value>) -> Option<Value> {
    let id = msg["id"].clone();
    let ttl = peer.ttl;
    let method = msg["method"].as_str()?;
    let result = |mut result: Value| {
        if let Some(ttl) = ttl {
            if method.ends_with("/list") {
                result["ttlMs"] = json!(ttl);
            }
        }
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    };
    let error = |message: String| {
        Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": message}}))
    };
    if version == FAILING_LISTS && method.ends_with("/list") {
        return error("listing is broken".into());
    }
    if version == SILENT_LISTS && method.ends_with("/list") {
        return None;
    }
    let name = &msg["params"]["name"];
    match method {
        "server/discover" => {
            let capabilities = if peer.announces {
                json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true},
                       "resources": {"listChanged": true, "subscribe": true}})
            } else {
                json!({"tools": {}, "prompts": {}, "resources": {}})
            };
            result(
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                          "capabilities": capabilities}),
            )
        }
        "tools/list" => result(json!({"resultType": "complete", "ttlMs": 60_000, "tools": [
            {"name": format!("t{version}"), "inputSchema": {"type": "object"}}
        ]})),
        "prompts/list" => result(json!({"resultType": "complete", "prompts": [
            {"name": format!("p{version}")}
        ]})),
        "resources/list" => result(json!({"resultType": "complete", "resources": [
            {"uri": format!("x://r{version}"), "name": "r"}
        ]})),
        "resources/templates/list" => {
            result(json!({"resultType": "complete", "resourceTemplates": []}))
        }
        // Only what the current listing names exists.
        "tools/call" if *name == format!("t{version}") => result(json!({
            "resultType": "complete", "content": [{"type": "text", "text": name}]
        })),
        "prompts/get" if *name == format!("p{version}") => result(json!({
            "resultType": "complete", "messages": []
        })),
        "resources/read" if msg["params"]["uri"] == format!("x://r{version}") => {
            result(json!({"resultType": "complete", "contents": []}))
        }
        "tools/call" | "prompts/get" | "resources/read" => {
            error(format!("no such thing: {}", msg["params"]))
        }
        "subscriptions/listen" if peer.refuses_listen => Some(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
        ),
        "subscriptions/listen" => {
            *listen = Some(id.clone());
            Some(
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
                                   "notifications": msg["params"]["notifications"]}}),
            )
        }
        _ => None,
    }
}

pub(crate) async fn start(
    config: ServerConfig<switchboard::transport::Memory>,
) -> (Runtime, ServerHandle) {
    crate::support::scripted(config, Duration::from_secs(5)).await
}

/// Waits (at most 5 s) for `done`.
pub(crate) async fn until(what: &str, done: impl FnMut() -> bool) {
    let done = crate::support::eventually(Duration::from_secs(5), done).await;
    assert!(done, "timed out waiting for {what}");
}

#[tokio::test]
async fn a_ready_modern_server_is_listened_to_and_its_list_changes_refresh_catalogue_and_status() {
    let peer = Peer::new();
    let (rt, server) = start(peer.config(true)).await;
    until("the listen", || !peer.listens().is_empty()).await;
    let asked = &peer.listens()[0]["params"]["notifications"];
    assert_eq!(
        *asked,
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}),
        "what the capabilities announce, and no resources while nobody subscribed"
    );
    // Asked for as the server became ready, before its resources and prompts.
    until("the lists", || !server.status().prompts.is_empty()).await;
    let methods = peer.methods();
    let at = |m: &str| methods.iter().position(|x| x == m);
    assert!(
        at("subscriptions/listen") < at("resources/list"),
        "{methods:?}"
    );
    assert_eq!(server.tools()[0].name, "t0");

    peer.version.store(1, Ordering::SeqCst);
    for method in [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    ] {
        peer.push.send(Push::Notify(method, json!({}))).unwrap();
    }
    until("the refreshed lists", || {
        let status = server.status();
        server.tools().first().map(|t| t.name.as_str()) == Some("t1")
            && status.prompts.first().map(|p| p.name.as_str()) == Some("p1")
            && status.resources.first().map(|r| r.uri.as_str()) == Some("x://r1")
    })
    .await;
    assert_eq!(peer.listens().len(), 1, "one listen was enough");
    rt.shutdown().await;
}

#[tokio::test]
async fn subscribe_and_unsubscribe_replace_the_listen_and_updates_reach_the_subscriber() {
    let peer = Peer::new();
    let (rt, server) = start(peer.config(true)).await;
    until("the first listen", || peer.listens().len() == 1).await;

    let mut updates = server.subscribe("x://a").await.unwrap();
    // `subscribe` returned: the server acknowledged a listen with the URI.
    let listens = peer.listens();
    assert_eq!(listens.len(), 2);
    assert_eq!(
        listens[1]["params"]["notifications"]["resourceSubscriptions"],
        json!(["x://a"])
    );
    assert!(
        peer.seen_of("resources/subscribe").is_empty(),
        "the stateless era has no resources/subscribe"
    );
    // The replaced listen was cancelled (the stdio way).
    until("the old listen's cancel", || {
        peer.seen_of("notifications/cancelled")
            .iter()
            .any(|c| c["params"]["requestId"] == listens[0]["id"])
    })
    .await;

    peer.push
        .send(Push::Notify(
            "notifications/resources/updated",
            json!({"uri": "x://a"}),
        ))
        .unwrap();
    let update = tokio::time::timeout(Duration::from_secs(5), updates.recv())
        .await
        .expect("an update in time")
        .unwrap();
    assert_eq!((&*update.server, update.uri.as_str()), ("s", "x://a"));

    server.unsubscribe("x://a").await.unwrap();
    until("a listen without the resource", || {
        let listens = peer.listens();
        listens.len() == 3
            && listens[2]["params"]["notifications"]
                .get("resourceSubscriptions")
                .is_none()
    })
    .await;
    assert!(peer.seen_of("resources/unsubscribe").is_empty());
    rt.shutdown().await;
}

#[tokio::test]
async fn a_listen_the_server_ends_is_opened_again() {
    let peer = Peer::new();
    let (rt, _server) = start(peer.config(true)).await;
    until("the first listen", || peer.listens().len() == 1).await;

    // Gracefully (a result), then the stdio way (the server cancels it).
    peer.push.send(Push::End).unwrap();
    until("the listen opened again", || peer.listens().len() == 2).await;
    peer.push.send(Push::Cancel).unwrap();
    until("the listen opened again", || peer.listens().len() == 3).await;
    let listens = peer.listens();
    let ids: Vec<&Value> = listens.iter().map(|l| &l["id"]).collect();
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2],
        "each listen is a new request: {ids:?}"
    );
    assert!(
        peer.seen_of("notifications/cancelled").is_empty(),
        "a listen the server ended is not cancelled back"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_that_announces_nothing_is_not_listened_to() {
    let peer = Peer::new();
    let (rt, server) = start(peer.config(false)).await;
    // Ready, and its resources and prompts listed: a listen goes out before the lists
    // (the test above checks that), so it would have been seen by now.
    until("the lists", || !server.status().prompts.is_empty()).await;
    assert!(peer.listens().is_empty(), "nothing to listen for");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_refused_listen_is_asked_again_when_the_subscriptions_change() {
    let peer = Peer {
        refuses_listen: true,
        ..Peer::new()
    };
    let (rt, server) = start(peer.config(true)).await;
    until("the listen", || peer.listens().len() == 1).await;
    // (That a refusal is not asked again on a timer is the actor's unit test.)
    // A change of the subscriptions asks again; refused, `subscribe` fails with the refusal.
    let err = server.subscribe("x://a").await.unwrap_err();
    assert!(
        matches!(err.kind(), switchboard::ErrorKind::Rpc { code: -32601, .. })
            && err.method() == Some("subscriptions/listen"),
        "{err:?}"
    );
    // (The URI is forgotten again, which may ask once more.)
    assert!(peer.listens().len() >= 2);
    rt.shutdown().await;
}
