//! Skills (the extension `io.modelcontextprotocol/skills`, SEP-2640) read from servers
//! nobody here wrote, each serving the demo server's skills folder (`runtime/demo/skills`)
//! with its SDK's own catalogue: rmcp 3.11's `SkillCatalog` (the fixture
//! `tests/peers/rmcp3 --skills DIR`, both eras) and the TypeScript SDK 2.4's `loadSkills`
//! (`tests/peers/ts_skills_server.mjs`, the handshake era it speaks on stdio). Their entries,
//! digests and front matter are what Switchboard's client checks every file against, and
//! Switchboard's own server (the demo) answers with the same entries for the same folder.

use std::path::{Path, PathBuf};

use switchboard::model::{Skill, SkillResources, SkillsCapability};
use switchboard::{Era, ErrorKind, Liveness, Protocol, Runtime, ServerConfig, ServerHandle};

use crate::peers::rmcp_server;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The folder both SDKs serve: the demo server's skills.
fn folder() -> PathBuf {
    root().join("runtime/demo/skills")
}

async fn ready(
    name: &str,
    config: ServerConfig<switchboard::transport::Stdio>,
) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .server(name, config.liveness(Liveness::off()))
        .build()
        .await
        .unwrap();
    let server = rt.server(name).unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    (rt, server)
}

/// Lists, gets and reads every skill of `server`, checking each file against its entry, and
/// returns the listing.
async fn read_every_skill(server: &ServerHandle, what: &str) -> Vec<Skill> {
    assert_eq!(
        server.skills_capability(),
        Some(SkillsCapability {
            directory_read: true
        }),
        "{what}"
    );
    let skills = server.list_skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://demo/arithmetic/SKILL.md",
            "skill://greet-people/SKILL.md"
        ],
        "{what}"
    );
    let greet_md = std::fs::read_to_string(folder().join("greet-people/SKILL.md")).unwrap();
    let styles =
        std::fs::read_to_string(folder().join("greet-people/references/STYLES.md")).unwrap();
    for skill in &skills {
        assert_eq!(
            &server.get_skill(&skill.uri).await.unwrap(),
            skill,
            "{what}: get and list agree"
        );
        // The digests and the front matter the SDK published, checked by our client.
        server.load_skill(skill).await.unwrap();
        let SkillResources::Files(files) = &skill.resources else {
            panic!("{what}: {:?}", skill.resources)
        };
        for file in files {
            server.read_skill_file(skill, &file.uri).await.unwrap();
        }
    }
    let greet = &skills[1];
    let loaded = server.load_skill(greet).await.unwrap();
    assert_eq!(loaded.text(), Some(greet_md.as_str()), "{what}");
    let file = server
        .read_skill_file(greet, "skill://greet-people/references/STYLES.md")
        .await
        .unwrap();
    assert_eq!(file.text(), Some(styles.as_str()), "{what}");
    let children = server.read_directory("skill://greet-people").await.unwrap();
    let names: Vec<&str> = children.iter().map(|c| c.name.as_str()).collect();
    assert!(
        names.contains(&"SKILL.md") && names.contains(&"references"),
        "{what}: {names:?}"
    );
    let unknown = server
        .get_skill("skill://nosuch/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        matches!(unknown.kind(), ErrorKind::UnknownSkill { .. }),
        "{what}: {unknown:?}"
    );
    skills
}

/// The entries Switchboard's own server (the demo, in this process) lists for the same
/// folder.
async fn demo_entries() -> Vec<Skill> {
    let config = ServerConfig::memory(|io| async move {
        let (reader, writer) = tokio::io::split(io);
        let _ = switchboard_demo::serve(reader, writer, switchboard_demo::Options::default()).await;
    });
    let rt = Runtime::builder()
        .server("demo", config)
        .build()
        .await
        .unwrap();
    let skills = rt.server("demo").unwrap().list_skills().await.unwrap();
    rt.shutdown().await;
    skills
}

#[tokio::test]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target (.ci/run builds them)"]
async fn skills_served_by_rmcp_3_are_read_and_checked_in_both_eras() {
    let folder = folder();
    let ours = demo_entries().await;
    for (protocol, era) in [
        (Protocol::Legacy, Era::Legacy),
        (Protocol::Modern, Era::Modern),
    ] {
        let config = ServerConfig::stdio(rmcp_server("rmcp3-server"))
            .args(["--skills", folder.to_str().expect("a UTF-8 path")])
            .protocol(protocol);
        let (rt, server) = ready("rmcp", config).await;
        assert_eq!(server.status().era, Some(era));
        let theirs = read_every_skill(&server, &format!("rmcp, {era:?}")).await;
        assert_eq!(
            theirs, ours,
            "rmcp and Switchboard's server publish the same entries for one folder"
        );
        rt.shutdown().await;
    }
}

#[tokio::test]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target (.ci/run builds them)"]
async fn an_rmcp_3_server_without_skills_is_not_asked_for_them() {
    let (rt, server) = ready("rmcp", ServerConfig::stdio(rmcp_server("rmcp3-server"))).await;
    assert_eq!(server.skills_capability(), None);
    let error = server.list_skills().await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::NotSupported { .. }),
        "{error:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the TypeScript SDK in .ci/peers"]
async fn skills_served_by_the_typescript_sdk_are_read_and_checked() {
    let modules = root().join(".ci/peers/node_modules");
    let node = modules.join(".bin/node");
    assert!(node.exists(), "no {} (run .ci/run once)", node.display());
    let script = root().join("tests/peers/ts_skills_server.mjs");
    let config = ServerConfig::stdio(&node).args([
        script.to_str().expect("a UTF-8 path"),
        modules.to_str().expect("a UTF-8 path"),
        folder().to_str().expect("a UTF-8 path"),
    ]);
    let (rt, server) = ready("typescript", config).await;
    let theirs = read_every_skill(&server, "typescript").await;
    assert_eq!(
        theirs,
        demo_entries().await,
        "the TypeScript SDK and Switchboard's server publish the same entries for one folder"
    );
    rt.shutdown().await;
}
