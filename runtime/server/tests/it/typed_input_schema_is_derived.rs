//! A typed tool's `inputSchema` is its argument type's JSON Schema, as `tools/list` shows
//! it: required and optional fields, a nested struct, an enum, a list, doc comments as
//! descriptions; a valid 2020-12 object schema that refers to nothing outside itself.

use serde_json::{json, Value};

use crate::typed_support::{good_order, handshake, tool};

/// Every `$ref` in `schema` points into `root`.
fn refs_resolve(schema: &Value, root: &Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(pointer)) = map.get("$ref") {
                let local = pointer.strip_prefix('#').expect("a local $ref");
                assert!(root.pointer(local).is_some(), "{pointer} resolves");
            }
            map.values().for_each(|v| refs_resolve(v, root));
        }
        Value::Array(items) => items.iter().for_each(|v| refs_resolve(v, root)),
        _ => {}
    }
}

#[tokio::test]
async fn the_listed_schema_is_the_argument_type_s() {
    let mut client = handshake("2025-11-25").await;
    let list = client.request(1, "tools/list", json!({})).await;
    let order = tool(&list, "order");
    assert_eq!(order["description"], "Places an order");
    let schema = &order["inputSchema"];

    assert_eq!(schema["type"], "object");
    assert!(schema.get("$schema").is_none(), "no dialect key: {schema}");
    assert!(schema.get("title").is_none(), "no Rust type name: {schema}");
    assert_eq!(schema["description"], "An order.");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    required.sort_unstable();
    // `speed` is an Option and `note` has a default: neither is required.
    assert_eq!(required, ["address", "customer", "items"]);

    let properties = &schema["properties"];
    assert_eq!(properties["customer"]["type"], "string");
    assert_eq!(properties["customer"]["description"], "Who orders.");
    // A list of a nested struct, inlined.
    let items = &properties["items"];
    assert_eq!(items["type"], "array");
    assert_eq!(items["items"]["type"], "object");
    assert_eq!(items["items"]["properties"]["quantity"]["type"], "integer");
    assert_eq!(
        items["items"]["properties"]["name"]["description"],
        "What it is."
    );
    // A nested struct, inlined, its own optional field not required.
    let address = &properties["address"];
    assert_eq!(address["type"], "object");
    assert_eq!(address["required"], json!(["city"]));
    assert_eq!(
        address["properties"]["zip"]["type"],
        json!(["string", "null"])
    );
    // An enum of its serialized names, or null.
    let speed = properties["speed"].to_string();
    for word in ["standard", "express", "null"] {
        assert!(speed.contains(word), "{speed}");
    }
    assert_eq!(properties["note"]["default"], "");
    assert!(
        schema.get("$defs").is_none(),
        "subschemas inlined: {schema}"
    );
    refs_resolve(schema, schema);

    // A valid 2020-12 schema, which admits a good order and refuses bad ones.
    jsonschema::draft202012::meta::validate(schema).expect("a valid 2020-12 schema");
    assert!(jsonschema::draft202012::is_valid(schema, &good_order()));
    let mut bad = good_order();
    bad["items"][0]["quantity"] = json!("two");
    assert!(!jsonschema::draft202012::is_valid(schema, &bad));
    let mut bad = good_order();
    bad["speed"] = json!("teleport");
    assert!(!jsonschema::draft202012::is_valid(schema, &bad));
    let mut bad = good_order();
    bad.as_object_mut().unwrap().remove("address");
    assert!(!jsonschema::draft202012::is_valid(schema, &bad));

    // A tool without arguments takes any object.
    assert_eq!(
        tool(&list, "now")["inputSchema"],
        json!({"type": "object", "properties": {}})
    );
    client.close().await;
}
