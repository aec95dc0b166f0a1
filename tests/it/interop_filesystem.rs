//! Interop with `@modelcontextprotocol/server-filesystem` (pinned in `.ci/peers`) started
//! without directory arguments: the directories it may use come only from the runtime's roots
//! handler, and follow [`Runtime::roots_changed`].
//!
//! `#[ignore = "needs …"]` (see `interop.rs`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::client::{BoxFuture, ClientHandlers, Root, RootsHandler};
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig, ServerHandle};

/// How long the server may take to (re)ask for the roots and apply them.
const ROOTS_WAIT: Duration = Duration::from_secs(20);

/// Roots the test can change while the server runs.
#[derive(Debug, Clone, Default)]
struct SharedRoots(Arc<Mutex<Vec<Root>>>);

impl SharedRoots {
    fn set(&self, roots: Vec<Root>) {
        *self.0.lock().unwrap() = roots;
    }
}

impl RootsHandler for SharedRoots {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        let roots = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(roots) })
    }
}

/// A fresh directory under the system's temporary one (canonical: the server resolves
/// symlinks in roots), removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "switchboard-interop-fs-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(std::fs::canonicalize(&path).unwrap())
    }

    fn root(&self, name: &str) -> Root {
        let path = self.0.to_str().expect("a UTF-8 temporary directory");
        assert!(
            !path.contains(['%', ' ', '#', '?']),
            "a path that needs escaping in a URI: {path}"
        );
        Root::new(format!("file://{path}")).name(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The directories `list_allowed_directories` lists (one per line after its header).
async fn allowed_directories(server: &ServerHandle) -> Vec<PathBuf> {
    let r = server
        .call_tool("list_allowed_directories", json!({}))
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
    let text = r.text();
    let listed = text
        .strip_prefix("Allowed directories:")
        .unwrap_or_else(|| panic!("unexpected answer: {text}"));
    listed
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Polls `list_allowed_directories` until it lists exactly `dir`.
async fn wait_for_allowed(server: &ServerHandle, dir: &Path) {
    let deadline = Instant::now() + ROOTS_WAIT;
    loop {
        let allowed = allowed_directories(server).await;
        if allowed == [dir] {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "allowed directories still {allowed:?} after {ROOTS_WAIT:?}, expected [{}]",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn read_text_file(server: &ServerHandle, path: &Path) -> (bool, String) {
    let r = server
        .call_tool("read_text_file", json!({"path": path}))
        .await
        .unwrap();
    (r.is_error(), r.text())
}

#[tokio::test]
#[ignore = "needs server-filesystem in .ci/peers (.ci/run installs it)"]
async fn interop_filesystem_follows_the_runtimes_roots() {
    let bin = crate::peers::npm_bin("mcp-server-filesystem");
    assert!(bin.exists(), "peer not installed at {}", bin.display());
    let first = TempDir::new("first");
    let second = TempDir::new("second");
    let first_file = first.0.join("first.txt");
    let second_file = second.0.join("second.txt");
    std::fs::write(&first_file, "in the first root").unwrap();
    std::fs::write(&second_file, "in the second root").unwrap();

    let roots = SharedRoots::default();
    roots.set(vec![first.root("first")]);
    // No directory arguments: without roots the server would refuse to operate.
    let rt = Runtime::builder()
        .server(
            "files",
            ServerConfig::stdio(&bin)
                .client_handlers(ClientHandlers::new().roots(roots.clone()))
                .restart(RestartPolicy::off())
                .liveness(Liveness::off())
                .startup_timeout(Duration::from_secs(20))
                .timeout(Duration::from_secs(20)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("files").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);

    // The server asks for the roots after `initialized`.
    wait_for_allowed(&server, &first.0).await;
    let (failed, text) = read_text_file(&server, &first_file).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "in the first root");
    let (failed, text) = read_text_file(&server, &second_file).await;
    assert!(failed, "read outside the roots: {text}");
    assert!(text.contains("Access denied"), "{text}");

    // New roots: the notification makes the server ask again.
    roots.set(vec![second.root("second")]);
    rt.roots_changed().await.unwrap();
    wait_for_allowed(&server, &second.0).await;
    let (failed, text) = read_text_file(&server, &second_file).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "in the second root");
    let (failed, text) = read_text_file(&server, &first_file).await;
    assert!(failed, "read outside the roots: {text}");
    assert!(text.contains("Access denied"), "{text}");

    rt.shutdown().await;
}
