//! The demo server as a real child process, for upstreams whose process a test kills.
//!
//! The child is this test binary itself, started again with the demo server's options in
//! [`ENV_VAR`] (see `switchboard_demo::child`): the one test
//! [`the_test_binary_serves_the_demo_as_a_child`] serves.

use std::time::Duration;

use switchboard::transport::Stdio;
use switchboard::ServerConfig;
use switchboard_demo::ENV_VAR;

/// The test a demo child runs (libtest's filter for it).
const CHILD_TEST: &str = "child::the_test_binary_serves_the_demo_as_a_child";

// Life before main.
#[ctor::ctor(unsafe)]
fn keep_stdout_for_a_demo_child() {
    // SAFETY: before main, while no other thread runs, as it asks.
    unsafe { switchboard_demo::child::keep_stdout_aside() }
}

/// The bundled demo server as a real child process, with these options.
pub(crate) fn demo_stdio(args: &[&str]) -> ServerConfig<Stdio> {
    let exe = std::env::current_exe().expect("the test binary's path");
    ServerConfig::stdio(exe)
        .args(["--exact", CHILD_TEST, "--quiet", "--nocapture"])
        .env(ENV_VAR, args.join(" "))
        .close_timeouts(Duration::from_secs(2), Duration::from_secs(2))
}

/// In a demo child: serves the demo server and exits. In a normal run: nothing to do.
#[test]
fn the_test_binary_serves_the_demo_as_a_child() {
    switchboard_demo::child::serve_if_child();
}
