//! What an upstream asks the client about a call (sampling, elicitation) and what it logs
//! about it, seen from the front client whose call caused it: in both eras on the front,
//! whichever era the upstream speaks, and never handed to another client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
    SamplingHandler, SamplingRequest, SamplingResponse,
};
use switchboard::model::{Content, LoggingLevel};
use switchboard::{Protocol, Runtime, ServerConfig, ServerHandle};
use switchboard_gateway::{upstream_handlers, Front, Gateway};

use crate::support::{demo, in_memory, RawFront, WAIT};

/// A front client's model: answers with its own name and the prompt it was given, and
/// remembers every prompt it was asked.
#[derive(Debug, Clone)]
struct Model {
    name: &'static str,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Model {
    fn new(name: &'static str) -> Model {
        Model {
            name,
            asked: Arc::default(),
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl SamplingHandler for Model {
    fn create_message(
        &self,
        _server: &str,
        request: SamplingRequest,
    ) -> BoxFuture<Result<SamplingResponse, String>> {
        let prompt = request
            .messages
            .first()
            .and_then(|m| m.content.first())
            .and_then(|c| match c {
                Content::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        self.asked.lock().unwrap().push(prompt.clone());
        let answer = format!("{} read {prompt}", self.name);
        Box::pin(async move {
            Ok(SamplingResponse::new(
                "front-model",
                [Content::text(answer)],
            ))
        })
    }
}

/// Accepts every form with a fixed name.
#[derive(Debug)]
struct Alice;

impl ElicitationHandler for Alice {
    fn elicit(
        &self,
        _server: &str,
        _request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let mut content = serde_json::Map::new();
        content.insert("username".into(), json!("alice"));
        content.insert("email".into(), json!("alice@example.com"));
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }
}

/// A gateway over the conformance fixture in memory (its upstream in `upstream` era), and
/// front clients of it.
struct Gatewayed {
    upstream: Runtime,
    served: Front,
}

impl Gatewayed {
    async fn start(upstream: Protocol) -> Gatewayed {
        let mut args = vec!["--conformance"];
        if upstream == Protocol::Modern {
            args.push("--modern");
        }
        let upstream = Runtime::builder()
            .client_handlers(upstream_handlers())
            .server("fixture", demo(&args).protocol(upstream))
            .build()
            .await
            .expect("the upstream runtime");
        let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
        Gatewayed { upstream, served }
    }

    /// A front client in `era` with `handlers`.
    async fn client(&self, era: Protocol, handlers: ClientHandlers) -> (Runtime, ServerHandle) {
        let front = Runtime::builder()
            .client_handlers(handlers)
            .server(
                "gateway",
                in_memory(self.served.server().clone()).protocol(era),
            )
            .build()
            .await
            .expect("the front runtime");
        let gateway = front.server("gateway").expect("the gateway");
        (front, gateway)
    }
}

const ERAS: [Protocol; 2] = [Protocol::Legacy, Protocol::Modern];

#[tokio::test]
async fn an_upstreams_sampling_request_is_answered_by_the_front_client_that_called() {
    for upstream in ERAS {
        let gatewayed = Gatewayed::start(upstream).await;
        for front_era in ERAS {
            let model = Model::new("front");
            let (front, gateway) = gatewayed
                .client(front_era, ClientHandlers::new().sampling(model.clone()))
                .await;
            let result = tokio::time::timeout(
                WAIT,
                gateway.call_tool("test_sampling", json!({"prompt": "the question"})),
            )
            .await
            .expect("in time")
            .unwrap_or_else(|e| panic!("upstream {upstream:?}, front {front_era:?}: {e}"));
            assert_eq!(
                result.text(),
                "LLM response: front read the question",
                "upstream {upstream:?}, front {front_era:?}"
            );
            assert_eq!(model.asked(), ["the question"]);
            front.shutdown().await;
        }
        gatewayed.upstream.shutdown().await;
    }
}

#[tokio::test]
async fn an_upstreams_form_is_filled_in_by_the_front_client_that_called() {
    for upstream in ERAS {
        let gatewayed = Gatewayed::start(upstream).await;
        for front_era in ERAS {
            let (front, gateway) = gatewayed
                .client(front_era, ClientHandlers::new().elicitation(Alice))
                .await;
            let result = tokio::time::timeout(
                WAIT,
                gateway.call_tool("test_elicitation", json!({"message": "who are you?"})),
            )
            .await
            .expect("in time")
            .unwrap_or_else(|e| panic!("upstream {upstream:?}, front {front_era:?}: {e}"));
            assert!(
                result.text().contains("alice"),
                "upstream {upstream:?}, front {front_era:?}: {}",
                result.text()
            );
            front.shutdown().await;
        }
        gatewayed.upstream.shutdown().await;
    }
}

#[tokio::test]
async fn a_front_client_without_sampling_is_never_asked() {
    // A stateless upstream is told the front client's capabilities with the call, and says
    // itself that it cannot sample; a handshake-era one (its connection declared sampling
    // for every front client) is refused the request, and its tool says so the same way.
    for upstream in ERAS {
        let gatewayed = Gatewayed::start(upstream).await;
        for front_era in ERAS {
            let (front, gateway) = gatewayed.client(front_era, ClientHandlers::new()).await;
            let outcome = tokio::time::timeout(
                WAIT,
                gateway.call_tool("test_sampling", json!({"prompt": "q"})),
            )
            .await
            .expect("in time");
            match outcome {
                Ok(result) => assert!(
                    result.text().starts_with("Sampling not supported or error"),
                    "upstream {upstream:?}, front {front_era:?}: {}",
                    result.text()
                ),
                Err(e) => panic!("upstream {upstream:?}, front {front_era:?}: {e}"),
            }
            front.shutdown().await;
        }
        gatewayed.upstream.shutdown().await;
    }
}

#[tokio::test]
async fn an_upstreams_log_messages_about_a_call_reach_the_front_client_that_called() {
    for upstream in ERAS {
        let gatewayed = Gatewayed::start(upstream).await;
        for front_era in ERAS {
            let (front, gateway) = gatewayed.client(front_era, ClientHandlers::new()).await;
            let heard = Arc::new(Mutex::new(Vec::new()));
            let hearing = heard.clone();
            let result = tokio::time::timeout(
                WAIT,
                gateway
                    .call_tool("test_tool_with_logging", json!({}))
                    .on_log(LoggingLevel::Info, move |log| {
                        hearing.lock().unwrap().push(log.data.clone())
                    }),
            )
            .await
            .expect("in time")
            .unwrap_or_else(|e| panic!("upstream {upstream:?}, front {front_era:?}: {e}"));
            assert_eq!(result.text(), "Tool with logging executed successfully");
            // All three, the last one sent just before the answer included.
            assert_eq!(
                *heard.lock().unwrap(),
                [
                    json!("Tool execution started"),
                    json!("Tool processing data"),
                    json!("Tool execution completed")
                ],
                "upstream {upstream:?}, front {front_era:?}"
            );
            front.shutdown().await;
        }
        gatewayed.upstream.shutdown().await;
    }
}

#[tokio::test]
async fn one_clients_request_is_never_handed_to_another_clients_call() {
    // A handshake-era upstream's sampling request carries no link to its call: with two
    // calls in flight the gateway cannot tell whose it is, and must not guess.
    let gatewayed = Gatewayed::start(Protocol::Legacy).await;
    let (a_model, b_model) = (Model::new("a"), Model::new("b"));
    let (a_front, a) = gatewayed
        .client(
            Protocol::Legacy,
            ClientHandlers::new().sampling(a_model.clone()),
        )
        .await;
    let (b_front, b) = gatewayed
        .client(
            Protocol::Modern,
            ClientHandlers::new().sampling(b_model.clone()),
        )
        .await;
    for round in 0..20 {
        let (pa, pb) = (format!("a-{round}"), format!("b-{round}"));
        let (ra, rb) = tokio::join!(
            a.call_tool("test_sampling", json!({ "prompt": pa }))
                .timeout(Duration::from_secs(5)),
            b.call_tool("test_sampling", json!({ "prompt": pb }))
                .timeout(Duration::from_secs(5)),
        );
        // Each call ends in time: answered by its own client, or told the sampling was
        // refused (the fixture's own text), never answered by the other client.
        for (result, own) in [(ra, "a"), (rb, "b")] {
            let text = result.expect("each call is answered").text();
            assert!(
                text.starts_with(&format!("LLM response: {own} read {own}-"))
                    || text.starts_with("Sampling not supported or error"),
                "{own}: {text}"
            );
        }
    }
    assert!(
        a_model.asked().iter().all(|p| p.starts_with("a-")),
        "{:?}",
        a_model.asked()
    );
    assert!(
        b_model.asked().iter().all(|p| p.starts_with("b-")),
        "{:?}",
        b_model.asked()
    );
    a_front.shutdown().await;
    b_front.shutdown().await;
    gatewayed.upstream.shutdown().await;
}

#[tokio::test]
async fn an_http_upstreams_log_messages_and_sampling_reach_the_front_client_that_called() {
    // Over HTTP the upstream's messages come through the connection's router, not the
    // reader: the same calls must get them, in both upstream eras.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    // Both eras over HTTP, as `demo-server --http` serves them.
    let options =
        switchboard_demo::Options::from_args(["--conformance".to_owned(), "--modern".to_owned()])
            .expect("options");
    tokio::spawn(async move {
        let _ = switchboard_demo::serve_http(([127, 0, 0, 1], port).into(), options).await;
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let deadline = std::time::Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the demo server did not listen"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for upstream in ERAS {
        let runtime = Runtime::builder()
            .client_handlers(upstream_handlers())
            .server(
                "fixture",
                ServerConfig::http(
                    url.clone(),
                    switchboard::transport::HttpKind::StreamableHttp,
                )
                .protocol(upstream),
            )
            .build()
            .await
            .expect("the upstream runtime");
        let listed = std::time::Instant::now() + WAIT;
        while runtime.catalogue().get("test_sampling").is_none() {
            assert!(
                std::time::Instant::now() < listed,
                "upstream {upstream:?}: never listed: {:?}",
                runtime.server("fixture").map(|s| s.status())
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let gatewayed = Gatewayed {
            served: Gateway::new(runtime.clone()).serve(switchboard_server::Options::default()),
            upstream: runtime,
        };
        let model = Model::new("front");
        let (front, gateway) = gatewayed
            .client(
                Protocol::Legacy,
                ClientHandlers::new().sampling(model.clone()),
            )
            .await;
        let heard = Arc::new(Mutex::new(Vec::new()));
        let hearing = heard.clone();
        let logged = gateway
            .call_tool("test_tool_with_logging", json!({}))
            .on_log(LoggingLevel::Info, move |log| {
                hearing.lock().unwrap().push(log.data.clone())
            })
            .timeout(WAIT)
            .await
            .unwrap_or_else(|e| panic!("upstream {upstream:?}: {e}"));
        assert_eq!(logged.text(), "Tool with logging executed successfully");
        assert_eq!(
            heard.lock().unwrap().len(),
            3,
            "upstream {upstream:?}: {heard:?}"
        );
        let sampled = gateway
            .call_tool("test_sampling", json!({"prompt": "over http"}))
            .timeout(WAIT)
            .await
            .unwrap_or_else(|e| panic!("upstream {upstream:?}: {e}"));
        assert_eq!(sampled.text(), "LLM response: front read over http");
        front.shutdown().await;
        gatewayed.upstream.shutdown().await;
    }
}

#[tokio::test]
async fn a_front_client_that_sent_a_large_initialize_is_asked_what_it_declared() {
    // The session keeps only what serving reads of its `initialize`: what the client
    // declared amid kilobytes of `experimental`, and under a name of thousands of bytes,
    // still reaches the upstream, whichever era it speaks.
    let experimental: serde_json::Map<String, serde_json::Value> =
        (0..3_000).map(|i| (format!("k{i}"), json!({}))).collect();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {"tools": {}, "junk": "j".repeat(2_000)},
            "experimental": experimental},
        "clientInfo": {"name": "n".repeat(10_000), "version": "1"}}});
    for upstream in ERAS {
        let gatewayed = Gatewayed::start(upstream).await;
        let mut front = RawFront::start(gatewayed.served.server().clone());
        front.send(initialize.clone()).await;
        let answer = front.next().await;
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-11-25",
            "{answer}"
        );
        front
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        front
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "test_sampling", "arguments": {"prompt": "q"}}}))
            .await;
        let answer = loop {
            let message = front.next().await;
            if message["method"] == "sampling/createMessage" {
                front
                    .send(json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "role": "assistant", "model": "front-model",
                        "content": {"type": "text", "text": "the large client's answer"}}}))
                    .await;
            } else if message["id"] == 1 {
                break message;
            }
        };
        assert_eq!(
            answer["result"]["content"][0]["text"], "LLM response: the large client's answer",
            "upstream {upstream:?}: {answer}"
        );
        drop(front);
        gatewayed.upstream.shutdown().await;
    }
}
