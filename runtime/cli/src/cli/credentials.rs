//! `serve --credentials FILE`: each client's secrets, read at start (a file that does not
//! read stops `serve` before it serves) and again when the file changes (its modification
//! time, checked every second) or on `SIGHUP`; a file that no longer reads leaves the secrets
//! as they were, with a warning naming the file, never a value.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use switchboard_gateway::{Credentials, Gateway};

use super::file_watch::{modified, FileWatch};
use super::Failure;

/// The file's secrets, and its modification time when read.
pub(crate) fn load(path: &Path) -> Result<(Credentials, Option<SystemTime>), Failure> {
    let seen = modified(path);
    let credentials =
        Credentials::load(path).map_err(|e| Failure::Usage(format!("--credentials {e}")))?;
    Ok((credentials, seen))
}

/// Gives `gateway` the file's secrets whenever it changes from `seen` or `SIGHUP` asks,
/// until dropped.
pub(crate) async fn watch(gateway: Arc<Gateway>, path: PathBuf, seen: Option<SystemTime>) {
    let mut watch = FileWatch::new(path.clone(), seen);
    loop {
        watch.next().await;
        match Credentials::load(&path) {
            Ok(credentials) => {
                tracing::info!(
                    "credentials {}: read again, {} principals",
                    path.display(),
                    credentials.len()
                );
                gateway.set_credentials(credentials);
            }
            Err(e) => tracing::warn!("credentials: {e}; the secrets stay as they were"),
        }
    }
}
