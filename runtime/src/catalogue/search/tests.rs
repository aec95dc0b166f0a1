//! Unit tests of tool search: ranking, filters, fusion with a scorer, and the index's
//! per-server parts as servers come, go and relist.

use serde_json::json;

use super::*;
use crate::catalogue::{CatalogueBuilder, Naming, ServerTools};

fn tool(name: &str, description: &str) -> Tool {
    Tool {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        ..Tool::default()
    }
}

fn git() -> Vec<Tool> {
    vec![
        tool("git_log", "Shows the commit logs"),
        tool("git_status", "Shows the working tree status"),
        tool(
            "git_create_branch",
            "Creates a new branch from an optional base branch",
        ),
    ]
}

fn files() -> Vec<Tool> {
    let mut write = tool(
        "writeFile",
        "Create a new file or overwrite an existing one.",
    );
    write.input_schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string", "description": "Text to put in it"}
        }
    });
    let mut list = tool(
        "list_directory",
        "Get a detailed listing of all files and directories.",
    );
    list.input_schema = json!({
        "type": "object",
        "properties": {"order": {"type": "string", "enum": ["name", "modified"]}}
    });
    vec![
        tool(
            "read_text_file",
            "Read the complete contents of a file as text.",
        ),
        write,
        list,
    ]
}

fn catalogue() -> Catalogue {
    let mut builder = CatalogueBuilder::new(Naming::default());
    builder
        .set_server("git", git())
        .set_server("files", files());
    builder.build()
}

fn names(matches: &[ToolMatch]) -> Vec<&str> {
    matches.iter().map(|m| m.name.as_str()).collect()
}

#[test]
fn ranks_by_name_description_and_schema() {
    let catalogue = catalogue();
    assert_eq!(
        names(&catalogue.search("show me the commit logs", 1)),
        ["git_log"]
    );
    // camelCase names split; plurals stem.
    assert_eq!(names(&catalogue.search("write files", 1)), ["writeFile"]);
    // A word only a property's description has.
    assert_eq!(names(&catalogue.search("put", 3)), ["writeFile"]);
    // A string an `enum` allows.
    assert_eq!(names(&catalogue.search("modified", 3)), ["list_directory"]);
    // A synonym: no tool says "folder".
    assert_eq!(
        names(&catalogue.search("list the folder", 1)),
        ["list_directory"]
    );
    let found = catalogue.search("create a branch", 3);
    assert_eq!(found[0].name, "git_create_branch");
    assert_eq!(&*found[0].server, "git");
    assert_eq!(found[0].tool, git()[2]);
    assert!(found.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(found.iter().all(|m| m.score > 0.0));
}

#[test]
fn nothing_matches_nothing() {
    let catalogue = catalogue();
    assert!(catalogue.search("", 5).is_empty());
    assert!(catalogue.search("the of and", 5).is_empty());
    assert!(catalogue.search("zebra", 5).is_empty());
    assert!(catalogue.search("commit", 0).is_empty());
    assert!(Catalogue::default().search("commit", 5).is_empty());
}

#[test]
fn the_limit_counts_only_what_the_filter_accepts() {
    let catalogue = catalogue();
    let all = catalogue.search("file", 10);
    assert!(all.len() >= 3, "{:?}", names(&all));
    let only_git = catalogue.search_with(
        &ToolSearch::new("file status")
            .limit(1)
            .filter(|entry| &*entry.server == "git"),
    );
    assert_eq!(names(&only_git), ["git_status"]);
    let none = catalogue.search_with(&ToolSearch::new("file").filter(|_| false));
    assert!(none.is_empty());
}

#[test]
fn only_tools_in_the_catalogue_are_found() {
    let tools = files();
    let deny = vec!["write*".to_owned()];
    let input = [ServerTools {
        server: "files",
        prefix: None,
        allow: &[],
        deny: &deny,
        tools: &tools,
        source: None,
        available: true,
    }];
    let catalogue = Catalogue::build(&input, &Naming::default(), 1);
    assert!(!names(&catalogue.search("write a file", 10)).contains(&"writeFile"));
    assert!(!catalogue.search("write a file", 10).is_empty());
    // A server that is not available offers nothing to find.
    let input = [ServerTools {
        available: false,
        ..input[0]
    }];
    let catalogue = Catalogue::build(&input, &Naming::default(), 2);
    assert!(catalogue.search("file", 10).is_empty());
}

#[test]
fn matches_carry_catalogue_names() {
    let mut builder = CatalogueBuilder::new(Naming::default());
    builder
        .set_server("one", vec![tool("search", "Searches the web")])
        .set_server("two", vec![tool("search", "Searches the docs")]);
    let found = builder.build().search("search docs", 2);
    assert_eq!(names(&found), ["two__search", "one__search"]);
    assert_eq!(&*found[0].server, "two");
    assert_eq!(found[0].tool.name, "search");
}

/// Scores a tool 1 when its name is in the list, in list order (first best).
struct Prefers(Vec<&'static str>);

impl ToolScorer for Prefers {
    fn score(&self, _query: &str, candidates: &[&CatalogueEntry]) -> Vec<f64> {
        candidates
            .iter()
            .map(|entry| match self.0.iter().position(|n| *n == entry.name) {
                Some(at) => 100.0 - at as f64,
                None => f64::NAN,
            })
            .collect()
    }
}

#[test]
fn a_scorer_is_fused_by_reciprocal_rank() {
    let catalogue = catalogue();
    // Lexically: git_create_branch first, nothing else matches "branch".
    let lexical = catalogue.search("branch", 10);
    assert_eq!(names(&lexical), ["git_create_branch"]);
    // The scorer ranks git_log first and git_create_branch second: git_create_branch has
    // 1/61 + 1/62, git_log 1/61 alone.
    let scorer = Prefers(vec!["git_log", "git_create_branch"]);
    let fused = catalogue.search_with(&ToolSearch::new("branch").scorer(&scorer));
    assert_eq!(names(&fused), ["git_create_branch", "git_log"]);
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(
        close(fused[0].score, 1.0 / 61.0 + 1.0 / 62.0),
        "{}",
        fused[0].score
    );
    assert!(close(fused[1].score, 1.0 / 61.0), "{}", fused[1].score);
    // A tool no word matches is found through the scorer alone.
    let scorer = Prefers(vec!["git_status"]);
    let fused = catalogue.search_with(&ToolSearch::new("who touched it").scorer(&scorer));
    assert_eq!(names(&fused), ["git_status"]);
    // The filter applies to the scorer's candidates too.
    let fused = catalogue.search_with(
        &ToolSearch::new("branch")
            .scorer(&scorer)
            .filter(|entry| entry.name != "git_status"),
    );
    assert_eq!(names(&fused), ["git_create_branch"]);
}

#[test]
fn a_scorer_that_answers_short_is_ignored_past_its_answer() {
    struct Short;
    impl ToolScorer for Short {
        fn score(&self, _query: &str, _candidates: &[&CatalogueEntry]) -> Vec<f64> {
            vec![]
        }
    }
    let catalogue = catalogue();
    let fused = catalogue.search_with(&ToolSearch::new("commit").scorer(&Short));
    assert_eq!(names(&fused), ["git_log"]);
    assert!((fused[0].score - 1.0 / 61.0).abs() < 1e-12);
}

fn parts(catalogue: &Catalogue) -> Vec<Arc<Segment>> {
    catalogue
        .search_index()
        .parts
        .iter()
        .map(|p| Arc::clone(&p.segment))
        .collect()
}

#[test]
fn a_relist_rebuilds_only_that_servers_part() {
    let mut builder = CatalogueBuilder::new(Naming::default());
    builder
        .set_server("git", git())
        .set_server("files", files());
    let first = builder.build();
    assert!(first
        .search("delete the file", 5)
        .iter()
        .all(|m| m.name != "delete_file"));
    let before = parts(&first);

    // `files` relists with one more tool; `git` keeps its list.
    let mut more = files();
    more.push(tool("delete_file", "Deletes a file"));
    builder.set_server("files", more);
    let second = builder.build();
    assert_eq!(second.search("delete the file", 1)[0].name, "delete_file");
    let after = parts(&second);
    // Catalogue order: files, then git.
    assert!(
        !Arc::ptr_eq(&before[0], &after[0]),
        "files was analysed again"
    );
    assert!(Arc::ptr_eq(&before[1], &after[1]), "git's part was reused");
    // The old snapshot still answers as it did.
    assert!(first
        .search("delete the file", 5)
        .iter()
        .all(|m| m.name != "delete_file"));

    // A server that goes takes its tools with it; the others' parts stay.
    builder.remove_server("files");
    let third = builder.build();
    assert!(third.search("file", 10).is_empty());
    assert!(Arc::ptr_eq(&after[1], &parts(&third)[0]));

    // The same list again, as a new list: analysed again (it may differ).
    builder.set_server("git", git());
    let fourth = builder.build();
    assert!(!Arc::ptr_eq(&after[1], &parts(&fourth)[0]));
}

#[test]
fn the_index_is_built_once_per_snapshot() {
    let catalogue = catalogue();
    catalogue.prepare_search();
    let index: *const Index = catalogue.search_index();
    catalogue.search("commit", 3);
    assert!(std::ptr::eq(index, catalogue.search_index()));
    // A clone shares it.
    assert!(std::ptr::eq(index, catalogue.clone().search_index()));
}
