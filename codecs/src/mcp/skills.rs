//! The Skills extension ([`EXTENSION`], SEP-2640): a server publishes Agent Skills, each a
//! directory of files served as resources (conventionally `skill://<skill-path>/<file>`),
//! with a [`Skill`] entry that carries the `SKILL.md` front matter verbatim and a manifest
//! of every file with its SHA-256 digest and size.
//!
//! The extension is declared in the server capabilities' `extensions` (in the stateless
//! era's `server/discover` and, as the SDKs do, in the handshake era's `initialize` result
//! alike); [`SkillsCapability::of`] reads it. Its methods are [`LIST`] (paginated, →
//! [`ListSkillsResult`]), [`GET`] (`{uri}` of a `SKILL.md`, → [`GetSkillResult`]) and, when
//! the server declares `directoryRead`, [`DIRECTORY_READ`] (→ [`ReadDirectoryResult`]).
//! Skill files are read with the ordinary `resources/read`. The specification is
//! `specification/stable/skills.mdx` in the `modelcontextprotocol/ext-skills` repository.
//!
//! ```
//! use switchboard_codecs::mcp::skills::{ListSkillsResult, SkillResources};
//!
//! let page: ListSkillsResult = serde_json::from_str(r#"{"skills": [{
//!     "uri": "skill://acme/billing/refunds/SKILL.md",
//!     "frontmatter": {"name": "refunds", "description": "Process refunds", "license": "MIT"},
//!     "resources": "dynamic"
//! }], "ttlMs": 300000, "cacheScope": "public"}"#)?;
//! let skill = &page.skills[0];
//! assert_eq!(skill.name(), "refunds");
//! assert_eq!(skill.path(), Some("acme/billing/refunds"));
//! assert_eq!(skill.resources, SkillResources::Dynamic);
//! assert_eq!(skill.frontmatter["license"], "MIT");
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Resource, ServerCapabilities};

/// The extension's identifier, the key of its settings in the capabilities' `extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// Request: one page of the skills a server serves (`{cursor?}` → [`ListSkillsResult`]).
pub const LIST: &str = "skills/list";
/// Request: the entry of one skill by the URI of its `SKILL.md` (`{uri}` →
/// [`GetSkillResult`]); an unknown skill is -32602.
pub const GET: &str = "skills/get";
/// Request: the direct children of a directory resource (`{uri, cursor?}` →
/// [`ReadDirectoryResult`]); only for a server that declares `directoryRead`.
pub const DIRECTORY_READ: &str = "resources/directory/read";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The URI scheme skills are conventionally served under.
pub const SCHEME: &str = "skill://";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// Per-skill limits every host must accept (and servers should stay within): files.
pub const MAX_FILES: usize = 512;
/// Per-skill limits every host must accept (and servers should stay within): bytes, the
/// sum of the files' sizes (16 MiB).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The extension's settings as a server declared them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkillsCapability {
    /// The server serves [`DIRECTORY_READ`].
    pub directory_read: bool,
}

impl SkillsCapability {
    /// The settings in `capabilities`, if the server declared the extension (its
    /// `extensions` has an object under [`EXTENSION`]).
    pub fn of(capabilities: &ServerCapabilities) -> Option<SkillsCapability> {
        let settings = capabilities.extra.get("extensions")?.get(EXTENSION)?;
        let settings = settings.as_object()?;
        Some(SkillsCapability {
            directory_read: settings
                .get("directoryRead")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

/// One skill, as `skills/list` lists it and `skills/get` returns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of its `SKILL.md`, readable with `resources/read`.
    pub uri: String,
    /// The `SKILL.md` YAML front matter as a JSON object, every field its author wrote;
    /// `name` and `description` are always there in an entry that keeps the rules.
    #[serde(default)]
    pub frontmatter: Map<String, Value>,
    /// Its files with their digests, or `"dynamic"`.
    #[serde(default)]
    pub resources: SkillResources,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Skill {
    /// The skill's name: the front matter's `name`, else the last segment of its path
    /// (which the rules make the same).
    pub fn name(&self) -> &str {
        match self.frontmatter.get("name").and_then(Value::as_str) {
            Some(name) => name,
            None => name_from_uri(&self.uri).unwrap_or_default(),
        }
    }

    /// The front matter's `description` (empty when it has none).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The `<skill-path>` of a `skill://` URI (`acme/billing/refunds` for
    /// `skill://acme/billing/refunds/SKILL.md`); `None` for another scheme or a URI that
    /// does not end in `/SKILL.md`.
    pub fn path(&self) -> Option<&str> {
        self.uri
            .strip_prefix(SCHEME)?
            .strip_suffix(SKILL_MD)?
            .strip_suffix('/')
            .filter(|path| !path.is_empty())
    }

    /// The skill's root directory: its `SKILL.md` URI without `/SKILL.md`, any scheme.
    pub fn root(&self) -> Option<&str> {
        self.uri
            .strip_suffix(SKILL_MD)?
            .strip_suffix('/')
            .filter(|root| !root.is_empty())
    }

    /// The manifest's entry for the file at `uri`, if the skill lists one.
    pub fn file(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            _ => None,
        }
    }

    /// The URI a relative reference in the skill's files points at, resolved against the
    /// skill's root as a filesystem path would be (`references/GUIDE.md`, `./a/../b.md`);
    /// `None` when it climbs out of the skill or the skill has no root.
    pub fn resolve(&self, reference: &str) -> Option<String> {
        let root = self.root()?;
        let mut segments: Vec<&str> = Vec::new();
        for segment in reference.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    segments.pop()?;
                }
                segment => segments.push(segment),
            }
        }
        (!segments.is_empty()).then(|| format!("{root}/{}", segments.join("/")))
    }
}

/// The skill name a `SKILL.md` URI ends with: the path segment before `/SKILL.md`.
pub fn name_from_uri(uri: &str) -> Option<&str> {
    if uri.contains(['?', '#']) {
        return None;
    }
    let dir = uri.strip_suffix(SKILL_MD)?.strip_suffix('/')?;
    let name = dir.rsplit('/').next()?;
    (!name.is_empty()).then_some(name)
}

/// A skill's files: the complete manifest, the marker `"dynamic"` (content generated, no
/// stable digests), or anything else, which makes the entry invalid: a host must not load
/// it, and a listing that has one is read all the same.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, once each.
    Files(Vec<SkillResource>),
    /// Generated content: no digests to check.
    Dynamic,
    /// Missing, or neither an array of files nor `"dynamic"` (kept as it came; `Null` when
    /// missing).
    Invalid(Value),
}

impl Default for SkillResources {
    fn default() -> Self {
        SkillResources::Invalid(Value::Null)
    }
}

const DYNAMIC: &str = "dynamic";

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str(DYNAMIC),
            SkillResources::Invalid(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match value {
            Value::String(marker) if marker == DYNAMIC => SkillResources::Dynamic,
            Value::Array(_) => match serde_json::from_value::<Vec<SkillResource>>(value.clone()) {
                Ok(files) => SkillResources::Files(files),
                Err(_) => SkillResources::Invalid(value),
            },
            other => SkillResources::Invalid(other),
        })
    }
}

/// One file of a skill: its URI, the SHA-256 of its raw bytes and their length.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `skills/list`. In the stateless era it also carries `ttlMs` and
/// `cacheScope` (kept in `extra`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills of this page.
    pub skills: Vec<Skill>,
    /// Where the next page starts; `None` on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `skills/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The skill's entry.
    pub skill: Skill,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `resources/directory/read`: the directory's direct children, files with
/// their resource metadata and subdirectories as [`DIRECTORY_MIME_TYPE`] resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The children of this page.
    pub resources: Vec<Resource>,
    /// Where the next page starts; `None` on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why a `SKILL.md` front matter cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FrontMatterError(pub String);

/// Splits a `SKILL.md` into its YAML front matter, as a JSON object (every field its author
/// wrote), and the Markdown body after it.
///
/// The file must open with a line `---` (after an optional byte-order mark) and the front
/// matter end with the next line `---`; it must be a YAML mapping with the string fields
/// `name` and `description` the Agent Skills format requires. Line ends may be `\r\n`.
///
/// ```
/// use switchboard_codecs::mcp::skills::front_matter;
///
/// let (fields, body) = front_matter(
///     "---\nname: git-workflow\ndescription: Branch and commit\nmetadata:\n  version: 2\n---\n# Git\n",
/// )?;
/// assert_eq!(fields["name"], "git-workflow");
/// assert_eq!(fields["metadata"]["version"], 2);
/// assert_eq!(body, "# Git\n");
/// # Ok::<(), switchboard_codecs::mcp::skills::FrontMatterError>(())
/// ```
pub fn front_matter(skill_md: &str) -> Result<(Map<String, Value>, &str), FrontMatterError> {
    let fail = |why: &str| Err(FrontMatterError(why.to_owned()));
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return fail("the file is empty; it must open with a `---` line");
    };
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return fail("the file must open with a `---` line, then the YAML front matter");
    }
    let start = first.len();
    let mut end = start;
    let mut closed = None;
    for line in lines {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            closed = Some(end + line.len());
            break;
        }
        end += line.len();
    }
    let Some(body_start) = closed else {
        return fail("the front matter has no closing `---` line");
    };
    let yaml = &text[start..end];
    if yaml.trim().is_empty() {
        return fail("the front matter is empty; it needs `name` and `description`");
    }
    let fields = match yaml_object(yaml)? {
        Some(fields) => fields,
        None => return fail("the front matter is not a YAML mapping of fields"),
    };
    for required in ["name", "description"] {
        match fields.get(required) {
            Some(Value::String(value)) if !value.trim().is_empty() => {}
            Some(Value::String(_)) => return fail(&format!("`{required}` is empty")),
            Some(_) => return fail(&format!("`{required}` is not a string")),
            None => return fail(&format!("`{required}` is missing")),
        }
    }
    Ok((fields, &text[body_start..]))
}

/// The YAML text as a JSON object; `None` when it is another kind of value.
fn yaml_object(yaml: &str) -> Result<Option<Map<String, Value>>, FrontMatterError> {
    let value: Value = yaml_serde::from_str(yaml)
        .map_err(|e| FrontMatterError(format!("the front matter is not valid YAML: {e}")))?;
    Ok(match value {
        Value::Object(fields) => Some(fields),
        _ => None,
    })
}

/// Why `name` is not a skill name as the Agent Skills format has them (1 to 64 lowercase
/// letters, digits and single hyphens, neither first nor last), if it is not.
pub fn name_problem(name: &str) -> Option<String> {
    let count = name.chars().count();
    if count == 0 || count > 64 {
        return Some(format!(
            "a skill name has 1 to 64 characters, `{name}` has {count}"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c == '-' || c.is_numeric() || (c.is_alphabetic() && !c.is_uppercase())))
    {
        return Some(format!(
            "{c:?} is not in a skill name (lowercase letters, digits and '-')"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some(format!(
            "a skill name neither starts nor ends with '-', nor has two in a row: `{name}`"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_round_trips_with_what_it_does_not_know() {
        let wire = json!({
            "uri": "skill://git-workflow/SKILL.md",
            "frontmatter": {"name": "git-workflow", "description": "Branches",
                            "metadata": {"version": "2"}},
            "resources": [{"uri": "skill://git-workflow/SKILL.md",
                           "digest": "sha256:00", "size": 12, "future": 1}],
            "_meta": {"x": 1},
            "later": true
        });
        let skill: Skill = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&skill).unwrap(), wire);
        assert_eq!(skill.name(), "git-workflow");
        assert_eq!(skill.description(), "Branches");
        assert_eq!(
            skill.file("skill://git-workflow/SKILL.md").unwrap().size,
            12
        );
        assert!(skill.file("skill://git-workflow/other.md").is_none());
    }

    #[test]
    fn resources_that_are_neither_files_nor_dynamic_are_invalid_not_an_error() {
        for bad in [
            json!(null),
            json!("static"),
            json!({"a": 1}),
            json!([{"uri": 1}]),
        ] {
            let skill: Skill = serde_json::from_value(json!({
                "uri": "skill://a/SKILL.md",
                "frontmatter": {"name": "a", "description": "d"},
                "resources": bad.clone(),
            }))
            .unwrap();
            assert_eq!(skill.resources, SkillResources::Invalid(bad));
        }
        let missing: Skill = serde_json::from_value(json!({"uri": "skill://a/SKILL.md"})).unwrap();
        assert_eq!(missing.resources, SkillResources::Invalid(Value::Null));
        assert_eq!(
            missing.name(),
            "a",
            "the name comes from the URI without front matter"
        );
    }

    #[test]
    fn paths_roots_and_relative_references() {
        let skill = Skill {
            uri: "skill://acme/billing/refunds/SKILL.md".into(),
            ..Skill::default()
        };
        assert_eq!(skill.path(), Some("acme/billing/refunds"));
        assert_eq!(skill.root(), Some("skill://acme/billing/refunds"));
        assert_eq!(
            skill.resolve("references/GUIDE.md").as_deref(),
            Some("skill://acme/billing/refunds/references/GUIDE.md")
        );
        assert_eq!(
            skill.resolve("./a/../b.md").as_deref(),
            Some("skill://acme/billing/refunds/b.md")
        );
        assert_eq!(skill.resolve("../x.md"), None);
        let other = Skill {
            uri: "github://o/r/skills/refunds/SKILL.md".into(),
            ..Skill::default()
        };
        assert_eq!(other.path(), None);
        assert_eq!(other.root(), Some("github://o/r/skills/refunds"));
        assert_eq!(name_from_uri(&other.uri), Some("refunds"));
        for not_a_skill in [
            "skill://a/README.md",
            "skill://SKILL.md",
            "skill://a?x=/b/SKILL.md",
        ] {
            assert_eq!(name_from_uri(not_a_skill), None, "{not_a_skill}");
        }
    }

    #[test]
    fn the_capability_is_read_from_extensions() {
        let caps = |v: Value| -> ServerCapabilities { serde_json::from_value(v).unwrap() };
        assert_eq!(SkillsCapability::of(&caps(json!({"tools": {}}))), None);
        assert_eq!(
            SkillsCapability::of(&caps(json!({"extensions": {EXTENSION: {}}}))),
            Some(SkillsCapability::default())
        );
        assert_eq!(
            SkillsCapability::of(&caps(
                json!({"extensions": {EXTENSION: {"directoryRead": true}}})
            )),
            Some(SkillsCapability {
                directory_read: true
            })
        );
        assert_eq!(
            SkillsCapability::of(&caps(json!({"extensions": {EXTENSION: true}}))),
            None,
            "settings are an object"
        );
    }

    #[test]
    fn front_matter_is_every_field_verbatim() {
        let (fields, body) = front_matter(
            "\u{feff}---\r\nname: pdf\r\ndescription: \"PDFs: fill, merge\"\r\nlicense: MIT\r\n\
             allowed-tools: [Read, Bash]\r\nmetadata:\r\n  version: 2.1\r\n---\r\nBody\r\n",
        )
        .unwrap();
        assert_eq!(
            Value::Object(fields),
            json!({"name": "pdf", "description": "PDFs: fill, merge", "license": "MIT",
                   "allowed-tools": ["Read", "Bash"], "metadata": {"version": 2.1}})
        );
        assert_eq!(body, "Body\r\n");
        let (_, empty) = front_matter("---\nname: a\ndescription: b\n---").unwrap();
        assert_eq!(empty, "");
    }

    #[test]
    fn a_malformed_front_matter_says_what_is_wrong() {
        for (text, why) in [
            ("", "empty"),
            ("# Title\n", "open with a `---` line"),
            ("---\nname: a\ndescription: b\n", "no closing"),
            ("---\n- a\n- b\n---\n", "not a YAML mapping"),
            ("---\n---\n", "the front matter is empty"),
            ("---\njust text\n---\n", "not a YAML mapping"),
            ("---\nname: [a\n---\n", "not valid YAML"),
            ("---\ndescription: b\n---\n", "`name` is missing"),
            ("---\nname: a\n---\n", "`description` is missing"),
            (
                "---\nname: 3\ndescription: b\n---\n",
                "`name` is not a string",
            ),
            (
                "---\nname: a\ndescription: ''\n---\n",
                "`description` is empty",
            ),
        ] {
            let error = front_matter(text).unwrap_err();
            assert!(error.0.contains(why), "{text:?}: {error}");
        }
    }

    #[test]
    fn skill_names_follow_the_agent_skills_rules() {
        for good in ["a", "pdf-processing", "v2", "données", &"a".repeat(64)] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "PDF",
            "a_b",
            "a b",
            "-a",
            "a-",
            "a--b",
            "a/b",
            &"a".repeat(65),
        ] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }
}
