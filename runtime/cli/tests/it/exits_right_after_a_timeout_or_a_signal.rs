//! A command that a deadline or a Ctrl-C ends exits right after the line that says so (the
//! servers get 50 ms to leave, then `SIGKILL`), not one graceful close (2 s, then 2 s more)
//! later, and leaves no server process behind: measured against the worst server, a shell
//! that outlives the demo server it runs and ignores `SIGTERM`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{Temp, BIN};
use crate::process_is_gone;

/// How long after its line the process may take to exit: 50 ms of grace and the reaping,
/// with room for a loaded machine (it takes 35 to 65 ms on an idle one).
const AFTER_THE_LINE: Duration = Duration::from_millis(300);

/// A server whose shell writes its pid and its `sleep`'s to `$1`, ignores `SIGTERM` (and so
/// does the sleep), copies what it reads to `$2` on its way to the demo server (`$0`), and
/// once the demo server has left at stdin EOF waits for the sleep: only `SIGKILL` ends it.
const STUBBORN: &str = r#"echo $$ > "$1"; trap '' TERM; sleep 600 & echo $! >> "$1"; tee "$2" | "$0" demo-server --faults; wait"#;

/// `switchboard call hang [EXTRA] -- /bin/sh -c STUBBORN BIN pids wire`, its stderr piped.
fn call_hang(extra: &[&str], pids: &Temp, wire: &Temp) -> Child {
    crate::cli::command(&["call", "hang"])
        .args(extra)
        .args(["--", "/bin/sh", "-c", STUBBORN, BIN, pids.str(), wire.str()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard")
}

/// When the first stderr line came and what it said, then when the process exited and its
/// exit code.
struct Ending {
    line: String,
    line_at: Instant,
    exit_at: Instant,
    code: Option<i32>,
}

/// Waits for `child`'s first stderr line (read on a thread of its own, stamped as it comes)
/// and its exit.
fn ending(mut child: Child) -> Ending {
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stderr)
            .read_line(&mut line)
            .expect("a line on stderr");
        (line, Instant::now())
    });
    let status = child.wait().expect("wait for switchboard");
    let exit_at = Instant::now();
    let (line, line_at) = reader.join().expect("the stderr reader");
    Ending {
        line,
        line_at,
        exit_at,
        code: status.code(),
    }
}

/// The shell's and its sleep's pids, once the shell has written both.
fn server_pids(pids: &Temp) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = std::fs::read_to_string(&pids.0).unwrap_or_default();
        let found: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if found.len() == 2 {
            return found;
        }
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The line came before the exit, and the exit within [`AFTER_THE_LINE`] of it; no
/// process of the server's is left.
fn assert_exited_right_after_the_line(ending: &Ending, pids: &[u32], what: &str) {
    let after = ending.exit_at.saturating_duration_since(ending.line_at);
    eprintln!(
        "{what}: exited {:.1} ms after its line",
        after.as_secs_f64() * 1000.0
    );
    assert!(ending.line_at <= ending.exit_at);
    assert!(
        after < AFTER_THE_LINE,
        "{what}: exited {after:?} after its line"
    );
    for &pid in pids {
        assert!(
            process_is_gone(pid),
            "{what}: server process {pid} was left"
        );
    }
}

#[test]
fn a_call_that_times_out_exits_right_after_saying_so() {
    let pids = Temp::path("timeout-pids");
    let wire = Temp::path("timeout-wire");
    let started = Instant::now();
    let child = call_hang(&["--timeout", "1s"], &pids, &wire);
    let pids = server_pids(&pids);
    let ending = ending(child);
    assert_eq!(ending.code, Some(3), "{}", ending.line);
    assert!(ending.line.contains("timed out"), "{}", ending.line);
    let total = ending.exit_at.duration_since(started);
    eprintln!(
        "--timeout 1s: exited {} ms after it started",
        total.as_millis()
    );
    assert!(total < Duration::from_millis(1500), "{total:?}");
    assert_exited_right_after_the_line(&ending, &pids, "--timeout 1s");
}

#[test]
fn sigint_during_a_call_over_stdio_exits_right_after_saying_so() {
    let pids = Temp::path("sigint-pids");
    let wire = Temp::path("sigint-wire");
    let child = call_hang(&[], &pids, &wire);
    let pids = server_pids(&pids);
    // Interrupt once the call is on the wire.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !std::fs::read_to_string(&wire.0).is_ok_and(|w| w.contains(r#""tools/call""#)) {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let ending = ending(child);
    assert_eq!(ending.code, Some(130), "{}", ending.line);
    assert!(
        ending.line.contains("interrupted by SIGINT"),
        "{}",
        ending.line
    );
    assert_exited_right_after_the_line(&ending, &pids, "SIGINT");
}
