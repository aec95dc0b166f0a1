//! Serving skills: the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640), a
//! catalogue of Agent Skills whose files are resources under `skill://`.
//!
//! A [`Skill`] is a `SKILL.md` (YAML front matter with `name` and `description`, then
//! Markdown) and its supporting files; [`Skills`] holds many and answers what the extension
//! asks of a server: the entries of `skills/list` and `skills/get` (the front matter
//! verbatim, and every file with its SHA-256 digest and size), `resources/read` of each
//! file, their `resources/list` entries, and `resources/directory/read`. A skill at path
//! `acme/billing/refunds` is served at `skill://acme/billing/refunds/SKILL.md`; the last
//! segment of its path is always its name.
//!
//! [`ServerBuilder::skill`](crate::ServerBuilder::skill) and
//! [`ServerBuilder::skills_dir`](crate::ServerBuilder::skills_dir) add skills to a typed
//! server, which then declares the extension (with `directoryRead`) and the resources it
//! rides on, in both eras. A [`Handler`](crate::Handler) of one's own serves a catalogue
//! through [`Handler::skills`](crate::Handler::skills) and its siblings.
//!
//! ```
//! use switchboard_server::skills::{Skill, Skills};
//!
//! # fn main() -> Result<(), switchboard_server::Error> {
//! let refunds = Skill::from_skill_md(
//!     "---\nname: refunds\ndescription: Process refund requests per policy\n---\n\
//!      Read `references/POLICY.md` first.\n",
//! )?
//! .under("acme/billing")
//! .with_file("references/POLICY.md", "Refund within 30 days.\n");
//! let mut skills = Skills::new();
//! skills.add(refunds)?;
//! let entry = skills.get("skill://acme/billing/refunds/SKILL.md").unwrap();
//! assert_eq!(entry["frontmatter"]["name"], "refunds");
//! assert_eq!(entry["resources"].as_array().map(Vec::len), Some(2));
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use switchboard_codecs::mcp::modern::headers::base64;
use switchboard_codecs::mcp::skills::{
    front_matter, name_problem, DIRECTORY_MIME_TYPE, MAX_BYTES, MAX_FILES, SCHEME, SKILL_MD,
};

use crate::Error;

use files::{fields_problem, mime_type, relative_path_problem, sha256, uri_char, walk};

mod files;
#[cfg(test)]
mod tests;

/// A skill to serve: its `SKILL.md` and supporting files, at a path under `skill://`.
///
/// What makes it unservable (a file path that climbs out of the skill, a bad prefix) is
/// reported when it is added to [`Skills`] (or the server is built), naming the skill.
#[derive(Clone)]
pub struct Skill {
    /// The organisational prefix before the name, `/`-separated; empty for none.
    prefix: String,
    name: String,
    front_matter: Map<String, Value>,
    /// By path relative to the skill's root, `SKILL.md` included.
    files: BTreeMap<String, File>,
    /// The first problem met while it was assembled.
    problem: Option<String>,
}

#[derive(Clone)]
struct File {
    bytes: Arc<[u8]>,
    mime_type: &'static str,
}

impl fmt::Debug for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Skill")
            .field("uri", &self.uri())
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Skill {
    /// The skill whose `SKILL.md` is `skill_md`: YAML front matter between `---` lines with
    /// at least `name` (a skill name: lowercase letters, digits and single hyphens, up to
    /// 64) and `description`, then the instructions in Markdown. Its path is its name; see
    /// [`under`](Self::under).
    ///
    /// # Errors
    /// [`Error::Definition`] (kind `skill`) saying what is wrong with the front matter.
    pub fn from_skill_md(skill_md: impl Into<String>) -> Result<Skill, Error> {
        let skill_md = skill_md.into();
        let refused = |name: &str, reason: String| Error::Definition {
            kind: "skill",
            name: name.to_owned(),
            reason,
        };
        let (front_matter, _) = front_matter(&skill_md)
            .map_err(|e| refused(SKILL_MD, format!("its {SKILL_MD}: {e}")))?;
        let name = front_matter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(problem) = name_problem(&name).or_else(|| fields_problem(&front_matter)) {
            return Err(refused(&name, problem));
        }
        let mut files = BTreeMap::new();
        files.insert(
            SKILL_MD.to_owned(),
            File {
                bytes: Arc::from(skill_md.into_bytes()),
                mime_type: "text/markdown",
            },
        );
        Ok(Skill {
            prefix: String::new(),
            name,
            front_matter,
            files,
            problem: None,
        })
    }

    /// A skill written from its parts: a `SKILL.md` with `name` and `description` as its
    /// front matter and `instructions` as its body.
    ///
    /// # Errors
    /// [`Error::Definition`] (kind `skill`) for a name that is not a skill name, or an
    /// empty description.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl AsRef<str>,
    ) -> Result<Skill, Error> {
        // A JSON string is a YAML double-quoted scalar: each reads back exactly as given.
        let name = Value::String(name.into());
        let description = Value::String(description.into());
        Skill::from_skill_md(format!(
            "---\nname: {name}\ndescription: {description}\n---\n{}",
            instructions.as_ref()
        ))
    }

    /// Puts the skill under an organisational prefix: `under("acme/billing")` serves skill
    /// `refunds` at `skill://acme/billing/refunds/SKILL.md`.
    pub fn under(mut self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        let prefix = prefix.trim_matches('/');
        let bad = prefix
            .split('/')
            .find(|segment| matches!(*segment, "" | "." | "..") || !segment.chars().all(uri_char));
        match bad {
            Some(_) if !prefix.is_empty() => self.note(format!(
                "the prefix `{prefix}` is not `/`-separated URI path segments"
            )),
            _ => self.prefix = prefix.to_owned(),
        }
        self
    }

    /// Adds a supporting file at `path`, relative to the skill's root (`references/FORMS.md`,
    /// `scripts/extract.py`); its MIME type follows its extension.
    pub fn with_file(mut self, path: &str, contents: impl Into<Vec<u8>>) -> Self {
        match relative_path_problem(path) {
            Some(problem) => self.note(problem),
            None if path == SKILL_MD => self.note(format!("{SKILL_MD} is the skill's own")),
            None => {
                let bytes: Vec<u8> = contents.into();
                let mime_type = mime_type(path, &bytes);
                self.files.insert(
                    path.to_owned(),
                    File {
                        bytes: Arc::from(bytes),
                        mime_type,
                    },
                );
            }
        }
        self
    }

    /// The skill's name (its front matter's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The skill's path: the prefix, then the name.
    pub fn path(&self) -> String {
        match self.prefix.as_str() {
            "" => self.name.clone(),
            prefix => format!("{prefix}/{}", self.name),
        }
    }

    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{SCHEME}{}/{SKILL_MD}", self.path())
    }

    fn note(&mut self, problem: String) {
        self.problem.get_or_insert(problem);
    }

    fn file_uri(&self, relative: &str) -> String {
        format!("{SCHEME}{}/{relative}", self.path())
    }

    /// The `skills/list` entry: the front matter verbatim and the manifest of every file.
    fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|(path, file)| {
                json!({
                    "uri": self.file_uri(path),
                    "digest": sha256(&file.bytes),
                    "size": file.bytes.len(),
                })
            })
            .collect();
        json!({
            "uri": self.uri(),
            "frontmatter": self.front_matter,
            "resources": resources,
        })
    }

    /// Why the skill cannot be served, if it cannot.
    fn problem(&self) -> Option<String> {
        if let Some(problem) = &self.problem {
            return Some(problem.clone());
        }
        let total: u64 = self.files.values().map(|f| f.bytes.len() as u64).sum();
        if self.files.len() > MAX_FILES {
            return Some(format!(
                "it has {} files; hosts need accept no more than {MAX_FILES}",
                self.files.len()
            ));
        }
        if total > MAX_BYTES {
            return Some(format!(
                "its files come to {total} bytes; hosts need accept no more than {MAX_BYTES}"
            ));
        }
        None
    }
}

/// Skills to serve, in the order of their URIs, with everything the extension and the
/// resources they ride on answer about them.
#[derive(Debug, Default, Clone)]
pub struct Skills {
    /// `skills/list` entries, by URI.
    entries: Vec<Value>,
    /// `resources/list` entries of every file, in the order they were added.
    listing: Vec<Value>,
    /// Every file, by URI.
    files: HashMap<String, File>,
    /// Every directory's direct children (URI, whether a directory), by the directory's URI.
    directories: BTreeMap<String, BTreeSet<(String, bool)>>,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} bytes)", self.mime_type, self.bytes.len())
    }
}

impl Skills {
    /// No skills.
    pub fn new() -> Self {
        Skills::default()
    }

    /// Adds `skill`.
    ///
    /// # Errors
    /// [`Error::Definition`] (kind `skill`, named by its URI) for a skill that cannot be
    /// served: another has its URI, a file path climbs out of it, it is over the
    /// extension's limits (512 files, 16 MiB).
    pub fn add(&mut self, skill: Skill) -> Result<(), Error> {
        let uri = skill.uri();
        let refused = |reason: String| Error::Definition {
            kind: "skill",
            name: uri.clone(),
            reason,
        };
        if let Some(problem) = skill.problem() {
            return Err(refused(problem));
        }
        let at = match self
            .entries
            .binary_search_by(|e| e["uri"].as_str().unwrap_or_default().cmp(&uri))
        {
            Ok(_) => return Err(refused("another skill has its URI".to_owned())),
            Err(at) => at,
        };
        self.entries.insert(at, skill.entry());
        for (path, file) in &skill.files {
            let file_uri = skill.file_uri(path);
            let mut listed = json!({
                "uri": file_uri,
                "name": path.rsplit('/').next().unwrap_or(path),
                "mimeType": file.mime_type,
                "size": file.bytes.len(),
            });
            if path == SKILL_MD {
                listed["name"] = json!(skill.name);
                listed["description"] = skill
                    .front_matter
                    .get("description")
                    .cloned()
                    .unwrap_or_default();
            }
            self.listing.push(listed);
            self.add_to_directories(&file_uri);
            self.files.insert(file_uri, file.clone());
        }
        Ok(())
    }

    /// Records `uri` as a child of its directory, and each directory as a child of its
    /// parent, up to the authority (`skill://acme`).
    fn add_to_directories(&mut self, uri: &str) {
        let mut child = (uri.to_owned(), false);
        while let Some((parent, _)) = child.0.rsplit_once('/') {
            if parent.len() < SCHEME.len() {
                break;
            }
            let parent = parent.to_owned();
            // A directory known already has its own ancestors recorded.
            let known = self.directories.contains_key(&parent);
            self.directories
                .entry(parent.clone())
                .or_default()
                .insert(child);
            if known {
                break;
            }
            child = (parent, true);
        }
    }

    /// The skills of every folder below `root` that holds a `SKILL.md`, each at its path
    /// from `root` (`root/acme/refunds/SKILL.md` is `skill://acme/refunds/SKILL.md`), with
    /// every file below it, those of skills nested in it included. Entries whose names start
    /// with `.` are skipped, and so are symbolic links (never followed: a skill serves what
    /// is in its folder).
    ///
    /// The files are read once, now: what is served is what was read, whatever happens to
    /// the folder afterwards.
    ///
    /// # Errors
    /// [`Error::Definition`] naming the file or folder that cannot be read or served: a
    /// `SKILL.md` whose front matter is malformed, whose `name` is not its folder's name, a
    /// skill over the extension's limits, a file that cannot be read.
    pub fn from_dir(root: impl AsRef<Path>) -> Result<Skills, Error> {
        let mut skills = Skills::new();
        skills.add_dir(root)?;
        Ok(skills)
    }

    /// Adds the skills below `root`, as [`from_dir`](Self::from_dir) reads them.
    ///
    /// # Errors
    /// As [`from_dir`](Self::from_dir), and for a skill whose URI another has; the skills
    /// added before the error stay.
    pub fn add_dir(&mut self, root: impl AsRef<Path>) -> Result<(), Error> {
        let root = root.as_ref();
        let mut files = Vec::new();
        walk(root, "", &mut files)?;
        let skill_dirs: Vec<&str> = files
            .iter()
            .filter_map(|(relative, _)| {
                let dir = relative.strip_suffix(SKILL_MD)?;
                match dir {
                    "" => None,
                    dir => dir.strip_suffix('/'),
                }
            })
            .collect();
        if files.iter().any(|(relative, _)| relative == SKILL_MD) {
            return Err(Error::Definition {
                kind: "skill",
                name: root.join(SKILL_MD).display().to_string(),
                reason: "a skill is a folder below the skills folder, not the folder itself"
                    .to_owned(),
            });
        }
        for dir in &skill_dirs {
            let skill_md_path = root.join(dir).join(SKILL_MD);
            let refused = |reason: String| Error::Definition {
                kind: "skill",
                name: skill_md_path.display().to_string(),
                reason,
            };
            let manifest = &files
                .iter()
                .find(|(relative, _)| *relative == format!("{dir}/{SKILL_MD}"))
                .map(|(_, bytes)| bytes.clone())
                .unwrap_or_default();
            let text = String::from_utf8(manifest.clone())
                .map_err(|_| refused("it is not UTF-8".to_owned()))?;
            let skill = Skill::from_skill_md(text).map_err(|e| match e {
                Error::Definition { reason, .. } => refused(reason),
                other => other,
            })?;
            let (prefix, folder) = dir.rsplit_once('/').unwrap_or(("", dir));
            if skill.name != folder {
                return Err(refused(format!(
                    "its name `{}` is not its folder's name `{folder}`",
                    skill.name
                )));
            }
            let mut skill = skill.under(prefix);
            let inside = format!("{dir}/");
            for (relative, bytes) in &files {
                if let Some(path) = relative.strip_prefix(&inside) {
                    if path != SKILL_MD {
                        skill = skill.with_file(path, bytes.clone());
                    }
                }
            }
            self.add(skill).map_err(|e| match e {
                Error::Definition { reason, .. } => Error::Definition {
                    kind: "skill",
                    name: root.join(dir).display().to_string(),
                    reason,
                },
                other => other,
            })?;
        }
        Ok(())
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `skills/list` entries, in the order of their URIs.
    pub fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`).
    pub fn get(&self, uri: &str) -> Option<&Value> {
        self.entries
            .binary_search_by(|e| e["uri"].as_str().unwrap_or_default().cmp(uri))
            .ok()
            .map(|at| &self.entries[at])
    }

    /// The `resources/list` entries of every file: a `SKILL.md` named and described as its
    /// skill, the others by their file names.
    pub fn resources(&self) -> &[Value] {
        &self.listing
    }

    /// The `resources/read` result of the file at `uri`: its text when it is UTF-8, else a
    /// base64 blob; `None` when no skill has that file.
    pub fn read(&self, uri: &str) -> Option<Value> {
        let file = self.files.get(uri)?;
        let part = match std::str::from_utf8(&file.bytes) {
            Ok(text) => json!({"uri": uri, "mimeType": file.mime_type, "text": text}),
            Err(_) => json!({"uri": uri, "mimeType": file.mime_type, "blob": base64(&file.bytes)}),
        };
        Some(json!({ "contents": [part] }))
    }

    /// The direct children of the directory at `uri` (a skill's root, or a folder in it,
    /// written without a trailing slash) as `resources/directory/read` lists them; `None`
    /// when it is not a directory of these skills.
    pub fn read_directory(&self, uri: &str) -> Option<Vec<Value>> {
        let children = self.directories.get(uri)?;
        Some(
            children
                .iter()
                .map(|(child, directory)| {
                    let name = child.rsplit('/').next().unwrap_or(child);
                    match directory {
                        true => {
                            json!({"uri": child, "name": name, "mimeType": DIRECTORY_MIME_TYPE})
                        }
                        false => {
                            let file = &self.files[child];
                            json!({"uri": child, "name": name, "mimeType": file.mime_type,
                                   "size": file.bytes.len()})
                        }
                    }
                })
                .collect(),
        )
    }
}
