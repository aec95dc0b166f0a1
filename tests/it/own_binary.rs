//! The project's own `switchboard` binary, for the tests that run it as a real process (the
//! demo server's conformance fixture, `serve`).
//!
//! A test binary of this package cannot name another package's binary through Cargo
//! (`CARGO_BIN_EXE_*` is only set for a package's own binaries), and `cargo test -p
//! switchboard-tests` does not build it. So the first test that needs it builds it, once per
//! test process, with the Cargo that runs the tests (`$CARGO`) into the same target folder
//! and profile as this test binary: a no-op when it is up to date (as after `cargo test
//! --workspace`, which builds it for the CLI's own tests), and never a stale binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `switchboard` binary of this build, beside this test binary
/// (`target/<profile>/switchboard`), built first if it is missing or out of date.
pub(crate) fn switchboard_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // `<target>/<profile>/deps/it-<hash>`.
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in <target>/<profile>/deps");
    let target_dir = profile_dir.parent().expect("a target folder");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => panic!("no profile in {}", profile_dir.display()),
    };
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "switchboard-cli",
            "--bin",
            "switchboard",
        ])
        .arg("--profile")
        .arg(profile)
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", Path::new(&cargo).display()));
    assert!(
        output.status.success(),
        "cargo build -p switchboard-cli failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let path = profile_dir.join("switchboard");
    assert!(
        path.exists(),
        "cargo build -p switchboard-cli left no {}",
        path.display()
    );
    path
}
