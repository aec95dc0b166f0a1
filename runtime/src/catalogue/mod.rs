//! One catalogue of the tools of every server: unique, LLM-safe names that map back exactly
//! to (server, original tool name), filtered by each server's allow/deny globs.
//!
//! The runtime builds a new [`Catalogue`] from every enabled server's last known `tools/list`
//! whenever one of them changes; a catalogue is an immutable snapshot, shared in an `Arc`
//! and stamped with a version. The call path turns the name a model used back into a server
//! and tool with [`Catalogue::resolve`], which is one hash lookup.
//!
//! Names follow [`Naming`]. With the default (`conditional`, separator `__`), server `files`
//! listing `read`, `search`, `my.tool/v2` and server `web` (prefix `w`) listing `fetch`,
//! `search` give:
//!
//! ```text
//! my_tool_v2     → (files, my.tool/v2)  sanitised
//! read           → (files, read)
//! files__search  → (files, search)      `search` is on both servers: both are prefixed
//! fetch          → (web, fetch)
//! w__search      → (web, search)
//! ```
//!
//! Calls may also use a prefixed form in every mode (`w__fetch`, or `files__my.tool/v2` as
//! listed). Names are at most 64 characters of `[A-Za-z0-9_-]`; a name that had to be
//! shortened, or that sanitising made equal to another, ends in `_` and a stable 8-digit hash.

mod builder;
mod glob;
mod names;
pub mod search;

pub use builder::CatalogueBuilder;

pub(crate) use glob::tool_allowed;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use switchboard_codecs::mcp::Tool;

use search::{SearchState, SegmentCache};

/// How catalogue names are made from tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum NamingMode {
    /// A tool keeps its name unless another enabled server has a tool of the same sanitised
    /// name; then every tool of that name is prefixed.
    #[default]
    Conditional,
    /// Every tool is prefixed with its server's prefix.
    Always,
    /// Names are never prefixed; two servers offering the same name is an error naming both.
    Never,
}

/// Catalogue naming: a mode and the separator between prefix and tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Naming {
    /// The mode.
    pub mode: NamingMode,
    /// The separator (default `__`). In catalogue names, characters outside `[A-Za-z0-9_-]`
    /// are replaced with `_`, as in tool names; calls may use it as written.
    pub separator: String,
}

impl Default for Naming {
    fn default() -> Self {
        Naming {
            mode: NamingMode::Conditional,
            separator: "__".to_owned(),
        }
    }
}

impl Naming {
    /// A naming with this mode and the default separator.
    pub fn new(mode: NamingMode) -> Self {
        Naming {
            mode,
            ..Naming::default()
        }
    }

    /// Sets the separator.
    pub fn with_separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }
}

/// One server's input to [`Catalogue::build`]: its last known tool list and its settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServerTools<'a> {
    /// The server's name.
    pub(crate) server: &'a str,
    /// The configured prefix; the server's name when `None`.
    pub(crate) prefix: Option<&'a str>,
    /// Allow globs over original tool names (empty: allow all).
    pub(crate) allow: &'a [String],
    /// Deny globs over original tool names.
    pub(crate) deny: &'a [String],
    /// The tools as the server last listed them.
    pub(crate) tools: &'a [Tool],
    /// The list `tools` is, when it is one shared list: the search index reuses what it
    /// built for a server as long as its list is the same one.
    pub(crate) source: Option<&'a Arc<[Tool]>>,
    /// Whether its tools are offered now (the server is ready, or restarting: see
    /// [`ServerStatus::offers_entries`](crate::ServerStatus::offers_entries)). The last known
    /// tools of a server that is not (it gave up) still take part in naming, so names do not
    /// change when it is started again, but they are neither listed nor resolvable.
    pub(crate) available: bool,
}

/// A tool in the catalogue.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogueEntry {
    /// The catalogue name: what a model sees and calls.
    pub name: String,
    /// The server offering it.
    pub server: Arc<str>,
    /// The tool as the server listed it, under its original name.
    pub tool: Tool,
}

/// A name more than one server offers (after sanitising), with those servers in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Collision {
    /// The name the servers share, sanitised.
    pub name: String,
    /// The servers offering it, in name order.
    pub servers: Vec<Arc<str>>,
}

/// Why [`Catalogue::resolve`] found no tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unresolved {
    /// No tool has this name.
    Unknown,
    /// Several servers offer this name and it was not made unique: call a prefixed form.
    Ambiguous(Collision),
}

/// What a lookup key leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Entry(usize),
    Collision(usize),
}

/// The tools of every server under unique names; an immutable snapshot, cheap to share in
/// an `Arc`.
///
/// Ordered by server name, then original tool name.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    version: u64,
    /// Listed entries first (`..listed`), then those only reachable by a prefixed form
    /// (`never` mode collisions).
    entries: Vec<CatalogueEntry>,
    listed: usize,
    /// Plain names several servers share (`conditional` and `never` modes), available or not.
    shared: Vec<Collision>,
    /// Whether `shared` are reported by [`Catalogue::collisions`] (`never` mode).
    report_collisions: bool,
    /// Catalogue names and aliases.
    lookup: HashMap<String, Slot>,
    /// The search index, built on the first search.
    search: SearchState,
}

/// A tool on its way into the catalogue.
struct Candidate<'a> {
    server: Arc<str>,
    /// The prefix as configured (or the server's name), unsanitised.
    prefix: &'a str,
    /// The same, sanitised.
    safe_prefix: Arc<str>,
    tool: &'a Tool,
    available: bool,
}

impl Catalogue {
    /// Builds the catalogue of these servers' tools.
    ///
    /// Tools a server's allow/deny globs reject are left out. A tool listed twice by one
    /// server is taken once (the first). Never fails: problems show up as
    /// [`collisions`](Self::collisions) and hashed names.
    pub(crate) fn build(servers: &[ServerTools<'_>], naming: &Naming, version: u64) -> Catalogue {
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let mut candidates: Vec<Candidate<'_>> = Vec::new();
        for s in servers {
            let server: Arc<str> = Arc::from(s.server);
            let prefix = s.prefix.unwrap_or(s.server);
            let safe_prefix: Arc<str> = Arc::from(names::sanitise(prefix));
            for tool in s.tools {
                if tool_allowed(s.allow, s.deny, &tool.name)
                    && seen.insert((s.server, tool.name.as_str()))
                {
                    candidates.push(Candidate {
                        server: Arc::clone(&server),
                        prefix,
                        safe_prefix: Arc::clone(&safe_prefix),
                        tool,
                        available: s.available,
                    });
                }
            }
        }
        candidates.sort_by(|a, b| (&*a.server, &a.tool.name).cmp(&(&*b.server, &b.tool.name)));

        let separator = names::sanitise(&naming.separator);
        let plain: Vec<String> = candidates
            .iter()
            .map(|c| names::sanitise(&c.tool.name))
            .collect();

        // Which servers offer each sanitised name (candidates are in server order).
        let mut servers_of: HashMap<&str, Vec<Arc<str>>> = HashMap::new();
        for (c, name) in candidates.iter().zip(&plain) {
            let list = servers_of.entry(name.as_str()).or_default();
            if list.last() != Some(&c.server) {
                list.push(Arc::clone(&c.server));
            }
        }
        let is_shared = |name: &str| servers_of.get(name).is_some_and(|s| s.len() > 1);

        // The name each tool would like, and whether it is listed.
        let mut wanted: Vec<names::Wanted<'_>> = Vec::with_capacity(candidates.len());
        let mut listed: Vec<bool> = Vec::with_capacity(candidates.len());
        for (c, name) in candidates.iter().zip(&plain) {
            let shared = is_shared(name);
            let (prefixed, list) = match naming.mode {
                NamingMode::Always => (true, true),
                NamingMode::Conditional => (shared, true),
                NamingMode::Never => (shared, !shared),
            };
            let (name, exact) = if prefixed {
                (
                    prefixed_name(&c.safe_prefix, &separator, name),
                    *c.safe_prefix == *c.prefix
                        && separator == naming.separator
                        && *name == c.tool.name,
                )
            } else {
                (name.clone(), *name == c.tool.name)
            };
            wanted.push(names::Wanted {
                name,
                exact,
                server: &c.server,
                original: &c.tool.name,
            });
            listed.push(list);
        }
        let final_names = names::unique(&wanted);

        // Listed entries first, then the unlisted; each keeps catalogue order. Tools of
        // unavailable servers were only needed for naming.
        let available = |i: &usize| candidates[*i].available;
        let mut order: Vec<usize> = (0..candidates.len())
            .filter(|&i| listed[i])
            .filter(available)
            .collect();
        let listed_len = order.len();
        order.extend(
            (0..candidates.len())
                .filter(|&i| !listed[i])
                .filter(available),
        );
        let entries: Vec<CatalogueEntry> = order
            .iter()
            .map(|&i| CatalogueEntry {
                name: final_names[i].clone(),
                server: Arc::clone(&candidates[i].server),
                tool: candidates[i].tool.clone(),
            })
            .collect();

        let mut shared: Vec<Collision> = match naming.mode {
            NamingMode::Always => Vec::new(),
            NamingMode::Conditional | NamingMode::Never => servers_of
                .iter()
                .filter(|(_, servers)| servers.len() > 1)
                .map(|(name, servers)| Collision {
                    name: (*name).to_owned(),
                    servers: servers.clone(),
                })
                .collect(),
        };
        shared.sort_by(|a, b| a.name.cmp(&b.name));

        // Aliases: the prefixed form exactly as configured and listed, then sanitised.
        let aliases = [
            order
                .iter()
                .map(|&i| {
                    let c = &candidates[i];
                    format!("{}{}{}", c.prefix, naming.separator, c.tool.name)
                })
                .collect(),
            order
                .iter()
                .map(|&i| prefixed_name(&candidates[i].safe_prefix, &separator, &plain[i]))
                .collect(),
        ];
        let lookup = index(&entries, &shared, aliases);
        let sources: Vec<(Arc<str>, Arc<[Tool]>)> = servers
            .iter()
            .filter(|s| s.available)
            .filter_map(|s| Some((Arc::from(s.server), Arc::clone(s.source?))))
            .collect();

        Catalogue {
            version,
            entries,
            listed: listed_len,
            shared,
            report_collisions: naming.mode == NamingMode::Never,
            lookup,
            search: SearchState::new(None, sources),
        }
    }

    /// The same catalogue, its search index reusing (and adding to) the segments of `cache`.
    pub(crate) fn with_search_cache(mut self, cache: Arc<SegmentCache>) -> Catalogue {
        let sources = std::mem::take(&mut self.search).into_sources();
        self.search = SearchState::new(Some(cache), sources);
        self
    }

    /// The listed entries.
    pub(crate) fn listed_entries(&self) -> &[CatalogueEntry] {
        &self.entries[..self.listed]
    }

    /// The search index and how to build it.
    pub(crate) fn search_state(&self) -> &SearchState {
        &self.search
    }

    /// The version this snapshot was built as; a later snapshot has a greater version.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether `other` offers the same tools under the same names and aliases, with the same
    /// collisions, whatever the versions.
    pub(crate) fn same_entries(&self, other: &Catalogue) -> bool {
        self.listed == other.listed
            && self.report_collisions == other.report_collisions
            && self.entries == other.entries
            && self.shared == other.shared
            && self.lookup == other.lookup
    }

    /// How many tools are listed.
    pub fn len(&self) -> usize {
        self.listed
    }

    /// Whether no tool is listed.
    pub fn is_empty(&self) -> bool {
        self.listed == 0
    }

    /// The listed tools, by server name then original tool name.
    ///
    /// In `never` mode the tools of a colliding name are not listed (see
    /// [`collisions`](Self::collisions)) but can still be called by their prefixed form.
    pub fn iter(&self) -> impl Iterator<Item = &CatalogueEntry> {
        self.entries[..self.listed].iter()
    }

    /// The listed tools of one server, by original tool name.
    pub fn for_server<'a>(
        &'a self,
        server: &'a str,
    ) -> impl Iterator<Item = &'a CatalogueEntry> + 'a {
        self.iter().filter(move |entry| &*entry.server == server)
    }

    /// The tool called `name`: a catalogue name, or a prefixed form
    /// (`<prefix><separator><tool>` with the tool name sanitised or exactly as listed).
    pub fn get(&self, name: &str) -> Option<&CatalogueEntry> {
        match self.lookup.get(name) {
            Some(Slot::Entry(at)) => self.entries.get(*at),
            Some(Slot::Collision(_)) | None => None,
        }
    }

    /// Like [`get`](Self::get), but says why nothing was found: a plain name several servers
    /// share is [`Unresolved::Ambiguous`], naming them.
    pub fn resolve(&self, name: &str) -> Result<&CatalogueEntry, Unresolved> {
        match self.lookup.get(name) {
            Some(Slot::Entry(at)) => self.entries.get(*at).ok_or(Unresolved::Unknown),
            Some(Slot::Collision(at)) => Err(self
                .shared
                .get(*at)
                .cloned()
                .map_or(Unresolved::Unknown, Unresolved::Ambiguous)),
            None => Err(Unresolved::Unknown),
        }
    }

    /// Names left out of the catalogue because several servers offer them (`never` mode
    /// only; the other modes prefix instead), by name.
    pub fn collisions(&self) -> &[Collision] {
        if self.report_collisions {
            &self.shared
        } else {
            &[]
        }
    }
}

/// The lookup table, strongest claim first: catalogue names, then plain names several servers
/// share, then each level of `aliases` (one alias per entry, in entry order). An alias two
/// entries claim at the same level leads to neither, at any level.
fn index(
    entries: &[CatalogueEntry],
    shared: &[Collision],
    aliases: [Vec<String>; 2],
) -> HashMap<String, Slot> {
    let mut lookup: HashMap<String, Slot> = HashMap::new();
    for (at, entry) in entries.iter().enumerate() {
        lookup.insert(entry.name.clone(), Slot::Entry(at));
    }
    for (at, collision) in shared.iter().enumerate() {
        lookup
            .entry(collision.name.clone())
            .or_insert(Slot::Collision(at));
    }
    let mut blocked: HashSet<String> = HashSet::new();
    for level in aliases {
        let mut claims: HashMap<String, Option<usize>> = HashMap::new();
        for (at, alias) in level.into_iter().enumerate() {
            if lookup.contains_key(&alias) || blocked.contains(&alias) {
                continue;
            }
            claims
                .entry(alias)
                .and_modify(|claim| {
                    if *claim != Some(at) {
                        *claim = None;
                    }
                })
                .or_insert(Some(at));
        }
        for (alias, claim) in claims {
            match claim {
                Some(at) => {
                    lookup.insert(alias, Slot::Entry(at));
                }
                None => {
                    blocked.insert(alias);
                }
            }
        }
    }
    lookup
}

/// `<prefix><separator><tool>`, all three already sanitised.
fn prefixed_name(prefix: &str, separator: &str, tool: &str) -> String {
    let mut name = String::with_capacity(prefix.len() + separator.len() + tool.len());
    name.push_str(prefix);
    name.push_str(separator);
    name.push_str(tool);
    name
}

#[cfg(test)]
mod tests;
