//! Our own settings: the top-level `"switchboard"` object and the per-server fields beside
//! the standard ones.
//!
//! ```json
//! {
//!   "switchboard": {
//!     "timeout": "60s", "startupTimeout": "30s", "maxInFlight": 64,
//!     "restart": { "initialDelay": "500ms", "maxDelay": "30s", "jitter": 0.2 },
//!     "naming": { "mode": "conditional", "separator": "__" }
//!   },
//!   "mcpServers": {
//!     "build": {
//!       "command": "build-server",
//!       "timeout": 20000, "restart": false, "prefix": "ci",
//!       "tools": { "run": { "timeout": "5m", "resetOnProgress": true, "maxTotal": "1h" },
//!                  "status": { "reissueOnBrokenStream": true } },
//!       "allowTools": ["run", "status_*"], "denyTools": ["status_debug"], "protocol": "auto",
//!       "reissueOnBrokenStream": false
//!     },
//!     "memory": {
//!       "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
//!       "isolation": "client", "maxInstances": 50, "idleTimeout": "10m"
//!     },
//!     "files": {
//!       "command": "npx",
//!       "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/users/${client.name}"],
//!       "listAs": { "name": "catalogue", "claims": {}, "secrets": {} }
//!     }
//!   }
//! }
//! ```
//!
//! Durations are strings with a unit or integer milliseconds. Unknown fields inside these
//! objects are errors, so that a misspelt setting is not silently ignored.

use std::time::Duration;

use serde_json::{Map, Value};

use super::duration::parse_duration;
use super::{field, ConfigError, Ctx, FileDefaults, JsonPath};
use crate::catalogue::{Naming, NamingMode};
use crate::client_values::ClientValues;
use crate::config::ServerConfig;
use crate::deadline::ToolPolicy;
use crate::restart::RestartPolicy;

const DEFAULTS_FIELDS: &[&str] = &[
    "timeout",
    "startupTimeout",
    "handlerTimeout",
    "maxInFlight",
    "restart",
    "naming",
];
const RESTART_FIELDS: &[&str] = &[
    "initialDelay",
    "maxDelay",
    "jitter",
    "maxFailures",
    "window",
    "stableAfter",
];
const NAMING_FIELDS: &[&str] = &["mode", "separator"];
const TOOL_FIELDS: &[&str] = &[
    "timeout",
    "resetOnProgress",
    "maxTotal",
    "reissueOnBrokenStream",
];

/// Reads the top-level `"switchboard"` object.
pub(super) fn defaults(
    ctx: &Ctx<'_>,
    value: &Value,
    at: &JsonPath,
) -> Result<FileDefaults, ConfigError> {
    let mut defaults = FileDefaults::default();
    for (key, value) in set_fields(ctx, value, at, DEFAULTS_FIELDS)? {
        let at = at.key(key);
        match key {
            "timeout" => defaults.timeout = Some(timeout(ctx, value, &at)?),
            "startupTimeout" => defaults.startup_timeout = Some(timeout(ctx, value, &at)?),
            "handlerTimeout" => defaults.handler_timeout = Some(timeout(ctx, value, &at)?),
            "maxInFlight" => defaults.max_in_flight = Some(max_in_flight(ctx, value, &at)?),
            "restart" => defaults.restart = Some(restart(ctx, value, &at)?),
            _ => defaults.naming = Some(naming(ctx, value, &at)?),
        }
    }
    Ok(defaults)
}

/// Applies our per-server fields of `entry` to `config`.
pub(super) fn apply(
    ctx: &Ctx<'_>,
    entry: &Map<String, Value>,
    at: &JsonPath,
    mut config: ServerConfig,
) -> Result<ServerConfig, ConfigError> {
    if let Some(value) = field(entry, "timeout") {
        config = config.timeout(timeout(ctx, value, &at.key("timeout"))?);
    }
    if let Some(value) = field(entry, "startupTimeout") {
        config = config.startup_timeout(timeout(ctx, value, &at.key("startupTimeout"))?);
    }
    if let Some(value) = field(entry, "handlerTimeout") {
        config = config.handler_timeout(timeout(ctx, value, &at.key("handlerTimeout"))?);
    }
    if let Some(value) = field(entry, "maxInFlight") {
        config = config.max_in_flight(max_in_flight(ctx, value, &at.key("maxInFlight"))?);
    }
    if let Some(value) = field(entry, "restart") {
        config = config.restart(restart(ctx, value, &at.key("restart"))?);
    }
    if let Some(value) = field(entry, "tools") {
        let tools_at = at.key("tools");
        for (tool, policy) in ctx.object(value, &tools_at)? {
            let tool_at = tools_at.key(tool);
            if tool.is_empty() {
                return Err(ctx.error(&tool_at, "expected a non-empty tool name"));
            }
            config = config.tool(tool.clone(), tool_policy(ctx, policy, &tool_at)?);
        }
    }
    if let Some(value) = field(entry, "allowTools") {
        config = config.allow_tools(globs(ctx, value, &at.key("allowTools"))?);
    }
    if let Some(value) = field(entry, "denyTools") {
        config = config.deny_tools(globs(ctx, value, &at.key("denyTools"))?);
    }
    if let Some(value) = field(entry, "prefix") {
        config = config.prefix(ctx.non_empty_string(value, &at.key("prefix"))?);
    }
    if let Some(value) = field(entry, "reissueOnBrokenStream") {
        let reissue = ctx.bool(value, &at.key("reissueOnBrokenStream"))?;
        config = config.reissue_on_broken_stream(reissue);
    }
    if let Some(value) = field(entry, "isolation") {
        let at = at.key("isolation");
        let isolation = ctx
            .string(value, &at)?
            .parse()
            .map_err(|e: crate::isolation::UnknownIsolation| ctx.error(&at, e.to_string()))?;
        config = config.isolation(isolation);
    }
    if let Some(value) = field(entry, "maxInstances") {
        let max = count(ctx, value, &at.key("maxInstances"))?;
        config = config.max_instances(usize::try_from(max).unwrap_or(usize::MAX));
    }
    if let Some(value) = field(entry, "idleTimeout") {
        config = config.idle_timeout(timeout(ctx, value, &at.key("idleTimeout"))?);
    }
    if let Some(value) = field(entry, "listAs") {
        config = config.list_as(list_as(ctx, value, &at.key("listAs"))?);
    }
    if config.uses_client_values() {
        per_client(ctx, entry, at, &config)?;
    }
    if let Some(value) = field(entry, "protocol") {
        let at = at.key("protocol");
        let protocol = ctx
            .string(value, &at)?
            .parse()
            .map_err(|e: crate::era::UnknownProtocol| ctx.error(&at, e.to_string()))?;
        config = config.protocol(protocol);
    }
    Ok(config)
}

/// `listAs`: the values the runtime's own instance of a per-client server is started with.
fn list_as(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<ClientValues, ConfigError> {
    let mut name = None;
    let mut claims = Map::new();
    let mut secrets = Vec::new();
    for (key, value) in set_fields(ctx, value, at, &["name", "claims", "secrets"])? {
        let at = at.key(key);
        match key {
            "name" => name = Some(ctx.expand(ctx.non_empty_string(value, &at)?, &at)?),
            "claims" => claims = ctx.object(value, &at)?.clone(),
            _ => {
                for (secret, text, at) in ctx.string_map(value, &at)? {
                    secrets.push((secret.to_owned(), ctx.expand(text, &at)?));
                }
            }
        }
    }
    let name = name.ok_or_else(|| {
        ctx.error(
            at,
            "expected a `name`: the client the server's tools are listed as",
        )
    })?;
    Ok(ClientValues::new(name)
        .with_claims(claims)
        .with_secrets(secrets))
}

/// Checks a server that uses per-client values: each is one we know, it is not `shared`,
/// and it names the values its tools are listed with, which must fill every one.
fn per_client(
    ctx: &Ctx<'_>,
    entry: &Map<String, Value>,
    at: &JsonPath,
    config: &ServerConfig,
) -> Result<(), ConfigError> {
    config
        .check_client_values()
        .map_err(|e| ctx.error(at, e.to_string()))?;
    if field(entry, "isolation").and_then(Value::as_str) == Some("shared") {
        return Err(ctx.error(
            &at.key("isolation"),
            "a server whose config uses per-client values (`${client.…}`) runs an instance per \
             client or per session, never shared",
        ));
    }
    let Some(values) = &config.list_as else {
        return Err(ctx.error(
            &at.key("listAs"),
            "this server's config uses per-client values (`${client.…}`): name the values \
             its tools are listed with, such as {\"name\": \"catalogue\"} (the runtime's own \
             instance runs with them; no client's call goes to it)",
        ));
    };
    config
        .fill_for(values)
        .map(drop)
        .map_err(|e| ctx.error(&at.key("listAs"), e.to_string()))
}

/// The non-null fields of our object `value`, refusing any not in `known`.
fn set_fields<'v>(
    ctx: &Ctx<'_>,
    value: &'v Value,
    at: &JsonPath,
    known: &[&str],
) -> Result<Vec<(&'v str, &'v Value)>, ConfigError> {
    let mut fields = Vec::new();
    for (key, value) in ctx.object(value, at)? {
        if !known.contains(&key.as_str()) {
            let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            return Err(ctx.error(
                &at.key(key),
                format!("unknown field; expected {}", expected.join(", ")),
            ));
        }
        if !value.is_null() {
            fields.push((key.as_str(), value));
        }
    }
    Ok(fields)
}

/// A duration: a string with a unit, or integer milliseconds.
fn duration(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<Duration, ConfigError> {
    let parsed = match value {
        Value::String(text) => parse_duration(text),
        Value::Number(n) => n.as_u64().map(Duration::from_millis),
        _ => None,
    };
    parsed.ok_or_else(|| {
        ctx.error(
            at,
            r#"expected a duration such as "500ms", "30s" or integer milliseconds"#,
        )
    })
}

/// A duration bounding requests: zero would fail every one.
fn timeout(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<Duration, ConfigError> {
    let timeout = duration(ctx, value, at)?;
    if timeout.is_zero() {
        return Err(ctx.error(at, "expected a duration greater than zero"));
    }
    Ok(timeout)
}

/// An integer of at least 1.
fn count(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<u64, ConfigError> {
    value
        .as_u64()
        .filter(|&n| n >= 1)
        .ok_or_else(|| ctx.error(at, "expected an integer of at least 1"))
}

fn max_in_flight(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<usize, ConfigError> {
    Ok(usize::try_from(count(ctx, value, at)?).unwrap_or(usize::MAX))
}

fn globs(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<Vec<String>, ConfigError> {
    Ok(ctx
        .strings(value, at)?
        .into_iter()
        .map(|(glob, _)| glob.to_owned())
        .collect())
}

/// `true` (the default policy), `false` (never restart) or an object of overrides.
fn restart(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<RestartPolicy, ConfigError> {
    match value {
        Value::Bool(true) => return Ok(RestartPolicy::default()),
        Value::Bool(false) => return Ok(RestartPolicy::off()),
        Value::Object(_) => {}
        _ => return Err(ctx.error(at, "expected true, false or an object")),
    }
    let mut policy = RestartPolicy::default();
    let (mut max_failures, mut window) = (policy.max_failures, policy.window);
    let mut max_delay_set = false;
    for (key, value) in set_fields(ctx, value, at, RESTART_FIELDS)? {
        let at = at.key(key);
        match key {
            "initialDelay" => policy = policy.with_initial_delay(duration(ctx, value, &at)?),
            "maxDelay" => {
                policy = policy.with_max_delay(duration(ctx, value, &at)?);
                max_delay_set = true;
            }
            "jitter" => {
                let jitter = value
                    .as_f64()
                    .filter(|j| (0.0..=1.0).contains(j))
                    .ok_or_else(|| ctx.error(&at, "expected a number from 0 to 1"))?;
                policy = policy.with_jitter(jitter);
            }
            "maxFailures" => {
                max_failures = u32::try_from(count(ctx, value, &at)?).unwrap_or(u32::MAX);
            }
            "window" => window = duration(ctx, value, &at)?,
            _ => policy = policy.with_stable_after(duration(ctx, value, &at)?),
        }
    }
    if policy.max_delay < policy.initial_delay {
        let key = if max_delay_set {
            "maxDelay"
        } else {
            "initialDelay"
        };
        return Err(ctx.error(
            &at.key(key),
            format!(
                "maxDelay ({:?}) is less than initialDelay ({:?})",
                policy.max_delay, policy.initial_delay
            ),
        ));
    }
    Ok(policy.with_crash_loop(max_failures, window))
}

fn naming(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<Naming, ConfigError> {
    let mut naming = Naming::default();
    for (key, value) in set_fields(ctx, value, at, NAMING_FIELDS)? {
        let at = at.key(key);
        if key == "mode" {
            naming.mode = match value.as_str() {
                Some("conditional") => NamingMode::Conditional,
                Some("always") => NamingMode::Always,
                Some("never") => NamingMode::Never,
                _ => return Err(ctx.error(&at, r#"expected "conditional", "always" or "never""#)),
            };
        } else {
            naming = naming.with_separator(ctx.non_empty_string(value, &at)?);
        }
    }
    Ok(naming)
}

fn tool_policy(ctx: &Ctx<'_>, value: &Value, at: &JsonPath) -> Result<ToolPolicy, ConfigError> {
    let mut policy = ToolPolicy::default();
    for (key, value) in set_fields(ctx, value, at, TOOL_FIELDS)? {
        let at = at.key(key);
        match key {
            "timeout" => policy.timeout = Some(timeout(ctx, value, &at)?),
            "resetOnProgress" => policy = policy.reset_on_progress(ctx.bool(value, &at)?),
            "reissueOnBrokenStream" => {
                policy = policy.reissue_on_broken_stream(ctx.bool(value, &at)?)
            }
            _ => policy = policy.max_total(timeout(ctx, value, &at)?),
        }
    }
    Ok(policy)
}
