//! `serve`'s hot reload: on `SIGHUP`, or when the config file changes (its modification time,
//! checked every second), the file is read again and its servers are brought in line without
//! failing a call in flight. A server the file adds is started; one it no longer names (or
//! marks disabled) leaves the catalogue at once and stops once its calls in flight finish;
//! one whose entry changed is started anew under its name, the old one finishing its calls
//! first ([`Runtime::replace_server`]). A file that does not read changes nothing: the error
//! is logged (at warn) and the servers go on as they are. Each reload is logged (at info)
//! with what it did: the servers added, removed and changed (with the names of the fields
//! that changed, never their values). The file's runtime defaults (its `"switchboard"`
//! object) are read at start only.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;
use std::sync::Arc;

use switchboard::Runtime;
use switchboard_gateway::per_user::PerUser;

use super::file_watch::{modified, FileWatch};

use super::config::ConfigArgs;

/// Each server's entry in the file, as written.
type Entries = BTreeMap<String, Value>;

/// The file as it was when its servers were loaded: what a change is told against.
#[derive(Debug)]
pub(crate) struct Baseline {
    seen: Option<SystemTime>,
    entries: Entries,
}

impl Baseline {
    /// The file at `path` now, taken right after it is loaded: a change written while the
    /// servers start, before the watch first runs, is a change all the same.
    pub(crate) fn of(path: &Path) -> Baseline {
        Baseline {
            seen: modified(path),
            entries: entries(path).unwrap_or_default(),
        }
    }
}

/// Reloads `config` into `runtime` whenever asked to or the file changes from `baseline`,
/// until dropped.
pub(crate) async fn watch(
    runtime: Runtime,
    config: ConfigArgs,
    path: PathBuf,
    baseline: Baseline,
    per_user: Option<Arc<PerUser>>,
) {
    let Baseline { seen, mut entries } = baseline;
    let mut watch = FileWatch::new(path.clone(), seen);
    loop {
        let why = watch.next().await;
        let file = path.display();
        match reload(&runtime, &config, &path, &entries, per_user.as_ref()).await {
            Ok((now, done)) => {
                entries = now;
                tracing::info!("reload ({why}) of {file}: {done}");
            }
            Err(e) => tracing::warn!(
                "reload ({why}) of {file}: the file did not read, the servers go on as they are: {e}"
            ),
        }
    }
}

/// What a reload did to the servers, by name. Never their entries' values (an entry's
/// `env` and `headers` hold secrets): a changed server is told with the names of the fields
/// that changed.
#[derive(Debug, Default, PartialEq, Eq)]
struct Reloaded {
    added: Vec<String>,
    removed: Vec<String>,
    /// Each with the fields of its entry that changed.
    changed: Vec<(String, Vec<String>)>,
    /// Servers the runtime would not add or replace, with why.
    refused: Vec<(String, String)>,
}

impl fmt::Display for Reloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |names: &mut dyn Iterator<Item = &String>| {
            names
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.added.is_empty() {
            parts.push(format!("added {}", names(&mut self.added.iter())));
        }
        if !self.removed.is_empty() {
            parts.push(format!(
                "removed {} (each stopping once its calls finish)",
                names(&mut self.removed.iter())
            ));
        }
        if !self.changed.is_empty() {
            let changed: Vec<String> = self
                .changed
                .iter()
                .map(|(name, fields)| format!("`{name}` [{}]", fields.join(", ")))
                .collect();
            parts.push(format!(
                "changed {} (each started anew, the old one finishing its calls)",
                changed.join(", ")
            ));
        }
        for (name, why) in &self.refused {
            parts.push(format!("`{name}` left as it was: {why}"));
        }
        if parts.is_empty() {
            return f.write_str("no server changed");
        }
        f.write_str(&parts.join("; "))
    }
}

/// Brings `runtime` in line with the file: the entries it now runs, and what changed.
async fn reload(
    runtime: &Runtime,
    config: &ConfigArgs,
    path: &Path,
    running: &Entries,
    per_user: Option<&Arc<PerUser>>,
) -> Result<(Entries, Reloaded), String> {
    let mut file = config.load(false).map_err(|e| e.message().to_owned())?;
    if !file.per_user.is_empty() {
        let Some(per_user) = per_user else {
            return Err(format!(
                "{} now authorize each client (perUser), which needs serve to start with it",
                file.per_user.join(", ")
            ));
        };
        file.attach_per_user(|name, url, settings| per_user.hook(name, url, settings))
            .map_err(|e| e.to_string())?;
    }
    let written = entries(path)?;
    let mut now = Entries::new();
    let mut done = Reloaded::default();
    for (name, server) in file.servers {
        let entry = written.get(&name).cloned().unwrap_or(Value::Null);
        match running.get(&name) {
            None => {
                if let Err(e) = runtime.add_server(&name, server).await {
                    done.refused.push((name, e.to_string()));
                    continue;
                }
                done.added.push(name.clone());
            }
            Some(before) if *before != entry => {
                if let Err(e) = runtime.replace_server(&name, server).await {
                    done.refused.push((name.clone(), e.to_string()));
                    now.insert(name, before.clone());
                    continue;
                }
                done.changed
                    .push((name.clone(), changed_fields(before, &entry)));
            }
            Some(_) => {}
        }
        now.insert(name, entry);
    }
    for name in running.keys().filter(|name| !now.contains_key(*name)) {
        done.removed.push(name.clone());
        // Each in the background: a removal waits for its calls, the others need not.
        let runtime = runtime.clone();
        let name = name.clone();
        tokio::spawn(async move {
            if let Err(e) = runtime.remove_server(&name).await {
                tracing::debug!(server = %name, "reload: {e}");
            }
        });
    }
    Ok((now, done))
}

/// The names of the fields that differ between two entries (`entry` when one is not an
/// object): names only, never values.
fn changed_fields(before: &Value, after: &Value) -> Vec<String> {
    let (Some(before), Some(after)) = (before.as_object(), after.as_object()) else {
        return vec!["entry".to_owned()];
    };
    let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter(|key| before.get(*key) != after.get(*key))
        .map(|key| super::print::escape_line(key).into_owned())
        .collect()
}

/// Every server's entry as written (`mcpServers`, or `servers`).
fn entries(path: &Path) -> Result<Entries, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let top: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let servers = top
        .get("mcpServers")
        .or_else(|| top.get("servers"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Ok(servers.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_reload_is_told_by_server_names_and_the_fields_that_changed_never_their_values() {
        let before = json!({"command": "srv", "env": {"API_KEY": "old-secret"}, "args": ["-v"]});
        let after = json!({"command": "srv", "env": {"API_KEY": "new-secret"}, "cwd": "/tmp"});
        let fields = changed_fields(&before, &after);
        assert_eq!(fields, ["args", "cwd", "env"]);
        let done = Reloaded {
            added: vec!["three".to_owned()],
            removed: vec!["two".to_owned()],
            changed: vec![("one".to_owned(), fields)],
            refused: vec![("four".to_owned(), "a server named `four` exists".to_owned())],
        };
        let told = done.to_string();
        assert_eq!(
            told,
            "added `three`; removed `two` (each stopping once its calls finish); \
             changed `one` [args, cwd, env] (each started anew, the old one finishing its calls); \
             `four` left as it was: a server named `four` exists"
        );
        assert!(!told.contains("secret"), "{told}");
        assert_eq!(Reloaded::default().to_string(), "no server changed");
        assert_eq!(changed_fields(&json!(1), &json!({})), ["entry"]);
    }
}
