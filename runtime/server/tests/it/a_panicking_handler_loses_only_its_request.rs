//! A handler that panics loses its own request (no answer: its task is gone), and nothing
//! else: the connection reads and answers the requests after it, and the session ends
//! cleanly at EOF.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};
use switchboard_server::{
    Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply, Server,
};

use crate::support::LineClient;

struct Panics;

impl Handler for Panics {
    fn info(&self) -> Info {
        Info::new("panics", "1.0")
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        let object = json!({"type": "object"});
        Cow::Owned(vec![
            json!({"name": "echo", "inputSchema": object}),
            json!({"name": "panic_at_once", "inputSchema": object}),
            json!({"name": "panic_after_waiting", "inputSchema": object}),
        ])
    }

    fn call_tool(
        self: Arc<Self>,
        name: String,
        _: Arguments,
        _: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        Box::pin(async move {
            match name.as_str() {
                "panic_at_once" => panic!("a handler's bug, before it waits"),
                "panic_after_waiting" => {
                    tokio::task::yield_now().await;
                    panic!("a handler's bug, after it waited")
                }
                _ => Ok(Reply::text("echo")),
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requests_after_a_panicking_handler_are_answered() {
    let mut client = LineClient::start(Server::new(Panics));
    let call = |id: i64, name: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name}});
    client.send(call(1, "panic_at_once")).await;
    client.send(call(2, "panic_after_waiting")).await;
    client.send(call(3, "echo")).await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], 3, "only the echo is answered: {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "echo");
    let list = client.request(4, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(3));
    client.close().await;
}
