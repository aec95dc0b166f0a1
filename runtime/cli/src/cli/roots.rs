//! `--root DIR` (repeatable): the folders the command line offers servers as their roots.
//!
//! Each folder must exist; it is offered as a `file://` URI of its canonical path, named
//! after its last component. Without `--root` the `roots` capability is not declared, and a
//! server that asks anyway is answered -32601.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use switchboard::client::{BoxFuture, Root, RootsHandler};

use super::Failure;

/// The roots given on the command line, set once before any runtime starts.
static ROOTS: OnceLock<Vec<Root>> = OnceLock::new();

/// Checks and records the folders of `--root`; a folder that is not one is a usage error.
pub(crate) fn set(dirs: &[PathBuf]) -> Result<(), Failure> {
    let mut roots = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let path = std::fs::canonicalize(dir)
            .map_err(|e| Failure::Usage(format!("--root {}: {e}", dir.display())))?;
        if !path.is_dir() {
            return Err(Failure::Usage(format!(
                "--root {}: not a directory",
                dir.display()
            )));
        }
        let mut root = Root::new(file_uri(&path));
        if let Some(name) = path.file_name() {
            root = root.name(name.to_string_lossy());
        }
        roots.push(root);
    }
    let _ = ROOTS.set(roots);
    Ok(())
}

/// The roots handler, when `--root` was given.
pub(crate) fn handler() -> Option<Fixed> {
    ROOTS
        .get()
        .filter(|r| !r.is_empty())
        .map(|r| Fixed(r.clone()))
}

/// Answers `roots/list` with the same roots for the whole run.
#[derive(Debug)]
pub(crate) struct Fixed(Vec<Root>);

impl RootsHandler for Fixed {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        let roots = self.0.clone();
        Box::pin(async move { Ok(roots) })
    }
}

/// `file://` and the absolute path, every byte outside RFC 3986's unreserved set and `/`
/// percent-encoded.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_file_uris() {
        assert_eq!(file_uri(Path::new("/tmp/a b/c%")), "file:///tmp/a%20b/c%25");
        assert_eq!(file_uri(Path::new("/srv/notes")), "file:///srv/notes");
    }

    #[test]
    fn a_missing_folder_is_a_usage_error() {
        let e = set(&[PathBuf::from("/nonexistent/switchboard-root")]);
        assert!(matches!(e, Err(Failure::Usage(m)) if m.contains("/nonexistent/switchboard-root")));
    }
}
