//! Skills served by a typed server (`ServerBuilder::skills_dir`, `ServerBuilder::skill`), in
//! both eras: the extension declared with the resources it rides on, `skills/list` (paged)
//! and `skills/get` with front matter verbatim and a manifest whose digests are the bytes
//! `resources/read` returns, `resources/directory/read`, the errors the extension names,
//! and a malformed `SKILL.md` refused at build naming its file.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Value};
use switchboard_server::skills::Skill;
use switchboard_server::{Options, Server};

use crate::support::{meta, LineClient};

/// A folder of skills, removed on drop.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path = std::env::temp_dir().join(format!("sb-skills-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Folder(path)
    }

    fn write(&self, relative: &str, contents: &[u8]) -> &Self {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
        self
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const REFUNDS: &str = "---\nname: refunds\ndescription: Process refund requests per policy\n\
license: Apache-2.0\nmetadata:\n  version: \"2.1\"\n  owners: billing and support\n---\n\
# Refunds\n\nRead `references/POLICY.md` and pick a template from `templates/`.\n";

/// `acme/billing/refunds` (three files and a hidden one), `git-workflow` (one file) and a
/// `notes/` folder without a SKILL.md, which is no skill.
fn folder(name: &str) -> Folder {
    let folder = Folder::new(name);
    folder
        .write("acme/billing/refunds/SKILL.md", REFUNDS.as_bytes())
        .write("acme/billing/refunds/references/POLICY.md", b"30 days.\n")
        .write("acme/billing/refunds/templates/email.bin", &[0, 159, 146, 150])
        .write("acme/billing/refunds/.secret", b"never served")
        .write(
            "git-workflow/SKILL.md",
            b"---\nname: git-workflow\ndescription: Branch, commit and merge\n---\nUse topic branches.\n",
        )
        .write("notes/README.md", b"not a skill");
    folder
}

fn server(folder: &Folder, page_size: usize) -> Server {
    Server::builder("skills", "1.0.0")
        .skills_dir(folder.path())
        .skill(Skill::new("inline", "A skill written in code", "# Inline\n").unwrap())
        .with_options(Options::default().with_page_size(page_size))
        .build()
        .expect("the folder can be served")
}

async fn handshake(server: Server) -> (LineClient, Value) {
    let mut client = LineClient::start(server);
    let init = client
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    (client, init["result"].clone())
}

/// Every skill of `skills/list`, following cursors; `params` adds to each request.
async fn every_skill(client: &mut LineClient, params: &Value) -> Vec<Value> {
    let mut skills = Vec::new();
    let mut cursor = Value::Null;
    for id in 100.. {
        let mut asked = params.clone();
        if !cursor.is_null() {
            asked["cursor"] = cursor.clone();
        }
        let page = client.request(id, "skills/list", asked).await;
        let result = &page["result"];
        skills.extend(result["skills"].as_array().expect("skills").iter().cloned());
        cursor = result["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    skills
}

fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    format!("sha256:{}", hex::encode(digest.as_ref()))
}

#[tokio::test]
async fn a_folder_of_skills_is_served_in_both_eras() {
    let folder = folder("eras");
    for stateless in [false, true] {
        let (mut client, init) = handshake(server(&folder, 2)).await;
        let extensions = &init["capabilities"]["extensions"];
        assert_eq!(
            extensions["io.modelcontextprotocol/skills"],
            json!({"directoryRead": true})
        );
        assert!(init["capabilities"]["resources"].is_object(), "{init}");
        let params = match stateless {
            true => json!({"_meta": meta(json!({}))}),
            false => json!({}),
        };
        let skills = every_skill(&mut client, &params).await;
        let uris: Vec<&str> = skills.iter().filter_map(|s| s["uri"].as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://git-workflow/SKILL.md",
                "skill://inline/SKILL.md",
            ],
            "stateless: {stateless}"
        );
        let refunds = &skills[0];
        assert_eq!(
            refunds["frontmatter"],
            json!({"name": "refunds", "description": "Process refund requests per policy",
                   "license": "Apache-2.0",
                   "metadata": {"version": "2.1", "owners": "billing and support"}})
        );
        let files = refunds["resources"].as_array().unwrap();
        let file_uris: Vec<&str> = files.iter().filter_map(|f| f["uri"].as_str()).collect();
        assert_eq!(
            file_uris,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://acme/billing/refunds/references/POLICY.md",
                "skill://acme/billing/refunds/templates/email.bin",
            ],
            "hidden files are not served"
        );
        // Each digest and size is of the bytes resources/read returns.
        for (i, file) in files.iter().enumerate() {
            let mut read_params = params.clone();
            read_params["uri"] = file["uri"].clone();
            let read = client
                .request(10 + i as i64, "resources/read", read_params)
                .await;
            let part = &read["result"]["contents"][0];
            let bytes = match part.get("text") {
                Some(text) => text.as_str().unwrap().as_bytes().to_vec(),
                None => base64::engine::general_purpose::STANDARD
                    .decode(part["blob"].as_str().unwrap())
                    .expect("base64"),
            };
            assert_eq!(file["size"], bytes.len(), "{file}");
            assert_eq!(file["digest"], sha256(&bytes), "{file}");
        }

        let mut get_params = params.clone();
        get_params["uri"] = json!("skill://acme/billing/refunds/SKILL.md");
        let got = client.request(20, "skills/get", get_params).await;
        assert_eq!(&got["result"]["skill"], refunds);
        if stateless {
            let result = &got["result"];
            assert_eq!(result["resultType"], "complete");
            assert!(
                result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
                "{result}"
            );
        }

        // Paged as the lists are (two a page here).
        let mut entries = Vec::new();
        let mut cursor = Value::Null;
        for id in 30.. {
            let mut dir_params = params.clone();
            dir_params["uri"] = json!("skill://acme/billing/refunds");
            if !cursor.is_null() {
                dir_params["cursor"] = cursor.clone();
            }
            let dir = client
                .request(id, "resources/directory/read", dir_params)
                .await;
            entries.extend(
                dir["result"]["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .cloned(),
            );
            cursor = dir["result"]["nextCursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        let children: Vec<(&str, &str)> = entries
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["mimeType"].as_str().unwrap()))
            .collect();
        assert_eq!(
            children,
            [
                ("SKILL.md", "text/markdown"),
                ("references", "inode/directory"),
                ("templates", "inode/directory"),
            ]
        );

        // The errors the extension names: -32602 for an unknown skill and a non-directory.
        for (id, method, uri) in [
            (
                22,
                "skills/get",
                "skill://acme/billing/chargebacks/SKILL.md",
            ),
            (
                23,
                "resources/directory/read",
                "skill://acme/billing/refunds/SKILL.md",
            ),
            (24, "resources/read", "skill://acme/billing/refunds/.secret"),
        ] {
            let mut bad = params.clone();
            bad["uri"] = json!(uri);
            let answer = client.request(id, method, bad).await;
            let expected = if method == "resources/read" && !stateless {
                -32002
            } else {
                -32602
            };
            assert_eq!(answer["error"]["code"], expected, "{method}: {answer}");
        }
        client.close().await;
    }
}

#[tokio::test]
async fn skill_files_are_listed_as_resources() {
    let folder = folder("listed");
    let (mut client, _) = handshake(server(&folder, 0)).await;
    let listed = client.request(1, "resources/list", json!({})).await;
    let resources = listed["result"]["resources"].as_array().unwrap();
    let skill_md = resources
        .iter()
        .find(|r| r["uri"] == "skill://git-workflow/SKILL.md")
        .expect("SKILL.md listed");
    assert_eq!(skill_md["name"], "git-workflow");
    assert_eq!(skill_md["description"], "Branch, commit and merge");
    assert_eq!(skill_md["mimeType"], "text/markdown");
    assert_eq!(resources.len(), 5, "{resources:?}");
    client.close().await;
}

#[test]
fn a_malformed_skill_md_fails_the_build_naming_its_file() {
    for (name, skill_md, why) in [
        ("nofm", "# No front matter\n", "must open with a `---` line"),
        (
            "unclosed",
            "---\nname: unclosed\ndescription: d\n",
            "no closing `---`",
        ),
        ("noname", "---\ndescription: d\n---\n", "`name` is missing"),
        (
            "badyaml",
            "---\nname: [x\ndescription: d\n---\n",
            "not valid YAML",
        ),
        (
            "other",
            "---\nname: something-else\ndescription: d\n---\n",
            "not its folder's name",
        ),
        (
            "Upper",
            "---\nname: Upper\ndescription: d\n---\n",
            "not in a skill name",
        ),
    ] {
        let folder = Folder::new(&format!("bad-{}", name.to_lowercase()));
        let relative = format!("{name}/SKILL.md");
        folder.write(&relative, skill_md.as_bytes());
        let error = Server::builder("s", "1")
            .skills_dir(folder.path())
            .build()
            .unwrap_err()
            .to_string();
        let file = folder.path().join(&relative);
        assert!(
            error.contains(&file.display().to_string()),
            "{name}: the file is named: {error}"
        );
        assert!(error.contains(why), "{name}: {error}");
    }
    let missing = Server::builder("s", "1")
        .skills_dir("/nonexistent/skills")
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("/nonexistent/skills") && missing.contains("cannot be read"),
        "{missing}"
    );
}

#[test]
fn two_skills_of_one_uri_are_refused() {
    let error = Server::builder("s", "1")
        .skill(Skill::new("twin", "one", "").unwrap())
        .skill(Skill::new("twin", "two", "").unwrap())
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("skill://twin/SKILL.md") && error.contains("another skill has its URI"),
        "{error}"
    );
}
