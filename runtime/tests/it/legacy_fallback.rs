//! A stdio server that ends its process in answer to the era probe (`server/discover`), as
//! rmcp 0.x servers do, is started again at once and spoken to in the handshake era: ready
//! on the first start, no restart counted, and the verdict kept for its command, so a later
//! restart does not probe it again.

use std::path::Path;
use std::time::Duration;

use switchboard::{Era, Liveness, Runtime, ServerConfig};

use crate::support::*;

/// The demo server that exits on a method it does not know, started through `sh`, which
/// appends a line to `starts` each time.
fn counted_exiting_demo(starts: &Path) -> ServerConfig<switchboard::transport::Stdio> {
    let script = format!(
        "echo start >> '{}'; exec {}",
        starts.display(),
        demo_child_command_line()
    );
    ServerConfig::stdio("sh")
        .args(["-c", &script])
        .env(switchboard_demo::ENV_VAR, "--exit-on-unknown-method")
        .close_timeouts(Duration::from_secs(2), Duration::from_secs(2))
}

fn starts(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_server_that_exits_on_the_probe_is_ready_at_once_and_not_probed_again() {
    let file = std::env::temp_dir().join(format!("sb-probe-exit-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let rt = Runtime::builder()
        .server(
            "exits",
            counted_exiting_demo(&file).liveness(Liveness::off()),
        )
        .build()
        .await
        .expect("runtime");
    let server = rt.server("exits").unwrap();
    let status = server.status();
    assert!(status.is_ready(), "{:?}", status.state);
    assert_eq!(status.era, Some(Era::Legacy));
    assert_eq!(status.restarts, 0, "the fallback is not a restart");
    assert_eq!(
        starts(&file),
        2,
        "the probed process, then the handshake one"
    );
    assert_echoes(&server, "after the fallback").await;

    // A crash: the restart goes straight to `initialize`, one process, no probe.
    let pid = status.pid.expect("a pid");
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let restarted = || {
        let status = server.status();
        status.restarts == 1 && status.is_ready()
    };
    assert!(
        eventually(Duration::from_secs(10), restarted).await,
        "not restarted: {:?}",
        server.status()
    );
    assert_eq!(starts(&file), 3, "the restart probed again");
    assert_echoes(&server, "after the restart").await;

    // The verdict belongs to the command: another server entry running it is not probed,
    // one running another command is.
    rt.add_server("same", counted_exiting_demo(&file))
        .await
        .unwrap();
    assert_eq!(starts(&file), 4, "the same command was probed again");
    let other = file.with_extension("other");
    let _ = std::fs::remove_file(&other);
    rt.add_server("other", counted_exiting_demo(&other))
        .await
        .unwrap();
    assert_eq!(starts(&other), 2, "another command was not probed");
    assert!(rt.server("other").unwrap().status().is_ready());
    rt.shutdown().await;
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&other);
}
