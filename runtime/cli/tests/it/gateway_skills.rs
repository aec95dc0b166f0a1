//! `switchboard serve` as a real process over HTTP, in 2026-07-28 requests, aggregating the
//! skills of two demo servers that serve the same ones: both listed, each under its server's
//! prefix, its files read through the gateway byte for byte.

use std::time::Duration;

use serde_json::{json, Value};

use crate::gateway::{config_file_of, Served};
use crate::gateway_auth::post;

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn uris(answer: &Value) -> Vec<String> {
    answer["result"]["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|s| s["uri"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn serve_lists_and_reads_the_skills_of_every_upstream() {
    let demo = json!({"command": crate::cli::BIN, "args": ["demo-server"]});
    let config = config_file_of(json!({"mcpServers": {"docs": demo, "wiki": demo}}));
    let served = Served::start_with(&config, &["--listen", "0"]);
    let url = served.url.clone();
    // The skills are listed once both upstreams are ready.
    let mut listing = Value::Null;
    for _ in 0..200 {
        let (status, _, _, answer) =
            post(&url, None, None, request(1, "skills/list", json!({}))).await;
        assert_eq!(status, 200, "{answer}");
        listing = answer;
        if uris(&listing).len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        uris(&listing),
        [
            "skill://docs/demo/arithmetic/SKILL.md",
            "skill://docs/greet-people/SKILL.md",
            "skill://wiki/demo/arithmetic/SKILL.md",
            "skill://wiki/greet-people/SKILL.md",
        ],
        "{listing}"
    );
    let entry = &listing["result"]["skills"][3];
    assert_eq!(entry["frontmatter"]["name"], "greet-people");
    assert_eq!(
        entry["resources"][1]["uri"], "skill://wiki/greet-people/references/STYLES.md",
        "{entry}"
    );

    let (_, _, _, got) = post(
        &url,
        None,
        None,
        request(
            2,
            "skills/get",
            json!({"uri": "skill://wiki/greet-people/SKILL.md"}),
        ),
    )
    .await;
    assert_eq!(&got["result"]["skill"], entry, "{got}");

    let styles = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../demo/skills/greet-people/references/STYLES.md"),
    )
    .unwrap();
    let uri = "skill://docs/greet-people/references/STYLES.md";
    let (_, _, _, read) = post(
        &url,
        None,
        None,
        request(3, "resources/read", json!({"uri": uri})),
    )
    .await;
    assert_eq!(read["result"]["contents"][0]["uri"], uri, "{read}");
    assert_eq!(
        read["result"]["contents"][0]["text"],
        styles.as_str(),
        "{read}"
    );

    let (_, _, _, unknown) = post(
        &url,
        None,
        None,
        request(
            4,
            "skills/get",
            json!({"uri": "skill://docs/nosuch/SKILL.md"}),
        ),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    served.stop();
}
