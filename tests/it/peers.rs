//! Where the peers nobody here wrote are, and how a listening one is started.
//!
//! `.ci/run` installs them: the npm servers into `.ci/peers/node_modules`, the Python SDK into
//! the venv `.ci/venv` (or `SWITCHBOARD_PYTHON`), and builds the rmcp fixtures of
//! `tests/peers/` into `.ci/peers/rust-target`. Tests that use them are
//! `#[ignore = "needs …"]`, and `.ci/run` runs them with `--include-ignored`; a peer that is
//! missing then fails the test with a message saying how to install it.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn installed(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed at {} (run .ci/run once, which installs every peer)",
        path.display()
    );
    path
}

/// An npm peer's executable in `.ci/peers`.
pub(crate) fn npm_bin(name: &str) -> PathBuf {
    installed(root().join(".ci/peers/node_modules/.bin").join(name), name)
}

/// The interpreter of a venv with the official Python SDK: `SWITCHBOARD_PYTHON`, else
/// `.ci/venv/bin/python`.
pub(crate) fn python() -> PathBuf {
    let path = std::env::var_os("SWITCHBOARD_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".ci/venv/bin/python"));
    installed(path, "the Python SDK's venv")
}

/// `tests/peers/python_server.py`.
pub(crate) fn python_server_script() -> PathBuf {
    root().join("tests/peers/python_server.py")
}

/// `tests/peers/python_tasks_server.py`: the tasks extension on the Python SDK.
pub(crate) fn python_tasks_script() -> PathBuf {
    root().join("tests/peers/python_tasks_server.py")
}

/// One of the rmcp fixture servers of `tests/peers/` (`rmcp0-server`, `rmcp3-server`).
pub(crate) fn rmcp_server(name: &str) -> PathBuf {
    installed(
        root().join(".ci/peers/rust-target/release").join(name),
        name,
    )
}

/// A free port of 127.0.0.1: one the kernel just handed out and took back.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// A peer serving HTTP on a port of 127.0.0.1; killed (and reaped) on drop.
#[derive(Debug)]
pub(crate) struct ListeningPeer {
    child: Child,
    port: u16,
}

impl ListeningPeer {
    /// Runs `command` (which must listen on `port`) and waits until the port accepts
    /// connections.
    pub(crate) fn start(mut command: Command, port: u16, what: &str) -> ListeningPeer {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let mut peer = ListeningPeer { child, port };
        // A cold interpreter or node importing its modules on a busy machine takes seconds.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return peer;
            }
            if let Ok(Some(status)) = peer.child.try_wait() {
                panic!("{what} exited before listening on {port}: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not listen on {port} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The Python SDK server over Streamable HTTP, answering with SSE streams, or with JSON
    /// bodies when `json` is set.
    pub(crate) fn python(json: bool) -> ListeningPeer {
        let port = free_port();
        let mut command = Command::new(python());
        command
            .arg(python_server_script())
            .args(["--http", &port.to_string()]);
        if json {
            command.arg("--json");
        }
        ListeningPeer::start(command, port, "the Python SDK server")
    }

    /// The peer's address.
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        (Ipv4Addr::LOCALHOST, self.port).into()
    }

    /// A URL on the peer.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for ListeningPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `cond` every 20 ms for up to `within`.
pub(crate) async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
