//! Where OAuth credentials live between runs: the [`TokenStore`] trait, an in-memory store
//! and the default file store.
//!
//! A store keeps one [`Credentials`] record per key (the OAuth client derives the key from
//! the server's name and URL): the client registration and the current tokens. The
//! [`FileStore`] keeps every record of a user in one JSON file in the platform's config
//! folder, written atomically with mode 0600, and refuses to read a file that others could
//! read or write.
//!
//! ```
//! use switchboard_oauth::{MemoryStore, TokenStore};
//!
//! let store = MemoryStore::new();
//! assert!(store.load("everything https://mcp.example.com/mcp").unwrap().is_none());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::AuthMethod;

/// How a token store failed. Never contains a token or secret.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Arc<io::Error>,
    },
    /// The file may be read or written by others than its owner.
    #[error(
        "{path} has mode {mode:o}; refusing to use it until only its owner can read it (chmod 600)"
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file belongs to another user.
    #[error("{path} belongs to another user; refusing to use it")]
    Owner {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a credentials file.
    #[error("{path}: not a credentials file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No place for the file: neither `XDG_CONFIG_HOME` nor `HOME` is set.
    #[error("no config folder: set XDG_CONFIG_HOME or HOME")]
    NoConfigDir,
    /// A store of the host's failed.
    #[error("{0}")]
    Other(String),
}

/// What is stored per server: the client registration and the current tokens.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The client this program is at the authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRegistration>,
    /// The tokens it was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("client", &self.client)
            .field("tokens", &self.tokens)
            .finish()
    }
}

/// A client registration, valid at one authorization server (its `issuer`).
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The authorization server it is valid at.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint.
    pub auth_method: AuthMethod,
    /// The redirect URI it registered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The token endpoint, so that a stored refresh token can be used before discovery.
    pub token_endpoint: String,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .field("redirect_uri", &self.redirect_uri)
            .field("token_endpoint", &self.token_endpoint)
            .finish()
    }
}

/// The tokens an authorization server granted.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// How long it was valid for when granted, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_ms: Option<u64>,
    /// The scopes granted (or requested, when the server did not say).
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at_ms", &self.expires_at_ms)
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// Keeps [`Credentials`] between runs. Implement it to keep them elsewhere (a keychain, a
/// secrets service); calls are short and rare (after a login, a refresh, a logout).
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// The credentials stored under `key`, if any.
    fn load(&self, key: &str) -> Result<Option<Credentials>, StoreError>;
    /// Stores `credentials` under `key`, replacing what was there.
    fn save(&self, key: &str, credentials: &Credentials) -> Result<(), StoreError>;
    /// Forgets what is stored under `key`.
    fn remove(&self, key: &str) -> Result<(), StoreError>;
    /// The keys stored.
    fn keys(&self) -> Result<Vec<String>, StoreError>;
}

/// Credentials in memory only, for tests and embedders that keep nothing on disk.
#[derive(Default)]
pub struct MemoryStore {
    records: Mutex<BTreeMap<String, Credentials>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn records(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Credentials>> {
        // A panic while holding the lock cannot leave a record half-written (each
        // operation is one map call), so the data is still good.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("keys", &self.records().keys().collect::<Vec<_>>())
            .finish()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<Credentials>, StoreError> {
        Ok(self.records().get(key).cloned())
    }

    fn save(&self, key: &str, credentials: &Credentials) -> Result<(), StoreError> {
        self.records().insert(key.to_owned(), credentials.clone());
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.records().remove(key);
        Ok(())
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.records().keys().cloned().collect())
    }
}

/// The file's shape.
#[derive(Default, Serialize, Deserialize)]
struct FileContents {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Credentials>,
}

/// Every credential of one user in one JSON file, by default
/// `$XDG_CONFIG_HOME/switchboard/oauth-credentials.json` (`~/.config/…` without it;
/// `~/Library/Application Support/switchboard/…` on macOS).
///
/// # Security
///
/// The file is created with mode 0600 in a folder created with mode 0700, and replaced
/// atomically (a temporary file in the same folder, synced, then renamed), so a crash never
/// leaves half a file. A file that others may read or write, or that another user owns, is
/// refused rather than used.
pub struct FileStore {
    path: PathBuf,
    /// Serialises read-modify-write cycles within this process.
    lock: Mutex<()>,
}

impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileStore")
            .field("path", &self.path)
            .finish()
    }
}

impl FileStore {
    /// The store at the default path.
    pub fn default_location() -> Result<FileStore, StoreError> {
        Ok(FileStore::at(default_dir()?.join("oauth-credentials.json")))
    }

    /// The store at `path`.
    pub fn at(path: impl Into<PathBuf>) -> FileStore {
        FileStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source: Arc::new(source),
        }
    }

    fn read(&self) -> Result<FileContents, StoreError> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(FileContents::default()),
            Err(e) => return Err(self.io(e)),
        };
        self.check_permissions(&file)?;
        let contents: FileContents =
            serde_json::from_reader(io::BufReader::new(file)).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        Ok(contents)
    }

    #[cfg(unix)]
    fn check_permissions(&self, file: &std::fs::File) -> Result<(), StoreError> {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata().map_err(|e| self.io(e))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if meta.uid() != uid {
            return Err(StoreError::Owner {
                path: self.path.clone(),
            });
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(StoreError::Permissions {
                path: self.path.clone(),
                mode,
            });
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn check_permissions(&self, _file: &std::fs::File) -> Result<(), StoreError> {
        Ok(())
    }

    fn write(&self, contents: &FileContents) -> Result<(), StoreError> {
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| self.io(e))?;
        let body = serde_json::to_vec_pretty(contents).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        let file_name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "credentials".into());
        let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
        let written = (|| {
            let mut file = private_file(&tmp)?;
            file.write_all(&body)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.io(e));
        }
        Ok(())
    }

    fn update(&self, change: impl FnOnce(&mut FileContents)) -> Result<(), StoreError> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut contents = self.read()?;
        contents.version = 1;
        change(&mut contents);
        self.write(&contents)
    }
}

impl TokenStore for FileStore {
    fn load(&self, key: &str) -> Result<Option<Credentials>, StoreError> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(self.read()?.servers.remove(key))
    }

    fn save(&self, key: &str, credentials: &Credentials) -> Result<(), StoreError> {
        self.update(|c| {
            c.servers.insert(key.to_owned(), credentials.clone());
        })
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.update(|c| {
            c.servers.remove(key);
        })
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(self.read()?.servers.into_keys().collect())
    }
}

/// The platform's per-user config folder for switchboard.
fn default_dir() -> Result<PathBuf, StoreError> {
    let non_empty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if cfg!(target_os = "macos") {
        if let Some(home) = non_empty("HOME") {
            return Ok(PathBuf::from(home).join("Library/Application Support/switchboard"));
        }
    }
    if let Some(config) = non_empty("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(config).join("switchboard"));
    }
    non_empty("HOME")
        .map(|home| PathBuf::from(home).join(".config/switchboard"))
        .ok_or(StoreError::NoConfigDir)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Credentials {
        Credentials {
            client: Some(ClientRegistration {
                issuer: "https://as.example.com".into(),
                client_id: "client-1".into(),
                client_secret: Some("secret-1".into()),
                auth_method: AuthMethod::ClientSecretBasic,
                redirect_uri: None,
                token_endpoint: "https://as.example.com/token".into(),
            }),
            tokens: Some(TokenSet {
                access_token: "access-1".into(),
                refresh_token: Some("refresh-1".into()),
                expires_at_ms: Some(1),
                lifetime_ms: Some(1),
                scopes: vec!["a".into()],
            }),
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-store-{name}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn debug_hides_secrets() {
        let text = format!("{:?}", sample());
        for secret in ["secret-1", "access-1", "refresh-1"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("client-1"));
    }

    #[test]
    fn file_round_trip_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("round-trip");
        let store = FileStore::at(dir.join("sub/creds.json"));
        assert_eq!(store.load("k").unwrap(), None);
        store.save("k", &sample()).unwrap();
        store.save("other", &Credentials::default()).unwrap();
        assert_eq!(store.load("k").unwrap(), Some(sample()));
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(dir.join("sub"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert_eq!(
            store.keys().unwrap(),
            vec!["k".to_owned(), "other".to_owned()]
        );
        store.remove("k").unwrap();
        assert_eq!(store.load("k").unwrap(), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn file_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("perms");
        let store = FileStore::at(dir.join("creds.json"));
        store.save("k", &sample()).unwrap();
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            store.load("k"),
            Err(StoreError::Permissions { mode: 0o644, .. })
        ));
        assert!(store.save("k", &sample()).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn corrupt_file_is_an_error() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("creds.json");
        std::fs::write(&path, "not json").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            FileStore::at(&path).load("k"),
            Err(StoreError::Corrupt { .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
