//! Streamable HTTP: both eras over real sockets, and bad input answered with clear errors
//! while the server's counts return to zero.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_server::http::{ClientLimits, Config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http_support::{next_events, start, ACCEPT};
use crate::support::{meta, WAIT};

#[tokio::test]
async fn a_handshake_session_lives_from_initialize_to_delete() {
    let server = start(Config::default()).await;
    let session = server.initialize().await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let response = server
        .post(&call)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "hi");

    // The GET stream hears a list change another request announced.
    let mut stream = server
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let changed =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "changed"}});
    let response = server
        .post(&changed)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let seen = next_events(&mut stream).await;
    assert_eq!(seen[0]["method"], "notifications/tools/list_changed");
    drop(stream);

    let bad_version = server
        .post(&call)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_version.status(), 400);
    server.delete(&session).await;
    let gone = server
        .post(&call)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404, "an ended session is not found");
    server.settled().await;
}

#[tokio::test]
async fn a_call_in_a_session_is_read_with_its_escapes_and_refused_by_its_id() {
    let server = start(Config::default()).await;
    let session = server.initialize().await;
    let post = |body: &str| {
        server
            .http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .header("mcp-session-id", &session)
            .body(body.to_owned())
    };
    let calls = || server.probe.calls.load(Ordering::SeqCst);
    let echo = r#"{"jsonrpc":"2.0","id":"a\"1","method":"tools\/call","params":{"name":"echo","arguments":{"text":"h\u00ed"}}}"#;
    let response = post(echo).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["id"], "a\"1");
    assert_eq!(answer["result"]["content"][0]["text"], "hí");
    assert_eq!(calls(), 1);

    // Its id is the one the session's refusals name.
    let refused = post(echo)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let answer: Value = refused.json().await.unwrap();
    assert_eq!(answer["id"], "a\"1", "{answer}");

    // Progress: the answer comes as an event stream, as for any request.
    let slow = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}}"#;
    let mut stream = post(slow).send().await.unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let seen = next_events(&mut stream).await;
    assert_eq!(seen[0]["params"]["progressToken"], "p", "{seen:?}");
    drop(stream);

    // Params the typed reading refuses are refused.
    let twice =
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","name":"x"}}"#;
    let answer: Value = post(twice).send().await.unwrap().json().await.unwrap();
    assert!(answer.get("error").is_some(), "{answer}");
    assert_eq!(calls(), 3, "the refused version is not served");
    server.delete(&session).await;
    server.settled().await;
}

#[tokio::test]
async fn progress_makes_an_event_stream_and_closing_it_cancels_the_request() {
    let server = start(Config::default()).await;
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "_meta": {"progressToken": 7}}});
    let session = server.initialize().await;
    let mut response = server
        .post(&slow)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let seen = next_events(&mut response).await;
    assert_eq!(seen[0]["params"]["progressToken"], 7);
    assert_eq!(server.handle.stats().in_flight, 1);
    drop(response);
    let deadline = tokio::time::Instant::now() + WAIT;
    while server.probe.dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the handler was cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.delete(&session).await;
    server.settled().await;
}

#[tokio::test]
async fn stateless_requests_need_no_session_and_their_headers_must_agree() {
    let server = start(Config::default()).await;
    let response = server
        .modern(1, "tools/list", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    let tools: Value = response.json().await.unwrap();
    assert!(tools["result"]["ttlMs"].is_u64(), "{tools}");
    let call = server
        .modern(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .send()
        .await
        .unwrap();
    let call: Value = call.json().await.unwrap();
    assert_eq!(call["result"]["content"][0]["text"], "x");

    let mismatched = server
        .modern_named(
            3,
            "tools/call",
            json!({"name": "echo"}),
            Some("other".to_owned()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(mismatched.status(), 400);
    let error: Value = mismatched.json().await.unwrap();
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (json!(3), json!(-32020))
    );
    let unknown = server
        .modern(4, "nope/nope", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let removed = server.modern(5, "ping", json!({})).send().await.unwrap();
    assert_eq!(removed.status(), 404);
    assert_eq!(
        server
            .http
            .get(&server.url)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap()
            .status(),
        405
    );
    server.settled().await;
}

#[tokio::test]
async fn a_tools_param_headers_must_agree_with_its_arguments() {
    let server = start(Config::default()).await;
    let call = |id: i64, args: Value| {
        server.modern(
            id,
            "tools/call",
            json!({"name": "region", "arguments": args}),
        )
    };
    let code = |r: reqwest::Response| async move {
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        (status, body["error"]["code"].clone())
    };
    let plain = call(1, json!({"region": "us-west1"}))
        .header("mcp-param-region", "us-west1")
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 200);
    let encoded = call(2, json!({"region": "Zürich"}))
        .header("mcp-param-region", "=?base64?WsO8cmljaA==?=")
        .send()
        .await
        .unwrap();
    assert_eq!(encoded.status(), 200);
    let missing = call(3, json!({"region": "us-west1"})).send().await.unwrap();
    assert_eq!(code(missing).await, (400, json!(-32020)));
    let wrong = call(4, json!({"region": "us-west1"}))
        .header("mcp-param-region", "eu")
        .send()
        .await
        .unwrap();
    assert_eq!(code(wrong).await, (400, json!(-32020)));
    let bad_base64 = call(5, json!({"region": "Hello"}))
        .header("mcp-param-region", "=?base64?SGVsbG8?=")
        .send()
        .await
        .unwrap();
    assert_eq!(code(bad_base64).await, (400, json!(-32020)));
    let absent = call(6, json!({}))
        .header("mcp-param-region", "us")
        .send()
        .await
        .unwrap();
    assert_eq!(code(absent).await, (400, json!(-32020)));
    server.settled().await;
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_each() {
    let server = start(Config::default().with_max_body(1024)).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let status = |r: &reqwest::Response| r.status().as_u16();

    let malformed = server
        .http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(status(&malformed), 400);
    assert_eq!(
        malformed.json::<Value>().await.unwrap()["error"]["code"],
        -32700
    );

    let batch = server
        .http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(json!([ping]).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(status(&batch), 400);
    assert_eq!(
        batch.json::<Value>().await.unwrap()["error"]["code"],
        -32600
    );

    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "y".repeat(4096)}});
    assert_eq!(status(&server.post(&big).send().await.unwrap()), 413);

    let text = server
        .http
        .post(&server.url)
        .header("content-type", "text/plain")
        .header("accept", ACCEPT)
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(status(&text), 415);
    let json_only = server
        .http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(status(&json_only), 406);

    let unknown = server
        .post(&ping)
        .header("mcp-session-id", "not-a-session")
        .send()
        .await
        .unwrap();
    assert_eq!(status(&unknown), 404);
    let no_session = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(status(&server.post(&no_session).send().await.unwrap()), 400);

    let origin = server
        .post(&ping)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(status(&origin), 403);
    let host = server
        .post(&ping)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(status(&host), 403);
    assert_eq!(
        status(&server.http.put(&server.url).send().await.unwrap()),
        405
    );
    let elsewhere = server
        .http
        .post(format!("http://{}/other", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(status(&elsewhere), 404);
    server.settled().await;
}

/// Writes `body` as a chunked POST in pieces of `piece` bytes, each flushed apart, and
/// returns the whole response as text.
async fn chunked_post(addr: std::net::SocketAddr, body: &str, piece: usize) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: {ACCEPT}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.as_bytes().chunks(piece) {
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(chunk);
        framed.extend_from_slice(b"\r\n");
        // The server may refuse (413) and close before the rest is written.
        if socket.write_all(&framed).await.is_err() {
            break;
        }
        socket.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(WAIT, socket.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.contains("\r\n\r\n"), "no response: {answer:?}");
    answer
}

#[tokio::test]
async fn a_body_in_many_pieces_is_read_whole_and_held_to_its_limit() {
    let server = start(Config::default().with_max_body(1024)).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let answer = chunked_post(server.addr, &initialize, 16).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains(r#""id":7"#) && answer.contains("protocolVersion"),
        "{answer}"
    );
    // Too large with no length declared: refused once the limit is crossed.
    let big =
        json!({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": "y".repeat(4096)}})
            .to_string();
    let answer = chunked_post(server.addr, &big, 512).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

#[tokio::test]
async fn a_client_that_never_reads_its_stream_holds_a_bounded_amount() {
    let server = start(Config::default().with_stream_queue(8)).await;
    // A raw socket, so that nothing reads what the server writes.
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "flood", "_meta": meta(json!({}))}}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: {ACCEPT}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: flood\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    // The handler stops when the socket and the queue are full; it never finishes on its own.
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sent = server.probe.sent.load(Ordering::SeqCst);
        if sent == last {
            break;
        }
        last = sent;
    }
    // 16 KiB each: what the kernel's socket buffers take, and 8 queued, far from unbounded.
    assert!(
        last < 2_000,
        "the server kept {last} messages for a client that does not read"
    );
    assert_eq!(server.handle.stats().in_flight, 1);
    drop(socket);
    let deadline = tokio::time::Instant::now() + WAIT;
    while server.probe.dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the flood was cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.settled().await;
}

#[tokio::test]
async fn a_thousand_connections_opened_and_dropped_leave_nothing_behind() {
    let server = start(Config::default()).await;
    for i in 0..1000 {
        let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        match i % 3 {
            // Half a request, then gone.
            0 => socket
                .write_all(
                    b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 100\r\n\r\n{\"js",
                )
                .await
                .unwrap(),
            // A whole request whose answer nobody reads.
            1 => {
                let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": meta(json!({}))}}).to_string();
                let request = format!("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: {ACCEPT}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: echo\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                socket.write_all(request.as_bytes()).await.unwrap();
            }
            // Nothing at all.
            _ => {}
        }
        drop(socket);
    }
    // The server still answers, and holds nothing for the thousand.
    let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    socket
        .write_all(b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    drop(socket);
    server.settled().await;
}

#[tokio::test]
async fn a_full_session_table_ends_its_quietest_session_and_never_a_busy_one() {
    // No grace period, and room for every session in the client's share: the table's own
    // choice alone (the grace and the shares are `admission`'s).
    let config = Config::default()
        .with_max_sessions(2)
        .with_session_grace(Duration::ZERO);
    let limits = ClientLimits::share_of(&config)
        .with_sessions(3)
        .with_streams(2);
    let server = start(config.with_client_limits(limits)).await;
    let first = server.initialize().await;
    let second = server.initialize().await;
    assert_eq!(server.echo_in(&first).await, 200, "first used after second");
    // A client gone without its DELETE must not hold its place for good: the quietest
    // session (second, used longest ago) makes room for a third.
    let third = server.initialize().await;
    assert_eq!(
        server.echo_in(&second).await,
        404,
        "the quietest session ended"
    );
    assert_eq!(server.echo_in(&first).await, 200);
    assert_eq!(server.echo_in(&third).await, 200);
    server.sessions_become(2).await;

    // Sessions listening on their GET streams are busy: none is ended for a newcomer.
    let streams = (server.listen(&first).await, server.listen(&third).await);
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let refused = server.post(&body).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().get("mcp-session-id").is_none());
    server.sessions_become(2).await;
    assert_eq!(server.echo_in(&first).await, 200);
    drop(streams);
    server.delete(&first).await;
    server.delete(&third).await;
    server.settled().await;
}

#[tokio::test]
async fn a_session_quiet_for_longer_than_the_idle_timeout_ends() {
    let idle = Duration::from_millis(500);
    let server = start(Config::default().with_session_idle(Some(idle))).await;
    let gone = server.initialize().await;
    let listening = server.initialize().await;
    let stream = server.listen(&listening).await;
    // Requests keep a session alive: each comes well inside the timeout.
    let used = server.initialize().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while server.handle.stats().sessions != 2 {
        assert!(tokio::time::Instant::now() < deadline, "no session ended");
        assert_eq!(server.echo_in(&used).await, 200);
        tokio::time::sleep(idle / 10).await;
    }
    server.sessions_become(2).await;
    assert_eq!(server.echo_in(&gone).await, 404, "the quiet session ended");
    assert_eq!(
        server.echo_in(&listening).await,
        200,
        "a GET stream is not quiet"
    );
    assert_eq!(server.echo_in(&used).await, 200);
    // Once its stream closes, the listening session is quiet too.
    drop(stream);
    server.sessions_become(0).await;
    server.settled().await;
}

#[tokio::test]
async fn a_sealed_session_is_served_by_every_replica_that_has_its_key() {
    let keys = ["new key", "old key"];
    let replica = |keys: &[&str]| start(Config::default().with_session_keys(keys));
    let (a, b) = (replica(&keys[1..]).await, replica(&keys).await);
    let caps = json!({"sampling": {}, "roots": {"listChanged": true}});
    let session = a.initialize_as("2025-06-18", caps.clone()).await;
    let expected = json!({"protocolVersion": "2025-06-18", "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"}});
    assert_eq!(a.whoami(&session).await, expected);
    // A replica that never saw the session serves it as it was negotiated (and a newer
    // key first: rotation keeps the old sessions).
    assert_eq!(b.whoami(&session).await, expected);
    assert_eq!(b.echo_in(&session).await, 200);
    b.sessions_become(1).await;

    // A tampered id, or one sealed under another key, is nobody's session.
    let mut tampered = session.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(b.echo_in(&tampered).await, 404);
    let stranger = replica(&["another key"]).await;
    assert_eq!(stranger.echo_in(&session).await, 404);
    let unsealed = start(Config::default()).await;
    assert_eq!(unsealed.echo_in(&session).await, 404);
    // What b seals, a (without the newer key) cannot open.
    let newer = b.initialize().await;
    assert_eq!(a.echo_in(&newer).await, 404);

    // DELETE ends it where it lands; the id does not open there again.
    a.delete(&session).await;
    assert_eq!(a.echo_in(&session).await, 404);
    b.delete(&session).await;
    b.delete(&newer).await;
    for replica in [a, b, stranger, unsealed] {
        replica.settled().await;
    }
}

#[tokio::test]
async fn health_probes_answer_alive_and_ready_only_once_ready() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use switchboard_server::http::Probes;

    let ready = Arc::new(AtomicBool::new(false));
    let flag = ready.clone();
    let server =
        start(Config::default().with_probes(Probes::new(move || flag.load(Ordering::Relaxed))))
            .await;
    let get = |path: &str| {
        server
            .http
            .get(format!("http://{}{path}", server.addr))
            .send()
    };
    assert_eq!(get("/healthz").await.unwrap().status(), 200);
    assert_eq!(get("/readyz").await.unwrap().status(), 503);
    ready.store(true, Ordering::Relaxed);
    let answer = get("/readyz").await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "ready");
    assert_eq!(get("/livez").await.unwrap().status(), 404);

    // Without probes there are none.
    let plain = start(Config::default()).await;
    let healthz = plain
        .http
        .get(format!("http://{}/healthz", plain.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(healthz.status(), 404);
}

/// Lets in two clients by their tokens.
struct TwoClients;

impl switchboard_server::http::Authenticate for TwoClients {
    fn authenticate(&self, token: Option<&str>) -> switchboard_server::http::AuthFuture {
        use switchboard_server::http::AuthRefusal;
        let answer = match token {
            None => Err(AuthRefusal::Missing),
            Some("a-token") => Ok(std::sync::Arc::new(switchboard_server::Principal::new("a"))),
            Some("b-token") => Ok(std::sync::Arc::new(switchboard_server::Principal::new("b"))),
            Some(_) => Err(AuthRefusal::Invalid("unknown token".into())),
        };
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn a_session_is_its_openers_on_every_replica() {
    use switchboard_server::http::Auth;
    let auth = || Auth::new(TwoClients, "http://mcp.test/mcp", &[], &[]);
    let replica = || {
        start(
            Config::default()
                .with_session_keys(&["key"])
                .with_auth(auth()),
        )
    };
    let (one, two) = (replica().await, replica().await);
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(one.post(&body).send().await.unwrap().status(), 401);
    let opened = one.post(&body).bearer_auth("a-token").send().await.unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
    for replica in [&one, &two] {
        let send = |token: Option<&'static str>| {
            let mut request = replica.post(&echo).header("mcp-session-id", &session);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        assert_eq!(send(Some("a-token")).await.unwrap().status(), 200);
        assert_eq!(send(Some("b-token")).await.unwrap().status(), 403);
        assert_eq!(send(None).await.unwrap().status(), 401);
    }
    // The metadata is served without credentials.
    let metadata: Value = one
        .http
        .get(format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            one.addr
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], "http://mcp.test/mcp");
}
