//! Semantic search in a running runtime (the feature `semantic`, with the model in
//! `.ci/models/all-minilm-l6-v2` or `$SWITCHBOARD_TEST_MODEL`): the tools are embedded on
//! the scorer's thread when servers list them, never by a query, and the runtime's search
//! finds a tool by a request that shares no word with it. The servers list what mcp-server-git
//! (PyPI) and server-memory (npm) list, as the evaluation set collected it.

use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use switchboard::search::semantic::{test_model_folder, Embedder, SemanticScorer};
use switchboard::{Runtime, ServerConfig};
use switchboard_server::{Handler, Info, Server};

/// A server that lists the tools of `corpus` (a file of the evaluation set) and serves none.
struct Listed(Vec<Value>);

impl Handler for Listed {
    fn info(&self) -> Info {
        Info::new("listed", "1.0.0")
    }

    fn tools(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.0)
    }
}

fn listing(corpus: &str) -> ServerConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../benches/search_eval/tools")
        .join(corpus);
    let tools: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let server = Server::new(Listed(tools));
    ServerConfig::memory(move |io| {
        let server = server.clone();
        async move {
            let (reader, writer) = tokio::io::split(io);
            let _ = server.serve(reader, writer).await;
        }
    })
    .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the model: all-MiniLM-L6-v2 in .ci/models or $SWITCHBOARD_TEST_MODEL"]
async fn tools_are_embedded_when_listed_and_a_paraphrase_finds_its_tool() {
    let scorer = SemanticScorer::new(Embedder::load(test_model_folder()).unwrap());
    let runtime = Runtime::builder()
        .semantic_search(scorer.clone())
        .server("git", listing("git.json"))
        .server("memory", listing("memory.json"))
        .build()
        .await
        .unwrap();
    let tools = runtime.catalogue().len();
    assert_eq!(tools, 12 + 9);
    // Embedded on the scorer's thread, once each.
    tokio::time::timeout(Duration::from_secs(300), async {
        while scorer.embedded() < tools {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the tools are embedded");
    let found = runtime.search_tools("who touched this file lately", 3);
    let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"git_log"), "{names:?}");
    // Lexically, the request finds nothing of git's: no word is shared.
    let lexical = runtime
        .catalogue()
        .search("who touched this file lately", 3);
    assert!(lexical.iter().all(|m| m.name != "git_log"), "{lexical:?}");
    for query in [
        "remember that Alice works at Acme",
        "undo my staged changes",
    ] {
        assert!(!runtime.search_tools(query, 5).is_empty(), "{query}");
    }
    assert_eq!(scorer.embedded(), tools, "a query embeds no tool");
    runtime.shutdown().await;
}
