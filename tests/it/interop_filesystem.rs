//! `@modelcontextprotocol/server-filesystem` 2026.8.31 started without directory arguments:
//! it serves the folders the application offers as roots, and follows them when the
//! application changes them and says so with `Runtime::roots_changed()`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard::client::{BoxFuture, ClientHandlers, Root, RootsHandler};
use switchboard::{Runtime, ServerConfig, ServerHandle};

use crate::interop::{enabled, one_server_runtime, peer_bin};

/// Roots the test can change while the server runs.
#[derive(Debug, Clone, Default)]
struct Roots(Arc<Mutex<Vec<PathBuf>>>);

impl Roots {
    fn set(&self, dir: &Path) {
        *self.0.lock().unwrap() = vec![dir.to_owned()];
    }
}

impl RootsHandler for Roots {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        let roots = self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|dir| Root::new(format!("file://{}", dir.display())).name("interop"))
            .collect();
        Box::pin(async move { Ok(roots) })
    }
}

/// A fresh folder holding one file, `note.txt` with `text`.
fn folder(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchboard-fs-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("note.txt"), text).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

async fn allowed(server: &ServerHandle) -> String {
    server
        .call_tool("list_allowed_directories", json!({}))
        .await
        .unwrap()
        .text()
}

/// Polls until the server allows `dir` (it asks for roots again after a change).
async fn until_allowed(server: &ServerHandle, dir: &Path) -> String {
    let want = dir.display().to_string();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let text = allowed(server).await;
        if text.contains(&want) || tokio::time::Instant::now() >= deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn interop_filesystem_serves_the_roots_the_app_provides_and_follows_a_change() {
    if !enabled() {
        eprintln!("skipped: set SWITCHBOARD_INTEROP=1 (after `.ci/run` installed the peers)");
        return;
    }
    let first = folder("first", "from the first root");
    let second = folder("second", "from the second root");
    let roots = Roots::default();
    roots.set(&first);
    let rt: Runtime = one_server_runtime(
        ServerConfig::stdio(peer_bin("mcp-server-filesystem"))
            .client_handlers(ClientHandlers::new().roots(roots.clone())),
    )
    .await;
    let server = rt.server("everything").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);

    let listed = until_allowed(&server, &first).await;
    assert!(listed.contains(&first.display().to_string()), "{listed}");
    let read = server
        .call_tool("read_text_file", json!({"path": first.join("note.txt")}))
        .await
        .unwrap();
    assert!(!read.is_error(), "{}", read.text());
    assert_eq!(read.text(), "from the first root");

    roots.set(&second);
    rt.roots_changed().await.unwrap();
    let listed = until_allowed(&server, &second).await;
    assert!(listed.contains(&second.display().to_string()), "{listed}");
    assert!(!listed.contains(&first.display().to_string()), "{listed}");
    // The old root is no longer served.
    let refused = server
        .call_tool("read_text_file", json!({"path": first.join("note.txt")}))
        .await
        .unwrap();
    assert!(refused.is_error(), "{}", refused.text());
    rt.shutdown().await;
    for dir in [first, second] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
