//! Reading a server's skills: the Skills extension (`io.modelcontextprotocol/skills`,
//! SEP-2640), in both eras, as more requests through the one exchange.
//!
//! A server that declared the extension (in its capabilities' `extensions`, which
//! [`ServerHandle::skills_capability`] reads) lists its skills with `skills/list` (every
//! page: [`ServerHandle::list_skills`]) and returns one skill's entry by the URI of its
//! `SKILL.md` with `skills/get` ([`ServerHandle::get_skill`]). An entry is the skill's front
//! matter and the manifest of its files, each with a SHA-256 digest and size; the files are
//! ordinary resources, read with `resources/read`. [`ServerHandle::read_skill_file`] reads
//! one and checks it against the entry (its size, its digest, that the manifest lists it),
//! and [`ServerHandle::load_skill`] reads the `SKILL.md` and also checks that its front
//! matter is the entry's, as the extension asks of a host before it acts on a skill.
//! Nothing is asked of a server that did not declare the extension:
//! [`ErrorKind::NotSupported`] at once.
//!
//! Skill names are labels, not identifiers: two servers, or two skills of one server, may
//! share one. A skill is the pair of its server and its URI; [`Runtime::skills`] lists them
//! per server, so that an aggregator can prefix names or rewrite URIs per origin.
//!
//! ```no_run
//! # async fn f(server: switchboard::ServerHandle) -> switchboard::Result<()> {
//! for skill in server.list_skills().await? {
//!     println!("{} — {}", skill.name(), skill.description());
//! }
//! let skill = server.get_skill("skill://git-workflow/SKILL.md").await?;
//! let instructions = server.load_skill(&skill).await?;
//! println!("{}", instructions.text().unwrap_or_default());
//! # Ok(()) }
//! ```

use std::sync::Arc;

use base64::Engine as _;
use futures_util::future::join_all;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchboard_codecs::mcp::skills::{
    self, GetSkillResult, ListSkillsResult, ReadDirectoryResult, Skill, SkillResources,
    SkillsCapability,
};
use switchboard_codecs::mcp::{Resource, ResourceContents};

use crate::error::{ErrorContext, ErrorKind, Result};
use crate::handle::ServerHandle;
use crate::paging::collect_pages;
use crate::runtime::Runtime;

/// The capability named in [`ErrorKind::NotSupported`] for a server without the extension.
const EXTENSION_CAPABILITY: &str = "extensions.io.modelcontextprotocol/skills";
/// … and for one that does not declare `directoryRead`.
const DIRECTORY_CAPABILITY: &str = "extensions.io.modelcontextprotocol/skills.directoryRead";

/// JSON-RPC "invalid params": what `skills/get` answers for a skill the server does not
/// serve.
const INVALID_PARAMS: i64 = -32602;

/// The bytes of one skill file, as `resources/read` gave them (a text part's UTF-8, a blob
/// part decoded), checked against the skill's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillFile {
    /// The file's URI.
    pub uri: String,
    /// Its MIME type, as the server gave it.
    pub mime_type: Option<String>,
    /// Its raw bytes: those the entry's digest and size are of.
    pub bytes: Vec<u8>,
}

impl SkillFile {
    /// The contents as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// One server's skills, as [`Runtime::skills`] lists them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerSkills {
    /// The server.
    pub server: ServerHandle,
    /// Its skills (every page), or why they could not be listed.
    pub skills: Result<Vec<Skill>>,
}

impl Runtime {
    /// The skills of every ready server that declared the extension, each server listed
    /// at once, in the order of [`servers`](Self::servers). Servers without the extension,
    /// and servers that are not ready, are left out.
    ///
    /// Names are not unique across servers (nor within one): a skill is its server and its
    /// URI together, and a caller that shows several servers' skills side by side keeps
    /// them apart by server.
    pub async fn skills(&self) -> Vec<ServerSkills> {
        let servers: Vec<ServerHandle> = self
            .servers()
            .into_iter()
            .filter(|s| s.status().is_ready() && s.skills_capability().is_some())
            .collect();
        let listings = join_all(servers.iter().map(|server| server.list_skills())).await;
        servers
            .into_iter()
            .zip(listings)
            .map(|(server, skills)| ServerSkills { server, skills })
            .collect()
    }
}

impl ServerHandle {
    /// The Skills extension's settings as the server declared them; `None` when it did not,
    /// or has not been initialized yet.
    pub fn skills_capability(&self) -> Option<SkillsCapability> {
        let status = self.core.status.borrow();
        SkillsCapability::of(status.capabilities.as_deref()?)
    }

    /// Every skill the server lists, all pages (`skills/list`). A server may list only
    /// some of its skills (or none): [`get_skill`](Self::get_skill) still finds the others
    /// by URI.
    pub async fn list_skills(&self) -> Result<Vec<Skill>> {
        self.require_skills(skills::LIST, false).await?;
        collect_pages(self.name(), skills::LIST, |cursor| async move {
            let page: ListSkillsResult = self
                .typed(skills::LIST, page_params(cursor.as_deref()))
                .await?;
            Ok((page.skills, page.next_cursor))
        })
        .await
    }

    /// One page of `skills/list`, from `cursor` (`None`: the first).
    pub async fn list_skills_page(&self, cursor: Option<&str>) -> Result<ListSkillsResult> {
        self.require_skills(skills::LIST, false).await?;
        self.typed(skills::LIST, page_params(cursor)).await
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), listed or not.
    /// A skill the server does not serve is [`ErrorKind::UnknownSkill`].
    pub async fn get_skill(&self, uri: &str) -> Result<Skill> {
        self.require_skills(skills::GET, false).await?;
        let got: GetSkillResult = self
            .typed(skills::GET, json!({ "uri": uri }))
            .await
            .map_err(|error| match error.kind() {
                ErrorKind::Rpc { code, message, .. } if *code == INVALID_PARAMS => {
                    self.context(skills::GET).error(ErrorKind::UnknownSkill {
                        uri: uri.into(),
                        message: message.clone(),
                    })
                }
                _ => error,
            })?;
        Ok(got.skill)
    }

    /// Reads the skill's file at `uri` (`resources/read`) and checks it against the
    /// skill's entry: the manifest must list it, and its size and SHA-256 digest must be
    /// the listed ones ([`ErrorKind::SkillMismatch`] otherwise: the content must not be
    /// used). A skill whose resources are `"dynamic"` has nothing to check against: its
    /// files are read as they are, and only from within its root.
    pub async fn read_skill_file(&self, skill: &Skill, uri: &str) -> Result<SkillFile> {
        let mismatch = |detail: String| {
            self.context(switchboard_codecs::mcp::methods::RESOURCES_READ)
                .error(ErrorKind::SkillMismatch {
                    uri: uri.into(),
                    detail,
                })
        };
        let listed = match &skill.resources {
            SkillResources::Files(_) => match skill.file(uri) {
                Some(listed) => Some(listed.clone()),
                None => {
                    return Err(mismatch(format!(
                        "the manifest of skill `{}` does not list it",
                        skill.uri
                    )))
                }
            },
            SkillResources::Dynamic => {
                let within = skill.root().is_some_and(|root| {
                    uri.strip_prefix(root).is_some_and(|rest| {
                        rest.starts_with('/') && !rest.split('/').any(|s| s == "..")
                    })
                });
                if !within {
                    return Err(mismatch(format!(
                        "it is not within the directory of skill `{}`",
                        skill.uri
                    )));
                }
                None
            }
            SkillResources::Invalid(_) => {
                return Err(mismatch(format!(
                    "the entry of skill `{}` has no valid `resources` (neither a list of files nor \"dynamic\")",
                    skill.uri
                )))
            }
        };
        let read = self.read_resource(uri).await?;
        let file = file_of(uri, read.contents).map_err(&mismatch)?;
        if let Some(listed) = listed {
            let size = file.bytes.len() as u64;
            if size != listed.size {
                return Err(mismatch(format!(
                    "it is {size} bytes, the manifest says {}",
                    listed.size
                )));
            }
            let digest = sha256(&file.bytes);
            if digest != listed.digest {
                return Err(mismatch(format!(
                    "its digest is {digest}, the manifest says {}",
                    listed.digest
                )));
            }
        }
        Ok(file)
    }

    /// Reads the skill's `SKILL.md`, checked as [`read_skill_file`](Self::read_skill_file)
    /// checks a file, and checks that its front matter is, field by field, the entry's: what
    /// a host does before it puts a skill into a model's context (which is the host's to
    /// decide, and to ask the user about: skill content is untrusted input).
    pub async fn load_skill(&self, skill: &Skill) -> Result<SkillFile> {
        let file = self.read_skill_file(skill, &skill.uri).await?;
        let mismatch = |detail: String| {
            self.context(switchboard_codecs::mcp::methods::RESOURCES_READ)
                .error(ErrorKind::SkillMismatch {
                    uri: skill.uri.as_str().into(),
                    detail,
                })
        };
        let text = file
            .text()
            .ok_or_else(|| mismatch("SKILL.md is not UTF-8".to_owned()))?;
        let (front_matter, _body) = skills::front_matter(text)
            .map_err(|e| mismatch(format!("its front matter cannot be read: {e}")))?;
        if front_matter != skill.frontmatter {
            return Err(mismatch(
                "its front matter differs from the entry's frontmatter".to_owned(),
            ));
        }
        Ok(file)
    }

    /// The direct children of the directory resource at `uri` (`resources/directory/read`,
    /// every page): files with their resource metadata, subdirectories with MIME type
    /// `inode/directory`. Only a server that declared the extension with `directoryRead`
    /// is asked. For a skill whose entry lists its files, the entry is the authority on
    /// what may be read; a directory read is the server's view now.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>> {
        self.require_skills(skills::DIRECTORY_READ, true).await?;
        collect_pages(self.name(), skills::DIRECTORY_READ, |cursor| async move {
            let mut params = json!({ "uri": uri });
            if let Some(cursor) = cursor {
                params["cursor"] = Value::String(cursor);
            }
            let page: ReadDirectoryResult = self.typed(skills::DIRECTORY_READ, params).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
    }

    /// Whether the server may be asked `method` of the extension: only once it declared it
    /// (`directory`: with `directoryRead`). A server not initialized yet is waited for; one
    /// that never was is asked anyway, and the request fails as it must (unavailable).
    async fn require_skills(&self, method: &str, directory: bool) -> Result<()> {
        let mut capabilities = self.core.status.borrow().capabilities.clone();
        if capabilities.is_none() {
            capabilities = self.wait_started().await.capabilities;
        }
        let Some(capabilities) = capabilities else {
            return Ok(());
        };
        let declared = SkillsCapability::of(&capabilities);
        let missing = match declared {
            None => Some(EXTENSION_CAPABILITY),
            Some(settings) if directory && !settings.directory_read => Some(DIRECTORY_CAPABILITY),
            Some(_) => None,
        };
        match missing {
            Some(capability) => Err(self
                .context(method)
                .error(ErrorKind::NotSupported { capability })),
            None => Ok(()),
        }
    }

    fn context(&self, method: &str) -> ErrorContext {
        ErrorContext::of_server(self.core.name.clone()).with_method(Arc::from(method))
    }
}

fn page_params(cursor: Option<&str>) -> Value {
    match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    }
}

/// The part of a `resources/read` result that is the file at `uri` (the one part a server
/// answers for a file, else the one with that URI), as raw bytes.
fn file_of(uri: &str, contents: Vec<ResourceContents>) -> std::result::Result<SkillFile, String> {
    let part = match contents.len() {
        1 => contents.into_iter().next(),
        _ => contents.into_iter().find(|part| match part {
            ResourceContents::Text(t) => t.uri == uri,
            ResourceContents::Blob(b) => b.uri == uri,
        }),
    };
    match part {
        Some(ResourceContents::Text(text)) => Ok(SkillFile {
            uri: uri.to_owned(),
            mime_type: text.mime_type,
            bytes: text.text.into_bytes(),
        }),
        Some(ResourceContents::Blob(blob)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob.blob.as_bytes())
                .map_err(|e| format!("its blob is not base64: {e}"))?;
            Ok(SkillFile {
                uri: uri.to_owned(),
                mime_type: blob.mime_type,
                bytes,
            })
        }
        None => Err("the server's answer has no part for it".to_owned()),
    }
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`, as skill manifests spell digests.
fn sha256(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut digest = String::with_capacity(7 + 64);
    digest.push_str("sha256:");
    for byte in Sha256::digest(bytes) {
        let _ = write!(digest, "{byte:02x}");
    }
    digest
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_codecs::mcp::{BlobResourceContents, TextResourceContents};

    #[test]
    fn digests_are_spelled_as_manifests_spell_them() {
        // The `pdf-processing` SKILL.md of the extension's example, whose digest rmcp's
        // tests also pin.
        let skill_md = b"---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n# PDF processing\n\nChoose the matching template from `templates/`.\n";
        assert_eq!(
            sha256(skill_md),
            "sha256:99b737495721155ece826d57521e2d66141ebdc1344a400487481ea2642ab19e"
        );
    }

    #[test]
    fn a_file_is_its_one_part_text_or_blob() {
        let text = ResourceContents::Text(TextResourceContents {
            uri: "skill://a/SKILL.md".into(),
            text: "hé".into(),
            ..Default::default()
        });
        assert_eq!(
            file_of("skill://a/SKILL.md", vec![text]).unwrap().bytes,
            "hé".as_bytes()
        );
        let blob = |uri: &str, data: &str| {
            ResourceContents::Blob(BlobResourceContents {
                uri: uri.into(),
                blob: data.into(),
                ..Default::default()
            })
        };
        let two = vec![blob("skill://a/x", "AAE="), blob("skill://a/y", "AgM=")];
        assert_eq!(file_of("skill://a/y", two).unwrap().bytes, [2, 3]);
        assert!(file_of("skill://a/y", vec![blob("skill://a/y", "%%")]).is_err());
        assert!(file_of("skill://a/y", vec![]).is_err());
    }
}
