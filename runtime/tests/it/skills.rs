//! Skills (the extension `io.modelcontextprotocol/skills`) through `ServerHandle` and
//! `Runtime`, against the demo server in both eras: listing across pages, getting by URI,
//! files read and checked against the entry (a tampered entry refused), directories, an
//! unknown skill, and a server without the extension never asked.

use switchboard::model::{SkillResources, SkillsCapability};
use switchboard::{Era, ErrorKind};

use crate::support::*;

const GREET_PEOPLE: &str = "skill://greet-people/SKILL.md";
const STYLES: &str = "skill://greet-people/references/STYLES.md";

#[tokio::test]
async fn skills_are_listed_got_and_read_in_both_eras() {
    for (args, era) in [
        (&["--page-size", "1"][..], Era::Legacy),
        (&["--page-size", "1", "--modern"][..], Era::Modern),
    ] {
        let (rt, server) = runtime_with(demo_memory(args)).await;
        assert_eq!(server.status().era, Some(era));
        assert_eq!(
            server.skills_capability(),
            Some(SkillsCapability {
                directory_read: true
            }),
            "{era:?}"
        );
        let skills = server.list_skills().await.unwrap();
        let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(
            uris,
            ["skill://demo/arithmetic/SKILL.md", GREET_PEOPLE],
            "{era:?}"
        );
        assert_eq!(skills[0].name(), "arithmetic");
        assert_eq!(skills[0].path(), Some("demo/arithmetic"));
        let first = server.list_skills_page(None).await.unwrap();
        assert_eq!(first.skills.len(), 1);
        assert!(first.next_cursor.is_some(), "{era:?}: paged by one");

        let greet = server.get_skill(GREET_PEOPLE).await.unwrap();
        assert_eq!(greet, skills[1]);
        let SkillResources::Files(files) = &greet.resources else {
            panic!("{:?}", greet.resources)
        };
        assert_eq!(files.len(), 2);

        let skill_md = server.load_skill(&greet).await.unwrap();
        assert!(
            skill_md
                .text()
                .is_some_and(|t| t.starts_with("---\nname: greet-people\n")),
            "{skill_md:?}"
        );
        assert_eq!(skill_md.mime_type.as_deref(), Some("text/markdown"));
        let styles = server.read_skill_file(&greet, STYLES).await.unwrap();
        assert!(styles
            .text()
            .is_some_and(|t| t.starts_with("# Greeting styles")));
        assert_eq!(
            greet.resolve("references/STYLES.md").as_deref(),
            Some(STYLES)
        );

        let children = server.read_directory("skill://greet-people").await.unwrap();
        let names: Vec<(&str, Option<&str>)> = children
            .iter()
            .map(|c| (c.name.as_str(), c.mime_type.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("SKILL.md", Some("text/markdown")),
                ("references", Some("inode/directory"))
            ]
        );

        let unknown = server
            .get_skill("skill://nosuch/SKILL.md")
            .await
            .unwrap_err();
        assert!(
            matches!(unknown.kind(), ErrorKind::UnknownSkill { uri, .. } if &**uri == "skill://nosuch/SKILL.md"),
            "{era:?}: {unknown:?}"
        );
        assert!(
            unknown.to_string().contains("No skill is served at"),
            "{unknown}"
        );

        let every = rt.skills().await;
        assert_eq!(every.len(), 1);
        assert_eq!(every[0].server.name(), "demo");
        assert_eq!(every[0].skills.as_ref().map(Vec::len).ok(), Some(2));
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn a_file_that_is_not_what_the_entry_says_is_refused() {
    let (rt, server) = runtime_with(demo_memory(&[])).await;
    let greet = server.get_skill(GREET_PEOPLE).await.unwrap();
    let mismatch = |result: switchboard::Result<switchboard::SkillFile>, why: &str| {
        let error = result.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::SkillMismatch { .. }),
            "{why}: {error:?}"
        );
        assert!(error.to_string().contains(why), "{error}");
    };

    // A digest or a size that is not the file's.
    let mut tampered = greet.clone();
    let SkillResources::Files(files) = &mut tampered.resources else {
        panic!("a manifest")
    };
    files[1].digest = format!("sha256:{}", "0".repeat(64));
    mismatch(
        server.read_skill_file(&tampered, STYLES).await,
        "the manifest says sha256:000",
    );
    let SkillResources::Files(files) = &mut tampered.resources else {
        panic!("a manifest")
    };
    files[0].size += 1;
    mismatch(
        server.load_skill(&tampered).await,
        "bytes, the manifest says",
    );

    // A file the manifest does not list, and a resource outside a dynamic skill.
    mismatch(
        server
            .read_skill_file(&greet, "skill://greet-people/references/NOPE.md")
            .await,
        "does not list it",
    );
    let mut dynamic = greet.clone();
    dynamic.resources = SkillResources::Dynamic;
    assert!(server.read_skill_file(&dynamic, STYLES).await.is_ok());
    mismatch(
        server.read_skill_file(&dynamic, "demo://text/hello").await,
        "not within the directory",
    );
    let mut invalid = greet.clone();
    invalid.resources = SkillResources::Invalid(serde_json::json!("static"));
    mismatch(server.load_skill(&invalid).await, "no valid `resources`");

    // Front matter that is not the entry's.
    let mut renamed = greet.clone();
    renamed
        .frontmatter
        .insert("description".into(), "Something else".into());
    mismatch(server.load_skill(&renamed).await, "front matter differs");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_without_the_extension_is_not_asked() {
    let (rt, server) = runtime_with(demo_memory(&["--no-server-features", "--faults"])).await;
    assert_eq!(server.skills_capability(), None);
    for error in [
        server.list_skills().await.unwrap_err(),
        server.get_skill(GREET_PEOPLE).await.unwrap_err(),
        server
            .read_directory("skill://greet-people")
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(error.kind(), ErrorKind::NotSupported { capability } if capability.contains("io.modelcontextprotocol/skills")),
            "{error:?}"
        );
    }
    assert!(rt.skills().await.is_empty());
    // Nothing was sent: the server never saw a skills method.
    let stats = server
        .call_tool("stats", serde_json::json!({}))
        .await
        .unwrap();
    assert!(!stats.text().contains("skills/"), "{}", stats.text());
    rt.shutdown().await;
}
