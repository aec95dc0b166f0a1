//! A program that cannot start is a typed error naming it.

use switchboard_transports::stdio::{self, Config, Error};

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let result = stdio::connect("missing", &Config::new("/nonexistent/server")).await;
    let Err(error) = result else {
        panic!("a missing program started")
    };
    assert!(matches!(error, Error::Spawn { ref program, .. } if program == "/nonexistent/server"));
    let text = error.to_string();
    assert!(
        text.starts_with("cannot start `/nonexistent/server`: "),
        "{text}"
    );
}
