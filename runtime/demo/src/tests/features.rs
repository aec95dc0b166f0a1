//! The server features over a duplex stream: resources, prompts, completion and logging, and
//! their absence with `--no-server-features`.

use serde_json::{json, Value};

use super::super::{resources, Options};
use super::{text, Client};

/// Every request here in one place, so that the gating test covers them all.
const FEATURE_METHODS: [&str; 11] = [
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

const BYTES_BASE64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==";

fn with(args: &str) -> Client {
    let options = Options::from_args(args.split_whitespace().map(str::to_owned)).unwrap();
    Client::start(options)
}

impl Client {
    /// The result of a request that must succeed.
    async fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(json!(method), method, params).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// The error of a request that must fail.
    async fn err(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(json!(method), method, params).await;
        assert!(response.get("result").is_none(), "{method}: {response}");
        response["error"].clone()
    }

    /// The `completion` of a `completion/complete` that must succeed.
    async fn complete(
        &mut self,
        reference: &Value,
        name: &str,
        value: &str,
        context: Value,
    ) -> Value {
        let mut params = json!({"ref": reference, "argument": {"name": name, "value": value}});
        if !context.is_null() {
            params["context"] = json!({ "arguments": context });
        }
        self.ok("completion/complete", params).await["completion"].clone()
    }

    /// Calls a tool and returns every message up to and including its answer.
    async fn call_seeing_all(&mut self, tool: &str, arguments: Value) -> Vec<Value> {
        let id = json!(format!("call-{tool}"));
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}))
            .await;
        let mut seen = Vec::new();
        loop {
            let message = self.recv().await;
            let done = message["id"] == id;
            seen.push(message);
            if done {
                return seen;
            }
        }
    }
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[key_field(key)].as_str().unwrap().to_owned())
        .collect()
}

fn key_field(key: &str) -> &'static str {
    match key {
        "resources" => "uri",
        "resourceTemplates" => "uriTemplate",
        _ => "name",
    }
}

#[tokio::test]
async fn capabilities_declare_the_server_features() {
    let mut client = with("");
    let result = client
        .ok("initialize", json!({"protocolVersion": "2025-11-25"}))
        .await;
    assert_eq!(
        result["capabilities"],
        json!({
            "tools": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {},
            "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}},
        })
    );
}

#[tokio::test]
async fn without_server_features_only_tools_and_logging_are_served() {
    let mut client = with("--no-server-features");
    let result = client
        .ok("initialize", json!({"protocolVersion": "2025-11-25"}))
        .await;
    assert_eq!(
        result["capabilities"],
        json!({"tools": {"listChanged": false}, "logging": {}})
    );
    for method in FEATURE_METHODS {
        let params = json!({"uri": "demo://text/hello", "name": "simple"});
        assert_eq!(client.err(method, params).await["code"], -32601, "{method}");
    }
    client
        .ok("logging/setLevel", json!({"level": "debug"}))
        .await;
    assert_eq!(text(&client.call(1, "log_level", json!({})).await), "debug");
}

#[tokio::test]
async fn resources_are_listed_and_paged() {
    let mut client = with("");
    let all = client.ok("resources/list", json!({})).await;
    let uris = [
        "demo://text/hello",
        "demo://blob/bytes",
        "demo://text/readme",
    ];
    assert_eq!(names(&all, "resources"), uris);
    assert!(all.get("nextCursor").is_none());
    assert_eq!(all["resources"][0]["mimeType"], "text/plain");
    assert_eq!(all["resources"][1]["mimeType"], "application/octet-stream");
    assert_eq!(all["resources"][2]["mimeType"], "text/markdown");

    let mut paged = with("--page-size 2");
    let first = paged.ok("resources/list", json!({})).await;
    assert_eq!(names(&first, "resources"), uris[..2]);
    let cursor = first["nextCursor"].clone();
    assert!(cursor.is_string());
    let second = paged
        .ok("resources/list", json!({ "cursor": cursor }))
        .await;
    assert_eq!(names(&second, "resources"), uris[2..]);
    assert!(second.get("nextCursor").is_none());
    let bad = paged
        .err("resources/list", json!({"cursor": "nonsense"}))
        .await;
    assert_eq!(bad["code"], -32602);

    let templates = client.ok("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["resourceTemplates"],
        json!([resources::templates(false)[0]])
    );
    assert_eq!(templates["resourceTemplates"][0]["name"], "note");
    assert_eq!(names(&templates, "resourceTemplates"), ["demo://note/{id}"]);
}

#[tokio::test]
async fn resources_are_read_by_uri_or_template() {
    let mut client = with("");
    let read = |uri: &str| json!({ "uri": uri });
    assert_eq!(
        client.ok("resources/read", read("demo://text/hello")).await,
        json!({"contents": [{"uri": "demo://text/hello", "mimeType": "text/plain", "text": "Hello, world!"}]})
    );
    assert_eq!(
        client.ok("resources/read", read("demo://blob/bytes")).await,
        json!({"contents": [{"uri": "demo://blob/bytes", "mimeType": "application/octet-stream", "blob": BYTES_BASE64}]})
    );
    let readme = client
        .ok("resources/read", read("demo://text/readme"))
        .await;
    assert_eq!(readme["contents"][0]["mimeType"], "text/markdown");
    assert!(readme["contents"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("# "));
    assert_eq!(
        client.ok("resources/read", read("demo://note/42")).await,
        json!({"contents": [{"uri": "demo://note/42", "mimeType": "text/plain", "text": "note 42"}]})
    );
}

#[tokio::test]
async fn an_unknown_resource_is_not_found() {
    let mut client = with("");
    for uri in ["demo://nope", "demo://note/", "demo://note/1/2"] {
        assert_eq!(
            client.err("resources/read", json!({ "uri": uri })).await,
            json!({"code": -32002, "message": "Resource not found", "data": {"uri": uri}})
        );
    }
    assert_eq!(
        client.err("resources/read", json!({})).await["code"],
        -32602
    );

    let mut client = with("--not-found-code -32602");
    assert_eq!(
        client
            .err("resources/read", json!({"uri": "demo://nope"}))
            .await,
        json!({"code": -32602, "message": "Resource not found", "data": {"uri": "demo://nope"}})
    );
}

#[tokio::test]
async fn touch_sends_updated_only_while_subscribed() {
    let mut client = with("");
    let uri = "demo://note/7";
    let unsubscribed = client.call_seeing_all("touch", json!({ "uri": uri })).await;
    assert_eq!(unsubscribed.len(), 1, "{unsubscribed:?}");
    assert_eq!(text(&unsubscribed[0]["result"]), "touched");

    assert_eq!(
        client
            .ok("resources/subscribe", json!({ "uri": uri }))
            .await,
        json!({})
    );
    let subscribed = client.call_seeing_all("touch", json!({ "uri": uri })).await;
    assert_eq!(
        subscribed[0],
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
    );
    assert_eq!(text(&subscribed[1]["result"]), "touched");
    // Another URI is not subscribed to.
    let other = client
        .call_seeing_all("touch", json!({"uri": "demo://text/hello"}))
        .await;
    assert_eq!(other.len(), 1);

    assert_eq!(
        client
            .ok("resources/unsubscribe", json!({ "uri": uri }))
            .await,
        json!({})
    );
    let after = client.call_seeing_all("touch", json!({ "uri": uri })).await;
    assert_eq!(after.len(), 1, "{after:?}");

    let unknown = client
        .err("resources/subscribe", json!({"uri": "demo://nope"}))
        .await;
    assert_eq!(unknown["code"], -32002);
}

#[tokio::test]
async fn list_changed_tools_send_their_notifications() {
    let mut client = with("");
    for (tool, method) in [
        ("resources_changed", "notifications/resources/list_changed"),
        ("prompts_changed", "notifications/prompts/list_changed"),
    ] {
        let seen = client.call_seeing_all(tool, json!({})).await;
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0], json!({"jsonrpc": "2.0", "method": method}));
    }
}

#[tokio::test]
async fn prompts_are_listed_and_paged() {
    let mut client = with("");
    let all = client.ok("prompts/list", json!({})).await;
    assert_eq!(
        names(&all, "prompts"),
        ["simple", "greeting", "with_resource"]
    );
    assert!(all["prompts"][0].get("arguments").is_none());
    assert_eq!(
        all["prompts"][1]["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["name"].clone(), a["required"].clone()))
            .collect::<Vec<_>>(),
        [(json!("name"), json!(true)), (json!("style"), json!(false))]
    );

    let mut paged = with("--page-size 2");
    let first = paged.ok("prompts/list", json!({})).await;
    assert_eq!(names(&first, "prompts"), ["simple", "greeting"]);
    let second = paged
        .ok("prompts/list", json!({"cursor": first["nextCursor"]}))
        .await;
    assert_eq!(names(&second, "prompts"), ["with_resource"]);
}

#[tokio::test]
async fn prompts_get_fills_in_arguments() {
    let mut client = with("");
    let user_text = |result: &Value| {
        assert_eq!(result["messages"].as_array().unwrap().len(), 1);
        assert_eq!(result["messages"][0]["role"], "user");
        assert_eq!(result["messages"][0]["content"]["type"], "text");
        result["messages"][0]["content"]["text"].clone()
    };
    let simple = client.ok("prompts/get", json!({"name": "simple"})).await;
    assert_eq!(user_text(&simple), "A simple prompt.");
    let greeting = client
        .ok(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(user_text(&greeting), "Say hello to Ada.");
    let styled = client
        .ok(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "Ada", "style": "pirate"}}),
        )
        .await;
    assert_eq!(user_text(&styled), "Say hello to Ada in a pirate style.");
    let embedded = client
        .ok("prompts/get", json!({"name": "with_resource"}))
        .await;
    assert_eq!(
        embedded["messages"],
        json!([{"role": "user", "content": {"type": "resource", "resource": {"uri": "demo://text/hello", "mimeType": "text/plain", "text": "Hello, world!"}}}])
    );
}

#[tokio::test]
async fn prompts_get_refuses_missing_arguments_and_unknown_prompts() {
    let mut client = with("");
    let missing = client
        .err(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"style": "formal"}}),
        )
        .await;
    assert_eq!(missing["code"], -32602);
    assert!(missing["message"].as_str().unwrap().contains("\"name\""));
    let unknown = client.err("prompts/get", json!({"name": "nope"})).await;
    assert_eq!(unknown["code"], -32602);
    assert!(unknown["message"].as_str().unwrap().contains("nope"));
    let not_a_string = client
        .err(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": 7}}),
        )
        .await;
    assert_eq!(not_a_string["code"], -32602);
}

#[tokio::test]
async fn completion_filters_by_prefix_and_context() {
    let mut client = with("");
    let greeting = json!({"type": "ref/prompt", "name": "greeting"});
    let note = json!({"type": "ref/resource", "uri": "demo://note/{id}"});
    assert_eq!(
        client.complete(&greeting, "name", "a", Value::Null).await,
        json!({"values": ["Ada", "Alan", "Alice"], "total": 3, "hasMore": false})
    );
    assert_eq!(
        client.complete(&greeting, "name", "AL", Value::Null).await["values"],
        json!(["Alan", "Alice"])
    );
    assert_eq!(
        client.complete(&greeting, "name", "", Value::Null).await["total"],
        4
    );
    assert_eq!(
        client.complete(&greeting, "name", "z", Value::Null).await,
        json!({"values": [], "total": 0, "hasMore": false})
    );
    assert_eq!(
        client
            .complete(&greeting, "style", "", json!({"name": "Ada"}))
            .await["values"],
        json!(["formal", "pirate"])
    );
    assert_eq!(
        client
            .complete(&greeting, "style", "", json!({"name": "Grace"}))
            .await["values"],
        json!(["casual"])
    );
    assert_eq!(
        client.complete(&greeting, "style", "", Value::Null).await["values"],
        json!(["casual"])
    );
    assert_eq!(
        client.complete(&note, "id", "", Value::Null).await["values"],
        json!(["1", "2", "42"])
    );
    assert_eq!(
        client.complete(&note, "id", "4", Value::Null).await,
        json!({"values": ["42"], "total": 1, "hasMore": false})
    );
}

#[tokio::test]
async fn completion_of_an_unknown_ref_is_invalid_params() {
    let mut client = with("");
    for (reference, argument) in [
        (json!({"type": "ref/prompt", "name": "nope"}), "name"),
        (json!({"type": "ref/prompt", "name": "simple"}), "name"),
        (json!({"type": "ref/prompt", "name": "greeting"}), "mood"),
        (
            json!({"type": "ref/resource", "uri": "demo://text/hello"}),
            "id",
        ),
        (
            json!({"type": "ref/resource", "uri": "demo://note/{id}"}),
            "x",
        ),
        (json!({"type": "ref/tool", "name": "greet"}), "name"),
    ] {
        let params = json!({"ref": reference, "argument": {"name": argument, "value": ""}});
        let error = client.err("completion/complete", params).await;
        assert_eq!(error["code"], -32602, "{reference} {argument}");
    }
    let error = client
        .err(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greeting"}}),
        )
        .await;
    assert_eq!(error["code"], -32602);
}

#[tokio::test]
async fn log_sends_only_at_or_above_the_level_set() {
    let mut client = with("");
    assert_eq!(text(&client.call(1, "log_level", json!({})).await), "info");
    let debug = client
        .call_seeing_all("log", json!({"level": "debug", "message": "quiet"}))
        .await;
    assert_eq!(debug.len(), 1, "{debug:?}");
    assert_eq!(text(&debug[0]["result"]), "filtered");
    let info = client
        .call_seeing_all("log", json!({"level": "info", "message": "hi"}))
        .await;
    assert_eq!(
        info[0]["params"],
        json!({"level": "info", "data": "hi"}),
        "no logger unless given"
    );
    assert_eq!(text(&info[1]["result"]), "logged");

    assert_eq!(
        client
            .ok("logging/setLevel", json!({"level": "error"}))
            .await,
        json!({})
    );
    assert_eq!(text(&client.call(2, "log_level", json!({})).await), "error");
    let warning = client
        .call_seeing_all("log", json!({"level": "warning", "message": "w"}))
        .await;
    assert_eq!(warning.len(), 1);
    assert_eq!(text(&warning[0]["result"]), "filtered");
    let critical = client
        .call_seeing_all(
            "log",
            json!({"level": "critical", "message": "c", "logger": "db"}),
        )
        .await;
    assert_eq!(
        critical[0],
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "critical", "logger": "db", "data": "c"}})
    );
    assert_eq!(text(&critical[1]["result"]), "logged");
}

#[tokio::test]
async fn an_unknown_log_level_is_refused() {
    let mut client = with("");
    let error = client
        .err("logging/setLevel", json!({"level": "verbose"}))
        .await;
    assert_eq!(error["code"], -32602);
    assert_eq!(
        client.err("logging/setLevel", json!({})).await["code"],
        -32602
    );
    assert_eq!(text(&client.call(1, "log_level", json!({})).await), "info");
    let bad = client
        .call(2, "log", json!({"level": "loud", "message": "x"}))
        .await;
    assert_eq!(bad["isError"], true);
}

#[tokio::test]
async fn stats_count_the_feature_methods() {
    let mut client = with("--faults");
    client.ok("resources/list", json!({})).await;
    client
        .ok("resources/read", json!({"uri": "demo://text/hello"}))
        .await;
    client.ok("prompts/get", json!({"name": "simple"})).await;
    client.ok("prompts/get", json!({"name": "simple"})).await;
    client
        .ok(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "name", "value": ""}}),
        )
        .await;
    client
        .ok("logging/setLevel", json!({"level": "debug"}))
        .await;
    let stats = client.call(1, "stats", json!({})).await;
    let methods = &stats["structuredContent"]["methods"];
    for (method, count) in [
        ("resources/list", 1),
        ("resources/read", 1),
        ("prompts/get", 2),
        ("completion/complete", 1),
        ("logging/setLevel", 1),
        ("tools/call", 1),
    ] {
        assert_eq!(methods[method], count, "{method}: {methods}");
    }
}

#[tokio::test]
async fn made_up_methods_do_not_grow_the_counts_without_end() {
    let mut client = with("--faults");
    client.ok("tools/list", json!({})).await;
    for n in 0..300 {
        let error = client.err(&format!("made/up/{n}"), json!({})).await;
        assert_eq!(error["code"], -32601, "{error}");
    }
    client.ok("tools/list", json!({})).await;
    let stats = client.call(1, "stats", json!({})).await;
    let methods = stats["structuredContent"]["methods"]
        .as_object()
        .expect("the counts");
    assert_eq!(methods.len(), 256, "{methods:?}");
    // A method counted before the bound was reached is still counted.
    assert_eq!(methods["tools/list"], 2);
    assert_eq!(methods["made/up/0"], 1);
    assert!(!methods.contains_key("made/up/299"));
}

#[test]
fn base64_matches_rfc_4648() {
    for (input, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(resources::base64(input.as_bytes()), encoded);
    }
}

#[tokio::test]
async fn skills_are_listed_got_and_read_in_both_eras() {
    let mut client = with("");
    client
        .ok("initialize", json!({"protocolVersion": "2025-11-25"}))
        .await;
    let stateless = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    for base in [json!({}), stateless] {
        let param = |key: &str, value: &str| {
            let mut params = base.clone();
            params[key] = json!(value);
            params
        };
        let listed = client.ok("skills/list", base.clone()).await;
        let uris: Vec<&str> = listed["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["uri"].as_str())
            .collect();
        assert_eq!(
            uris,
            [
                "skill://demo/arithmetic/SKILL.md",
                "skill://greet-people/SKILL.md"
            ]
        );
        let got = client
            .ok("skills/get", param("uri", "skill://greet-people/SKILL.md"))
            .await;
        assert_eq!(got["skill"], listed["skills"][1]);
        let files = got["skill"]["resources"].as_array().unwrap();
        assert_eq!(files.len(), 2);
        for file in files {
            let read = client
                .ok(
                    "resources/read",
                    param("uri", file["uri"].as_str().unwrap()),
                )
                .await;
            let text = read["contents"][0]["text"].as_str().unwrap();
            assert_eq!(file["size"], text.len(), "{file}");
        }
        let dir = client
            .ok("resources/directory/read", param("uri", "skill://demo"))
            .await;
        assert_eq!(dir["resources"][0]["uri"], "skill://demo/arithmetic");
        assert_eq!(dir["resources"][0]["mimeType"], "inode/directory");
        let unknown = client
            .err("skills/get", param("uri", "skill://nosuch/SKILL.md"))
            .await;
        assert_eq!(unknown["code"], -32602);
    }
    // Skill files are read by URI, not listed: the resource list stays the three documents.
    let listed = client.ok("resources/list", json!({})).await;
    assert_eq!(listed["resources"].as_array().map(Vec::len), Some(3));
}
