//! The demo server's logging: `logging/setLevel` and the level filter the `log` tool obeys.
//!
//! The level lives in the [`Session`], so it is per connection and starts at [`DEFAULT`]
//! again after a restart: a client that set one must set it again, which the `log_level`
//! tool lets tests check.

use serde_json::{json, Value};
use switchboard_codecs::jsonrpc::ErrorObject;

use super::server::{invalid_params, str_param, Session};

/// The RFC 5424 severities MCP uses, least severe first, so that comparing indices compares
/// severities.
pub(super) const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The level before any `logging/setLevel`: `info`.
pub(super) const DEFAULT: usize = 1;

/// The index of `level` in [`LEVELS`], or an invalid-params error naming it.
pub(super) fn parse(level: &str) -> Result<usize, ErrorObject> {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .ok_or_else(|| invalid_params(format!("unknown log level: {level:?}")))
}

/// Answers `logging/setLevel`.
pub(super) fn set_level(session: &Session, params: &Value) -> Result<Value, ErrorObject> {
    let level = parse(str_param(params, "level")?)?;
    session.set_log_level(level);
    Ok(json!({}))
}

/// Sends `notifications/message` if `level` is at or above the level set; says whether it did.
pub(super) fn send(session: &Session, level: usize, logger: Option<&str>, data: &str) -> bool {
    if level < session.log_level() {
        return false;
    }
    let mut params = json!({"level": LEVELS[level], "data": data});
    if let Some(logger) = logger {
        params["logger"] = json!(logger);
    }
    session.notify("notifications/message", params);
    true
}
