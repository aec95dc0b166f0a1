//! The standard shapes: the top level, and the fields every host writes on a server entry
//! (`type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`, `disabled`).
//!
//! Each entry is read into a [`Launch`] (plain, expanded values) and then into a
//! [`ServerConfig`], onto which [`extras`] applies our own fields.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{dotenv, extras, field, ConfigError, Ctx, FileDefaults, JsonPath};
use crate::config::ServerConfig;
use crate::transport::HttpKind;

/// A parsed file, before it becomes a [`super::ConfigFile`].
pub(super) struct Document {
    pub(super) defaults: FileDefaults,
    pub(super) servers: Vec<Server>,
    pub(super) disabled: Vec<String>,
}

/// One enabled server.
pub(super) struct Server {
    pub(super) name: String,
    /// How it is reached, with every value expanded: tests look at these, as
    /// `ServerConfig` never shows environment or header values.
    #[cfg(all(test, unix, feature = "stdio"))]
    pub(super) launch: Launch,
    pub(super) config: ServerConfig,
    /// Its `"oauth"` object.
    #[cfg(feature = "oauth")]
    pub(super) oauth: Option<crate::oauth::Settings>,
    /// Whether its `"auth"` object says `"perUser": "oauth"`.
    #[cfg(feature = "oauth")]
    pub(super) per_user: bool,
}

/// How a server is reached, with variables expanded.
#[derive(Debug, PartialEq)]
pub(super) enum Launch {
    Stdio {
        command: String,
        args: Vec<String>,
        /// `envFile` variables, then `env` entries (which override them).
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        kind: HttpKind,
        headers: Vec<(String, String)>,
    },
}

const NO_SERVERS: &str = "expected an `mcpServers` or `servers` object";

/// Parses a whole file.
pub(super) fn parse(text: &str, ctx: &Ctx<'_>) -> Result<Document, ConfigError> {
    let root = JsonPath::root();
    let value: Value =
        serde_json::from_str(text).map_err(|e| ctx.error(&root, format!("invalid JSON: {e}")))?;
    let top = value
        .as_object()
        .ok_or_else(|| ctx.error(&root, NO_SERVERS))?;
    let key = match (field(top, "mcpServers"), field(top, "servers")) {
        (Some(_), Some(_)) => return Err(ctx.error(&root, "use either mcpServers or servers")),
        (Some(_), None) => "mcpServers",
        (None, Some(_)) => "servers",
        (None, None) => return Err(ctx.error(&root, NO_SERVERS)),
    };
    let list_at = root.key(key);
    let list = ctx.object(&top[key], &list_at)?;

    let defaults = match field(top, "switchboard") {
        Some(value) => extras::defaults(ctx, value, &root.key("switchboard"))?,
        None => FileDefaults::default(),
    };

    // serde_json's map is sorted; the order (and any repeated name) comes from the text.
    let names = names_in_file_order(text, key).unwrap_or_else(|| list.keys().cloned().collect());
    let mut seen = HashSet::new();
    let mut document = Document {
        defaults,
        servers: Vec::new(),
        disabled: Vec::new(),
    };
    for name in names {
        let at = list_at.key(&name);
        if name.is_empty() {
            return Err(ctx.error(&list_at, "a server name must not be empty"));
        }
        if !seen.insert(name.clone()) {
            return Err(ctx.error(&at, "duplicate server name"));
        }
        let entry = ctx.object(&list[&name], &at)?;
        let disabled = match field(entry, "disabled") {
            Some(value) => ctx.bool(value, &at.key("disabled"))?,
            None => false,
        };
        if disabled {
            document.disabled.push(name);
            continue;
        }
        let launch = launch(ctx, entry, &at)?;
        let config = extras::apply(ctx, entry, &at, config(ctx, &launch, &at)?)?;
        #[cfg(feature = "oauth")]
        let mut per_user = false;
        let config = match (field(entry, "auth"), &launch) {
            (None, _) => config,
            #[cfg(feature = "oauth")]
            (Some(value), Launch::Http { url, .. }) => {
                if field(entry, "isolation").and_then(Value::as_str) == Some("shared") {
                    return Err(ctx.error(
                        &at.key("isolation"),
                        "a server that authenticates as each client runs an instance per client, never shared",
                    ));
                }
                match super::oauth::auth(ctx, value, &at.key("auth"), &name, url)? {
                    super::oauth::ClientAuth::Exchange(exchange) => {
                        if field(entry, "oauth").is_some() {
                            return Err(ctx.error(
                                &at.key("auth"),
                                "a server lists its tools with `oauth` or with a token exchange's client, not both",
                            ));
                        }
                        config.token_exchange(exchange)
                    }
                    super::oauth::ClientAuth::PerUser => {
                        per_user = true;
                        config
                    }
                }
            }
            #[cfg(not(feature = "oauth"))]
            (Some(_), Launch::Http { .. }) => {
                return Err(ctx.error(&at.key("auth"), "a token exchange needs the `oauth` feature"))
            }
            (Some(_), Launch::Stdio { .. }) => {
                return Err(ctx.error(
                    &at.key("auth"),
                    "auth is for http servers (a stdio server takes its credentials from its environment)",
                ))
            }
        };
        let oauth = match (field(entry, "oauth"), &launch) {
            (None, _) => None,
            (Some(value), Launch::Http { .. }) => Some(oauth_settings(ctx, value, &at.key("oauth"))?),
            (Some(_), Launch::Stdio { .. }) => {
                return Err(ctx.error(
                    &at.key("oauth"),
                    "oauth is for http servers (a stdio server takes its credentials from its environment)",
                ))
            }
        };
        // A per-user server lists its tools with the gateway's own authorization: its
        // `oauth` object, or the defaults.
        #[cfg(feature = "oauth")]
        let oauth = match oauth {
            None if per_user => Some(crate::oauth::Settings::default()),
            oauth => oauth,
        };
        #[cfg(not(feature = "oauth"))]
        let _: Option<()> = oauth;
        document.servers.push(Server {
            name,
            #[cfg(all(test, unix, feature = "stdio"))]
            launch,
            config,
            #[cfg(feature = "oauth")]
            oauth,
            #[cfg(feature = "oauth")]
            per_user,
        });
    }
    Ok(document)
}

#[cfg(feature = "oauth")]
fn oauth_settings(
    ctx: &Ctx<'_>,
    value: &Value,
    at: &JsonPath,
) -> Result<crate::oauth::Settings, ConfigError> {
    super::oauth::settings(ctx, value, at)
}

#[cfg(not(feature = "oauth"))]
fn oauth_settings(ctx: &Ctx<'_>, _value: &Value, at: &JsonPath) -> Result<(), ConfigError> {
    Err(ctx.error(at, "oauth needs the `oauth` feature, which is off"))
}

/// What an entry's `type` says.
#[derive(Clone, Copy)]
enum Kind {
    Stdio,
    Http(HttpKind),
}

/// Reads the standard fields of one enabled entry.
fn launch(ctx: &Ctx<'_>, entry: &Map<String, Value>, at: &JsonPath) -> Result<Launch, ConfigError> {
    let declared = match field(entry, "type") {
        None => None,
        Some(value) => {
            let type_at = at.key("type");
            Some(match ctx.string(value, &type_at)? {
                "stdio" => Kind::Stdio,
                "sse" => Kind::Http(HttpKind::Sse),
                // As VS Code treats it: Streamable HTTP, falling back to HTTP+SSE when the
                // server refuses the `initialize` POST (400, 404, 405), so that a file written
                // for VS Code reaches the same old servers it does.
                "http" => Kind::Http(HttpKind::Auto),
                // Strict: a server named this way is known to speak Streamable HTTP, and a
                // fallback would only hide its errors. `streamableHttp` is Cline's spelling.
                "streamable-http" | "streamableHttp" => Kind::Http(HttpKind::StreamableHttp),
                _ => {
                    return Err(ctx.error(
                        &type_at,
                        r#"expected "stdio", "sse", "http" or "streamable-http""#,
                    ))
                }
            })
        }
    };
    match (declared, field(entry, "command"), field(entry, "url")) {
        (Some(Kind::Stdio) | None, Some(command), None) | (Some(Kind::Stdio), Some(command), _) => {
            stdio_launch(ctx, entry, at, command)
        }
        (Some(Kind::Http(kind)), _, Some(url)) => http_launch(ctx, entry, at, url, kind),
        (None, None, Some(url)) => http_launch(ctx, entry, at, url, HttpKind::Auto),
        (Some(Kind::Stdio), None, _) => {
            Err(ctx.error(at, r#"expected a `command` (the server has type "stdio")"#))
        }
        (Some(Kind::Http(_)), _, None) => {
            Err(ctx.error(at, "expected a `url` (the server has an HTTP type)"))
        }
        (None, Some(_), Some(_)) => Err(ctx.error(
            at,
            "expected a `command` or a `url`, not both (or a `type` saying which to use)",
        )),
        (None, None, None) => Err(ctx.error(at, "expected a `command` or a `url`")),
    }
}

fn stdio_launch(
    ctx: &Ctx<'_>,
    entry: &Map<String, Value>,
    at: &JsonPath,
    command: &Value,
) -> Result<Launch, ConfigError> {
    let command_at = at.key("command");
    let command = ctx.expand(ctx.non_empty_string(command, &command_at)?, &command_at)?;

    let mut args = Vec::new();
    if let Some(value) = field(entry, "args") {
        for (arg, arg_at) in ctx.strings(value, &at.key("args"))? {
            args.push(ctx.expand(arg, &arg_at)?);
        }
    }

    let mut env: Vec<(String, String)> = Vec::new();
    if let Some(value) = field(entry, "envFile") {
        let file_at = at.key("envFile");
        let file = ctx.expand(ctx.non_empty_string(value, &file_at)?, &file_at)?;
        let file = ctx.dir.join(file);
        let text = std::fs::read_to_string(&file).map_err(|e| {
            ctx.error(
                &file_at,
                format!("cannot read env file {}: {e}", file.display()),
            )
        })?;
        env = dotenv::parse(&text)
            .map_err(|message| ctx.error(&file_at, format!("{}: {message}", file.display())))?;
    }
    if let Some(value) = field(entry, "env") {
        for (key, value, value_at) in ctx.string_map(value, &at.key("env"))? {
            let value = ctx.expand(value, &value_at)?;
            match env.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => env.push((key.to_owned(), value)),
            }
        }
    }

    let cwd = match field(entry, "cwd") {
        Some(value) => {
            let cwd_at = at.key("cwd");
            let cwd = ctx.expand(ctx.non_empty_string(value, &cwd_at)?, &cwd_at)?;
            Some(ctx.dir.join(cwd))
        }
        None => None,
    };

    Ok(Launch::Stdio {
        command,
        args,
        env,
        cwd,
    })
}

fn http_launch(
    ctx: &Ctx<'_>,
    entry: &Map<String, Value>,
    at: &JsonPath,
    url: &Value,
    kind: HttpKind,
) -> Result<Launch, ConfigError> {
    let url_at = at.key("url");
    let url = ctx.expand(ctx.string(url, &url_at)?, &url_at)?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ctx.error(
            &url_at,
            format!("expected an http:// or https:// URL, not {url:?}"),
        ));
    }
    let mut headers = Vec::new();
    if let Some(value) = field(entry, "headers") {
        for (name, value, value_at) in ctx.string_map(value, &at.key("headers"))? {
            headers.push((name.to_owned(), ctx.expand(value, &value_at)?));
        }
    }
    Ok(Launch::Http { url, kind, headers })
}

/// The server's transport, before our own settings.
fn config(ctx: &Ctx<'_>, launch: &Launch, at: &JsonPath) -> Result<ServerConfig, ConfigError> {
    match launch {
        Launch::Stdio {
            command,
            args,
            env,
            cwd,
        } => stdio_config(command, args, env, cwd.as_deref()).ok_or_else(|| {
            ctx.error(
                at,
                "stdio servers need the `stdio` feature (on Unix), which is off",
            )
        }),
        Launch::Http { url, kind, headers } => Ok(headers
            .iter()
            .fold(
                ServerConfig::http(url.clone(), *kind),
                |config, (name, value)| config.header(name.clone(), value.clone()),
            )
            .into()),
    }
}

#[cfg(all(unix, feature = "stdio"))]
fn stdio_config(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
) -> Option<ServerConfig> {
    let config = env
        .iter()
        .fold(ServerConfig::stdio(command).args(args), |config, (k, v)| {
            config.env(k, v)
        });
    Some(
        match cwd {
            Some(dir) => config.cwd(dir),
            None => config,
        }
        .into(),
    )
}

#[cfg(not(all(unix, feature = "stdio")))]
fn stdio_config(
    _command: &str,
    _args: &[String],
    _env: &[(String, String)],
    _cwd: Option<&Path>,
) -> Option<ServerConfig> {
    None
}

/// The keys of the top-level object `key`, in file order and with any repeats; `None` if the
/// text is not shaped that way (the caller has already checked that it is).
fn names_in_file_order(text: &str, key: &str) -> Option<Vec<String>> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Top(key).deserialize(&mut deserializer).ok().flatten()
}

/// Finds the object `.0` at the top level and lists its keys.
struct Top<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Option<Vec<String>>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Option<Vec<String>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.0 {
                // The last occurrence wins, as in serde_json's `Value`.
                names = map.next_value_seed(Keys)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(names)
    }
}

/// Lists an object's keys; `None` for any other value.
struct Keys;

impl<'de> DeserializeSeed<'de> for Keys {
    type Value = Option<Vec<String>>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Keys {
    type Value = Option<Vec<String>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            keys.push(key);
        }
        Ok(Some(keys))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(all(test, not(all(unix, feature = "stdio"))))]
mod tests {
    use std::path::Path;

    use crate::ConfigFile;

    #[test]
    fn stdio_servers_need_the_stdio_feature() {
        let text = r#"{"mcpServers": {"s": {"command": "x"}}}"#;
        let e = ConfigFile::parse_with_env(text, Path::new("/p/mcp.json"), &|_| None).unwrap_err();
        assert_eq!(e.path, "mcpServers.s");
        assert!(e.message.contains("`stdio` feature"), "{e}");
        let text = r#"{"mcpServers": {"s": {"url": "https://x.example/mcp"}}}"#;
        let file = ConfigFile::parse_with_env(text, Path::new("/p/mcp.json"), &|_| None).unwrap();
        assert_eq!(file.servers[0].1.transport_kind().as_str(), "auto");
    }
}
