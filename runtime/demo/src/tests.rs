//! Drives [`serve`] over an in-process duplex stream, as a client would.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

use super::{serve, tools, Options};

mod features;

const WAIT: Duration = Duration::from_secs(5);

struct Client {
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    server: JoinHandle<std::io::Result<()>>,
}

impl Client {
    fn start(options: Options) -> Client {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (their_reader, their_writer) = tokio::io::split(theirs);
        let server = tokio::spawn(serve(their_reader, their_writer, options));
        let (reader, writer) = tokio::io::split(ours);
        Client {
            writer,
            reader: BufReader::new(reader),
            server,
        }
    }

    fn faults() -> Client {
        Client::start(Options {
            faults: true,
            ..Options::default()
        })
    }

    async fn send_raw(&mut self, line: &[u8]) {
        self.writer.write_all(line).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes()).await;
    }

    async fn recv_raw(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        let n = tokio::time::timeout(WAIT, self.reader.read_until(b'\n', &mut line))
            .await
            .expect("the server answers in time")
            .unwrap();
        assert!(n > 0, "the server closed its output");
        line.pop();
        line
    }

    async fn recv(&mut self) -> Value {
        let line = self.recv_raw().await;
        serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&line)))
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.recv().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    async fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        let response = self
            .request(
                json!(id),
                "tools/call",
                json!({"name": tool, "arguments": arguments}),
            )
            .await;
        response["result"].clone()
    }
}

/// A `tools/call` with `params` as written, and its whole response.
async fn call_raw(client: &mut Client, id: i64, params: &str) -> Value {
    let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
    client.send_raw(line.as_bytes()).await;
    client.recv().await
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn initialize_negotiates_the_version() {
    let mut client = Client::start(Options::default());
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let params = json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
        let response = client.request(json!(1), "initialize", params).await;
        let result = &response["result"];
        assert_eq!(result["protocolVersion"], answered);
        assert_eq!(result["serverInfo"]["name"], "switchboard-demo");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
    }

    let mut client = Client::start(Options {
        protocol_version: Some("2099-01-01".to_owned()),
        name: "other".to_owned(),
        ..Options::default()
    });
    let response = client
        .request(
            json!("init"),
            "initialize",
            json!({"protocolVersion": "2025-11-25"}),
        )
        .await;
    assert_eq!(response["result"]["protocolVersion"], "2099-01-01");
    assert_eq!(response["result"]["serverInfo"]["name"], "other");
}

#[tokio::test]
async fn tools_list_pages_follow_cursors() {
    let mut client = Client::start(Options {
        faults: true,
        page_size: 3,
        ..Options::default()
    });
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for id in 0.. {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let response = client.request(json!(id), "tools/list", params).await;
        let page = response["result"]["tools"].as_array().unwrap();
        assert!(page.len() <= 3);
        names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = response["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    let definitions = tools::definitions(true, false);
    let expected: Vec<_> = definitions
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, expected);
    assert!(names.iter().any(|n| n == "hang"));

    let response = client
        .request(json!(99), "tools/list", json!({"cursor": "nonsense"}))
        .await;
    assert_eq!(response["error"]["code"], -32602);

    let mut plain = Client::start(Options::default());
    let response = plain.request(json!(1), "tools/list", json!({})).await;
    let names: Vec<_> = response["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            "greet",
            "add",
            "echo",
            "touch",
            "resources_changed",
            "prompts_changed",
            "log",
            "log_level"
        ]
    );
    assert!(response["result"].get("nextCursor").is_none());
}

#[tokio::test]
async fn ordinary_tools_answer() {
    let mut client = Client::start(Options::default());
    assert_eq!(
        text(&client.call(1, "greet", json!({"name": "Ada"})).await),
        "Hello, Ada!"
    );
    let sum = client.call(2, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(text(&sum), "5");
    assert_eq!(sum["structuredContent"], json!({"sum": 5}));
    assert_eq!(
        text(&client.call(3, "add", json!({"a": 1.5, "b": 2})).await),
        "3.5"
    );
    assert_eq!(
        text(&client.call(4, "add", json!({"a": 0.5, "b": 0.5})).await),
        "1"
    );
    assert_eq!(
        text(&client.call(5, "echo", json!({"text": "a\nb"})).await),
        "a\nb"
    );

    let bad = client.call(6, "greet", json!({"name": 7})).await;
    assert_eq!(bad["isError"], true);
    assert!(text(&bad).contains("name"));
}

/// The arguments `echo` and `greet` read straight from the request's text, and every way
/// that reading can fail: each answered as the tool's error, with what was wrong.
#[tokio::test]
async fn arguments_read_from_the_request_text_fail_as_the_tools_error() {
    let mut client = Client::start(Options::default());
    let client = &mut client;
    let escaped = call_raw(
        client,
        1,
        r#"{"name":"echo","arguments":{"text":"caf\u00e9 \"q\""}}"#,
    )
    .await;
    assert_eq!(text(&escaped["result"]), "café \"q\"");
    let absent = call_raw(client, 2, r#"{"name":"greet"}"#).await;
    assert_eq!(absent["result"]["isError"], true);
    assert!(text(&absent["result"]).contains("name"), "{absent}");
    // `null` arguments are no arguments.
    let null = call_raw(client, 3, r#"{"name":"greet","arguments":null}"#).await;
    assert!(
        text(&null["result"]).contains("missing argument \"name\""),
        "{null}"
    );
    let array = call_raw(client, 4, r#"{"name":"echo","arguments":["hello"]}"#).await;
    assert_eq!(text(&array["result"]), "arguments must be an object");
    let lone = call_raw(
        client,
        5,
        r#"{"name":"echo","arguments":{"text":"\ud800"}}"#,
    )
    .await;
    assert_eq!(lone["result"]["isError"], true);
    assert!(
        text(&lone["result"]).starts_with("invalid arguments"),
        "{lone}"
    );
    // The last of duplicate keys wins, as it does for a tree of them.
    let twice = call_raw(
        client,
        6,
        r#"{"name":"echo","arguments":{"text":"a","text":"b"}}"#,
    )
    .await;
    assert_eq!(text(&twice["result"]), "b");
    let number = call_raw(client, 7, r#"{"name":"echo","arguments":{"text":7}}"#).await;
    assert!(
        text(&number["result"]).contains("must be a string"),
        "{number}"
    );
}

#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    let mut client = Client::start(Options::default());
    let response = client
        .request(json!(1), "tools/call", json!({"name": "nope"}))
        .await;
    assert_eq!(response["error"]["code"], -32602);
    assert_eq!(response["error"]["message"], "unknown tool: nope");
    // Fault tools do not exist without --faults.
    let response = client
        .request(json!(2), "tools/call", json!({"name": "hang"}))
        .await;
    assert_eq!(response["error"]["code"], -32602);
}

#[tokio::test]
async fn unknown_method_is_method_not_found_and_notifications_are_not_answered() {
    let mut client = Client::start(Options::default());
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/whatever"}))
        .await;
    client.send_raw(b"this is not json").await;
    client
        .send_raw(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#)
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage"}))
        .await;
    // Lines that are no message are answered with an error of no id, so their sender hears.
    let response = client.recv().await;
    assert_eq!(
        (&response["id"], &response["error"]["code"]),
        (&Value::Null, &json!(-32700))
    );
    let response = client.recv().await;
    assert_eq!(
        (&response["id"], &response["error"]["code"]),
        (&Value::Null, &json!(-32600))
    );
    let response = client.recv().await;
    assert_eq!(response["id"], 1);
    assert_eq!(response["error"]["code"], -32601);
    let response = client.request(json!(2), "ping", Value::Null).await;
    assert_eq!(response["result"], json!({}));
}

#[tokio::test]
async fn cancel_aborts_hang_and_is_recorded() {
    let mut client = Client::faults();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang"}}),
        )
        .await;
    let cancel = json!({"requestId": 7, "reason": "the test lost patience"});
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
        .await;
    client.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "cancellations"}})).await;
    let response = client.recv().await;
    assert_eq!(response["id"], 8, "the cancelled request is never answered");
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"cancelled": [cancel]})
    );
    let as_text: Value = serde_json::from_str(text(&response["result"])).unwrap();
    assert_eq!(as_text, response["result"]["structuredContent"]);
}

#[tokio::test]
async fn calls_lists_the_tool_calls_received_in_order() {
    let mut client = Client::faults();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang"}}),
        )
        .await;
    client.send(json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "calls"}})).await;
    let response = client.recv().await;
    assert_eq!(response["id"], "c");
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"calls": [{"id": 7, "name": "hang"}, {"id": "c", "name": "calls"}]})
    );
}

#[tokio::test]
async fn answers_come_back_out_of_order() {
    let mut client = Client::faults();
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 300}}})).await;
    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "fast"}}})).await;
    let first = client.recv().await;
    assert_eq!(first["id"], 2);
    assert_eq!(text(&first["result"]), "fast");
    let second = client.recv().await;
    assert_eq!(second["id"], 1);
    assert_eq!(text(&second["result"]), "slept 300 ms");
}

#[tokio::test]
async fn sleep_reports_progress() {
    let mut client = Client::faults();
    let params = json!({"name": "sleep", "arguments": {"ms": 40, "steps": 2}, "_meta": {"progressToken": "tok"}});
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .await;
    for i in 1..=2 {
        let note = client.recv().await;
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(
            note["params"],
            json!({"progressToken": "tok", "progress": i, "total": 2, "message": format!("step {i}")})
        );
    }
    assert_eq!(client.recv().await["id"], 1);
}

#[tokio::test]
async fn ping_client_waits_for_the_clients_answer() {
    let mut client = Client::faults();
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping_client"}})).await;
    let ping = client.recv().await;
    assert_eq!(ping["method"], "ping");
    client
        .send(json!({"jsonrpc": "2.0", "id": ping["id"], "result": {}}))
        .await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(text(&answer["result"]), "pong");

    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ping_client"}})).await;
    let ping = client.recv().await;
    assert_ne!(
        ping["id"],
        json!("demo-1"),
        "the server does not reuse its ids"
    );
    client
        .send(
            json!({"jsonrpc": "2.0", "id": ping["id"], "error": {"code": -32601, "message": "no"}}),
        )
        .await;
    assert_eq!(client.recv().await["result"]["isError"], true);
}

#[tokio::test]
async fn fault_tools_write_what_they_promise() {
    let mut client = Client::faults();
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "garbage", "arguments": {"kind": "non_utf8"}}})).await;
    assert_eq!(client.recv_raw().await, [0xff, 0xfe]);
    assert_eq!(client.recv().await["id"], 1);

    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "garbage", "arguments": {"kind": "oversized", "bytes": 100_000}}})).await;
    assert_eq!(client.recv_raw().await, vec![b'a'; 100_000]);
    assert_eq!(client.recv().await["id"], 2);

    client.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "unknown_id"}})).await;
    assert_eq!(client.recv().await["id"], 999_999_999);
    assert_eq!(client.recv().await["id"], "nobody-asked");
    assert_eq!(client.recv().await["id"], 3);

    client.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "batch_answer"}})).await;
    let batch = client.recv().await;
    assert_eq!(batch[0]["method"], "notifications/message");
    assert_eq!(batch[1]["id"], 4);

    client.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "malformed_answer"}})).await;
    assert_eq!(client.recv().await, json!({"jsonrpc": "2.0", "id": 5}));

    client.send(json!({"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": {"name": "drop_answer"}})).await;
    assert_eq!(
        client.recv_raw().await,
        br#"{"jsonrpc":"2.0","id":"d","result":"#
    );

    let large = client.call(6, "large", json!({"bytes": 70_000})).await;
    assert_eq!(text(&large).len(), 70_000);
    assert_eq!(
        client.call(7, "fail", json!({"message": "boom"})).await,
        json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
    );
    assert_eq!(
        text(
            &client
                .call(8, "stderr_burst", json!({"lines": 3, "bytes_per_line": 20}))
                .await
        ),
        "wrote 3 lines"
    );
}

#[tokio::test]
async fn eof_ends_the_server() {
    let mut client = Client::faults();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}}),
        )
        .await;
    client.writer.shutdown().await.unwrap();
    let Client {
        server, mut reader, ..
    } = client;
    let served = tokio::time::timeout(WAIT, server)
        .await
        .expect("serve returns at EOF");
    assert!(served.unwrap().is_ok());
    let mut rest = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut rest)
        .await
        .unwrap();
    assert!(
        rest.is_empty(),
        "the hung request is abandoned, not answered"
    );
}

#[test]
fn options_parse() {
    let args = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(Options::from_args(args("")), Ok(Options::default()));
    let options = Options::from_args(args(
        "--faults --page-size 2 --protocol-version=2024-11-05 --name x --no-server-features --not-found-code -32602 --exit-on-unknown-method",
    ))
    .unwrap();
    assert_eq!(
        options,
        Options {
            faults: true,
            protocol_version: Some("2024-11-05".to_owned()),
            page_size: 2,
            name: "x".to_owned(),
            server_features: false,
            not_found_code: -32602,
            exit_on_unknown_method: true,
            modern: false,
            conformance: false,
            http: None,
            instructions: "Switchboard's bundled demo server.".to_owned(),
        }
    );
    let options = Options::from_args(args("--modern --conformance --http 127.0.0.1:0")).unwrap();
    assert!(options.modern && options.conformance);
    assert_eq!(options.http, Some("127.0.0.1:0".parse().unwrap()));
    // A bare port is loopback's, as `serve --listen PORT` has it; names are not resolved.
    let options = Options::from_args(args("--http 18752")).unwrap();
    assert_eq!(options.http, Some("127.0.0.1:18752".parse().unwrap()));
    let refused = Options::from_args(args("--http localhost:80")).unwrap_err();
    assert!(
        refused.starts_with("--http: expected PORT or IP:PORT"),
        "{refused}"
    );
    let options = Options::from_args(["--instructions".to_owned(), "Call add to add.".to_owned()]);
    assert_eq!(options.unwrap().instructions, "Call add to add.");
    let options = Options::from_args(args("--not-found-code=-32602")).unwrap();
    assert_eq!(options.not_found_code, -32602);
    assert!(options.server_features);
    assert!(Options::from_args(args("--not-found-code x")).is_err());
    assert!(Options::from_args(args("--no-server-features=yes")).is_err());
    assert!(Options::from_args(args("--page-size")).is_err());
    assert!(Options::from_args(args("--page-size two")).is_err());
    assert!(Options::from_args(args("--bogus")).is_err());
}
