//! A typed tool's call: good arguments run its function; arguments of the wrong shape are
//! refused naming the field (-32602 before 2025-11-25, an `isError` result from it on, as
//! each version's specification says); a tool that fails is an `isError` result.

use serde_json::{json, Value};

use crate::typed_support::{good_order, handshake};

fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {response}"))
}

#[tokio::test]
async fn good_arguments_run_the_function() {
    let mut client = handshake("2025-06-18").await;
    let call = client
        .request(
            1,
            "tools/call",
            json!({"name": "order", "arguments": good_order()}),
        )
        .await;
    assert_eq!(text(&call), "3 (apples, pears) for Ada to Paris -, express");
    assert!(call["result"].get("isError").is_none(), "{call}");
    let mut noted = good_order();
    noted["note"] = json!("fragile");
    noted["address"]["zip"] = json!("75001");
    noted.as_object_mut().unwrap().remove("speed");
    let call = client
        .request(
            2,
            "tools/call",
            json!({"name": "order", "arguments": noted}),
        )
        .await;
    assert_eq!(
        text(&call),
        "3 (apples, pears) for Ada to Paris 75001, standard, noted"
    );
    let now = client
        .request(3, "tools/call", json!({"name": "now"}))
        .await;
    assert_eq!(text(&now), "noon");
    client.close().await;
}

#[tokio::test]
async fn before_2025_11_25_a_wrong_type_is_invalid_params_naming_the_field() {
    let mut client = handshake("2025-06-18").await;
    let mut wrong = good_order();
    wrong["items"][1]["quantity"] = json!("one");
    let call = client
        .request(
            1,
            "tools/call",
            json!({"name": "order", "arguments": wrong}),
        )
        .await;
    assert_eq!(call["error"]["code"], -32602, "{call}");
    assert_eq!(
        call["error"]["message"],
        r#"invalid arguments for tool order: items[1].quantity: invalid type: string "one", expected u32"#
    );
    let mut missing = good_order();
    missing["address"].as_object_mut().unwrap().remove("city");
    let call = client
        .request(
            2,
            "tools/call",
            json!({"name": "order", "arguments": missing}),
        )
        .await;
    assert_eq!(
        call["error"]["message"],
        "invalid arguments for tool order: address: missing field `city`"
    );
    let call = client
        .request(
            3,
            "tools/call",
            json!({"name": "order", "arguments": ["Ada"]}),
        )
        .await;
    assert_eq!(
        call["error"]["message"],
        "invalid arguments for tool order: arguments must be an object"
    );
    let unknown = client
        .request(4, "tools/call", json!({"name": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    client.close().await;
}

#[tokio::test]
async fn from_2025_11_25_a_wrong_type_is_an_error_result_naming_the_field() {
    let mut client = handshake("2025-11-25").await;
    let mut wrong = good_order();
    wrong["speed"] = json!("teleport");
    let call = client
        .request(
            1,
            "tools/call",
            json!({"name": "order", "arguments": wrong}),
        )
        .await;
    assert_eq!(call["result"]["isError"], true, "{call}");
    let message = text(&call);
    assert!(
        message.starts_with("invalid arguments for tool order: speed: unknown variant `teleport`"),
        "{message}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_tool_that_fails_is_an_error_result() {
    let mut client = handshake("2025-06-18").await;
    let call = client
        .request(
            1,
            "tools/call",
            json!({"name": "sold_out", "arguments": {"path": "x"}}),
        )
        .await;
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert_eq!(text(&call), "sold out");
    // An error passed on with `?` says what it is.
    let call = client
        .request(
            2,
            "tools/call",
            json!({"name": "read", "arguments": {"path": "/nonexistent/switchboard"}}),
        )
        .await;
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert!(text(&call).contains("No such file"), "{call}");
    client.close().await;
}
