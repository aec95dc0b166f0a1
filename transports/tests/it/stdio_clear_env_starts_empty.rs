//! `clear_env` starts the child from an empty environment; `Debug` never shows env values.

use switchboard_transports::stdio::{self, Config};
use switchboard_transports::{CloseCause, Event};

use crate::support::next_event;

#[tokio::test]
async fn a_cleared_environment_holds_only_the_configured_variables() {
    let config = Config::new("/usr/bin/env").clear_env(true).env("ONLY", "1");
    let mut conn = stdio::connect("env", &config).await.unwrap();
    let mut lines = Vec::new();
    loop {
        match next_event(&mut conn.events).await {
            // `env` prints plain text, which the codec reports as skipped lines.
            Event::Skipped(s) => lines.push(s.excerpt),
            Event::Closed(reason) => {
                assert!(matches!(
                    reason.cause,
                    CloseCause::Exited { code: Some(0), .. }
                ));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(lines, ["ONLY=1"]);
}

#[test]
fn debug_shows_env_keys_but_never_values() {
    let config = Config::new("server").env("API_TOKEN", "hunter2");
    let text = format!("{config:?}");
    assert!(text.contains("API_TOKEN"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}
