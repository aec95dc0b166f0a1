//! What the gateway lists: the runtime's catalogue in the shapes of `tools/list`,
//! `resources/list`, `resources/templates/list` and `prompts/list`, and the upstreams'
//! instructions, built once per change.
//!
//! A [`Lists`] is an immutable snapshot, built from the runtime's catalogues and the
//! statuses of its servers that offer their entries (ready or restarting) when the runtime
//! says something changed, and shared in an `Arc`: a request reads it, never rebuilds it.
//! Tools and prompts carry their catalogue names (with one server and no prefix, the names
//! the server gave); resources and templates keep their URIs, which need no renaming.
//! Instructions are the one server's as it wrote them, or with several servers a section
//! per server that gave some, under its name ([`instructions`]).

use std::collections::HashMap;

use serde_json::Value;
use switchboard::Runtime;

/// The four lists, and the tools' input schemas by name.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Lists {
    pub(crate) tools: Vec<Value>,
    pub(crate) schemas: HashMap<String, Value>,
    pub(crate) resources: Vec<Value>,
    /// The upstream listing each of `resources`, in their order.
    pub(crate) resource_servers: Vec<String>,
    pub(crate) templates: Vec<Value>,
    pub(crate) prompts: Vec<Value>,
    /// What `initialize` and `server/discover` answer as `instructions`.
    pub(crate) instructions: Option<String>,
    /// Whether a server is isolated (per client or session): only then are requests
    /// looked up among instances.
    pub(crate) isolated: bool,
}

/// Which lists differ between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Changed {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Lists {
    /// The lists of `runtime` now.
    pub(crate) fn build(runtime: &Runtime) -> Lists {
        let mut lists = Lists::default();
        for entry in runtime.catalogue().iter() {
            let Ok(mut tool) = serde_json::to_value(&entry.tool) else {
                continue;
            };
            tool["name"] = Value::String(entry.name.clone());
            if let Some(schema) = tool.get("inputSchema") {
                lists.schemas.insert(entry.name.clone(), schema.clone());
            }
            lists.tools.push(tool);
        }
        // A server restarting keeps its entries, as in the runtime's catalogues: no
        // list_changed for a crash, and a call for one waits for the restart.
        let ready: Vec<_> = runtime
            .servers()
            .into_iter()
            .map(|server| (server.name().to_owned(), server.status()))
            .filter(|(_, status)| status.offers_entries())
            .collect();
        for (server, status) in &ready {
            for resource in status.resources.iter().filter_map(to_value) {
                lists.resources.push(resource);
                lists.resource_servers.push(server.clone());
            }
            lists
                .templates
                .extend(status.resource_templates.iter().filter_map(to_value));
        }
        // The prompt catalogue has each prompt's name, title and description; the arguments
        // are in the owner's status.
        for entry in runtime.prompt_catalogue().iter() {
            let full = ready
                .iter()
                .find(|(name, _)| **name == *entry.server)
                .and_then(|(_, status)| status.prompts.iter().find(|p| p.name == entry.tool.name));
            let Some(mut prompt) = full.and_then(to_value) else {
                continue;
            };
            prompt["name"] = Value::String(entry.name.clone());
            lists.prompts.push(prompt);
        }
        let given = ready
            .iter()
            .filter_map(|(name, status)| Some((name.as_str(), status.instructions.as_deref()?)));
        lists.instructions = instructions(given, runtime.servers().len() > 1);
        lists.isolated = runtime
            .servers()
            .iter()
            .any(|server| server.isolation().isolation != switchboard::Isolation::Shared);
        lists
    }

    /// Which lists `self` has that `before` did not.
    pub(crate) fn changed_since(&self, before: &Lists) -> Changed {
        Changed {
            tools: self.tools != before.tools,
            resources: self.resources != before.resources || self.templates != before.templates,
            prompts: self.prompts != before.prompts,
        }
    }
}

/// The instructions to pass on from the servers that gave some (`(name, instructions)`, in
/// order): with one server, its own as written; with `several`, a Markdown section per server
/// under its name, so that a model reading them knows whose tools they are about.
///
/// ```text
/// ## github
/// <github's instructions>
///
/// ## docs
/// <docs' instructions>
/// ```
pub(crate) fn instructions<'a>(
    given: impl IntoIterator<Item = (&'a str, &'a str)>,
    several: bool,
) -> Option<String> {
    let mut given = given
        .into_iter()
        .filter(|(_, text)| !text.trim().is_empty());
    if !several {
        return given.next().map(|(_, text)| text.to_owned());
    }
    let sections: Vec<String> = given
        .map(|(name, text)| format!("## {name}\n{}", text.trim_end()))
        .collect();
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}

fn to_value(item: &impl serde::Serialize) -> Option<Value> {
    serde_json::to_value(item).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_change_is_told_only_for_the_lists_it_touched() {
        let before = Lists {
            tools: vec![json!({"name": "a"})],
            prompts: vec![json!({"name": "p"})],
            ..Lists::default()
        };
        let mut after = Lists {
            tools: vec![json!({"name": "a"})],
            prompts: vec![json!({"name": "p"})],
            ..Lists::default()
        };
        assert_eq!(after.changed_since(&before), Changed::default());
        after.templates.push(json!({"uriTemplate": "x://{y}"}));
        assert_eq!(
            after.changed_since(&before),
            Changed {
                resources: true,
                ..Changed::default()
            }
        );
        after.tools.clear();
        assert!(after.changed_since(&before).tools);
        assert!(!after.changed_since(&before).prompts);
    }

    #[test]
    fn one_servers_instructions_pass_as_written_and_several_under_their_names() {
        let one = [("docs", "  Search first.\n")];
        assert_eq!(
            instructions(one, false).as_deref(),
            Some("  Search first.\n")
        );
        let two = [
            ("docs", "Search first.\n"),
            ("github", "Mind the rate limit."),
        ];
        assert_eq!(
            instructions(two, true).as_deref(),
            Some("## docs\nSearch first.\n\n## github\nMind the rate limit.")
        );
        // One of several that gave any still says whose they are.
        assert_eq!(
            instructions([("github", "Mind the rate limit.")], true).as_deref(),
            Some("## github\nMind the rate limit.")
        );
        assert_eq!(instructions([("docs", " \n")], true), None);
        assert_eq!(instructions([], false), None);
    }
}
