//! `switchboard skills` and `switchboard skill`, run as a real process against the bundled
//! demo server (which serves two skills): the listing for one server after `--` and for a
//! config file with a server without the extension, a skill's SKILL.md and a supporting file
//! printed once checked, by name or by URI, and which server a skill goes to.

use serde_json::Value;

use crate::cli::{
    against_demo, assert_failed, json_document, stderr, stdout, switchboard, Temp, BIN,
};

/// Exit 0 and stdout.
fn succeeded(output: &std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    stdout(output)
}

/// `one` and `two` (the demo server, its skills both), and `plain`, without the extension
/// (`--no-server-features`).
fn three_servers() -> Temp {
    let text = format!(
        r#"{{"mcpServers": {{
            "one": {{"command": {bin}, "args": ["demo-server", "--name", "one"]}},
            "plain": {{"command": {bin}, "args": ["demo-server", "--no-server-features"]}},
            "two": {{"command": {bin}, "args": ["demo-server", "--name", "two", "--modern"]}}
        }}}}"#,
        bin = serde_json::to_string(BIN).expect("a JSON string"),
    );
    Temp::file("skills.json", &text)
}

const DEMO_SKILLS: &str = "\
arithmetic — Add whole numbers with the demo server's add tool, and check the sum.
  skill://demo/arithmetic/SKILL.md (2 files)
greet-people — Greet someone by name with the demo server's greet tool, in the style they asked for.
  skill://greet-people/SKILL.md (2 files)
";

const GREET_PEOPLE: &str = include_str!("../../../demo/skills/greet-people/SKILL.md");
const STYLES: &str = include_str!("../../../demo/skills/greet-people/references/STYLES.md");

#[test]
fn skills_lists_two_lines_per_skill() {
    assert_eq!(succeeded(&against_demo(&["skills"])), DEMO_SKILLS);
}

#[test]
fn skills_json_lists_the_entries_as_the_server_did() {
    let mut args = vec!["skills", "--json", "--", BIN, "demo-server"];
    let doc = json_document(&args, 0);
    let server = &doc["servers"][0];
    assert_eq!(server["state"], "ready");
    assert_eq!(server["error"], Value::Null);
    let skills = server["skills"].as_array().expect("skills");
    assert_eq!(skills.len(), 2);
    assert_eq!(skills[0]["uri"], "skill://demo/arithmetic/SKILL.md");
    assert_eq!(skills[0]["frontmatter"]["metadata"]["tools"], "add");
    let files = skills[1]["resources"].as_array().expect("a manifest");
    assert_eq!(files[0]["uri"], "skill://greet-people/SKILL.md");
    assert_eq!(files[0]["size"], GREET_PEOPLE.len());
    assert!(
        files[0]["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:") && d.len() == 71),
        "{files:?}"
    );
    // A server without the extension: null, not a failure.
    args.push("--no-server-features");
    let doc = json_document(&args, 0);
    assert_eq!(doc["servers"][0]["skills"], Value::Null);
    assert_eq!(doc["servers"][0]["error"], Value::Null);
}

#[test]
fn servers_without_the_extension_are_listed_as_such() {
    let config = three_servers();
    let out = succeeded(&switchboard(&["skills", "-c", config.str()]));
    let indented: String = DEMO_SKILLS.lines().map(|l| format!("  {l}\n")).collect();
    assert_eq!(
        out,
        format!("one (ready)\n{indented}plain (ready, no skills)\ntwo (ready)\n{indented}")
    );
    // One server after `--`: nothing listed, and a line on stderr saying why.
    let output = switchboard(&["skills", "--", BIN, "demo-server", "--no-server-features"]);
    assert_eq!(succeeded(&output), "");
    assert!(stderr(&output).contains("no skills"), "{}", stderr(&output));
}

#[test]
fn skill_prints_its_skill_md_by_name_or_uri() {
    assert_eq!(
        succeeded(&against_demo(&["skill", "greet-people"])),
        GREET_PEOPLE
    );
    assert_eq!(
        succeeded(&against_demo(&["skill", "skill://greet-people/SKILL.md"])),
        GREET_PEOPLE
    );
    // The stateless era, the same.
    let modern = ["skill", "arithmetic", "--", BIN, "demo-server", "--modern"];
    assert!(succeeded(&switchboard(&modern)).starts_with("---\nname: arithmetic\n"));
}

#[test]
fn skill_file_prints_a_supporting_file_of_the_manifest() {
    let args = ["skill", "greet-people", "--file", "references/STYLES.md"];
    assert_eq!(succeeded(&against_demo(&args)), STYLES);
    // A file the manifest does not list is never read as the skill's.
    let err = assert_failed(
        &against_demo(&["skill", "greet-people", "--file", "references/NOPE.md"]),
        3,
    );
    assert!(
        err.contains("skill://greet-people/references/NOPE.md") && err.contains("does not list it"),
        "{err}"
    );
    let err = assert_failed(
        &against_demo(&["skill", "greet-people", "--file", "../x.md"]),
        2,
    );
    assert!(err.contains("not a file inside skill"), "{err}");
}

#[test]
fn skill_json_has_the_entry_and_the_text() {
    let doc = json_document(
        &["skill", "arithmetic", "--json", "--", BIN, "demo-server"],
        0,
    );
    assert_eq!(doc["server"], "switchboard");
    assert_eq!(doc["uri"], "skill://demo/arithmetic/SKILL.md");
    assert_eq!(doc["skill"]["frontmatter"]["name"], "arithmetic");
    assert!(doc["text"]
        .as_str()
        .is_some_and(|t| t.contains("# Adding numbers")));
}

#[test]
fn which_server_a_skill_goes_to() {
    let config = three_servers();
    let err = assert_failed(
        &switchboard(&["skill", "arithmetic", "-c", config.str()]),
        2,
    );
    assert!(
        err.contains("skill `arithmetic` is offered by several servers (`one`, `two`)"),
        "{err}"
    );
    let args = ["skill", "arithmetic", "--server", "two", "-c", config.str()];
    assert!(succeeded(&switchboard(&args)).contains("# Adding numbers"));
    let err = assert_failed(&switchboard(&["skill", "nosuch", "-c", config.str()]), 3);
    assert!(err.contains("lists a skill `nosuch`"), "{err}");
    // An unlisted URI is asked of the one server: the server says it has no such skill.
    let err = assert_failed(&against_demo(&["skill", "skill://nosuch/SKILL.md"]), 3);
    assert!(
        err.contains("serves no skill `skill://nosuch/SKILL.md`"),
        "{err}"
    );
    // A server without the extension is not asked.
    let err = assert_failed(
        &switchboard(&[
            "skill",
            "arithmetic",
            "--server",
            "plain",
            "-c",
            config.str(),
        ]),
        3,
    );
    assert!(err.contains("io.modelcontextprotocol/skills"), "{err}");
}

#[test]
fn help_has_examples() {
    for command in ["skills", "skill"] {
        let out = succeeded(&switchboard(&[command, "--help"]));
        assert!(
            out.contains("Examples:\n  switchboard "),
            "{command}: {out}"
        );
        assert!(out.contains("--json"), "{command}: {out}");
    }
}
