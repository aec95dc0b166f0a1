//! Skills aggregated by the gateway, seen from front clients in both eras: two upstreams
//! serving the same skills are kept apart by their prefixes, each skill's digests and front
//! matter check out through the gateway (its files read at their upstream under the URIs
//! the upstream gave), unlisted skills are reached in the prefixed form, directory reads are
//! routed and rewritten, and a change of upstreams is announced. The same with servers
//! nobody here wrote (rmcp 3.11's and the TypeScript SDK's skill catalogues), ignored where
//! they are not built.

use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard::model::{Skill, SkillResources};
use switchboard::{ErrorKind, Liveness, Protocol, Runtime, ServerConfig, ServerHandle};
use switchboard_gateway::{Front, Gateway};

use std::borrow::Cow;

use serde_json::{json, Value};
use switchboard_server::skills::Skill as SkillMd;
use switchboard_server::{Handler, Info};

use crate::support::{demo, front_client, in_memory, lists_seen, RawFront, WAIT};

const ERAS: [Protocol; 2] = [Protocol::Legacy, Protocol::Modern];

/// The demo server's skills, as it lists them.
const DEMO_SKILLS: [&str; 2] = [
    "skill://demo/arithmetic/SKILL.md",
    "skill://greet-people/SKILL.md",
];

async fn upstream(servers: Vec<(&str, ServerConfig)>) -> Runtime {
    let mut builder = Runtime::builder();
    for (name, config) in servers {
        builder = builder.server(name, config.liveness(Liveness::off()));
    }
    builder.build().await.expect("the upstream runtime")
}

/// A front client of `served` in `era`.
async fn client(served: &Front, era: Protocol) -> (Runtime, ServerHandle) {
    front_client(served, era, switchboard::client::ClientHandlers::new()).await
}

/// The URIs the gateway lists, once it lists `count` skills.
async fn listed(gateway: &ServerHandle, count: usize) -> Vec<Skill> {
    tokio::time::timeout(WAIT, async {
        loop {
            let skills = gateway.list_skills().await.expect("skills/list");
            if skills.len() == count {
                return skills;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the gateway lists {count} skills"))
}

fn uris(skills: &[Skill]) -> Vec<&str> {
    skills.iter().map(|s| s.uri.as_str()).collect()
}

/// Gets, loads and reads every file of every skill through the gateway: the client checks
/// each file against the entry (size, digest, front matter), so what the gateway rewrote
/// (URIs only) and what it passed on (the bytes) agree.
async fn read_every_skill(gateway: &ServerHandle, skills: &[Skill], what: &str) {
    for skill in skills {
        assert_eq!(
            &gateway.get_skill(&skill.uri).await.expect("skills/get"),
            skill,
            "{what}: get and list agree"
        );
        gateway
            .load_skill(skill)
            .await
            .expect("the SKILL.md checks out");
        let SkillResources::Files(files) = &skill.resources else {
            panic!("{what}: {:?}", skill.resources)
        };
        let root = skill.uri.trim_end_matches("SKILL.md");
        for file in files {
            assert!(
                file.uri.starts_with(root),
                "{what}: {} under {root}",
                file.uri
            );
            gateway
                .read_skill_file(skill, &file.uri)
                .await
                .expect("each file checks out");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_upstreams_serving_the_same_skills_are_kept_apart_in_both_eras() {
    let upstream = upstream(vec![("alpha", demo(&[])), ("beta", demo(&[]).prefix("b"))]).await;
    let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    let greet_md = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/skills/greet-people/SKILL.md"),
    )
    .expect("the demo's skill");
    for era in ERAS {
        let (front, gateway) = client(&served, era).await;
        assert!(gateway.skills_capability().is_some(), "{era:?}");
        let skills = listed(&gateway, 4).await;
        assert_eq!(
            uris(&skills),
            [
                "skill://alpha/demo/arithmetic/SKILL.md",
                "skill://alpha/greet-people/SKILL.md",
                "skill://b/demo/arithmetic/SKILL.md",
                "skill://b/greet-people/SKILL.md",
            ],
            "{era:?}: every name is on both upstreams, so every skill has its prefix"
        );
        // Names stay what the front matter says: a skill's path still ends in its name.
        assert_eq!(skills[3].name(), "greet-people");
        read_every_skill(&gateway, &skills, &format!("{era:?}")).await;
        let loaded = gateway.load_skill(&skills[1]).await.unwrap();
        assert_eq!(loaded.text(), Some(greet_md.as_str()), "{era:?}");
        // The contents name the URI the front asked for.
        let read = gateway
            .read_resource("skill://b/greet-people/SKILL.md")
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&read.contents[0]).unwrap()["uri"],
            "skill://b/greet-people/SKILL.md"
        );

        // A directory read goes to the prefix's upstream and comes back rewritten.
        let children = gateway
            .read_directory("skill://b/greet-people")
            .await
            .unwrap();
        let children: Vec<&str> = children.iter().map(|c| c.uri.as_str()).collect();
        assert!(
            children.contains(&"skill://b/greet-people/SKILL.md")
                && children.contains(&"skill://b/greet-people/references"),
            "{era:?}: {children:?}"
        );
        let not_a_directory = gateway
            .read_directory("skill://b/greet-people/SKILL.md")
            .await
            .unwrap_err();
        assert!(
            matches!(not_a_directory.kind(), ErrorKind::Rpc { code: -32602, .. }),
            "{not_a_directory:?}"
        );

        // The prefixed form reaches a skill by its upstream's URI even when the gateway did
        // not list it under that form, and an unknown one is the extension's -32602.
        let unknown = gateway
            .get_skill("skill://alpha/nosuch/SKILL.md")
            .await
            .unwrap_err();
        assert!(
            matches!(unknown.kind(), ErrorKind::UnknownSkill { .. }),
            "{era:?}: {unknown:?}"
        );
        let unknown = gateway
            .get_skill("skill://nobody/greet-people/SKILL.md")
            .await
            .unwrap_err();
        assert!(
            matches!(unknown.kind(), ErrorKind::UnknownSkill { .. }),
            "{era:?}: {unknown:?}"
        );
        front.shutdown().await;
    }
    drop(served);
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstream_keeps_its_skill_uris() {
    let upstream = upstream(vec![("demo", demo(&[]))]).await;
    let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    let (front, gateway) = client(&served, Protocol::Legacy).await;
    let skills = listed(&gateway, 2).await;
    assert_eq!(uris(&skills), DEMO_SKILLS);
    read_every_skill(&gateway, &skills, "one upstream").await;
    let children = gateway
        .read_directory("skill://greet-people")
        .await
        .unwrap();
    assert!(children
        .iter()
        .any(|c| c.uri == "skill://greet-people/SKILL.md"));
    front.shutdown().await;
    drop(served);
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_upstream_with_skills_renames_what_collides_and_is_announced() {
    let upstream = upstream(vec![("demo", demo(&[]))]).await;
    let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    let (front, gateway) = client(&served, Protocol::Modern).await;
    assert_eq!(uris(&listed(&gateway, 2).await), DEMO_SKILLS);
    // The upstream lists the demo's resources and prompts in the background: once the
    // front sees them, the gateway has announced all it will of the demo.
    lists_seen(&front, &gateway).await;
    let mut raw = RawFront::start(served.server().clone());

    let init = raw
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{init}"
    );
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    // An upstream with skills and nothing else (not even its skills' files listed as
    // resources): only the skills change.
    let extra = switchboard_server::Server::new(OnlySkills::new());
    upstream
        .add_server("extra", in_memory(extra))
        .await
        .unwrap();
    let heard = tokio::time::timeout(WAIT, async {
        loop {
            let message = raw.next().await;
            if message["method"] == "notifications/resources/list_changed" {
                return message;
            }
            assert!(
                !message["method"]
                    .as_str()
                    .is_some_and(|m| m.ends_with("list_changed")),
                "only the skills changed: {message}"
            );
        }
    })
    .await
    .expect("the front client hears resources/list_changed");
    assert!(heard.get("id").is_none());
    let listing = raw.request(1, "skills/list", json!({})).await;
    let uris: Vec<&str> = listing["result"]["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://demo/arithmetic/SKILL.md",
            "skill://demo/greet-people/SKILL.md",
            "skill://extra/greet-people/SKILL.md",
        ],
        "`greet-people` is on both upstreams: both prefixed; `arithmetic` is only the \
         demo's and keeps its URI — {listing}"
    );
    front.shutdown().await;
    drop(served);
    upstream.shutdown().await;
}

/// An upstream that serves one skill, `greet-people`, and nothing else.
struct OnlySkills(switchboard_server::skills::Skills);

impl OnlySkills {
    fn new() -> OnlySkills {
        let mut skills = switchboard_server::skills::Skills::new();
        skills
            .add(SkillMd::new("greet-people", "Greets in the team's style", "# Hi\n").unwrap())
            .unwrap();
        OnlySkills(skills)
    }
}

impl Handler for OnlySkills {
    fn info(&self) -> Info {
        Info::new("extra", "1.0.0").with_skills(false)
    }

    fn skills(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self.0.entries())
    }
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the rmcp fixture servers in .ci/peers/rust-target and the TypeScript SDK in .ci/peers (.ci/run builds and installs them)"]
async fn skills_of_rmcp_and_the_typescript_sdk_are_aggregated() {
    let folder = root().join("runtime/demo/skills");
    let folder = folder.to_str().expect("a UTF-8 path");
    let rmcp = root().join(".ci/peers/rust-target/release/rmcp3-server");
    assert!(rmcp.exists(), "no {} (run .ci/run once)", rmcp.display());
    let modules = root().join(".ci/peers/node_modules");
    let node = modules.join(".bin/node");
    assert!(node.exists(), "no {} (run .ci/run once)", node.display());
    let script = root().join("tests/peers/ts_skills_server.mjs");
    let upstream = upstream(vec![
        (
            "rmcp",
            ServerConfig::stdio(&rmcp)
                .args(["--skills", folder])
                .protocol(Protocol::Modern)
                .into(),
        ),
        (
            "ts",
            ServerConfig::stdio(&node)
                .args([
                    script.to_str().expect("a UTF-8 path"),
                    modules.to_str().expect("a UTF-8 path"),
                    folder,
                ])
                .into(),
        ),
    ])
    .await;
    let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    for era in ERAS {
        let (front, gateway) = client(&served, era).await;
        let skills = listed(&gateway, 4).await;
        assert_eq!(
            uris(&skills),
            [
                "skill://rmcp/demo/arithmetic/SKILL.md",
                "skill://rmcp/greet-people/SKILL.md",
                "skill://ts/demo/arithmetic/SKILL.md",
                "skill://ts/greet-people/SKILL.md",
            ],
            "{era:?}"
        );
        read_every_skill(&gateway, &skills, &format!("{era:?}")).await;
        let children = gateway
            .read_directory("skill://rmcp/greet-people")
            .await
            .unwrap();
        assert!(
            children
                .iter()
                .any(|c| c.uri == "skill://rmcp/greet-people/references"),
            "{era:?}: {children:?}"
        );
        front.shutdown().await;
    }
    drop(served);
    upstream.shutdown().await;
}
