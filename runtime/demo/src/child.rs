//! The demo server in a test binary that starts itself again as a child process: the test
//! fixture of crates whose tests need a real MCP server process and no other binary (so
//! they never run a stale one).
//!
//! The child is the test binary run with the demo's options in [`ENV_VAR`] and libtest
//! told to run one test. Before `main` (and libtest's output, which would corrupt the MCP
//! stream), a constructor calls [`keep_stdout_aside`], which moves stdout aside for the
//! demo server and points the descriptor at `/dev/null`; that one test calls
//! [`serve_if_child`], which serves and exits.
//!
//! ```text
//! #[ctor::ctor(unsafe)]
//! fn keep_stdout_for_a_demo_child() {
//!     // SAFETY: before main, as keep_stdout_aside asks.
//!     unsafe { switchboard_demo::child::keep_stdout_aside() }
//! }
//!
//! #[test]
//! fn the_test_binary_serves_the_demo_as_a_child() {
//!     switchboard_demo::child::serve_if_child();
//! }
//! ```

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use crate::{Options, ENV_VAR};

/// The real stdout of a demo child, moved aside before `main`; -1 in any other process.
static CHILD_STDOUT: AtomicI32 = AtomicI32::new(-1);

/// When [`ENV_VAR`] is set, moves stdout aside for the demo server and points descriptor 1
/// at `/dev/null`; otherwise does nothing.
///
/// # Safety
///
/// Call it before `main`, from a constructor, while no other thread runs: it replaces
/// descriptor 1 under the process.
pub unsafe fn keep_stdout_aside() {
    // SAFETY: plain libc calls on descriptors this process owns; the C strings are
    // literals; the caller promises no other thread uses descriptor 1 meanwhile.
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

/// Whether this process is a demo child (its stdout kept aside).
pub fn is_child() -> bool {
    CHILD_STDOUT.load(Ordering::SeqCst) >= 0
}

/// In a demo child: serves the demo server (on stdin and the stdout kept aside, or over
/// Streamable HTTP with `--http ADDR`) and exits with its status. Anywhere else: returns.
pub fn serve_if_child() {
    let fd = CHILD_STDOUT.swap(-1, Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: the descriptor was dup'ed for this use alone, and is taken once.
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
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("switchboard-demo: no runtime: {e}");
            return 1;
        }
    };
    let served = runtime.block_on(async {
        // `--http ADDR`: Streamable HTTP until the process is killed.
        if let Some(addr) = options.http {
            return crate::serve_http(addr, options).await;
        }
        let stdout = tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?;
        crate::serve(tokio::io::stdin(), stdout, options).await
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
