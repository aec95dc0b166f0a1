//! Config files: the MCP server lists users already have, read into [`ServerConfig`]s.
//!
//! Two shapes are accepted unchanged: the `mcpServers` object written by Claude Desktop,
//! Claude Code (`.mcp.json`), Cursor and mcp-use, and the `servers` object of VS Code
//! (`.vscode/mcp.json`, whose `inputs` array is ignored). Values are expanded as those hosts
//! do (see [`expand`]), VS Code's `envFile` is read, and `disabled: true` entries are listed
//! but neither expanded nor checked.
//!
//! Our own settings are optional: runtime defaults in a top-level `"switchboard"` object, and
//! per server `timeout`, `startupTimeout`, `handlerTimeout`, `maxInFlight`, `tools`,
//! `allowTools`, `denyTools`, `prefix` and `restart` beside the standard fields, and for HTTP
//! servers `oauth` (see [`oauth::Settings`](crate::oauth::Settings); with the `http` feature). Unknown fields of a server entry are
//! ignored (hosts add their own); unknown fields inside our own objects are errors, so that a
//! typo is not silently dropped.
//!
//! Any error rejects the whole file, and names the JSON path it is about:
//!
//! ```text
//! .mcp.json: mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: environment variable `GITHUB_TOKEN` is not set (…)
//! ```
//!
//! ```json
//! {
//!   "switchboard": { "timeout": "30s", "naming": { "mode": "always" } },
//!   "mcpServers": {
//!     "github": {
//!       "command": "npx",
//!       "args": ["-y", "@modelcontextprotocol/server-github"],
//!       "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" },
//!       "tools": { "search_code": { "timeout": "2m" } },
//!       "denyTools": ["delete_*"]
//!     },
//!     "docs": { "type": "http", "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${DOCS_TOKEN}" } }
//!   }
//! }
//! ```

pub(crate) mod duration;

mod dotenv;
mod expand;
mod extras;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(test)]
mod prop_tests;
mod shapes;
// The file shapes under test are mostly stdio servers.
#[cfg(all(test, unix, feature = "stdio"))]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::catalogue::Naming;
use crate::config::ServerConfig;
use crate::restart::RestartPolicy;

/// A parsed config file: its enabled servers, ready for
/// [`RuntimeBuilder::config`](crate::RuntimeBuilder::config), and its runtime defaults.
///
/// ```
/// use std::path::Path;
/// use switchboard::ConfigFile;
///
/// let text = r#"{
///   "mcpServers": {
///     "docs": { "url": "https://docs.example.com/mcp", "headers": { "Authorization": "Bearer ${DOCS_TOKEN:-none}" } },
///     "old": { "command": "old-server", "disabled": true }
///   }
/// }"#;
/// let file = ConfigFile::parse(text, Path::new("/home/me/project/.mcp.json"))?;
/// assert_eq!(file.servers[0].0, "docs");
/// assert_eq!(file.disabled, ["old"]);
/// // Runtime::builder().config(file).build().await?
/// # Ok::<(), switchboard::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConfigFile {
    /// Where the file lives (as given).
    pub path: PathBuf,
    /// The runtime defaults of its `"switchboard"` object.
    pub defaults: FileDefaults,
    /// The enabled servers, by name, in file order.
    pub servers: Vec<(String, ServerConfig)>,
    /// The names of the servers marked `"disabled": true`, in file order.
    pub disabled: Vec<String>,
    /// The `"oauth"` objects of its enabled HTTP servers, by server name; see
    /// [`attach_oauth`](Self::attach_oauth).
    #[cfg(feature = "oauth")]
    pub oauth: Vec<(String, crate::oauth::Settings)>,
    /// The enabled HTTP servers whose `"auth"` says `"perUser": "oauth"`: each client of a
    /// gateway authorizes for itself; see [`attach_per_user`](Self::attach_per_user).
    #[cfg(feature = "oauth")]
    pub per_user: Vec<String>,
}

/// The runtime defaults a config file sets (its top-level `"switchboard"` object); `None`
/// leaves the runtime's own default.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct FileDefaults {
    /// `timeout`: the request timeout.
    pub timeout: Option<Duration>,
    /// `startupTimeout`: the handshake bound.
    pub startup_timeout: Option<Duration>,
    /// `maxInFlight`: requests in flight per server.
    pub max_in_flight: Option<usize>,
    /// `handlerTimeout`: how long the application's handlers may take to answer a server.
    pub handler_timeout: Option<Duration>,
    /// `restart`: the restart policy.
    pub restart: Option<RestartPolicy>,
    /// `naming`: catalogue naming.
    pub naming: Option<Naming>,
}

/// A config file that cannot be used: which file, where in it, and what is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
#[error("{}: {}{message}", file.display(), PathPrefix(path))]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The JSON path of the offending value, such as `mcpServers.github.env.TOKEN`; empty
    /// when the file as a whole is at fault (unreadable, not JSON, no server list).
    pub path: String,
    /// What was expected, or what is wrong.
    pub message: String,
}

/// Renders `path: `, or nothing for an empty path.
struct PathPrefix<'a>(&'a str);

impl fmt::Display for PathPrefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", self.0)
        }
    }
}

impl ConfigFile {
    /// A config of `servers`, as a file at `path` listing only them would parse to: no
    /// runtime defaults, nothing disabled. For servers given some other way (a command line,
    /// say) that should run exactly as a file's do; a later server of a name already given
    /// replaces the earlier one, as in [`RuntimeBuilder::server`](crate::RuntimeBuilder::server).
    ///
    /// ```
    /// use switchboard::transport::HttpKind;
    /// use switchboard::{ConfigFile, ServerConfig};
    ///
    /// let docs = ServerConfig::http("https://docs.example.com/mcp", HttpKind::Auto);
    /// let file = ConfigFile::new("docs", [("docs".to_owned(), docs)]);
    /// assert_eq!(file.servers[0].0, "docs");
    /// // Runtime::builder().config(file).build().await?
    /// ```
    pub fn new<C: Into<ServerConfig>>(
        path: impl Into<PathBuf>,
        servers: impl IntoIterator<Item = (String, C)>,
    ) -> ConfigFile {
        let mut listed: Vec<(String, ServerConfig)> = Vec::new();
        for (name, config) in servers {
            listed.retain(|(n, _)| *n != name);
            listed.push((name, config.into()));
        }
        ConfigFile {
            path: path.into(),
            defaults: FileDefaults::default(),
            servers: listed,
            disabled: Vec::new(),
            #[cfg(feature = "oauth")]
            oauth: Vec::new(),
            #[cfg(feature = "oauth")]
            per_user: Vec::new(),
        }
    }

    /// Reads and parses the file at `path`, expanding variables from the process environment.
    pub fn load(path: impl AsRef<Path>) -> Result<ConfigFile, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_owned(),
            path: String::new(),
            message: format!("cannot read the file: {e}"),
        })?;
        Self::parse(&text, path)
    }

    /// Parses `text` as the file at `path` (which names the file in errors, anchors
    /// `${workspaceFolder}` and relative `cwd` and `envFile` paths), expanding variables from
    /// the process environment.
    pub fn parse(text: &str, path: &Path) -> Result<ConfigFile, ConfigError> {
        Self::parse_with_env(text, path, &|name| std::env::var(name).ok())
    }

    /// Parses a duration as config files write it in a string: a number and a unit, `ms`,
    /// `s`, `m` or `h`, as in `500ms`, `30s`, `1.5s` or `2m` (exact to the nanosecond;
    /// surrounding whitespace and a space before the unit allowed). `None` for anything
    /// else, including a bare number: `"30"` would be thirty milliseconds to one reader and
    /// thirty seconds to another. Zero is a duration; the timeouts of a file refuse it.
    ///
    /// For settings of your own (a command line, say) that should take the same forms as a
    /// file.
    ///
    /// ```
    /// use std::time::Duration;
    /// use switchboard::ConfigFile;
    ///
    /// assert_eq!(ConfigFile::parse_duration("1.5s"), Some(Duration::from_millis(1500)));
    /// assert_eq!(ConfigFile::parse_duration("500"), None);
    /// ```
    pub fn parse_duration(text: &str) -> Option<Duration> {
        duration::parse_duration(text)
    }

    /// [`parse`](Self::parse) with the environment given as a function, for tests and
    /// embedders.
    pub fn parse_with_env(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ConfigFile, ConfigError> {
        let document = shapes::parse(text, &Ctx::new(path, env))?;
        #[cfg(feature = "oauth")]
        let oauth = document
            .servers
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.oauth.clone()?)))
            .collect();
        #[cfg(feature = "oauth")]
        let per_user = document
            .servers
            .iter()
            .filter(|s| s.per_user)
            .map(|s| s.name.clone())
            .collect();
        Ok(ConfigFile {
            path: path.to_owned(),
            defaults: document.defaults,
            servers: document
                .servers
                .into_iter()
                .map(|server| (server.name, server.config))
                .collect(),
            disabled: document.disabled,
            #[cfg(feature = "oauth")]
            oauth,
            #[cfg(feature = "oauth")]
            per_user,
        })
    }

    /// Gives each per-user server (see [`per_user`](Self::per_user)) the hook `hook` makes
    /// from its name, URL and `"oauth"` settings: what authorizes each client's instance.
    #[cfg(feature = "oauth")]
    pub fn attach_per_user<E>(
        &mut self,
        mut hook: impl FnMut(
            &str,
            &str,
            &crate::oauth::Settings,
        ) -> Result<std::sync::Arc<dyn crate::client_values::ClientAuth>, E>,
    ) -> Result<(), E> {
        for name in &self.per_user {
            let Some((_, config)) = self.servers.iter_mut().find(|(n, _)| n == name) else {
                continue;
            };
            let crate::transport::Transport::Http(http) = &config.transport else {
                continue;
            };
            let settings = self
                .oauth
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
                .unwrap_or_default();
            let made = hook(name, &http.url.clone(), &settings)?;
            *config = config.clone().client_auth(made);
        }
        Ok(())
    }

    /// Makes an [`OAuth`](crate::oauth::OAuth) client for each server with an `"oauth"`
    /// object, keeping its credentials in `store` and asking `authorizer` (given the server's
    /// name and settings) for the person's approval, and installs it as the server's auth
    /// hook. Returns the clients by server name, for logins and logouts.
    #[cfg(feature = "oauth")]
    pub fn attach_oauth(
        &mut self,
        store: std::sync::Arc<dyn crate::oauth::TokenStore>,
        mut authorizer: impl FnMut(
            &str,
            &crate::oauth::Settings,
        ) -> Option<std::sync::Arc<dyn crate::oauth::Authorizer>>,
    ) -> Result<Vec<(String, crate::oauth::OAuth)>, crate::oauth::Error> {
        let mut clients = Vec::new();
        for (name, settings) in &self.oauth {
            let Some((_, config)) = self.servers.iter_mut().find(|(n, _)| n == name) else {
                continue;
            };
            let crate::transport::Transport::Http(http) = &mut config.transport else {
                continue;
            };
            let mut oauth_config = settings.config(name)?.store(store.clone());
            if let Some(authorizer) = authorizer(name, settings) {
                oauth_config = oauth_config.authorizer(authorizer);
            }
            let client = crate::oauth::OAuth::new(name, &http.url, oauth_config)?;
            http.auth = Some(std::sync::Arc::new(client.clone()));
            clients.push((name.clone(), client));
        }
        Ok(clients)
    }
}

/// A JSON path such as `mcpServers.github.args[2]`; keys that would be ambiguous (empty, or
/// holding `.`, `[`, `]` or `"`) are written quoted: `servers["a.b"]`.
#[derive(Debug, Clone, Default)]
pub(super) struct JsonPath(String);

impl JsonPath {
    /// The top level (the empty path).
    pub(super) fn root() -> JsonPath {
        JsonPath::default()
    }

    /// The path of `key` inside this object.
    pub(super) fn key(&self, key: &str) -> JsonPath {
        let mut path = self.0.clone();
        if key.is_empty() || key.contains(['.', '[', ']', '"']) {
            path.push_str(&format!("[{key:?}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
        }
        JsonPath(path)
    }

    /// The path of element `index` of this array.
    pub(super) fn index(&self, index: usize) -> JsonPath {
        JsonPath(format!("{}[{index}]", self.0))
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What parsing one file needs: where it lives (for errors and relative paths) and how to
/// expand variables.
pub(super) struct Ctx<'a> {
    file: &'a Path,
    /// The (absolute) folder holding the file; relative paths are resolved against it.
    pub(super) dir: PathBuf,
    /// What `${workspaceFolder}` expands to.
    workspace: String,
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Ctx<'a> {
    fn new(file: &'a Path, env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
        let dir = absolute.parent().map(Path::to_path_buf).unwrap_or_default();
        // `.vscode/mcp.json` and `.cursor/mcp.json` belong to the folder above.
        let in_host_folder = matches!(
            dir.file_name().and_then(|name| name.to_str()),
            Some(".vscode" | ".cursor")
        );
        let workspace = match dir.parent() {
            Some(parent) if in_host_folder => parent.to_path_buf(),
            _ => dir.clone(),
        };
        Ctx {
            file,
            dir,
            workspace: workspace.to_string_lossy().into_owned(),
            env,
        }
    }

    /// An error about the value at `at`.
    pub(super) fn error(&self, at: &JsonPath, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.to_owned(),
            path: at.to_string(),
            message: message.into(),
        }
    }

    /// Expands the variables in `text`, the value at `at`.
    pub(super) fn expand(&self, text: &str, at: &JsonPath) -> Result<String, ConfigError> {
        expand::Vars {
            env: self.env,
            workspace: &self.workspace,
        }
        .expand(text)
        .map_err(|message| self.error(at, message))
    }

    /// `value` as an object.
    pub(super) fn object<'v>(
        &self,
        value: &'v Value,
        at: &JsonPath,
    ) -> Result<&'v Map<String, Value>, ConfigError> {
        value
            .as_object()
            .ok_or_else(|| self.error(at, "expected an object"))
    }

    /// `value` as a string.
    pub(super) fn string<'v>(
        &self,
        value: &'v Value,
        at: &JsonPath,
    ) -> Result<&'v str, ConfigError> {
        value
            .as_str()
            .ok_or_else(|| self.error(at, "expected a string"))
    }

    /// `value` as a non-empty string.
    pub(super) fn non_empty_string<'v>(
        &self,
        value: &'v Value,
        at: &JsonPath,
    ) -> Result<&'v str, ConfigError> {
        match value.as_str() {
            Some(text) if !text.is_empty() => Ok(text),
            _ => Err(self.error(at, "expected a non-empty string")),
        }
    }

    /// `value` as a boolean.
    pub(super) fn bool(&self, value: &Value, at: &JsonPath) -> Result<bool, ConfigError> {
        value
            .as_bool()
            .ok_or_else(|| self.error(at, "expected true or false"))
    }

    /// `value` as an array of strings, each with its path.
    pub(super) fn strings<'v>(
        &self,
        value: &'v Value,
        at: &JsonPath,
    ) -> Result<Vec<(&'v str, JsonPath)>, ConfigError> {
        let items = value
            .as_array()
            .ok_or_else(|| self.error(at, "expected an array of strings"))?;
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let at = at.index(index);
                match item.as_str() {
                    Some(text) => Ok((text, at)),
                    None => Err(self.error(&at, "expected a string")),
                }
            })
            .collect()
    }

    /// `value` as an object of strings (`env`, `headers`), each with its path.
    pub(super) fn string_map<'v>(
        &self,
        value: &'v Value,
        at: &JsonPath,
    ) -> Result<Vec<(&'v str, &'v str, JsonPath)>, ConfigError> {
        let object = value
            .as_object()
            .ok_or_else(|| self.error(at, "expected an object of strings"))?;
        object
            .iter()
            .map(|(key, item)| {
                let at = at.key(key);
                if key.is_empty() {
                    return Err(self.error(&at, "expected a non-empty name"));
                }
                match item.as_str() {
                    Some(text) => Ok((key.as_str(), text, at)),
                    None => Err(self.error(&at, "expected a string")),
                }
            })
            .collect()
    }
}

/// The field `key` of `object`; `null` counts as absent.
pub(super) fn field<'v>(object: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    object.get(key).filter(|value| !value.is_null())
}
