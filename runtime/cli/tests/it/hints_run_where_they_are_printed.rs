//! The commands the program suggests (the tour's hint, the help's first steps) run as
//! printed from a shell where the user is: one where `switchboard` is not on `PATH` (a
//! checkout, `cargo run --release -- demo`), and one where it is this very program (after
//! `cargo install --locked --path runtime/cli`). And a server `-- switchboard …` is this
//! program where `PATH` has none.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::cli::{stderr, stdout, Temp, BIN};

/// `BIN ARGS` in `cwd` with `PATH` set to `path` alone.
fn run_with_path(args: &[&str], cwd: &Path, path: &Path) -> Output {
    crate::cli::command(args)
        .current_dir(cwd)
        .env("PATH", path)
        .output()
        .expect("run switchboard")
}

/// `line` run by a POSIX shell in `cwd` with `PATH` set to `path` alone, as a user who
/// pasted it there would.
fn run_as_printed(line: &str, cwd: &Path, path: &Path) -> Output {
    Command::new("/bin/sh")
        .args(["-c", line])
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("RUST_LOG")
        .env_remove("SWITCHBOARD_CONFIG")
        .stdin(Stdio::null())
        .output()
        .expect("run /bin/sh")
}

/// The command the tour suggests, between backticks on the line that counts the fault tools
/// it did not show.
fn tour_hint(tour: &Output) -> String {
    assert_eq!(tour.status.code(), Some(0), "{}", stderr(tour));
    let out = stdout(tour);
    let line = out
        .lines()
        .find(|l| l.contains("more fault tools"))
        .unwrap_or_else(|| panic!("no hint in {out}"));
    line.split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {line}"))
        .to_owned()
}

/// Exit 0, and the demo server's fault tools listed.
fn assert_lists_the_fault_tools(output: &Output, line: &str) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{line}: stderr: {}",
        stderr(output)
    );
    let out = stdout(output);
    assert!(
        out.lines().any(|l| l.starts_with("spawn_grandchild — ")),
        "{line}: {out}"
    );
}

#[test]
fn the_tours_hint_runs_as_printed_where_switchboard_is_not_on_path() {
    let empty = Temp::dir("no-switchboard-on-path");
    let here = Temp::dir("a-user-elsewhere");
    let hint = tour_hint(&run_with_path(&["demo"], &here.0, &empty.0));
    assert!(!hint.starts_with("switchboard "), "{hint}");
    assert!(hint.contains(" tools -- "), "{hint}");
    assert_lists_the_fault_tools(&run_as_printed(&hint, &here.0, &empty.0), &hint);
}

#[test]
fn the_tours_hint_says_switchboard_where_that_is_this_program() {
    let bin = Temp::dir("switchboard-on-path");
    std::os::unix::fs::symlink(BIN, bin.0.join("switchboard")).expect("a symlink");
    let here = Temp::dir("a-user-with-it-installed");
    let hint = tour_hint(&run_with_path(&["demo"], &here.0, &bin.0));
    assert_eq!(
        hint,
        "switchboard tools -- switchboard demo-server --faults"
    );
    assert_lists_the_fault_tools(&run_as_printed(&hint, &here.0, &bin.0), &hint);
}

#[test]
fn the_helps_first_steps_run_as_printed_where_switchboard_is_not_on_path() {
    let empty = Temp::dir("no-switchboard-for-help");
    let here = Temp::dir("a-user-reading-the-help");
    let help = run_with_path(&[], &here.0, &empty.0);
    assert_eq!(help.status.code(), Some(0), "{}", stderr(&help));
    let text = stdout(&help);
    let steps: Vec<&str> = text
        .split("New here?")
        .nth(1)
        .unwrap_or_else(|| panic!("no first steps in {text}"))
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .collect();
    assert_eq!(steps.len(), 3, "{text}");
    for step in steps {
        assert!(!step.starts_with("switchboard "), "{step}");
        let output = run_as_printed(step, &here.0, &empty.0);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{step}: stderr: {}",
            stderr(&output)
        );
        assert!(!stdout(&output).is_empty(), "{step}");
    }
}

#[test]
fn a_server_named_switchboard_is_this_program_where_path_has_none() {
    let empty = Temp::dir("no-switchboard-for-servers");
    let here = Temp::dir("a-checkout");
    // As `cargo run --release -- call add a=2 b=3 -- switchboard demo-server` runs it.
    let args = [
        "call",
        "add",
        "a=2",
        "b=3",
        "--",
        "switchboard",
        "demo-server",
    ];
    let output = run_with_path(&args, &here.0, &empty.0);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "5\n");
    // Where PATH has a program of that name, it is that program that runs.
    let other = Temp::dir("another-switchboard");
    let script = other.0.join("switchboard");
    std::fs::write(&script, "#!/bin/sh\necho 'not an MCP server' >&2\nexit 7\n").expect("write");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let output = run_with_path(&args, &here.0, &other.0);
    assert_eq!(output.status.code(), Some(3), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("not an MCP server"),
        "{}",
        stderr(&output)
    );
}
