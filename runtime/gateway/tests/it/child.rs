//! The demo server as a real child process, for upstreams whose process a test kills.
//!
//! The child is this test binary itself, started again with the demo server's options in
//! [`ENV_VAR`] (as the runtime's own tests do, see `runtime/tests/it/support.rs`): before
//! `main` (and libtest's output, which would corrupt the MCP stream), a constructor moves
//! stdout aside for the demo server and points the descriptor at `/dev/null`; then the one
//! test [`the_test_binary_serves_the_demo_as_a_child`] runs and serves.

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use switchboard::transport::Stdio;
use switchboard::ServerConfig;
use switchboard_demo::{Options, ENV_VAR};

/// The real stdout of a demo child, moved aside before `main`; -1 in a normal test run.
static CHILD_STDOUT: AtomicI32 = AtomicI32::new(-1);

/// The test a demo child runs (libtest's filter for it).
const CHILD_TEST: &str = "child::the_test_binary_serves_the_demo_as_a_child";

// Life before main: nothing but libc calls here.
#[ctor::ctor(unsafe)]
fn keep_stdout_for_a_demo_child() {
    // SAFETY: plain libc calls on descriptors this process owns; the C strings are literals.
    unsafe {
        if libc::getenv(c"SWITCHBOARD_DEMO_SERVER".as_ptr()).is_null() {
            return;
        }
        let saved = libc::dup(1);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if saved < 0 || null < 0 {
            return;
        }
        libc::dup2(null, 1);
        libc::close(null);
        CHILD_STDOUT.store(saved, Ordering::SeqCst);
    }
}

/// The bundled demo server as a real child process, with these options.
pub(crate) fn demo_stdio(args: &[&str]) -> ServerConfig<Stdio> {
    let exe = std::env::current_exe().expect("the test binary's path");
    ServerConfig::stdio(exe)
        .args(["--exact", CHILD_TEST, "--quiet", "--nocapture"])
        .env(ENV_VAR, args.join(" "))
        .close_timeouts(Duration::from_secs(2), Duration::from_secs(2))
}

/// In a demo child: serves the demo server on stdin and the stdout moved aside, and exits.
/// In a normal run: nothing to do.
#[test]
fn the_test_binary_serves_the_demo_as_a_child() {
    let fd = CHILD_STDOUT.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: the descriptor was dup'ed for this use alone, and is used once.
        let stdout = unsafe { OwnedFd::from_raw_fd(fd) };
        std::process::exit(serve(stdout));
    }
}

fn serve(stdout: OwnedFd) -> i32 {
    let value = std::env::var(ENV_VAR).unwrap_or_default();
    let options = match Options::from_args(value.split_whitespace().map(str::to_owned)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("switchboard-demo: {ENV_VAR}: {e}");
            return 2;
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let served = runtime.block_on(async {
        let stdout = tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?;
        switchboard_demo::serve(tokio::io::stdin(), stdout, options).await
    });
    // tokio reads stdin on a blocking thread that may never return: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("switchboard-demo: {e}");
            1
        }
    }
}
