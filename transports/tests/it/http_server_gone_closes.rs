//! A Streamable HTTP server that goes away ends the connection: the next POST cannot
//! connect, its request is reported unreachable (typed: it did not run) and `Closed`
//! follows, so the runtime can reconnect. Errors name neither header values nor the URL's
//! query.

use hyper::Method;
use switchboard_codecs::jsonrpc::Id;
use switchboard_transports::http::{self, Config, Error, Kind};
use switchboard_transports::{CloseCause, Event};

use crate::http_support::*;
use crate::support::{next_event, number_id, request, until_closed, PATIENCE};

#[tokio::test]
async fn a_server_that_goes_away_closes_the_connection() {
    // No kept-alive connection for the client to find stale: the next POST must connect.
    let server = TestServer::start(|seen: Seen| async move {
        let answer = json(200, &result(&seen.rpc_id().unwrap_or_default()));
        with_header(answer, "connection", "close")
    })
    .await;
    let config =
        Config::new(server.url("/mcp?api_key=query-sekrit")).header("Cookie", "cookie-sekrit");
    let mut conn = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap();
    conn.sender.send(request(1)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Message(m) => assert_eq!(number_id(&m), Some(1)),
        other => panic!("expected the answer, got {other:?}"),
    }
    assert_eq!(
        server.seen_with(Method::POST)[0].uri,
        "/mcp?api_key=query-sekrit"
    );

    server.stop();
    // Gone once nothing listens on its port any more.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::net::TcpStream::connect(server.addr).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server still listens"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    drop(server);
    conn.sender.send(request(2)).unwrap();
    match next_event(&mut conn.events).await {
        Event::Unreachable { id, reason } => {
            assert_eq!(id, Id::Number(2));
            assert!(!reason.contains("sekrit"), "{reason}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    let (_, reason) = until_closed(&mut conn.events).await;
    match &reason.cause {
        CloseCause::WriteFailed(text) => assert!(!text.contains("sekrit"), "{text}"),
        other => panic!("expected WriteFailed, got {other:?}"),
    }
}

#[tokio::test]
async fn legacy_connect_to_nothing_is_a_connect_error_without_secrets() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://user:pw-sekrit@{}/sse?token=query-sekrit",
        listener.local_addr().unwrap()
    );
    drop(listener);
    let config = Config::new(url)
        .header("X-Custom", "custom-sekrit")
        .secret_header("X-Custom")
        .bearer_token(Some("bearer-sekrit".into()));
    let err = http::connect("t", &config, Kind::Sse).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    let text = format!("{err} {err:?} {config:?}");
    assert!(!text.contains("sekrit"), "{text}");
}

#[tokio::test]
async fn bad_configuration_is_refused_without_values() {
    let config = Config::new("http://127.0.0.1:1/mcp").header("X-Bad", "line\nbreak-sekrit");
    let err = http::connect("t", &config, Kind::StreamableHttp)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }), "{err:?}");
    assert!(err.to_string().contains("X-Bad") && !err.to_string().contains("sekrit"));
    let err = http::connect("t", &Config::new("ftp://x/"), Kind::Auto)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }), "{err:?}");
}
