//! Log levels: the RFC 5424 severities MCP uses, and the default threshold.

/// The severities, least severe first, so that comparing indices compares severities.
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The threshold before any `logging/setLevel`: `info`.
pub(crate) const DEFAULT: usize = 1;

/// The index of `level` in [`LEVELS`].
pub(crate) fn parse(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}
