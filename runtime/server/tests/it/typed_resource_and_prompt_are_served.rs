//! A typed resource and a typed prompt: listed (the prompt's arguments from its argument
//! type's fields), read and got; a prompt's bad arguments are -32602 naming the field.

use serde_json::json;

use crate::typed_support::handshake;

#[tokio::test]
async fn a_typed_resource_is_listed_and_read() {
    let mut client = handshake("2025-11-25").await;
    let list = client.request(1, "resources/list", json!({})).await;
    assert_eq!(
        list["result"]["resources"],
        json!([{"uri": "shop://catalogue", "name": "catalogue"}])
    );
    let read = client
        .request(2, "resources/read", json!({"uri": "shop://catalogue"}))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "shop://catalogue", "text": "apples, pears"}])
    );
    let missing = client
        .request(3, "resources/read", json!({"uri": "shop://none"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    client.close().await;
}

#[tokio::test]
async fn a_typed_prompt_is_listed_with_its_fields_and_got() {
    let mut client = handshake("2025-11-25").await;
    let list = client.request(1, "prompts/list", json!({})).await;
    let prompt = &list["result"]["prompts"][0];
    assert_eq!(prompt["name"], "complain");
    assert_eq!(prompt["description"], "A customer's complaint");
    let mut arguments = prompt["arguments"].as_array().unwrap().clone();
    arguments.sort_by_key(|a| a["name"].as_str().unwrap().to_owned());
    assert_eq!(
        arguments,
        [
            json!({"name": "customer", "description": "Who complains, if they say.", "required": false}),
            json!({"name": "problem", "description": "What went wrong.", "required": true}),
        ]
    );
    let got = client
        .request(
            2,
            "prompts/get",
            json!({"name": "complain", "arguments": {"problem": "late", "customer": "Ada"}}),
        )
        .await;
    assert_eq!(
        got["result"],
        json!({
            "description": "a complaint",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Ada says: late"}},
                {"role": "assistant", "content": {"type": "text", "text": "I am sorry to hear it."}},
            ],
        })
    );
    let bad = client
        .request(
            3,
            "prompts/get",
            json!({"name": "complain", "arguments": {"customer": "Ada"}}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["message"],
        "invalid arguments for prompt complain: missing field `problem`"
    );
    client.close().await;
}

#[tokio::test]
async fn the_server_declares_what_it_serves() {
    let mut client = crate::support::LineClient::start(crate::typed_support::typed_server());
    let init = client
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        )
        .await;
    let result = &init["result"];
    assert_eq!(
        result["serverInfo"],
        json!({"name": "shop", "version": "2.0.0", "title": "The shop"})
    );
    let capabilities = &result["capabilities"];
    assert!(capabilities["tools"].is_object(), "{capabilities}");
    assert!(capabilities["resources"].is_object(), "{capabilities}");
    assert!(capabilities["prompts"].is_object(), "{capabilities}");
    client.close().await;
}
