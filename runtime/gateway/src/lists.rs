//! What the gateway lists: the runtime's catalogue in the shapes of `tools/list`,
//! `resources/list`, `resources/templates/list` and `prompts/list`, built once per change.
//!
//! A [`Lists`] is an immutable snapshot, built from the runtime's catalogues and the
//! statuses of its servers that offer their entries (ready or restarting) when the runtime
//! says something changed, and shared in an `Arc`: a request reads it, never rebuilds it.
//! Tools and prompts carry their catalogue names (with one server and no prefix, the names
//! the server gave); resources and templates keep their URIs, which need no renaming.

use std::collections::HashMap;

use serde_json::Value;
use switchboard::Runtime;

/// The four lists, and the tools' input schemas by name.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Lists {
    pub(crate) tools: Vec<Value>,
    pub(crate) schemas: HashMap<String, Value>,
    pub(crate) resources: Vec<Value>,
    pub(crate) templates: Vec<Value>,
    pub(crate) prompts: Vec<Value>,
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
        for (_, status) in &ready {
            lists
                .resources
                .extend(status.resources.iter().filter_map(to_value));
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
}
