//! A 401 without an auth hook fails with the resource metadata URL; with a hook, the hook
//! is asked again with the parsed challenge and the request is retried once with the new
//! token. Secrets never show in `Debug` output or error messages.

use std::sync::{Arc, Mutex};

use hyper::Method;
use switchboard_codecs::jsonrpc::Id;
use switchboard_transports::connection::BoxFuture;
use switchboard_transports::http::{self, Auth, Challenge, Config, Error, Kind};
use switchboard_transports::Event;

use crate::http_support::*;
use crate::support::{next_event, number_id, request};

const METADATA: &str = "http://auth.example/.well-known/oauth-protected-resource";

/// Accepts only `Bearer fresh-token`; anything else gets a 401 challenge.
async fn guarded_server() -> TestServer {
    TestServer::start(|seen: Seen| async move {
        if seen.header("authorization") == Some("Bearer fresh-token") {
            match seen.method {
                Method::GET => {
                    let (tx, response) = sse_channel();
                    tx.send("event: endpoint\ndata: /message\n\n".into())
                        .unwrap();
                    std::mem::forget(tx);
                    response
                }
                _ => json(200, &result(&seen.rpc_id().unwrap_or_default())),
            }
        } else {
            with_header(
                empty(401),
                "www-authenticate",
                &format!(r#"Bearer error="invalid_token", resource_metadata="{METADATA}""#),
            )
        }
    })
    .await
}

#[derive(Debug, Default)]
struct Hook {
    asked: Mutex<Vec<Option<Challenge>>>,
}

impl Auth for Hook {
    fn token(&self, challenge: Option<&Challenge>) -> BoxFuture<Result<Option<String>, String>> {
        self.asked.lock().unwrap().push(challenge.cloned());
        let token = match challenge {
            None => "stale-token",
            Some(_) => "fresh-token",
        };
        Box::pin(async move { Ok(Some(token.to_owned())) })
    }
}

#[tokio::test]
async fn without_a_hook_the_request_fails_with_the_resource_metadata() {
    let server = guarded_server().await;
    let config = Config::new(server.url("/mcp"))
        .bearer_token(Some("static-sekrit".into()))
        .header("X-Api-Key", "key-sekrit");
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Unauthorized {
            id,
            resource_metadata,
            reason,
        } => {
            assert_eq!(id, Some(Id::Number(1)));
            assert_eq!(resource_metadata.as_deref(), Some(METADATA));
            assert!(
                reason.contains("unauthorized") && reason.contains(METADATA),
                "{reason}"
            );
            assert!(!reason.contains("sekrit"), "{reason}");
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    let post = &server.seen_with(Method::POST)[0];
    assert_eq!(post.header("authorization"), Some("Bearer static-sekrit"));
    assert_eq!(post.header("x-api-key"), Some("key-sekrit"));
    let debug = format!("{config:?} {:?}", conn.control);
    assert!(!debug.contains("sekrit"), "{debug}");
    conn.control.close().await;
}

#[tokio::test]
async fn with_a_hook_the_request_is_retried_once_with_a_new_token() {
    let server = guarded_server().await;
    let hook = Arc::new(Hook::default());
    let config = Config::new(server.url("/mcp")).auth(Some(hook.clone()));
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(1)),
        other => panic!("expected the answer, got {other:?}"),
    }
    let asked = hook.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert!(asked[0].is_none());
    let challenge = asked[1].as_ref().unwrap();
    assert_eq!(challenge.scheme, "Bearer");
    assert_eq!(challenge.resource_metadata.as_deref(), Some(METADATA));
    assert_eq!(challenge.param("error"), Some("invalid_token"));
    let tokens: Vec<_> = server
        .seen_with(Method::POST)
        .iter()
        .map(|s| s.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        tokens,
        [
            Some("Bearer stale-token".into()),
            Some("Bearer fresh-token".into())
        ]
    );
    conn.control.close().await;
}

/// A server that refuses every token: the hook is asked once more, and the request then
/// fails as unauthorized instead of looping.
#[tokio::test]
async fn a_401_after_the_retry_is_unauthorized_without_asking_again() {
    let server = TestServer::start(|_seen: Seen| async move {
        with_header(
            empty(401),
            "www-authenticate",
            &format!(r#"Bearer error="invalid_token", resource_metadata="{METADATA}""#),
        )
    })
    .await;
    let hook = Arc::new(Hook::default());
    let config = Config::new(server.url("/mcp")).auth(Some(hook.clone()));
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Unauthorized {
            id,
            resource_metadata,
            ..
        } => {
            assert_eq!(id, Some(Id::Number(1)));
            assert_eq!(resource_metadata.as_deref(), Some(METADATA));
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert_eq!(
        hook.asked.lock().unwrap().len(),
        2,
        "asked before, then once after a 401"
    );
    assert_eq!(
        server.seen_with(Method::POST).len(),
        2,
        "sent once, retried once"
    );
    conn.control.close().await;
}

#[tokio::test]
async fn legacy_connect_reports_unauthorized_or_retries_with_the_hook() {
    let server = guarded_server().await;
    let config = Config::new(server.url("/sse")).bearer_token(Some("static-sekrit".into()));
    let err = http::connect("t", &config, Kind::Sse).await.unwrap_err();
    match &err {
        Error::Unauthorized {
            resource_metadata, ..
        } => assert_eq!(resource_metadata.as_deref(), Some(METADATA)),
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(!format!("{err} {err:?}").contains("sekrit"));

    let hook = Arc::new(Hook::default());
    let config = Config::new(server.url("/sse")).auth(Some(hook.clone()));
    let conn = http::connect("t", &config, Kind::Sse).await.unwrap();
    assert_eq!(hook.asked.lock().unwrap().len(), 2);
    conn.control.close().await;
}
