//! Requests servers send to the client (roots, sampling, elicitation), answered by the
//! application's handlers, checked on the wire against scripted in-memory peers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse, Root,
    RootsHandler, SamplingHandler, SamplingRequest, SamplingResponse, ToolChoiceMode,
    UrlElicitation,
};
use switchboard::model::{Content, Role};
use switchboard::ErrorKind;
use switchboard::{Runtime, ServerConfig};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

/// Generous bound on anything that should happen at once.
const SOON: Duration = Duration::from_secs(5);

/// The test's side of a scripted peer: what it received, and a way to make it send.
struct Peer {
    outbox: mpsc::UnboundedSender<Value>,
    seen: mpsc::UnboundedReceiver<Value>,
    /// Received, not yet looked at.
    backlog: Vec<Value>,
}

/// A 2025-11-25 server with tools `echo` (answers its `message`) and `needs_auth` (answers
/// -32042); it records every line it receives and writes whatever the test hands it.
fn peer() -> (ServerConfig<switchboard::transport::Memory>, Peer) {
    let (outbox_tx, outbox_rx) = mpsc::unbounded_channel::<Value>();
    let (seen_tx, seen_rx) = mpsc::unbounded_channel();
    let outbox_rx = Arc::new(tokio::sync::Mutex::new(outbox_rx));
    let config = ServerConfig::memory(move |io| {
        let seen = seen_tx.clone();
        let outbox = outbox_rx.clone();
        async move {
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            let mut outbox = outbox.lock().await;
            loop {
                let out = tokio::select! {
                    line = lines.next_line() => {
                        let Ok(Some(line)) = line else { break };
                        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
                        let _ = seen.send(msg.clone());
                        match respond(&msg) {
                            Some(answer) => answer,
                            None => continue,
                        }
                    }
                    Some(out) = outbox.recv() => out,
                };
                let mut bytes = serde_json::to_vec(&out).unwrap();
                bytes.push(b'\n');
                if writer.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        }
    });
    let peer = Peer {
        outbox: outbox_tx,
        seen: seen_rx,
        backlog: Vec::new(),
    };
    (config, peer)
}

/// The peer's answer to the client's requests; `None` for everything else.
fn respond(msg: &Value) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let result = match msg.get("method")?.as_str()? {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "0"}
        }),
        "tools/list" => json!({"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}},
            {"name": "needs_auth", "inputSchema": {"type": "object"}}
        ]}),
        "tools/call" if msg["params"]["name"] == "needs_auth" => {
            return Some(json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32042,
                "message": "This request requires more information.",
                "data": {"elicitations": [{
                    "mode": "url",
                    "elicitationId": "e-42",
                    "url": "https://mcp.example.com/connect?elicitationId=e-42",
                    "message": "Authorization is required."
                }]}
            }}));
        }
        "tools/call" => json!({"content": [
            {"type": "text", "text": msg["params"]["arguments"]["message"]}
        ]}),
        "ping" => json!({}),
        _ => return None,
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

impl Peer {
    /// Makes the peer send a request to the client.
    fn request(&self, id: impl Into<Value>, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        self.outbox.send(msg).unwrap();
    }

    /// Makes the peer send a notification to the client.
    fn notify(&self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.outbox.send(msg).unwrap();
    }

    /// The first received message that `wanted` accepts, within [`SOON`].
    async fn find(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&wanted) {
            return self.backlog.remove(i);
        }
        let deadline = tokio::time::Instant::now() + SOON;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.seen.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} within {SOON:?}; saw {:#?}", self.backlog))
                .expect("peer alive");
            if wanted(&msg) {
                return msg;
            }
            self.backlog.push(msg);
        }
    }

    /// The client's answer to the peer's request `id`.
    async fn answer(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        self.find(&format!("answer to {id}"), |m| {
            m.get("method").is_none() && m["id"] == id
        })
        .await
    }

    /// The first message the client sent with `method`.
    async fn message(&mut self, method: &str) -> Value {
        self.find(method, |m| m["method"] == method).await
    }

    /// The capabilities the client declared in `initialize`.
    async fn capabilities(&mut self) -> Value {
        self.message("initialize").await["params"]["capabilities"].clone()
    }

    /// Everything received so far, without waiting.
    fn drain(&mut self) -> &[Value] {
        while let Ok(msg) = self.seen.try_recv() {
            self.backlog.push(msg);
        }
        &self.backlog
    }
}

/// The JSON-RPC error code of an answer (panics on a result).
fn error_code(answer: &Value) -> i64 {
    assert!(
        answer.get("result").is_none(),
        "expected an error: {answer}"
    );
    answer["error"]["code"].as_i64().expect("an error code")
}

/// The error message of an answer.
fn error_message(answer: &Value) -> &str {
    answer["error"]["message"].as_str().unwrap_or_default()
}

// ---- handlers ---------------------------------------------------------------------------

/// Roots the test can change while the runtime runs.
#[derive(Debug, Clone, Default)]
struct Roots(Arc<Mutex<Vec<Root>>>);

impl RootsHandler for Roots {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        let roots = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(roots) })
    }
}

/// How a misbehaving roots handler misbehaves.
#[derive(Debug, Clone, Copy)]
enum Misbehave {
    Fail,
    Panic,
    Hang,
}

impl RootsHandler for Misbehave {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        let how = *self;
        Box::pin(async move {
            match how {
                Misbehave::Fail => Err("the disk is on fire".to_owned()),
                Misbehave::Panic => panic!("a roots handler panicked on purpose"),
                Misbehave::Hang => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(Vec::new())
                }
            }
        })
    }
}

/// A roots handler that counts who entered and waits until released.
#[derive(Debug, Clone)]
struct Gated {
    entered: Arc<AtomicUsize>,
    release: watch::Receiver<bool>,
}

impl RootsHandler for Gated {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        let (entered, mut release) = (self.entered.clone(), self.release.clone());
        Box::pin(async move {
            entered.fetch_add(1, Ordering::SeqCst);
            let _ = release.wait_for(|go| *go).await;
            Ok(vec![Root::new("file:///released")])
        })
    }
}

/// Records every request and answers "hello" from model `m` (or, with `no_model`, a
/// response that lacks its model).
#[derive(Debug, Clone)]
struct Sampler {
    tools: bool,
    no_model: bool,
    seen: mpsc::UnboundedSender<(String, SamplingRequest)>,
}

impl SamplingHandler for Sampler {
    fn create_message(
        &self,
        server: &str,
        request: SamplingRequest,
    ) -> BoxFuture<Result<SamplingResponse, String>> {
        let _ = self.seen.send((server.to_owned(), request));
        let mut response =
            SamplingResponse::new("m", [Content::text("hello")]).stop_reason("endTurn");
        if self.no_model {
            response.model = None;
        }
        Box::pin(async move { Ok(response) })
    }

    fn handles_tools(&self) -> bool {
        self.tools
    }
}

/// Declines forms; with `url`, accepts URL-mode requests and records them and completions.
#[derive(Debug, Clone)]
struct Elicit {
    url: bool,
    requests: mpsc::UnboundedSender<UrlElicitation>,
    completes: mpsc::UnboundedSender<(String, String)>,
}

impl ElicitationHandler for Elicit {
    fn elicit(
        &self,
        _server: &str,
        _request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        Box::pin(async { Ok(ElicitationResponse::decline()) })
    }

    fn handles_url(&self) -> bool {
        self.url
    }

    fn elicit_url(
        &self,
        _server: &str,
        request: UrlElicitation,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let _ = self.requests.send(request);
        Box::pin(async { Ok(ElicitationResponse::accept_url()) })
    }

    fn elicitation_complete(&self, server: &str, elicitation_id: String) {
        let _ = self.completes.send((server.to_owned(), elicitation_id));
    }
}

async fn recv<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(SOON, rx.recv())
        .await
        .expect("delivered within 5 s")
        .expect("sender alive")
}

// ---- tests ------------------------------------------------------------------------------

#[tokio::test]
async fn roots_list_is_answered_with_the_apps_roots_and_declared_only_with_a_handler() {
    let roots = Roots::default();
    *roots.0.lock().unwrap() = vec![
        Root::new("file:///home/me/project").name("project"),
        Root::new("file:///tmp/scratch"),
    ];
    let (with, mut with_peer) = peer();
    let (without, mut without_peer) = peer();
    let rt = Runtime::builder()
        .server(
            "with",
            with.client_handlers(ClientHandlers::new().roots(roots)),
        )
        .server("without", without)
        .build()
        .await
        .unwrap();

    assert_eq!(
        with_peer.capabilities().await["roots"],
        json!({"listChanged": true})
    );
    assert_eq!(without_peer.capabilities().await, json!({}));

    with_peer.request("r1", "roots/list", json!({}));
    let answer = with_peer.answer("r1").await;
    assert_eq!(
        answer["result"],
        json!({"roots": [
            {"uri": "file:///home/me/project", "name": "project"},
            {"uri": "file:///tmp/scratch"}
        ]})
    );
    without_peer.request("r1", "roots/list", json!({}));
    assert_eq!(error_code(&without_peer.answer("r1").await), -32601);
    rt.shutdown().await;
}

#[tokio::test]
async fn roots_changed_notifies_ready_servers_that_were_offered_roots() {
    let roots = Roots::default();
    let (a, mut a_peer) = peer();
    let (b, mut b_peer) = peer();
    let rt = Runtime::builder()
        .server(
            "a",
            a.client_handlers(ClientHandlers::new().roots(roots.clone())),
        )
        .server("b", b)
        .build()
        .await
        .unwrap();
    a_peer.request(1, "roots/list", json!({}));
    assert_eq!(a_peer.answer(1).await["result"], json!({"roots": []}));

    roots
        .0
        .lock()
        .unwrap()
        .push(Root::new("file:///new").name("new"));
    rt.roots_changed().await.unwrap();
    let note = a_peer.message("notifications/roots/list_changed").await;
    assert!(note.get("id").is_none(), "{note}");
    a_peer.request(2, "roots/list", json!({}));
    assert_eq!(
        a_peer.answer(2).await["result"],
        json!({"roots": [{"uri": "file:///new", "name": "new"}]})
    );

    // `b` has no roots handler: it is told nothing. Frames to one server keep their order,
    // so once a later call's request arrived, a notification would have arrived before it.
    let b_server = rt.server("b").unwrap();
    b_server
        .call_tool("echo", json!({"message": "x"}))
        .await
        .unwrap();
    b_peer.message("tools/call").await;
    assert!(
        b_peer
            .drain()
            .iter()
            .all(|m| m["method"] != "notifications/roots/list_changed"),
        "{:#?}",
        b_peer.backlog
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn sampling_is_answered_with_typed_params_and_tools_declared_only_when_opted_in() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let sampler = |tools| Sampler {
        tools,
        no_model: false,
        seen: seen_tx.clone(),
    };
    let (with_tools, mut tools_peer) = peer();
    let (plain, mut plain_peer) = peer();
    let rt = Runtime::builder()
        .server(
            "tools",
            with_tools.client_handlers(ClientHandlers::new().sampling(sampler(true))),
        )
        .server(
            "plain",
            plain.client_handlers(ClientHandlers::new().sampling(sampler(false))),
        )
        .build()
        .await
        .unwrap();
    assert_eq!(
        tools_peer.capabilities().await["sampling"],
        json!({"tools": {}})
    );
    assert_eq!(plain_peer.capabilities().await["sampling"], json!({}));

    let params = json!({
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18C"}]}
            ]}
        ],
        "modelPreferences": {"hints": [{"name": "claude"}], "speedPriority": 0.5},
        "systemPrompt": "Be brief.",
        "includeContext": "none",
        "temperature": 0.2,
        "maxTokens": 200,
        "stopSequences": ["END"],
        "metadata": {"trace": "t1"},
        "tools": [{"name": "get_weather", "description": "weather",
                   "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "toolChoice": {"mode": "required"}
    });
    tools_peer.request("s1", "sampling/createMessage", params.clone());
    let answer = tools_peer.answer("s1").await;
    assert_eq!(
        answer["result"],
        json!({"role": "assistant", "content": {"type": "text", "text": "hello"},
               "model": "m", "stopReason": "endTurn"})
    );
    let (server, request) = recv(&mut seen).await;
    assert_eq!(server, "tools");
    assert_eq!(request.messages.len(), 3);
    assert_eq!(request.messages[0].role, Role::User);
    assert_eq!(
        request.messages[0].content,
        vec![Content::text("Weather in Paris?")]
    );
    let Content::ToolUse(tool_use) = &request.messages[1].content[0] else {
        panic!("{:?}", request.messages[1])
    };
    assert_eq!(
        (tool_use.id.as_str(), tool_use.name.as_str()),
        ("c1", "get_weather")
    );
    assert!(matches!(
        request.messages[2].content[0],
        Content::ToolResult(_)
    ));
    let prefs = request.model_preferences.as_ref().unwrap();
    assert_eq!(
        prefs.hints.as_ref().unwrap()[0].name.as_deref(),
        Some("claude")
    );
    assert_eq!(prefs.speed_priority, Some(0.5));
    assert_eq!(request.system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(request.temperature, Some(0.2));
    assert_eq!(request.max_tokens, 200);
    assert_eq!(request.stop_sequences, Some(vec!["END".to_owned()]));
    assert_eq!(request.metadata.as_ref().unwrap()["trace"], "t1");
    let tools = request.tools.as_ref().unwrap();
    assert_eq!(tools[0].name, "get_weather");
    assert_eq!(
        tools[0].input_schema["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(
        request.tool_choice.as_ref().unwrap().mode,
        Some(ToolChoiceMode::Required)
    );
    assert_eq!(request.raw, params);

    // Without `sampling.tools` declared, a request with tools is refused, as the
    // specification requires, and the handler never sees it.
    plain_peer.request("s1", "sampling/createMessage", params);
    assert_eq!(error_code(&plain_peer.answer("s1").await), -32602);
    assert!(seen.try_recv().is_err());
    rt.shutdown().await;
}

#[tokio::test]
async fn a_sampling_result_without_model_is_answered_with_an_error() {
    let (seen_tx, _seen) = mpsc::unbounded_channel();
    let sampler = Sampler {
        tools: false,
        no_model: true,
        seen: seen_tx,
    };
    let (config, mut peer) = peer();
    let rt = Runtime::builder()
        .server(
            "s",
            config.client_handlers(ClientHandlers::new().sampling(sampler)),
        )
        .build()
        .await
        .unwrap();
    peer.request(
        7,
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}),
    );
    let answer = peer.answer(7).await;
    assert_eq!(error_code(&answer), -32603);
    assert!(error_message(&answer).contains("model"), "{answer}");
    rt.shutdown().await;
}

#[tokio::test]
async fn url_elicitation_and_its_completion_reach_the_handler() {
    let (requests_tx, mut requests) = mpsc::unbounded_channel();
    let (completes_tx, mut completes) = mpsc::unbounded_channel();
    let handler = |url| Elicit {
        url,
        requests: requests_tx.clone(),
        completes: completes_tx.clone(),
    };
    let (url, mut url_peer) = peer();
    let (form, mut form_peer) = peer();
    let rt = Runtime::builder()
        .server(
            "url",
            url.client_handlers(ClientHandlers::new().elicitation(handler(true))),
        )
        .server(
            "form",
            form.client_handlers(ClientHandlers::new().elicitation(handler(false))),
        )
        .build()
        .await
        .unwrap();
    assert_eq!(
        url_peer.capabilities().await["elicitation"],
        json!({"form": {}, "url": {}})
    );
    assert_eq!(
        form_peer.capabilities().await["elicitation"],
        json!({"form": {}})
    );

    let params = json!({
        "mode": "url",
        "elicitationId": "550e8400",
        "url": "https://mcp.example.com/ui/set_api_key",
        "message": "Please provide your API key."
    });
    url_peer.request(3, "elicitation/create", params.clone());
    // Accepted, and without content: the data goes to the server out of band.
    assert_eq!(
        url_peer.answer(3).await["result"],
        json!({"action": "accept"})
    );
    let request = recv(&mut requests).await;
    assert_eq!(request.url, "https://mcp.example.com/ui/set_api_key");
    assert_eq!(request.elicitation_id, "550e8400");
    assert_eq!(request.message, "Please provide your API key.");

    url_peer.notify(
        "notifications/elicitation/complete",
        json!({"elicitationId": "550e8400"}),
    );
    assert_eq!(
        recv(&mut completes).await,
        ("url".to_owned(), "550e8400".to_owned())
    );

    // A form-only client refuses URL mode; forms still reach the handler.
    form_peer.request(3, "elicitation/create", params);
    assert_eq!(error_code(&form_peer.answer(3).await), -32602);
    assert!(requests.try_recv().is_err());
    form_peer.request(
        4,
        "elicitation/create",
        json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}),
    );
    assert_eq!(
        form_peer.answer(4).await["result"],
        json!({"action": "decline"})
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn url_elicitation_required_becomes_a_typed_error_with_the_urls() {
    let (config, _peer) = peer();
    let rt = Runtime::builder()
        .server("s", config)
        .build()
        .await
        .unwrap();
    let err = rt
        .server("s")
        .unwrap()
        .call_tool("needs_auth", json!({}))
        .await
        .unwrap_err();
    let ErrorKind::UrlElicitationRequired {
        elicitations,
        message,
    } = err.kind()
    else {
        panic!("{err:?}")
    };
    assert_eq!(err.server(), Some("s"));
    assert_eq!(err.tool(), Some("needs_auth"));
    assert_eq!(message, "This request requires more information.");
    assert_eq!(elicitations.len(), 1);
    assert_eq!(
        elicitations[0].url,
        "https://mcp.example.com/connect?elicitationId=e-42"
    );
    assert_eq!(elicitations[0].elicitation_id, "e-42");
    assert!(
        err.to_string().contains("https://mcp.example.com/connect"),
        "{err}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn failing_panicking_and_late_handlers_are_answered_with_errors() {
    let handlers = |how| ClientHandlers::new().roots(how);
    let (fails, mut fails_peer) = peer();
    let (panics, mut panics_peer) = peer();
    let (hangs, mut hangs_peer) = peer();
    let (hangs_default, mut default_peer) = peer();
    let rt = Runtime::builder()
        .handler_timeout(Duration::from_millis(150))
        .server("fails", fails.client_handlers(handlers(Misbehave::Fail)))
        .server("panics", panics.client_handlers(handlers(Misbehave::Panic)))
        .server(
            "hangs",
            hangs
                .client_handlers(handlers(Misbehave::Hang))
                .handler_timeout(Duration::from_millis(250)),
        )
        .server(
            "hangs_default",
            hangs_default.client_handlers(handlers(Misbehave::Hang)),
        )
        .build()
        .await
        .unwrap();
    for peer in [&fails_peer, &panics_peer, &hangs_peer, &default_peer] {
        peer.request("r", "roots/list", json!({}));
    }
    let failed = fails_peer.answer("r").await;
    assert_eq!(error_code(&failed), -32603);
    assert!(
        error_message(&failed).contains("the disk is on fire"),
        "{failed}"
    );
    let panicked = panics_peer.answer("r").await;
    assert_eq!(error_code(&panicked), -32603);
    assert!(error_message(&panicked).contains("panicked"), "{panicked}");
    // Each hanging handler is cut off at its own deadline: the server's beats the runtime's.
    let late = hangs_peer.answer("r").await;
    assert_eq!(error_code(&late), -32603);
    assert!(error_message(&late).contains("250 ms"), "{late}");
    let late = default_peer.answer("r").await;
    assert_eq!(error_code(&late), -32603);
    assert!(error_message(&late).contains("150 ms"), "{late}");

    // The panic cost nothing else: the server still takes calls and requests.
    let server = rt.server("panics").unwrap();
    let result = server
        .call_tool("echo", json!({"message": "alive"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "alive");
    panics_peer.request("r2", "ping", json!({}));
    assert_eq!(panics_peer.answer("r2").await["result"], json!({}));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_slow_handler_delays_neither_calls_nor_other_requests() {
    const REQUESTS: usize = 50;
    let entered = Arc::new(AtomicUsize::new(0));
    let (release_tx, release) = watch::channel(false);
    let gated = Gated {
        entered: entered.clone(),
        release,
    };
    let (config, mut peer) = peer();
    let rt = Runtime::builder()
        .server(
            "s",
            config.client_handlers(ClientHandlers::new().roots(gated)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("s").unwrap();

    for i in 0..REQUESTS {
        peer.request(format!("r{i}"), "roots/list", json!({}));
    }
    let calls: Vec<_> = (0..20)
        .map(|i| tokio::spawn(server.call_tool("echo", json!({"message": format!("call {i}")}))))
        .collect();
    // Every request is in its handler at once: each is served in its own task.
    let all_in = async {
        while entered.load(Ordering::SeqCst) < REQUESTS {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    if tokio::time::timeout(SOON, all_in).await.is_err() {
        panic!("only {} handlers started", entered.load(Ordering::SeqCst));
    }
    // Calls made meanwhile finish while every handler still waits.
    for (i, call) in calls.into_iter().enumerate() {
        let result = tokio::time::timeout(SOON, call)
            .await
            .expect("a call finished while the handlers wait")
            .unwrap()
            .unwrap();
        assert_eq!(result.text(), format!("call {i}"));
    }
    let answered = peer
        .drain()
        .iter()
        .filter(|m| m.get("method").is_none() && m["id"].is_string())
        .count();
    assert_eq!(answered, 0, "answered before the handlers were released");

    release_tx.send(true).unwrap();
    for i in 0..REQUESTS {
        let answer = peer.answer(format!("r{i}")).await;
        assert_eq!(answer["result"]["roots"][0]["uri"], "file:///released");
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn malformed_params_are_answered_invalid_params_and_the_server_stays_up() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let (requests_tx, _requests) = mpsc::unbounded_channel();
    let (completes_tx, _completes) = mpsc::unbounded_channel();
    let handlers = ClientHandlers::new()
        .sampling(Sampler {
            tools: true,
            no_model: false,
            seen: seen_tx,
        })
        .elicitation(Elicit {
            url: true,
            requests: requests_tx,
            completes: completes_tx,
        });
    let (config, mut peer) = peer();
    let rt = Runtime::builder()
        .server("s", config.client_handlers(handlers))
        .build()
        .await
        .unwrap();

    peer.request(
        1,
        "sampling/createMessage",
        json!({"messages": "nope", "maxTokens": 5}),
    );
    peer.request(2, "sampling/createMessage", json!({"messages": []}));
    peer.request(3, "elicitation/create", json!({"requestedSchema": {}}));
    peer.request(
        4,
        "elicitation/create",
        json!({"mode": "url", "message": "m", "url": "https://x.example"}),
    );
    peer.outbox
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage"}))
        .unwrap();
    peer.request(6, "nothing/here", json!({}));
    // With these handlers the client declares tasks: it lists its own (none yet).
    peer.request(60, "tasks/list", json!({}));
    for id in 1..=5 {
        assert_eq!(error_code(&peer.answer(id).await), -32602, "request {id}");
    }
    assert_eq!(error_code(&peer.answer(6).await), -32601);
    assert_eq!(peer.answer(60).await["result"], json!({"tasks": []}));
    assert!(
        seen.try_recv().is_err(),
        "the handler saw a malformed request"
    );

    let server = rt.server("s").unwrap();
    assert!(server.status().is_ready());
    let result = server
        .call_tool("echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "still here");
    peer.request(
        7,
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}),
    );
    assert_eq!(peer.answer(7).await["result"]["model"], "m");
    rt.shutdown().await;
}
