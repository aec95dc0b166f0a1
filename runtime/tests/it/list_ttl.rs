//! A stateless server's resource and prompt lists are fresh for their `ttlMs` (at least 1 s):
//! resolving a URI or a prompt name with a listing past it has the list fetched again in the
//! background, and a fresh one is not.

use std::time::Duration;

use crate::listen::{start, until, Peer};

#[tokio::test]
async fn resource_and_prompt_lists_past_their_ttl_are_listed_again_when_used() {
    for (ttl_ms, relisted) in [(0, true), (60_000, false)] {
        let peer = Peer::with_list_ttl(ttl_ms);
        let (rt, server) = start(peer.config(false)).await;
        until("the first lists", || !server.status().prompts.is_empty()).await;
        let count = |method: &str| peer.seen_of(method).len();
        assert_eq!((count("resources/list"), count("prompts/list")), (1, 1));
        // Past the shortest freshness (1 s), then a URI and a prompt name are resolved.
        tokio::time::sleep(Duration::from_millis(1200)).await;
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
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(
                (count("resources/list"), count("prompts/list")),
                (1, 1),
                "ttlMs 60 s: still fresh"
            );
        }
        rt.shutdown().await;
    }
}
