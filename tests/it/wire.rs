//! What Switchboard writes on the wire, checked line by line against a scripted peer.

use std::time::Duration;

use serde_json::{json, Value};
use switchboard::ErrorKind;
use switchboard::{Runtime, ServerConfig, ServerHandle};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// A handshake-era peer that records every line it receives and answers the handshake, then
/// `hang` never; `server/discover` is refused as unknown, as legacy servers do.
fn scripted(seen: mpsc::UnboundedSender<Value>) -> ServerConfig<switchboard::transport::Memory> {
    scripted_answering(seen, false)
}

/// [`scripted`]; with `any_result`, `server/discover` gets an empty result instead, as from
/// a server that answers every request it does not know with `{}`.
fn scripted_answering(
    seen: mpsc::UnboundedSender<Value>,
    any_result: bool,
) -> ServerConfig<switchboard::transport::Memory> {
    ServerConfig::memory(move |io| {
        let seen = seen.clone();
        async move {
            let (reader, mut writer) = tokio::io::split(io);
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let _ = seen.send(msg.clone());
                let answer = match msg["method"].as_str() {
                    Some("initialize") => json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "0"},
                        "futureField": {"kept": true}
                    }}),
                    Some("tools/list") => json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                        "tools": [{"name": "hang", "inputSchema": {"type": "object"}, "x-vendor": 1}]
                    }}),
                    Some("server/discover") if any_result => {
                        json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                    }
                    Some("server/discover") => json!({"jsonrpc": "2.0", "id": msg["id"], "error": {
                        "code": -32601, "message": "Method not found"
                    }}),
                    _ => continue,
                };
                let mut out = serde_json::to_vec(&answer).unwrap();
                out.push(b'\n');
                if writer.write_all(&out).await.is_err() {
                    break;
                }
            }
        }
    })
}

/// The scripted peer, spoken to as legacy (no era probe).
async fn scripted_runtime(seen: mpsc::UnboundedSender<Value>) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .server("s", scripted(seen).protocol(switchboard::Protocol::Legacy))
        .build()
        .await
        .unwrap();
    let server = rt.server("s").unwrap();
    (rt, server)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a line within 5 s")
        .expect("peer alive")
}

#[tokio::test]
async fn handshake_then_tools_list_then_call_then_cancel_on_the_wire() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (rt, server) = scripted_runtime(tx).await;
    assert!(server.status().is_ready());

    let init = next(&mut rx).await;
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["jsonrpc"], "2.0");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["capabilities"], json!({}));
    assert_eq!(init["params"]["clientInfo"]["name"], "switchboard");
    assert!(init["id"].is_i64());
    let initialized = next(&mut rx).await;
    assert_eq!(initialized["method"], "notifications/initialized");
    assert!(initialized.get("id").is_none());
    let list = next(&mut rx).await;
    assert_eq!(list["method"], "tools/list");
    assert_ne!(list["id"], init["id"]);

    // Unknown fields survive parsing.
    let tools = server.tools();
    assert_eq!(tools[0].name, "hang");
    assert_eq!(tools[0].extra["x-vendor"], 1);

    let err = server
        .call_tool("hang", json!({"k": "v"}))
        .timeout(Duration::from_millis(150))
        .await
        .unwrap_err();
    let call = next(&mut rx).await;
    assert_eq!(call["method"], "tools/call");
    assert_eq!(call["params"]["name"], "hang");
    assert_eq!(call["params"]["arguments"], json!({"k": "v"}));
    assert_eq!(call["params"]["_meta"]["progressToken"], call["id"]);
    let cancel = next(&mut rx).await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    assert!(cancel["params"]["reason"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    let (true, Some(request_id)) = (err.is_timeout(), err.request_id()) else {
        panic!("{err:?}")
    };
    assert_eq!(json!(request_id), call["id"]);

    // Never anything from the stateless era: not in what was read above, nor after.
    rt.shutdown().await;
    let mut wire = vec![init, initialized, list, call, cancel];
    while let Ok(msg) = rx.try_recv() {
        wire.push(msg);
    }
    assert!(
        wire.iter().all(|msg| msg["method"] != "server/discover"),
        "{wire:#?}"
    );
}

#[tokio::test]
async fn shutdown_fails_a_pending_call_and_cancels_it_on_the_wire_first() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (rt, server) = scripted_runtime(tx).await;
    for _ in 0..3 {
        next(&mut rx).await; // initialize, initialized, tools/list
    }
    let pending = tokio::spawn(server.call_tool("hang", json!({})));
    let call = next(&mut rx).await;
    assert_eq!(call["method"], "tools/call");

    rt.shutdown().await;
    let err = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the pending call ends with the runtime")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable { .. })
            && err.to_string().contains("shutting down"),
        "{err}"
    );
    let cancel = next(&mut rx).await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    assert!(cancel["params"]["reason"]
        .as_str()
        .unwrap()
        .contains("shutting down"));
    assert_eq!(server.in_flight(), 0);
}

#[tokio::test]
async fn auto_probes_with_discover_then_falls_back_to_initialize_on_the_same_connection() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = Runtime::builder()
        .server("s", scripted(tx)) // `auto` is the default
        .build()
        .await
        .unwrap();
    let server = rt.server("s").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.era, Some(switchboard::Era::Legacy));
    assert_eq!(status.protocol_version.as_deref(), Some("2025-06-18"));

    let discover = next(&mut rx).await;
    assert_eq!(discover["method"], "server/discover");
    let meta = &discover["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "switchboard"
    );
    let init = next(&mut rx).await;
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(next(&mut rx).await["method"], "notifications/initialized");
    let list = next(&mut rx).await;
    assert_eq!(list["method"], "tools/list");
    // A legacy server's requests carry no stateless `_meta`.
    assert!(list["params"].get("_meta").is_none(), "{list}");
    rt.shutdown().await;
}

#[tokio::test]
async fn auto_takes_a_result_that_is_no_discover_result_for_a_legacy_server() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rt = Runtime::builder()
        .server("s", scripted_answering(tx, true))
        .build()
        .await
        .unwrap();
    let status = rt.server("s").unwrap().status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.era, Some(switchboard::Era::Legacy));
    assert_eq!(next(&mut rx).await["method"], "server/discover");
    assert_eq!(next(&mut rx).await["method"], "initialize");
    rt.shutdown().await;
}
