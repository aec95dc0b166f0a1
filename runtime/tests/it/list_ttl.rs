//! A stateless server's lists are fresh for their `ttlMs` (at least a floor: 1 s unless
//! configured, here 1.5 s: short, yet long beside a loaded machine's stalls). A list past it is
//! fetched again before a call is routed by it (once for a burst of calls), and in the
//! background when it is only looked at; a fresh one is not fetched again, and a re-list
//! that fails leaves the last list in use.

use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;

use crate::listen::{self, until, Peer, FAILING_LISTS, SILENT_LISTS};

/// The shortest freshness a listing has here, whatever its `ttlMs`.
const FLOOR: Duration = Duration::from_millis(1500);

/// Past it.
const PAST_FRESH: Duration = Duration::from_millis(1600);

/// The peer's server, with lists fresh for at least [`FLOOR`].
async fn start(peer: &Peer) -> (switchboard::Runtime, switchboard::ServerHandle) {
    listen::start(peer.config(false).min_list_freshness(FLOOR)).await
}

#[tokio::test]
async fn resource_and_prompt_lists_past_their_ttl_are_listed_again_when_used() {
    for (ttl_ms, relisted) in [(0, true), (60_000, false)] {
        let peer = Peer::with_list_ttl(ttl_ms);
        let (rt, server) = start(&peer).await;
        until("the first lists", || !server.status().prompts.is_empty()).await;
        let count = |method: &str| peer.seen_of(method).len();
        assert_eq!((count("resources/list"), count("prompts/list")), (1, 1));
        // Past the shortest freshness, then a URI and a prompt name are resolved.
        tokio::time::sleep(PAST_FRESH).await;
        assert_eq!(rt.resource_owners("x://r0").len(), 1);
        assert!(rt.prompt_catalogue().get("p0").is_some());
        if relisted {
            until("the lists fetched again", || {
                count("resources/list") == 2
                    && count("resources/templates/list") == 2
                    && count("prompts/list") == 2
            })
            .await;
        } else {
            // Routed by the lists: a stale one would have been fetched again first.
            rt.read_resource("x://r0").await.expect("routed");
            rt.get_prompt("p0", Vec::<(String, String)>::new())
                .await
                .expect("routed");
            assert_eq!(
                (count("resources/list"), count("prompts/list")),
                (1, 1),
                "ttlMs 60 s: still fresh"
            );
        }
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn a_stale_tool_list_is_fetched_again_before_routing_once_per_burst() {
    let peer = Peer::with_list_ttl(0);
    let (rt, server) = start(&peer).await;
    let lists = || peer.seen_of("tools/list").len();
    assert_eq!((server.tools()[0].name.as_str(), lists()), ("t0", 1));

    // The server's tools changed, and it sent no notification: only the TTL says so.
    peer.set_version(1);
    tokio::time::sleep(PAST_FRESH).await;
    let burst: Vec<_> = (0..16)
        .map(|_| tokio::spawn(rt.call_tool("t1", json!({}))))
        .collect();
    for call in burst {
        let result = call.await.unwrap().expect("routed by the new listing");
        assert_eq!(result.text(), "t1");
    }
    assert_eq!(lists(), 2, "one re-list for the whole burst");
    let methods = peer.methods();
    let relisted = methods.iter().rposition(|m| m == "tools/list").unwrap();
    let first_call = methods.iter().position(|m| m == "tools/call").unwrap();
    assert!(relisted < first_call, "listed before any call: {methods:?}");
    // Fresh again for a while: the next call is routed at once.
    rt.call_tool("t1", json!({})).await.unwrap();
    assert_eq!(lists(), 2);

    // A server's own handle: its tool rules and headers come from the listing too.
    peer.set_version(2);
    tokio::time::sleep(PAST_FRESH).await;
    let result = server.call_tool("t2", json!({})).await.unwrap();
    assert_eq!(result.text(), "t2");
    assert_eq!(lists(), 3);
    let methods = peer.methods();
    assert_eq!(
        methods[methods.len() - 2..],
        ["tools/list".to_string(), "tools/call".to_string()]
    );
    assert_eq!(server.tools()[0].name, "t2", "the call saw the new listing");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_fresh_tool_list_routes_as_it_is_and_a_failed_relist_keeps_the_last_one() {
    // Fresh for a minute: a tool the server added meanwhile is not known yet.
    let peer = Peer::with_list_ttl(60_000);
    let (rt, server) = start(&peer).await;
    peer.set_version(1);
    tokio::time::sleep(PAST_FRESH).await;
    let unknown = rt.call_tool("t1", json!({})).await;
    assert!(
        matches!(unknown, Err(ref e) if matches!(e.kind(), ErrorKind::UnknownTool)),
        "{unknown:?}"
    );
    assert_eq!(peer.seen_of("tools/list").len(), 1);
    rt.shutdown().await;
    drop(server);

    // Stale, and listing fails: the call goes on with the last list, and the next one does
    // not ask again at once.
    let peer = Peer::with_list_ttl(0);
    let (rt, _server) = start(&peer).await;
    peer.set_version(FAILING_LISTS);
    tokio::time::sleep(PAST_FRESH).await;
    let refused = rt.call_tool("t0", json!({})).await;
    // Routed to the server by the last list (which no longer has `t0`: it says so).
    assert!(
        matches!(refused, Err(ref e) if matches!(e.kind(), ErrorKind::Rpc { .. })),
        "{refused:?}"
    );
    assert_eq!(peer.seen_of("tools/list").len(), 2);
    assert_eq!(peer.seen_of("tools/call").len(), 1);
    let _ = rt.call_tool("t0", json!({})).await;
    assert_eq!(peer.seen_of("tools/list").len(), 2, "not before every call");
    rt.shutdown().await;
}

#[tokio::test]
async fn stale_prompt_and_resource_lists_are_fetched_again_before_routing() {
    let peer = Peer::with_list_ttl(0);
    let (rt, server) = start(&peer).await;
    until("the first lists", || !server.status().prompts.is_empty()).await;
    peer.set_version(1);
    tokio::time::sleep(PAST_FRESH).await;
    rt.get_prompt("p1", Vec::<(String, String)>::new())
        .await
        .expect("routed by the new prompt list");
    rt.read_resource("x://r1")
        .await
        .expect("routed by the new resource list");
    assert_eq!(peer.seen_of("prompts/list").len(), 2);
    assert_eq!(peer.seen_of("resources/list").len(), 2);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_waits_for_a_relist_no_longer_than_its_own_deadline() {
    let peer = Peer::with_list_ttl(0);
    let (rt, _server) = start(&peer).await;
    peer.set_version(SILENT_LISTS);
    tokio::time::sleep(PAST_FRESH).await;
    let call = rt
        .call_tool("t0", json!({}))
        .timeout(Duration::from_millis(300));
    let result = tokio::time::timeout(Duration::from_secs(4), call)
        .await
        .expect("bounded by the call's deadline, not the re-list's");
    match result {
        Err(e) if e.is_unavailable() => {
            assert!(e.to_string().contains("being fetched again"), "{e}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(peer.seen_of("tools/list").len(), 2, "asked once");
    assert!(
        peer.seen_of("tools/call").is_empty(),
        "not routed by the stale list"
    );
    rt.shutdown().await;
}
