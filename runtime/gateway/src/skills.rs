//! Skills (the extension `io.modelcontextprotocol/skills`) aggregated from every upstream
//! that serves them, and the requests for them routed back.
//!
//! A skill is the pair of its server and its URI: two upstreams may both serve
//! `skill://refunds/SKILL.md`, and those are two skills. The gateway keeps them apart as the
//! catalogue keeps tools apart, under the runtime's naming ([`NamingMode`]): a skill keeps
//! its URI unless a skill of the same name comes from another upstream (`conditional`, the
//! default), always (`always`), or never (`never`; of two upstreams serving one URI the
//! first, in server order, is listed). A skill that is renamed gets its server's prefix
//! ([`ServerHandle::prefix`]) as the first segment of its path: `skill://refunds/SKILL.md`
//! from `billing` is `skill://billing/refunds/SKILL.md`. The skill's name, the last segment
//! of its path, stays what its front matter says, so the entry, its digests and its files
//! stay what the upstream served; only the URIs of the entry and of its files are rewritten,
//! and a front request for one of them (`resources/read`, `skills/get`,
//! `resources/directory/read`) is sent to its upstream with the URI the upstream gave.
//!
//! A front URI is routed by the longest listed skill root it is under; else, in the
//! `skill://<prefix>/…` form, to the upstream of that prefix (a skill it serves but does not
//! list, as the extension allows); else, with one upstream serving skills, to that one. A
//! URI no skill claims is an ordinary resource, routed as the catalogue routes resources.
//! URIs under other schemes than `skill://` are never rewritten.
//!
//! The listing is a snapshot, like the gateway's other lists, fetched again (every page of
//! every upstream, at once) when the runtime's catalogue changes; an upstream that is
//! restarting, or whose listing fails, keeps its last listing. When the aggregated listing
//! changes, front clients hear `notifications/resources/list_changed`: skill files are
//! resources, and the extension has no notification of its own.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::Value;
use switchboard::model::{Skill, SKILL_MD};
use switchboard::{ErrorKind, NamingMode, Runtime, ServerHandle};
use switchboard_server::HandlerError;

use crate::error::to_front;
use crate::forward::parse;

/// The URI scheme whose URIs are rewritten.
const SCHEME: &str = switchboard::model::SKILL_SCHEME;

/// How long one upstream's `skills/list` (every page) may take before the gateway keeps its
/// last listing: a hung upstream must not hold up the others' skills.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The aggregated skills: what `skills/list` answers, and how to route their URIs back.
#[derive(Debug, Default)]
pub(crate) struct Skills {
    /// The `skills/list` entries, URIs rewritten, in server order then the upstream's.
    entries: Vec<Value>,
    /// Every listed skill's root (its `SKILL.md` URI without `/SKILL.md`) as the front sees
    /// it, and where it comes from.
    roots: Vec<(String, Route)>,
    /// The prefix of every upstream that serves skills, and that upstream.
    prefixes: HashMap<String, String>,
    /// Each upstream's listing as it gave it, kept while it restarts.
    listings: BTreeMap<String, Vec<Skill>>,
}

/// Where a front URI goes: the upstream, and the prefix the gateway put in its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) server: String,
    prefix: Option<String>,
}

impl Route {
    /// The URI the upstream gave for `front`.
    pub(crate) fn upstream_uri(&self, front: &str) -> String {
        match &self.prefix {
            Some(prefix) => front
                .strip_prefix(SCHEME)
                .and_then(|rest| rest.strip_prefix(prefix.as_str()))
                .and_then(|rest| rest.strip_prefix('/'))
                .map_or_else(|| front.to_owned(), |rest| format!("{SCHEME}{rest}")),
            None => front.to_owned(),
        }
    }

    /// The URI the front sees for `upstream`, one the upstream gave.
    pub(crate) fn front_uri(&self, upstream: &str) -> String {
        match (&self.prefix, upstream.strip_prefix(SCHEME)) {
            (Some(prefix), Some(rest)) => format!("{SCHEME}{prefix}/{rest}"),
            _ => upstream.to_owned(),
        }
    }

    /// Rewrites the string at `pointer` in `value`, if there is one, to the front's URI.
    fn rewrite(&self, value: &mut Value, pointer: &str) {
        if let Some(uri) = value.pointer_mut(pointer) {
            if let Some(upstream) = uri.as_str() {
                *uri = Value::String(self.front_uri(upstream));
            }
        }
    }

    /// A skill entry as the front sees it: its URI and its files' URIs rewritten.
    pub(crate) fn front_entry(&self, skill: &Skill) -> Value {
        let mut entry = serde_json::to_value(skill).unwrap_or(Value::Null);
        self.rewrite(&mut entry, "/uri");
        if let Some(files) = entry.get_mut("resources").and_then(Value::as_array_mut) {
            for file in files {
                self.rewrite(file, "/uri");
            }
        }
        entry
    }

    /// A `resources/read` result as the front sees it.
    pub(crate) fn front_contents(&self, mut result: Value) -> Value {
        if let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) {
            for part in contents {
                self.rewrite(part, "/uri");
            }
        }
        result
    }

    /// A directory's children as the front sees them.
    pub(crate) fn front_children(&self, children: Vec<Value>) -> Vec<Value> {
        children
            .into_iter()
            .map(|mut child| {
                self.rewrite(&mut child, "/uri");
                child
            })
            .collect()
    }
}

impl Skills {
    /// The `skills/list` entries.
    pub(crate) fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// Whether the front's listing differs.
    pub(crate) fn changed_since(&self, before: &Skills) -> bool {
        self.entries != before.entries
    }

    /// Lists every upstream's skills again, keeping the last listing of one that cannot
    /// list now.
    pub(crate) async fn list(runtime: &Runtime, before: &Skills) -> Skills {
        let servers: Vec<ServerHandle> = runtime
            .servers()
            .into_iter()
            .filter(|server| {
                server.status().offers_entries()
                    && (server.skills_capability().is_some()
                        || before.listings.contains_key(server.name()))
            })
            .collect();
        let listings = futures_util::future::join_all(servers.iter().map(|server| async move {
            if !server.status().is_ready() {
                return None;
            }
            // Back from a restart without the extension: it serves none any more.
            if server.skills_capability().is_none() {
                return Some(Vec::new());
            }
            match tokio::time::timeout(LIST_TIMEOUT, server.list_skills()).await {
                Ok(Ok(skills)) => Some(skills),
                Ok(Err(e)) => {
                    tracing::warn!(server = %server.name(), error = %e, "skills not listed: kept as they were");
                    None
                }
                Err(_) => {
                    tracing::warn!(server = %server.name(), "skills/list timed out: kept as they were");
                    None
                }
            }
        }))
        .await;
        let mut upstreams = Vec::with_capacity(servers.len());
        for (server, listing) in servers.iter().zip(listings) {
            let skills = match listing {
                Some(skills) => skills,
                None => before
                    .listings
                    .get(server.name())
                    .cloned()
                    .unwrap_or_default(),
            };
            upstreams.push((
                server.name().to_owned(),
                uri_segment(server.prefix()),
                skills,
            ));
        }
        Skills::build(runtime.naming().mode, upstreams)
    }

    /// The aggregated skills of `upstreams` (name, prefix, listing), named by `mode`.
    pub(crate) fn build(mode: NamingMode, upstreams: Vec<(String, String, Vec<Skill>)>) -> Skills {
        // Which names more than one upstream serves.
        let mut servers_of: HashMap<&str, Vec<&str>> = HashMap::new();
        for (server, _, skills) in &upstreams {
            for skill in skills {
                let servers = servers_of.entry(skill.name()).or_default();
                if !servers.contains(&server.as_str()) {
                    servers.push(server);
                }
            }
        }
        let mut taken: HashMap<String, &str> = HashMap::new();
        let mut entries = Vec::new();
        let mut roots = Vec::new();
        for (server, prefix, skills) in &upstreams {
            for skill in skills {
                let prefixed = match mode {
                    NamingMode::Always => true,
                    NamingMode::Never => false,
                    _ => servers_of.get(skill.name()).is_some_and(|s| s.len() > 1),
                };
                let route = Route {
                    server: server.clone(),
                    prefix: prefixed.then(|| prefix.clone()),
                };
                let front = route.front_uri(&skill.uri);
                if let Some(first) = taken.get(&front) {
                    tracing::warn!(
                        uri = %front, listed = %first, left_out = %server,
                        "two upstreams serve one skill URI and naming is `never`: only the first is listed"
                    );
                    continue;
                }
                let root = front
                    .strip_suffix(SKILL_MD)
                    .and_then(|root| root.strip_suffix('/'))
                    .unwrap_or(&front)
                    .to_owned();
                entries.push(route.front_entry(skill));
                roots.push((root, route));
                taken.insert(front, server);
            }
        }
        // Longest first: a nested skill's root wins over its enclosing skill's.
        roots.sort_by_key(|(root, _)| std::cmp::Reverse(root.len()));
        let mut prefixes = HashMap::new();
        for (server, prefix, _) in &upstreams {
            prefixes
                .entry(prefix.clone())
                .or_insert_with(|| server.clone());
        }
        Skills {
            entries,
            roots,
            prefixes,
            listings: upstreams
                .into_iter()
                .map(|(server, _, skills)| (server, skills))
                .collect(),
        }
    }

    /// `resource`, which `server` lists, as the front sees it: a file of a skill whose
    /// URIs are rewritten is listed under its rewritten URI.
    pub(crate) fn front_resource(&self, server: &str, resource: &Value) -> Value {
        let mut resource = resource.clone();
        let Some(uri) = resource["uri"].as_str() else {
            return resource;
        };
        let route = self.roots.iter().find(|(root, route)| {
            route.server == server
                && route.prefix.is_some()
                && route
                    .upstream_uri(root)
                    .strip_prefix(SCHEME)
                    .zip(uri.strip_prefix(SCHEME))
                    .is_some_and(|(root, uri)| {
                        uri.strip_prefix(root)
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                    })
        });
        if let Some((_, route)) = route {
            route.rewrite(&mut resource, "/uri");
        }
        resource
    }

    /// Where `uri` goes because a listed skill, or the prefixed form, claims it.
    pub(crate) fn claimed(&self, uri: &str) -> Option<Route> {
        let listed = self.roots.iter().find(|(root, _)| {
            uri.strip_prefix(root.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        if let Some((_, route)) = listed {
            return Some(route.clone());
        }
        let rest = uri.strip_prefix(SCHEME)?;
        let (segment, path) = rest.split_once('/')?;
        let server = self.prefixes.get(segment)?;
        (!path.is_empty()).then(|| Route {
            server: server.clone(),
            prefix: Some(segment.to_owned()),
        })
    }

    /// Where a `skill://` URI no skill claims goes: to the one upstream serving skills, if
    /// there is one, under its own URIs.
    pub(crate) fn sole(&self, uri: &str) -> Option<Route> {
        if !uri.starts_with(SCHEME) || self.listings.len() != 1 {
            return None;
        }
        let server = self.listings.keys().next()?;
        Some(Route {
            server: server.clone(),
            prefix: None,
        })
    }

    /// Where a skills request (`skills/get`, `resources/directory/read`) for `uri` goes.
    pub(crate) fn route(&self, uri: &str) -> Option<Route> {
        self.claimed(uri).or_else(|| self.sole(uri))
    }
}

/// A server's prefix as one segment of a URI's path: what RFC 3986 leaves unreserved kept,
/// anything else `-`.
fn uri_segment(prefix: &str) -> String {
    prefix
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '.' | '_' | '~' => c,
            _ => '-',
        })
        .collect()
}

/// `skills/get` of `uri` (the front's) at its upstream, the entry rewritten.
pub(crate) async fn get(runtime: &Runtime, route: Route, uri: &str) -> Result<Value, HandlerError> {
    let server = upstream(runtime, &route, uri)?;
    match server.get_skill(&route.upstream_uri(uri)).await {
        Ok(skill) => Ok(route.front_entry(&skill)),
        Err(e) if matches!(e.kind(), ErrorKind::UnknownSkill { .. }) => {
            Err(HandlerError::unknown_skill(uri))
        }
        Err(e) => Err(to_front(&e, uri)),
    }
}

/// `resources/directory/read` of `uri` (the front's) at its upstream, the children
/// rewritten.
pub(crate) async fn read_directory(
    runtime: &Runtime,
    route: Route,
    uri: &str,
) -> Result<Vec<Value>, HandlerError> {
    let server = upstream(runtime, &route, uri)?;
    match server.read_directory(&route.upstream_uri(uri)).await {
        Ok(children) => Ok(route.front_children(
            children
                .iter()
                .filter_map(|child| serde_json::to_value(child).ok())
                .collect(),
        )),
        Err(e) if matches!(e.kind(), ErrorKind::NotSupported { .. }) => Err(
            HandlerError::invalid_params(format!(
                "{uri} is not a directory resource the gateway can read: its server, {}, does not serve resources/directory/read",
                route.server
            )),
        ),
        Err(e) => Err(to_front(&e, uri)),
    }
}

/// `resources/read` of a skill file `uri` (the front's) at its upstream, the contents'
/// URIs rewritten.
pub(crate) async fn read_file(
    runtime: &Runtime,
    route: Route,
    uri: &str,
) -> Result<Value, HandlerError> {
    let server = upstream(runtime, &route, uri)?;
    let raw = server
        .read_resource_raw(&route.upstream_uri(uri))
        .await
        .map_err(|e| to_front(&e, uri))?;
    Ok(route.front_contents(parse(raw.get(), uri)?))
}

fn upstream(runtime: &Runtime, route: &Route, uri: &str) -> Result<ServerHandle, HandlerError> {
    runtime
        .server(&route.server)
        .map_err(|_| HandlerError::unknown_skill(uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(uri: &str, name: &str) -> Skill {
        serde_json::from_value(serde_json::json!({
            "uri": uri,
            "frontmatter": {"name": name, "description": "d"},
            "resources": [
                {"uri": uri, "digest": "sha256:00", "size": 1},
                {"uri": uri.replace("SKILL.md", "ref/a.md"), "digest": "sha256:01", "size": 2},
            ],
        }))
        .unwrap()
    }

    fn upstreams() -> Vec<(String, String, Vec<Skill>)> {
        vec![
            (
                "billing".into(),
                "bill".into(),
                vec![
                    skill("skill://refunds/SKILL.md", "refunds"),
                    skill("skill://acme/invoices/SKILL.md", "invoices"),
                ],
            ),
            (
                "support".into(),
                "support".into(),
                vec![skill("skill://refunds/SKILL.md", "refunds")],
            ),
        ]
    }

    fn uris(skills: &Skills) -> Vec<&str> {
        skills
            .entries()
            .iter()
            .filter_map(|e| e["uri"].as_str())
            .collect()
    }

    #[test]
    fn only_colliding_names_are_prefixed_by_default() {
        let skills = Skills::build(NamingMode::Conditional, upstreams());
        assert_eq!(
            uris(&skills),
            [
                "skill://bill/refunds/SKILL.md",
                "skill://acme/invoices/SKILL.md",
                "skill://support/refunds/SKILL.md"
            ]
        );
        // The files are rewritten with the entry; the front matter is as served.
        let first = &skills.entries()[0];
        assert_eq!(
            first["resources"][1]["uri"],
            "skill://bill/refunds/ref/a.md"
        );
        assert_eq!(first["frontmatter"]["name"], "refunds");
    }

    #[test]
    fn always_prefixes_every_skill_and_never_keeps_the_first_of_one_uri() {
        let always = Skills::build(NamingMode::Always, upstreams());
        assert_eq!(
            uris(&always),
            [
                "skill://bill/refunds/SKILL.md",
                "skill://bill/acme/invoices/SKILL.md",
                "skill://support/refunds/SKILL.md"
            ]
        );
        let never = Skills::build(NamingMode::Never, upstreams());
        assert_eq!(
            uris(&never),
            ["skill://refunds/SKILL.md", "skill://acme/invoices/SKILL.md"]
        );
    }

    #[test]
    fn front_uris_route_back_to_their_upstream_and_its_uri() {
        let skills = Skills::build(NamingMode::Conditional, upstreams());
        let route = skills.claimed("skill://support/refunds/ref/a.md").unwrap();
        assert_eq!(route.server, "support");
        assert_eq!(
            route.upstream_uri("skill://support/refunds/ref/a.md"),
            "skill://refunds/ref/a.md"
        );
        // An unprefixed listed skill: its files, listed or not, go to its upstream as they are.
        let route = skills.claimed("skill://acme/invoices/other.md").unwrap();
        assert_eq!(route.server, "billing");
        assert_eq!(
            route.upstream_uri("skill://acme/invoices/other.md"),
            "skill://acme/invoices/other.md"
        );
        // A skill the upstream serves but does not list, in the prefixed form.
        let route = skills.claimed("skill://bill/hidden/SKILL.md").unwrap();
        assert_eq!(
            (
                route.server.as_str(),
                route.upstream_uri("skill://bill/hidden/SKILL.md")
            ),
            ("billing", "skill://hidden/SKILL.md".to_owned())
        );
        // Not a skill: an ordinary resource, and no single upstream to guess.
        assert_eq!(skills.claimed("file:///etc/hosts"), None);
        assert_eq!(skills.route("skill://nobody/SKILL.md"), None);
        // A root is a whole segment: `skill://acme/invoices2` is not under `…/invoices`.
        assert_eq!(skills.claimed("skill://acme/invoices2/SKILL.md"), None);
    }

    #[test]
    fn a_prefixed_skill_file_an_upstream_lists_as_a_resource_is_listed_rewritten() {
        let skills = Skills::build(NamingMode::Conditional, upstreams());
        let listed = serde_json::json!({"uri": "skill://refunds/ref/a.md", "name": "a.md"});
        assert_eq!(
            skills.front_resource("support", &listed)["uri"],
            "skill://support/refunds/ref/a.md"
        );
        // Not under a prefixed skill of its server: as listed.
        let other = serde_json::json!({"uri": "skill://acme/invoices/SKILL.md"});
        assert_eq!(skills.front_resource("billing", &other), other);
        let plain = serde_json::json!({"uri": "file:///a"});
        assert_eq!(skills.front_resource("support", &plain), plain);
    }

    #[test]
    fn one_upstream_keeps_its_uris_and_takes_any_skill_uri() {
        let mut one = upstreams();
        one.truncate(1);
        let skills = Skills::build(NamingMode::Conditional, one);
        assert_eq!(
            uris(&skills),
            ["skill://refunds/SKILL.md", "skill://acme/invoices/SKILL.md"]
        );
        let route = skills.route("skill://unlisted/SKILL.md").unwrap();
        assert_eq!(
            (
                route.server.as_str(),
                route.upstream_uri("skill://unlisted/SKILL.md")
            ),
            ("billing", "skill://unlisted/SKILL.md".to_owned())
        );
        assert_eq!(skills.sole("https://example.com/SKILL.md"), None);
    }

    #[test]
    fn other_schemes_are_never_rewritten() {
        let route = Route {
            server: "s".into(),
            prefix: Some("s".into()),
        };
        assert_eq!(
            route.front_uri("github://o/r/skills/x/SKILL.md"),
            "github://o/r/skills/x/SKILL.md"
        );
        assert_eq!(uri_segment("my server/2"), "my-server-2");
    }
}
