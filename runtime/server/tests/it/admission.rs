//! What no client can take from the others: the HTTP server's timeouts (head, body,
//! keep-alive, send), its connection cap (the idlest connection makes room, probes are
//! always answered), each client's share of sessions, streams and requests and its rate,
//! and the byte budget for answers nobody reads. Each refusal is counted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard_server::http::{ClientLimits, Config, Probes, Rejection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::http_support::{start, Running};
use crate::support::{meta, WAIT};

/// Counts every rejection the server reports.
#[derive(Clone, Default)]
struct Counted(Arc<Mutex<HashMap<Rejection, usize>>>);

impl Counted {
    fn counting(&self, config: Config) -> Config {
        let counts = self.0.clone();
        config.with_rejections(move |rejection| {
            *counts.lock().unwrap().entry(rejection).or_default() += 1;
        })
    }

    fn of(&self, rejection: Rejection) -> usize {
        self.0.lock().unwrap().get(&rejection).copied().unwrap_or(0)
    }

    /// Waits until `rejection` was counted at least once.
    async fn seen(&self, rejection: Rejection) {
        let deadline = Instant::now() + WAIT;
        while self.of(rejection) == 0 {
            assert!(Instant::now() < deadline, "{rejection} never counted");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The server's config with loopback trusted as a proxy, so that each test names its
/// clients with `X-Forwarded-For`.
fn proxied() -> Config {
    Config::default().with_trusted_proxies(["127.0.0.1".parse().unwrap()])
}

impl Running {
    /// `initialize` as the client at `client`; the status and the session id.
    async fn initialize_from(&self, client: &str) -> (u16, Option<String>) {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let response = self
            .post(&body)
            .header("x-forwarded-for", client)
            .send()
            .await
            .unwrap();
        let session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        (response.status().as_u16(), session)
    }

    /// A stateless `tools/call echo` from `client`: its response.
    async fn ping_from(&self, client: &str) -> reqwest::Response {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "hi"}, "_meta": meta(json!({}))}});
        self.post(&call)
            .header("x-forwarded-for", client)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .send()
            .await
            .unwrap()
    }
}

/// A stateless call of the tool that says it started and then sleeps for 30 s: its
/// response is an event stream that stays open.
fn slow_call(id: i64) -> Value {
    let mut meta = meta(json!({}));
    meta["progressToken"] = json!(id);
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "slow", "_meta": meta}})
}

/// A raw connection to the server.
/// A raw connection to the server, with a small receive buffer: what the client does not
/// read fills it fast, and the server's writes wait.
async fn raw(server: &Running) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(server.addr).await.unwrap()
}

/// Waits until the server closes `socket` (EOF or reset); how long that took.
async fn closed_within(socket: &mut TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut sink = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at((started + limit).into(), socket.read(&mut sink)).await {
            Ok(Ok(0) | Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the connection was still open after {limit:?}"),
        }
    }
}

fn head(body_len: usize, session: Option<&str>) -> String {
    let session = session
        .map(|s| format!("mcp-session-id: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{session}content-length: {body_len}\r\n\r\n"
    )
}

fn retry_after(response: &reqwest::Response) -> u64 {
    response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_slow_head_and_a_silent_connection_are_cut_and_free_their_place() {
    let counted = Counted::default();
    let config = Config::default().with_head_timeout(Duration::from_millis(300));
    let server = start(counted.counting(config)).await;
    let opened = Instant::now();
    let mut silent = raw(&server).await;
    let mut slow = raw(&server).await;
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHo").await.unwrap();
    for socket in [&mut silent, &mut slow] {
        closed_within(socket, Duration::from_secs(5)).await;
        let took = opened.elapsed();
        assert!(took >= Duration::from_millis(250), "cut after {took:?}");
    }
    counted.seen(Rejection::HeadTimeout).await;
    // A well-behaved client is served meanwhile and after.
    assert_eq!(server.ping_from("10.0.0.1").await.status(), 200);
    server.settled().await;
}

#[tokio::test]
async fn a_stalled_body_is_cut_and_a_slow_one_that_moves_is_served() {
    let counted = Counted::default();
    let config = Config::default().with_body_timeout(Duration::from_millis(500));
    let server = start(counted.counting(config)).await;
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();

    let mut stalled = raw(&server).await;
    stalled
        .write_all(head(body.len(), None).as_bytes())
        .await
        .unwrap();
    stalled.write_all(&body.as_bytes()[..10]).await.unwrap();
    closed_within(&mut stalled, Duration::from_secs(5)).await;
    counted.seen(Rejection::BodyTimeout).await;

    // A byte every 100 ms for 1.5 s: slower than the timeout in all, but never silent
    // for that long.
    let mut moving = raw(&server).await;
    moving
        .write_all(head(body.len(), None).as_bytes())
        .await
        .unwrap();
    let (first, rest) = body.as_bytes().split_at(body.len() - 15);
    moving.write_all(first).await.unwrap();
    for byte in rest {
        tokio::time::sleep(Duration::from_millis(100)).await;
        moving.write_all(std::slice::from_ref(byte)).await.unwrap();
    }
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(WAIT, moving.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let session = answer
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: "))
        .unwrap();
    server.delete(session).await;
    drop(moving);
    server.settled().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let config = Config::default().with_idle_timeout(Duration::from_millis(300));
    let server = start(config).await;
    let mut socket = raw(&server).await;
    socket
        .write_all(b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    // Answered (405: a GET without a session), then kept alive until idle too long.
    let mut answer = vec![0u8; 4096];
    let n = socket.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 405"));
    let took = closed_within(&mut socket, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(250), "closed after {took:?}");
    server.settled().await;
}

#[tokio::test]
async fn past_the_connection_cap_the_idlest_makes_room_and_probes_are_always_answered() {
    let counted = Counted::default();
    let config = Config::default()
        .with_max_connections(4)
        .with_probes(Probes::new(|| true));
    let server = start(counted.counting(config)).await;
    // Four connections that hold their places sending half a request.
    let mut halves = Vec::new();
    for _ in 0..4 {
        let mut socket = raw(&server).await;
        socket.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
        halves.push(socket);
    }
    // Every newcomer is served: an idle one goes for it.
    for _ in 0..3 {
        assert_eq!(server.ping_from("10.0.0.1").await.status(), 200);
        let health = server.http.get(format!("http://{}/healthz", server.addr));
        assert_eq!(health.send().await.unwrap().status(), 200);
    }
    counted.seen(Rejection::ConnectionEvicted).await;
    drop(halves);

    // Four connections busy with a request each (a slow tool's stream): a fifth gets 503
    // with Retry-After, and a probe on it its answer.
    let mut busy = Vec::new();
    for id in 0..4 {
        let call = slow_call(id);
        let fresh = reqwest::Client::new();
        let response = fresh
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "slow")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        busy.push((fresh, response));
    }
    let fresh = reqwest::Client::new();
    let shed = fresh.get(&server.url).send().await.unwrap();
    assert_eq!(shed.status(), 503);
    assert!(retry_after(&shed) >= 1);
    let health = fresh.get(format!("http://{}/healthz", server.addr));
    assert_eq!(health.send().await.unwrap().status(), 200);
    let ready = fresh.get(format!("http://{}/readyz", server.addr));
    assert_eq!(ready.send().await.unwrap().status(), 200);
    assert!(counted.of(Rejection::ConnectionShed) >= 1);
    drop((busy, fresh));
    server.settled().await;
}

#[tokio::test]
async fn a_session_used_within_the_grace_period_is_never_ended_for_another() {
    let counted = Counted::default();
    let config = proxied().with_max_sessions(2);
    let limits = ClientLimits::share_of(&config).with_sessions(2);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    let a = server.initialize_from("10.0.0.1").await.1.unwrap();
    let b = server.initialize_from("10.0.0.2").await.1.unwrap();
    let refused = server.initialize_from("10.0.0.3").await;
    assert_eq!(refused, (503, None), "both are within the grace period");
    assert_eq!(counted.of(Rejection::Sessions), 1);
    assert_eq!(server.echo_in(&a).await, 200);
    assert_eq!(server.echo_in(&b).await, 200);
    server.delete(&a).await;
    server.delete(&b).await;
    server.settled().await;
}

#[tokio::test]
async fn a_client_at_its_share_of_sessions_ends_its_own_never_anothers() {
    let counted = Counted::default();
    let config = proxied().with_session_grace(Duration::ZERO);
    let limits = ClientLimits::share_of(&config).with_sessions(2);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    let other = server.initialize_from("10.0.0.2").await.1.unwrap();
    let first = server.initialize_from("10.0.0.1").await.1.unwrap();
    let second = server.initialize_from("10.0.0.1").await.1.unwrap();
    // A flood of sessions from one client: each new one ends that client's least recently
    // used one, and nobody else's.
    for _ in 0..20 {
        assert_eq!(server.initialize_from("10.0.0.1").await.0, 200);
    }
    assert_eq!(server.echo_in(&first).await, 404);
    assert_eq!(server.echo_in(&second).await, 404);
    assert_eq!(
        server.echo_in(&other).await,
        200,
        "another client's session"
    );
    assert!(counted.of(Rejection::SessionEvicted) >= 20);
    server.sessions_become(3).await;
    drop(server);

    // With a grace period, the client's own recent sessions are spared too: refused, 429.
    let config = proxied();
    let limits = ClientLimits::share_of(&config).with_sessions(2);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    for _ in 0..2 {
        assert_eq!(server.initialize_from("10.0.0.1").await.0, 200);
    }
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let refused = server
        .post(&body)
        .header("x-forwarded-for", "10.0.0.1")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(retry_after(&refused), 1);
    let message: Value = refused.json().await.unwrap();
    let message = message["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("too many sessions for this client (2)"),
        "{message}"
    );
    assert_eq!(server.initialize_from("10.0.0.2").await.0, 200);
}

#[tokio::test]
async fn a_flood_from_one_client_is_rate_limited_and_the_others_are_not() {
    let counted = Counted::default();
    let config = proxied();
    let limits = ClientLimits::share_of(&config).with_rate(Some(5.0), 5);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    let mut statuses = Vec::new();
    for _ in 0..30 {
        let response = server.ping_from("10.0.0.1").await;
        if response.status() == 429 {
            assert!(retry_after(&response) >= 1);
        }
        statuses.push(response.status().as_u16());
    }
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert!(limited >= 20, "{statuses:?}");
    assert!(statuses[..5].iter().all(|s| *s == 200), "the burst passes");
    // Another client is not slowed by it.
    for _ in 0..5 {
        assert_eq!(server.ping_from("10.0.0.2").await.status(), 200);
    }
    assert_eq!(counted.of(Rejection::Rate), limited);
    server.settled().await;
}

#[tokio::test]
async fn a_client_holds_at_most_its_share_of_streams_and_of_requests_in_flight() {
    let counted = Counted::default();
    let config = proxied().with_stream_keep_alive(Some(Duration::from_millis(100)));
    let limits = ClientLimits::share_of(&config)
        .with_streams(2)
        .with_in_flight(2);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(server.initialize_from("10.0.0.1").await.1.unwrap());
    }
    let get = |session: &str, client: &str| {
        server
            .http
            .get(&server.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("x-forwarded-for", client)
            .send()
    };
    let mut first = get(&sessions[0], "10.0.0.1").await.unwrap();
    let second = get(&sessions[1], "10.0.0.1").await.unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = get(&sessions[2], "10.0.0.1").await.unwrap();
    assert_eq!(third.status(), 429);
    assert_eq!(counted.of(Rejection::ClientStreams), 1);
    // A quiet stream says it is alive.
    let chunk = tokio::time::timeout(WAIT, first.chunk())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(chunk.as_deref(), Some(&b": keep-alive\n\n"[..]));
    drop(second);
    let deadline = Instant::now() + WAIT;
    loop {
        let again = get(&sessions[2], "10.0.0.1").await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream's place never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Two slow calls in flight: a third is refused, another client's is not.
    let slow = |id: i64, client: &'static str| {
        let call = slow_call(id);
        reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("x-forwarded-for", client)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "slow")
            .body(call.to_string())
            .send()
    };
    let held = (
        slow(1, "10.0.0.1").await.unwrap(),
        slow(2, "10.0.0.1").await.unwrap(),
    );
    assert_eq!(
        (held.0.status().as_u16(), held.1.status().as_u16()),
        (200, 200)
    );
    assert_eq!(slow(3, "10.0.0.1").await.unwrap().status(), 429);
    assert_eq!(counted.of(Rejection::ClientInFlight), 1);
    let other = slow(4, "10.0.0.2").await.unwrap();
    assert_eq!(other.status(), 200);
}

#[tokio::test]
async fn a_response_its_client_does_not_read_is_cut_after_the_send_timeout() {
    let counted = Counted::default();
    let config = Config::default().with_send_timeout(Duration::from_millis(500));
    let server = start(counted.counting(config)).await;
    let session = server.initialize_from("10.0.0.1").await.1.unwrap();
    // An answer of 3 MiB, far more than the sockets' buffers hold, never read.
    let text = "x".repeat(3 * 1024 * 1024);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": text}}})
    .to_string();
    let mut socket = raw(&server).await;
    socket
        .write_all(head(call.len(), Some(&session)).as_bytes())
        .await
        .unwrap();
    socket.write_all(call.as_bytes()).await.unwrap();
    counted.seen(Rejection::SendTimeout).await;
    assert_eq!(server.handle.stats().unsent, 0, "its answer is freed");
    drop(socket);
    server.delete(&session).await;
    server.settled().await;
}

#[tokio::test]
async fn answers_nobody_reads_stay_within_the_budget_and_readers_are_served() {
    let counted = Counted::default();
    let budget = 4 * 1024 * 1024;
    let config = Config::default().with_answer_budget(budget);
    let server = start(counted.counting(config)).await;
    let session = server.initialize_from("10.0.0.1").await.1.unwrap();
    // A tool that sends 16 KiB messages about its call until its client is gone: each of
    // its streams holds up to its queue (64 messages, 1 MiB) and what the socket waits on.
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "flood"}})
            .to_string();
    let one_stream = 65 * 16 * 1024 + 4096;
    let mut readers_that_never_read = Vec::new();
    for _ in 0..10 {
        let mut socket = raw(&server).await;
        socket
            .write_all(head(call.len(), Some(&session)).as_bytes())
            .await
            .unwrap();
        socket.write_all(call.as_bytes()).await.unwrap();
        readers_that_never_read.push(socket);
    }
    counted.seen(Rejection::AnswerBudget).await;
    // What waits to be sent comes back within the budget and one stream, and stays there.
    let deadline = Instant::now() + WAIT;
    while server.handle.stats().unsent > budget + one_stream {
        assert!(Instant::now() < deadline, "{:?}", server.handle.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for _ in 0..20 {
        let unsent = server.handle.stats().unsent;
        assert!(unsent <= budget + one_stream, "{unsent} bytes unsent");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The longest stalled were cut: the first socket ends, and its call was cancelled.
    closed_within(&mut readers_that_never_read[0], WAIT).await;
    // A client that reads gets its answers.
    for _ in 0..3 {
        assert_eq!(server.echo_in(&session).await, 200);
    }
    drop(readers_that_never_read);
    server.delete(&session).await;
    server.settled().await;
}

#[tokio::test]
async fn with_sealed_ids_a_recent_session_ended_for_room_is_restored_when_next_used() {
    let counted = Counted::default();
    let config = proxied().with_session_keys(&["a key of the replicas"]);
    let limits = ClientLimits::share_of(&config).with_sessions(2);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    let first = server.initialize_from("10.0.0.1").await.1.unwrap();
    let _second = server.initialize_from("10.0.0.1").await.1.unwrap();
    // Within the grace period, and still ended for the client's third: it loses nothing.
    assert_eq!(server.initialize_from("10.0.0.1").await.0, 200);
    assert_eq!(counted.of(Rejection::SessionEvicted), 1);
    server.sessions_become(2).await;
    assert_eq!(server.echo_in(&first).await, 200, "restored from its id");
    server.sessions_become(3).await;
}

#[tokio::test]
async fn a_body_that_does_not_fit_cuts_readers_that_never_read_and_else_is_refused_until_it_fits() {
    let counted = Counted::default();
    let config = Config::default().with_answer_budget(4 * 1024 * 1024);
    let server = start(counted.counting(config)).await;
    let session = server.initialize_from("10.0.0.1").await.1.unwrap();
    let text = |kib: usize| "x".repeat(kib * 1024);
    let post = |body: String| {
        server
            .http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .body(body)
            .send()
    };
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": text(2 * 1024)}}})
    .to_string();

    // A 3 MiB answer nobody reads holds most of the budget: a 2 MiB body is served all the
    // same, the reader that never reads cut for it.
    let stalled_call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": text(3 * 1024)}}})
    .to_string();
    let mut stalled = raw(&server).await;
    stalled
        .write_all(head(stalled_call.len(), Some(&session)).as_bytes())
        .await
        .unwrap();
    stalled.write_all(stalled_call.as_bytes()).await.unwrap();
    let deadline = Instant::now() + WAIT;
    while server.handle.stats().unsent < 2 * 1024 * 1024 {
        assert!(Instant::now() < deadline, "{:?}", server.handle.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // (Refused only in the instant before its write waits for the client.)
    let deadline = Instant::now() + WAIT;
    while post(big.clone()).await.unwrap().status() != 200 {
        assert!(
            Instant::now() < deadline,
            "the reader that never reads was never cut"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    closed_within(&mut stalled, WAIT).await;
    assert_eq!(counted.of(Rejection::AnswerBudget), 1);
    let refused_before = counted.of(Rejection::BodyBudget);

    // A 3 MiB body whose call runs (and whose client reads) holds it: nothing to cut, and
    // the 2 MiB body is refused, 503 with Retry-After, until that call is gone.
    let mut meta = meta(json!({}));
    meta["progressToken"] = json!(1);
    let running = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "slow", "arguments": {"text": text(3 * 1024)}, "_meta": meta}})
    .to_string();
    let running = post(running).await.unwrap();
    assert_eq!(
        running.status(),
        200,
        "an event stream: progress, then nothing"
    );
    let refused = post(big.clone()).await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(retry_after(&refused), 1);
    assert_eq!(counted.of(Rejection::BodyBudget), refused_before + 1);
    assert_eq!(server.echo_in(&session).await, 200, "a small one fits");
    drop(running);
    let deadline = Instant::now() + WAIT;
    loop {
        let status = post(big.clone()).await.unwrap().status();
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "never fitted: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.delete(&session).await;
    server.settled().await;
}

#[tokio::test]
async fn listen_streams_count_in_their_clients_share_of_streams() {
    let counted = Counted::default();
    let config = proxied().with_stream_keep_alive(Some(Duration::from_millis(100)));
    let limits = ClientLimits::share_of(&config).with_streams(1);
    let server = start(counted.counting(config.with_client_limits(limits))).await;
    let listen = |id: i64, client: &'static str| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": true}, "_meta": meta(json!({}))}});
        server
            .post(&body)
            .header("x-forwarded-for", client)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .send()
    };
    // The fixture announces tool list changes: the listen is acknowledged and stays open,
    // saying it is alive while there is nothing to say.
    let mut open = listen(1, "10.0.0.1").await.unwrap();
    assert_eq!(open.status(), 200);
    let ack = tokio::time::timeout(WAIT, open.chunk())
        .await
        .unwrap()
        .unwrap();
    assert!(ack.is_some_and(|c| String::from_utf8_lossy(&c).contains("acknowledged")));
    let alive = tokio::time::timeout(WAIT, open.chunk())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(alive.as_deref(), Some(&b": keep-alive\n\n"[..]));
    // A second one of the same client is past its share; another client's is not.
    let refused = listen(2, "10.0.0.1").await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(retry_after(&refused), 1);
    assert_eq!(counted.of(Rejection::ClientStreams), 1);
    let other = listen(3, "10.0.0.2").await.unwrap();
    assert_eq!(other.status(), 200);
    // Closed, its place comes back.
    drop(open);
    let deadline = Instant::now() + WAIT;
    loop {
        let again = listen(4, "10.0.0.1").await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed listen's place never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
