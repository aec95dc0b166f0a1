//! `--model DIR`: `tools --search` ranks semantically too with the feature `semantic` and
//! the model (in `.ci/models/all-minilm-l6-v2` or `$SWITCHBOARD_TEST_MODEL`); a build
//! without the feature refuses the flag.

use crate::cli::{against_demo, stderr};

#[cfg(feature = "semantic")]
fn model_folder() -> String {
    let folder = switchboard::search::semantic::test_model_folder();
    folder.to_str().expect("a UTF-8 path").to_owned()
}

#[cfg(feature = "semantic")]
#[test]
#[ignore = "needs the model: all-MiniLM-L6-v2 in .ci/models or $SWITCHBOARD_TEST_MODEL"]
fn semantic_search_finds_a_tool_in_other_words() {
    let model = model_folder();
    // No word of either request is in its tool's name, description or schema.
    for (request, tool) in [("hello to Bob", "greet"), ("what is 2 plus 3", "add")] {
        let lexical = against_demo(&["tools", "--search", request, "--json"]);
        assert_eq!(
            lexical.status.code(),
            Some(0),
            "stderr: {}",
            stderr(&lexical)
        );
        let found: serde_json::Value = serde_json::from_str(&crate::cli::stdout(&lexical)).unwrap();
        assert_eq!(
            found["matches"],
            serde_json::json!([]),
            "lexically: {found}"
        );
        let hybrid = against_demo(&["tools", "--search", request, "--model", &model, "--json"]);
        assert_eq!(hybrid.status.code(), Some(0), "stderr: {}", stderr(&hybrid));
        let found: serde_json::Value = serde_json::from_str(&crate::cli::stdout(&hybrid)).unwrap();
        assert_eq!(
            found["matches"][0]["catalogueName"], tool,
            "{request}: {found}"
        );
        assert!(
            found["matches"][0]["score"]
                .as_f64()
                .is_some_and(|s| s > 0.0),
            "{found}"
        );
    }
}

#[cfg(feature = "semantic")]
#[test]
fn a_folder_without_a_model_is_a_usage_error() {
    let output = against_demo(&["tools", "--search", "x", "--model", "/nonexistent/model"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        stderr(&output).contains("config.json"),
        "{}",
        stderr(&output)
    );
}

#[cfg(not(feature = "semantic"))]
#[test]
fn without_the_feature_the_model_flag_says_how_to_get_it() {
    let output = against_demo(&["tools", "--search", "x", "--model", "/some/model"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = stderr(&output);
    assert!(stderr.contains("--features semantic"), "{stderr}");
}

#[cfg(feature = "semantic")]
#[tokio::test]
#[ignore = "needs the model: all-MiniLM-L6-v2 in .ci/models or $SWITCHBOARD_TEST_MODEL"]
async fn serve_discovery_searches_semantically_with_a_model() {
    use serde_json::json;
    let config = crate::gateway::config_file_of(
        json!({"mcpServers": {"demo": {"command": crate::cli::BIN, "args": ["demo-server"]}}}),
    );
    let model = model_folder();
    let served = crate::gateway::Served::start_with(
        &config,
        &["--listen", "0", "--discovery", "search", "--model", &model],
    );
    let search = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "search_tools", "arguments": {"query": "hello to Bob", "limit": 3}}});
    // The tools are embedded in the background once the demo has listed them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let (status, _, _, answer) =
            crate::gateway_auth::post(&served.url, None, None, search.clone()).await;
        assert_eq!(status, 200, "{answer}");
        let first = &answer["result"]["structuredContent"]["tools"][0]["name"];
        if first == "greet" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never found greet: {answer}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    served.stop();
}
