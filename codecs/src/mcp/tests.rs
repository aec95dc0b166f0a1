//! Unit tests of `mcp`.

use super::*;
use serde::de::DeserializeOwned;
use serde_json::json;

fn round_trip<T: Serialize + DeserializeOwned>(value: &Value) -> T {
    let parsed: T = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(&serde_json::to_value(&parsed).unwrap(), value);
    parsed
}

#[test]
fn initialize_result_keeps_unknown_fields() {
    let wire = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {
            "tools": {"listChanged": true, "futureFlag": 1},
            "logging": {},
            "somethingNew": {"x": true}
        },
        "serverInfo": {"name": "fs", "version": "1.2.0", "title": "Files", "vendor": "acme"},
        "instructions": "be nice",
        "extraTopLevel": [1, 2]
    });
    let r: InitializeResult = round_trip(&wire);
    assert_eq!(r.protocol_version, "2025-06-18");
    let tools = r.capabilities.tools.as_ref().unwrap();
    assert_eq!(tools.list_changed, Some(true));
    assert_eq!(tools.extra["futureFlag"], json!(1));
    assert_eq!(r.capabilities.extra["somethingNew"], json!({"x": true}));
    assert_eq!(r.server_info.title.as_deref(), Some("Files"));
    assert_eq!(r.server_info.extra["vendor"], json!("acme"));
    assert_eq!(r.extra["extraTopLevel"], json!([1, 2]));
    assert!(SUPPORTED_PROTOCOL_VERSIONS.contains(&r.protocol_version.as_str()));
}

#[test]
fn initialize_params_serialize() {
    let params = InitializeParams {
        protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
        capabilities: ClientCapabilities::default(),
        client_info: Implementation::new("switchboard", "0.1.0"),
        extra: Map::new(),
    };
    assert_eq!(
        serde_json::to_value(&params).unwrap(),
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "switchboard", "version": "0.1.0"}
        })
    );
}

#[test]
fn empty_client_capabilities_is_an_empty_object() {
    assert_eq!(
        serde_json::to_string(&ClientCapabilities::default()).unwrap(),
        "{}"
    );
    assert_eq!(
        serde_json::to_string(&EmptyResult::default()).unwrap(),
        "{}"
    );
    let _: EmptyResult = round_trip(&json!({}));
}

#[test]
fn tool_with_all_fields() {
    let wire = json!({
        "name": "read_file",
        "title": "Read file",
        "description": "Reads a file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "outputSchema": {"type": "object"},
        "annotations": {
            "title": "Read",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        },
        "icons": [{"src": "https://example.com/i.png"}],
        "_meta": {"k": "v"},
        "execution": {"taskSupport": "optional"}
    });
    let tool: Tool = round_trip(&wire);
    let a = tool.annotations.as_ref().unwrap();
    assert_eq!(a.read_only_hint, Some(true));
    assert_eq!(a.destructive_hint, Some(false));
    assert_eq!(tool.meta.as_ref().unwrap()["k"], json!("v"));
    let execution = tool.execution.as_ref().and_then(|e| e.task_support);
    assert_eq!(execution, Some(TaskSupport::Optional));
    assert!(!tool.requires_task());
    assert!(!tool.extra.contains_key("_meta"));
}

#[test]
fn tool_without_input_schema_defaults_to_object() {
    let list: ListToolsResult =
        serde_json::from_value(json!({"tools": [{"name": "t"}], "nextCursor": "2"})).unwrap();
    assert_eq!(list.tools[0].input_schema, json!({"type": "object"}));
    assert_eq!(
        list.tools[0],
        Tool {
            name: "t".into(),
            ..Default::default()
        }
    );
    assert_eq!(list.next_cursor.as_deref(), Some("2"));
}

#[test]
fn call_params_serialize() {
    let params = CallToolParams {
        name: "echo".into(),
        arguments: Some(Map::from_iter([("x".to_owned(), json!(1))])),
        meta: Some(Map::from_iter([("progressToken".to_owned(), json!(7))])),
        extra: Map::new(),
    };
    let _: CallToolParams = round_trip(&json!({
        "name": "echo", "arguments": {"x": 1}, "_meta": {"progressToken": 7}
    }));
    assert_eq!(
        serde_json::to_value(&params).unwrap(),
        json!({"name": "echo", "arguments": {"x": 1}, "_meta": {"progressToken": 7}})
    );
    assert_eq!(
        serde_json::to_value(ListToolsParams::default()).unwrap(),
        json!({})
    );
}

#[test]
fn call_result_with_every_block_kind() {
    let wire = json!({
        "content": [
            {"type": "text", "text": "hello", "annotations": {"audience": ["user"], "priority": 0.5}},
            {"type": "image", "data": "aW1n", "mimeType": "image/png", "_meta": {"m": 1}},
            {"type": "audio", "data": "YXU=", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain", "size": 12},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "text": "bee"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "Yw=="}},
            {"type": "text", "text": "world"}
        ],
        "structuredContent": {"answer": 42},
        "isError": true,
        "_meta": {"trace": "x"}
    });
    let r: CallToolResult = round_trip(&wire);
    assert!(r.is_error());
    assert_eq!(r.text(), "hello\nworld");
    assert_eq!(r.structured_content, Some(json!({"answer": 42})));
    let [Content::Text(t), Content::Image(i), Content::Audio(a), Content::ResourceLink(l), Content::Resource(e1), Content::Resource(e2), Content::Text(_)] =
        &r.content[..]
    else {
        panic!("block kinds: {:?}", r.content)
    };
    assert_eq!(t.annotations.as_ref().unwrap().priority, Some(0.5));
    assert_eq!(i.mime_type, "image/png");
    assert_eq!(a.data, "YXU=");
    assert_eq!(l.size, Some(12));
    assert!(matches!(&e1.resource, ResourceContents::Text(c) if c.text == "bee"));
    assert!(matches!(&e2.resource, ResourceContents::Blob(c) if c.blob == "Yw=="));
}

#[test]
fn call_result_keeps_unknown_fields_and_refuses_what_the_derived_reader_refused() {
    let r: CallToolResult = serde_json::from_str(
        r#"{"future":{"x":[1]},"content":[{"type":"text","text":"a"}],"isError":null,"z":1}"#,
    )
    .unwrap();
    assert_eq!(r.text(), "a");
    assert_eq!(r.is_error, None);
    assert_eq!(r.extra.get("future"), Some(&json!({"x": [1]})));
    assert_eq!(r.extra.get("z"), Some(&json!(1)));
    for bad in [
        r#"{"content":[],"content":[]}"#,
        r#"{"isError":true,"isError":false}"#,
        r#"{"content":null}"#,
        r#"{"content":{"type":"text"}}"#,
        r#"{"isError":"yes"}"#,
        r#"{"_meta":[]}"#,
        r#"[[]]"#,
        r#""text""#,
    ] {
        assert!(
            serde_json::from_str::<CallToolResult>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn call_result_defaults() {
    let r: CallToolResult = serde_json::from_value(json!({})).unwrap();
    assert!(!r.is_error());
    assert_eq!(r.text(), "");
    assert_eq!(serde_json::to_value(&r).unwrap(), json!({"content": []}));
    let r = CallToolResult {
        content: vec![Content::text("a")],
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"content": [{"type": "text", "text": "a"}]})
    );
}

#[test]
fn progress_tokens() {
    let p: ProgressNotificationParams = round_trip(&json!({
        "progressToken": "abc", "progress": 0.5, "total": 1.0, "message": "half"
    }));
    assert_eq!(p.progress_token, ProgressToken::String("abc".into()));
    assert_eq!(p.total, Some(1.0));
    let p: ProgressNotificationParams =
        serde_json::from_value(json!({"progressToken": 7, "progress": 3})).unwrap();
    assert_eq!(p.progress_token, ProgressToken::Number(7));
    assert_eq!(p.progress, 3.0);
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"progressToken": 7, "progress": 3.0})
    );
}

#[test]
fn cancelled_params() {
    let c: CancelledNotificationParams =
        round_trip(&json!({"requestId": 12, "reason": "timeout", "x": true}));
    assert_eq!(c.request_id, Id::Number(12));
    let c: CancelledNotificationParams = round_trip(&json!({"requestId": "r-1"}));
    assert_eq!(c.request_id, Id::from("r-1"));
    assert!(
        serde_json::from_value::<CancelledNotificationParams>(json!({"requestId": null})).is_err()
    );
    assert!(
        serde_json::from_value::<CancelledNotificationParams>(json!({"requestId": 1.5})).is_err()
    );
}

#[test]
fn logging_message() {
    let m: LoggingMessageParams =
        round_trip(&json!({"level": "warning", "logger": "db", "data": {"msg": "slow"}}));
    assert_eq!(m.level, LoggingLevel::Warning);
    assert!(
        LoggingLevel::Emergency > LoggingLevel::Error && LoggingLevel::Debug < LoggingLevel::Info
    );
    assert!(
        serde_json::from_value::<LoggingMessageParams>(json!({"level": "loud", "data": 1}))
            .is_err()
    );
}
