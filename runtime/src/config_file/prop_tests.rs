//! Property tests of config-file parsing: whatever a file says, parsing answers (a config or
//! a `ConfigError`) without panicking, and every duration it accepts is usable by the
//! runtime. Cases come from `PROPTEST_CASES` (default 256); see the README's "Fuzzing the
//! parsers" for a longer run.

use std::path::Path;
use std::time::Instant;

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::ConfigFile;
use crate::deadline::DeadlinePolicy;

/// Keys a server entry or the `switchboard` block may hold, known and unknown.
const KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "type",
    "headers",
    "timeout",
    "startupTimeout",
    "maxInFlight",
    "restart",
    "tools",
    "allowTools",
    "denyTools",
    "prefix",
    "disabled",
    "envFile",
    "naming",
    "resetOnProgress",
    "maxTotal",
    "reissueOnBrokenStream",
    "isolation",
    "maxInstances",
    "idleTimeout",
    "listAs",
    "initialDelay",
    "x-unknown",
];

/// Values that stress the parsers: huge and odd durations, wrong types, nesting.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[0-9]{0,25}(\\.[0-9]{0,12})? ?(ms|s|m|h|d|)".prop_map(Value::String),
        "\\$\\{[A-Z_]{0,6}(:-[a-z]{0,4})?\\}".prop_map(Value::String),
        "(stdio|sse|http|streamable-http|streamableHttp|ws|)".prop_map(Value::String),
        ".{0,12}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|pairs| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// A document shaped like a host's config file, with arbitrary contents.
fn document() -> impl Strategy<Value = Value> {
    // Most servers start from a valid launch, so that the settings beside it are reached.
    let launch = prop_oneof![
        Just(json!({"command": "srv"})),
        Just(json!({"url": "http://127.0.0.1:1/mcp"})),
        Just(json!({})),
    ];
    let server = (
        launch,
        prop::collection::vec((prop::sample::select(KEYS), value()), 0..6),
    )
        .prop_map(|(mut base, pairs)| {
            for (k, v) in pairs {
                base[k] = v;
            }
            base
        });
    (
        prop::collection::vec(("[a-z]{1,4}", server), 0..4),
        prop::option::of(value()),
        prop::sample::select(&["mcpServers", "servers", "other"][..]),
    )
        .prop_map(|(servers, defaults, key)| {
            let servers: Map<String, Value> = servers.into_iter().collect();
            let mut doc = json!({ key: servers });
            if let Some(defaults) = defaults {
                doc["switchboard"] = defaults;
            }
            doc
        })
}

proptest! {
    /// Parsing never panics, and every accepted timeout is usable as a deadline.
    #[test]
    fn prop_config_files_parse_or_fail_cleanly(doc in document()) {
        let text = doc.to_string();
        let Ok(file) = ConfigFile::parse(&text, Path::new("prop.json")) else {
            return Ok(());
        };
        let now = Instant::now();
        for (_, config) in &file.servers {
            let timeouts = config.timeout.iter().chain(config.startup_timeout.iter());
            for t in timeouts.chain(config.tools.values().filter_map(|p| p.timeout.as_ref())) {
                let policy = DeadlinePolicy::resolve(&crate::ToolPolicy::new().timeout(*t), None, None, *t);
                prop_assert!(policy.first(now) >= now);
            }
        }
    }
}
