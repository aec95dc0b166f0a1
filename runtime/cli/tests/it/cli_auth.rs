//! `switchboard auth`: status, logout and login of a config file's servers with an "oauth"
//! object, with the credentials file in a folder of the test's own (`XDG_CONFIG_HOME`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::cli::{assert_failed, stderr, stdout, BIN};

/// A config file with one OAuth server and one plain one (both unreachable), in a fresh folder.
fn setup(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchboard-auth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        r#"{"mcpServers": {
            "docs": {"url": "http://127.0.0.1:9/mcp", "oauth": {"clientId": "app"}},
            "plain": {"url": "http://127.0.0.1:9/mcp"}
        }}"#,
    )
    .unwrap();
    dir
}

fn auth(dir: &Path, args: &[&str]) -> Output {
    let config = dir.join("mcp.json");
    Command::new(BIN)
        .arg("auth")
        .arg("-c")
        .arg(&config)
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard")
}

#[test]
fn auth_status_and_logout_keep_a_private_credentials_file() {
    let dir = setup("status");
    let output = auth(&dir, &["status"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "docs: not logged in\n");

    let output = auth(&dir, &["logout", "docs"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let file = dir.join("config/switchboard/oauth-credentials.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // A file others can read is refused, not used.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = assert_failed(&auth(&dir, &["status"]), 3);
    assert!(err.contains("chmod 600"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn auth_login_names_the_server_and_the_step_that_failed() {
    let dir = setup("login");
    let err = assert_failed(&auth(&dir, &["login", "plain"]), 2);
    assert!(err.contains("`plain` is not a server"), "{err}");
    let err = assert_failed(&auth(&dir, &["login", "docs"]), 3);
    assert!(
        err.contains("docs: protected resource metadata") && err.contains("cannot connect"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
