//! `serve`'s hot reload: on `SIGHUP`, or when the config file changes (its modification time,
//! checked every second), the file is read again and its servers are brought in line without
//! failing a call in flight. A server the file adds is started; one it no longer names (or
//! marks disabled) leaves the catalogue at once and stops once its calls in flight finish;
//! one whose entry changed is started anew under its name, the old one finishing its calls
//! first ([`Runtime::replace_server`]). A file that does not read changes nothing: the error
//! is logged and the servers go on as they are. The file's runtime defaults (its
//! `"switchboard"` object) are read at start only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use switchboard::Runtime;

use super::config::ConfigArgs;

/// How often the file's modification time is looked at.
const POLL: Duration = Duration::from_secs(1);

/// Each server's entry in the file, as written.
type Entries = BTreeMap<String, Value>;

/// Reloads `config` into `runtime` whenever asked to or the file changes, until dropped.
pub(crate) async fn watch(runtime: Runtime, config: ConfigArgs, path: PathBuf) {
    let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(e) => {
            tracing::warn!("SIGHUP cannot be caught ({e}): the file is still watched");
            None
        }
    };
    let mut seen = modified(&path);
    let mut entries = entries(&path).unwrap_or_default();
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let asked = async {
            match hangup.as_mut() {
                Some(signal) => drop(signal.recv().await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = asked => tracing::info!("SIGHUP: reading {} again", path.display()),
            _ = tick.tick() => {
                let now = modified(&path);
                if now == seen {
                    continue;
                }
                tracing::info!("{} changed: reading it again", path.display());
            }
        }
        seen = modified(&path);
        match reload(&runtime, &config, &path, &entries).await {
            Ok(now) => entries = now,
            Err(e) => tracing::warn!("the servers go on as they are: {e}"),
        }
    }
}

/// Brings `runtime` in line with the file; the entries it now runs.
async fn reload(
    runtime: &Runtime,
    config: &ConfigArgs,
    path: &Path,
    running: &Entries,
) -> Result<Entries, String> {
    let file = config.load(false).map_err(|e| e.message().to_owned())?;
    let written = entries(path)?;
    let mut now = Entries::new();
    for (name, server) in file.servers {
        let entry = written.get(&name).cloned().unwrap_or(Value::Null);
        match running.get(&name) {
            None => {
                tracing::info!(server = %name, "reload: a new server");
                if let Err(e) = runtime.add_server(&name, server).await {
                    tracing::warn!(server = %name, "reload: the new server did not start: {e}");
                    continue;
                }
            }
            Some(before) if *before != entry => {
                tracing::info!(server = %name, "reload: the server's entry changed; starting it anew");
                if let Err(e) = runtime.replace_server(&name, server).await {
                    tracing::warn!(server = %name, "reload: the server was not replaced: {e}");
                    now.insert(name, before.clone());
                    continue;
                }
            }
            Some(_) => {}
        }
        now.insert(name, entry);
    }
    for name in running.keys().filter(|name| !now.contains_key(*name)) {
        tracing::info!(server = %name, "reload: the server is gone from the file; stopping it once its calls finish");
        // Each in the background: a removal waits for its calls, the others need not.
        let runtime = runtime.clone();
        let name = name.clone();
        tokio::spawn(async move {
            if let Err(e) = runtime.remove_server(&name).await {
                tracing::debug!(server = %name, "reload: {e}");
            }
        });
    }
    Ok(now)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
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
