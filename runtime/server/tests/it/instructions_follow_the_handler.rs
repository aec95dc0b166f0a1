//! A handler's instructions are asked for on each `initialize` and `server/discover`, so a
//! handler whose instructions change while it serves (a gateway whose upstreams come and
//! go) is answered with those of the moment; a call never asks for them. A handler that
//! sets them in its `Info` alone keeps them.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use switchboard_server::{Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply};
use switchboard_server::{Options, Server};

use crate::support::{meta, LineClient};

/// Instructions that the test changes, and how often they were asked for.
#[derive(Default)]
struct Changing {
    now: Mutex<Option<String>>,
    asked: AtomicUsize,
}

struct Handled(Arc<Changing>);

impl Handler for Handled {
    fn info(&self) -> Info {
        Info::new("changing", "1.0").with_instructions("never these: instructions() answers")
    }

    fn instructions(&self) -> Option<Cow<'_, str>> {
        self.0.asked.fetch_add(1, Ordering::SeqCst);
        let now = self.0.now.lock().unwrap_or_else(|e| e.into_inner());
        now.clone().map(Cow::Owned)
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        Cow::Owned(vec![
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
        ])
    }

    fn call_tool(
        self: Arc<Self>,
        _: String,
        _: Arguments,
        _: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        Box::pin(async { Ok(Reply::text("echoed")) })
    }
}

/// `initialize`'s result.
async fn initialize(client: &mut LineClient, id: i64) -> Value {
    let init = client
        .request(
            id,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    init["result"].clone()
}

/// `server/discover`'s result (2026-07-28).
async fn discover(client: &mut LineClient, id: i64) -> Value {
    let found = client
        .request(id, "server/discover", json!({"_meta": meta(json!({}))}))
        .await;
    found["result"].clone()
}

#[tokio::test]
async fn initialize_and_discover_carry_the_instructions_of_the_moment() {
    let changing = Arc::new(Changing::default());
    let server = Server::with_options(Handled(changing.clone()), Options::default());

    let mut first = LineClient::start(server.clone());
    let none = initialize(&mut first, 1).await;
    assert_eq!(none["serverInfo"]["name"], "changing");
    assert!(none.get("instructions").is_none(), "{none}");
    assert!(discover(&mut first, 2).await.get("instructions").is_none());

    *changing.now.lock().unwrap() = Some("Use echo to repeat.".to_owned());
    let mut second = LineClient::start(server.clone());
    assert_eq!(
        initialize(&mut second, 1).await["instructions"],
        "Use echo to repeat."
    );
    let found = discover(&mut second, 2).await;
    assert_eq!(found["instructions"], "Use echo to repeat.");
    // Nothing else of the result moved.
    assert_eq!(found["resultType"], "complete");
    assert!(found["supportedVersions"].is_array(), "{found}");

    // A call does not ask for them.
    let asked = changing.asked.load(Ordering::SeqCst);
    client_calls_echo(&mut second).await;
    assert_eq!(changing.asked.load(Ordering::SeqCst), asked);
    first.close().await;
    second.close().await;
}

async fn client_calls_echo(client: &mut LineClient) {
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    for id in 10..20 {
        let echo = client
            .request(id, "tools/call", json!({"name": "echo", "arguments": {}}))
            .await;
        assert_eq!(echo["result"]["content"][0]["text"], "echoed", "{echo}");
    }
}

/// A handler that sets its instructions in its `Info` only.
struct Fixed;

impl Handler for Fixed {
    fn info(&self) -> Info {
        Info::new("fixed", "1.0").with_instructions("Read the docs first.")
    }
}

#[tokio::test]
async fn instructions_set_in_info_are_answered_as_before() {
    let mut client = LineClient::start(Server::new(Fixed));
    assert_eq!(
        initialize(&mut client, 1).await["instructions"],
        "Read the docs first."
    );
    assert_eq!(
        discover(&mut client, 2).await["instructions"],
        "Read the docs first."
    );
    client.close().await;
}
