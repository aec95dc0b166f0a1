//! Where the runtime keeps the tasks it started, so that their ids survive a restart of the
//! runtime: a [`TaskStore`], in memory unless the embedder gives one
//! ([`RuntimeBuilder::task_store`](crate::RuntimeBuilder::task_store)).
//!
//! A task is saved when the runtime starts watching it, and removed when the runtime stops
//! watching it because it ended (or was cancelled, lost, or timed out); a task
//! [detached](crate::task::TaskHandle::detach) on purpose stays, since it runs on. A runtime
//! started later reads the records ([`Runtime::stored_tasks`](crate::Runtime::stored_tasks))
//! and watches them again ([`Runtime::resume_task`](crate::Runtime::resume_task)).
//! [`FileTaskStore`] keeps them in a JSON file; calls are short and rare (twice per task),
//! and a store that fails is logged, never fails a call.
//!
//! ```
//! use std::sync::Arc;
//! use switchboard::task::{MemoryTaskStore, TaskRecord, TaskStore};
//!
//! let store = Arc::new(MemoryTaskStore::new());
//! store.save(&TaskRecord::new("research", "deep-dive", "t-1")).unwrap();
//! assert_eq!(store.load().unwrap().len(), 1);
//! let builder = switchboard::Runtime::builder().task_store(store);
//! # let _ = builder;
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// One task the runtime started: its server, tool and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The server's name in the runtime.
    pub server: String,
    /// The tool the task runs, as the server names it.
    pub tool: String,
    /// The server's id of the task.
    pub id: String,
}

impl TaskRecord {
    /// A record of task `id` of `tool` on `server`.
    pub fn new(server: impl Into<String>, tool: impl Into<String>, id: impl Into<String>) -> Self {
        TaskRecord {
            server: server.into(),
            tool: tool.into(),
            id: id.into(),
        }
    }
}

/// A task store that could not do what it was asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("task store: {0}")]
pub struct StoreError(pub String);

/// Keeps the runtime's [`TaskRecord`]s between runs. Implement it to keep them elsewhere (a
/// database, a key-value service).
pub trait TaskStore: Send + Sync + fmt::Debug {
    /// Keeps `record`, replacing one of the same server and id.
    fn save(&self, record: &TaskRecord) -> Result<(), StoreError>;
    /// Forgets the record of task `id` on `server`.
    fn remove(&self, server: &str, id: &str) -> Result<(), StoreError>;
    /// Every record kept.
    fn load(&self) -> Result<Vec<TaskRecord>, StoreError>;
}

/// Records in memory only: the default, gone with the process.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    records: Mutex<Vec<TaskRecord>>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryTaskStore::default()
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<TaskRecord>> {
        // Each operation is one vector edit: a panic cannot leave it half-done.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TaskStore for MemoryTaskStore {
    fn save(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let mut records = self.records();
        replace(&mut records, record);
        Ok(())
    }

    fn remove(&self, server: &str, id: &str) -> Result<(), StoreError> {
        self.records()
            .retain(|r| !(r.server == server && r.id == id));
        Ok(())
    }

    fn load(&self) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(self.records().clone())
    }
}

fn replace(records: &mut Vec<TaskRecord>, record: &TaskRecord) {
    records.retain(|r| !(r.server == record.server && r.id == record.id));
    records.push(record.clone());
}

/// Records in a JSON file (an array), rewritten whole through a temporary file and a rename,
/// so a crash leaves the old file or the new one.
#[derive(Debug)]
pub struct FileTaskStore {
    path: PathBuf,
    /// One writer at a time within the process.
    lock: Mutex<()>,
}

impl FileTaskStore {
    /// A store in the file at `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTaskStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Vec<TaskRecord>, StoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                StoreError(format!("{} is not a task list: {e}", self.path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(StoreError(format!(
                "cannot read {}: {e}",
                self.path.display()
            ))),
        }
    }

    fn write(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        let failed =
            |e: std::io::Error| StoreError(format!("cannot write {}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let text = serde_json::to_vec_pretty(records)
            .map_err(|e| StoreError(format!("cannot encode the task list: {e}")))?;
        let temporary = self.path.with_extension("tmp");
        std::fs::write(&temporary, text).map_err(failed)?;
        std::fs::rename(&temporary, &self.path).map_err(failed)
    }

    fn edit(&self, f: impl FnOnce(&mut Vec<TaskRecord>)) -> Result<(), StoreError> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut records = self.read()?;
        f(&mut records);
        self.write(&records)
    }
}

impl TaskStore for FileTaskStore {
    fn save(&self, record: &TaskRecord) -> Result<(), StoreError> {
        self.edit(|records| replace(records, record))
    }

    fn remove(&self, server: &str, id: &str) -> Result<(), StoreError> {
        self.edit(|records| records.retain(|r| !(r.server == server && r.id == id)))
    }

    fn load(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(store: &dyn TaskStore) {
        store.save(&TaskRecord::new("a", "t", "1")).unwrap();
        store.save(&TaskRecord::new("b", "t", "1")).unwrap();
        store.save(&TaskRecord::new("a", "u", "1")).unwrap();
        let mut records = store.load().unwrap();
        records.sort_by(|x, y| x.server.cmp(&y.server));
        assert_eq!(
            records,
            [
                TaskRecord::new("a", "u", "1"),
                TaskRecord::new("b", "t", "1")
            ]
        );
        store.remove("a", "1").unwrap();
        assert_eq!(store.load().unwrap(), [TaskRecord::new("b", "t", "1")]);
    }

    #[test]
    fn records_are_kept_replaced_and_removed_in_memory() {
        exercise(&MemoryTaskStore::new());
    }

    #[test]
    fn records_survive_in_a_file() {
        let dir = std::env::temp_dir().join(format!("switchboard-tasks-{}", std::process::id()));
        let path = dir.join("tasks.json");
        let _ = std::fs::remove_file(&path);
        exercise(&FileTaskStore::new(&path));
        // Another store on the same file, as a restarted runtime would open it.
        assert_eq!(
            FileTaskStore::new(&path).load().unwrap(),
            [TaskRecord::new("b", "t", "1")]
        );
        std::fs::write(&path, "not json").unwrap();
        assert!(FileTaskStore::new(&path).load().is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
