//! A server that went down and is being restarted keeps its tools, resources and prompts in
//! the catalogues: a call routed by name waits for the restart within its deadline (and is
//! served), or past it fails with `Unavailable` saying the server is restarting, never with
//! "no such tool". A server that gives up, and one restarted on request, drop theirs.
//!
//! The server is the demo as a real child process, killed with `SIGKILL`.

use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{RestartPolicy, Runtime, ServerHandle, ServerState, Unavailability};

use crate::support::*;

/// Every call's own deadline: far longer than a restart.
const DEADLINE: Duration = Duration::from_secs(10);

/// A runtime with the demo (`--faults`) as the child process `demo`, restarted by `policy`;
/// returns once its resources and prompts are listed too.
async fn started(config: switchboard::ServerConfig) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .server("demo", config)
        .build()
        .await
        .expect("runtime");
    let server = rt.server("demo").expect("server");
    // Resources and prompts are listed in the background once the server is ready.
    let mut watch = rt.watch();
    tokio::time::timeout(DEADLINE, async {
        while server.status().resources.is_empty() || server.status().prompts.is_empty() {
            assert!(watch.changed().await, "the runtime is gone");
        }
    })
    .await
    .expect("the demo's resources and prompts are listed");
    (rt, server)
}

/// Kills the server's process (`SIGKILL`) and returns once the runtime has seen it go:
/// 10 ms later, or when the status leaves `ready`, whichever comes last (a loaded machine
/// may take longer to read the end of the pipes than 10 ms).
async fn kill(rt: &Runtime, server: &ServerHandle) {
    let pid = server.status().pid.expect("a child process");
    let mut watch = rt.watch();
    // SAFETY: a plain signal to a process of ours.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    tokio::time::sleep(Duration::from_millis(10)).await;
    tokio::time::timeout(DEADLINE, async {
        while server.status().is_ready() {
            assert!(watch.changed().await, "the runtime is gone");
        }
    })
    .await
    .expect("the runtime saw the kill");
}

fn names(catalogue: &switchboard::Catalogue) -> Vec<String> {
    catalogue.iter().map(|e| e.name.clone()).collect()
}

#[tokio::test]
async fn a_killed_server_keeps_its_entries_and_a_call_made_right_after_waits_for_its_restart() {
    // The default backoff: the restart comes some half a second after the kill.
    let (rt, server) = started(demo_stdio(&["--faults"]).into()).await;
    let tools = rt.catalogue();
    let prompts = names(&rt.prompt_catalogue());
    assert!(tools.get("echo").is_some());
    assert!(!prompts.is_empty());
    let pid = server.status().pid;
    kill(&rt, &server).await;

    // During the restart: everything is still offered.
    assert!(
        matches!(server.status().state, ServerState::Restarting { .. }),
        "{:?}",
        server.status().state
    );
    assert_eq!(names(&rt.catalogue()), names(&tools));
    assert_eq!(names(&rt.prompt_catalogue()), prompts);
    let owners = rt.resource_owners("demo://text/hello");
    assert_eq!(
        owners.iter().map(|s| s.name()).collect::<Vec<_>>(),
        ["demo"]
    );
    // A call by catalogue name waits for the restart, and is served by the new process.
    let result = rt
        .call_tool("echo", json!({"text": "after the kill"}))
        .timeout(DEADLINE)
        .await
        .unwrap_or_else(|e| panic!("the call made during the restart failed: {e}"));
    assert_eq!(result.text(), "after the kill");
    let status = server.status();
    assert_eq!(status.restarts, 1);
    assert_ne!(status.pid, pid);
    // The tools never left the catalogue: any rebuild that changed them would have given it
    // a new version.
    assert_eq!(rt.catalogue().version(), tools.version());
    assert_eq!(names(&rt.prompt_catalogue()), prompts);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_call_for_a_restarting_server_past_its_deadline_is_unavailable_restarting_not_unknown() {
    let slow = RestartPolicy::default()
        .with_initial_delay(Duration::from_secs(30))
        .with_jitter(0.0);
    let (rt, server) = started(demo_stdio(&["--faults"]).restart(slow).into()).await;
    kill(&rt, &server).await;
    let err = rt
        .call_tool("echo", json!({"text": "too soon"}))
        .timeout(Duration::from_millis(300))
        .await
        .unwrap_err();
    match err.kind() {
        ErrorKind::Unavailable {
            because: Unavailability::Restarting,
            reason,
            ..
        } => {
            assert_eq!(err.server(), Some("demo"));
            assert_eq!(err.tool(), Some("echo"));
            assert!(reason.contains("restarting"), "{reason}");
        }
        _ => panic!("not Unavailable(Restarting): {err:?}"),
    }
    assert!(!err.is_not_found());
    // A prompt and a resource of it wait the same way (under the server's timeout).
    assert!(rt.prompt_catalogue().get("simple").is_some());
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_that_gives_up_drops_its_entries_and_one_restarted_on_request_lists_them_again() {
    // The first start serves; every later one exits during its handshake.
    let dir = std::env::temp_dir().join(format!("sb-gives-up-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("served-once");
    let _ = std::fs::remove_file(&marker);
    let script = format!(
        "if [ -e '{m}' ]; then exit 3; else touch '{m}'; exec {demo}; fi",
        m = marker.display(),
        demo = demo_child_command_line(),
    );
    // The kill and one failed restart within a minute: a crash loop.
    let policy = RestartPolicy::default()
        .with_initial_delay(Duration::from_millis(50))
        .with_jitter(0.0)
        .with_crash_loop(2, Duration::from_secs(60));
    let config = switchboard::ServerConfig::stdio("sh")
        .args(["-c", &script])
        .env(switchboard_demo::ENV_VAR, "")
        .protocol(switchboard::Protocol::Legacy)
        .restart(policy);
    let (rt, server) = started(config.into()).await;
    assert!(rt.catalogue().get("echo").is_some());
    kill(&rt, &server).await;
    let gave_up = || matches!(server.status().state, ServerState::Failed { .. });
    assert!(
        eventually(DEADLINE, gave_up).await,
        "{:?}",
        server.status().state
    );
    // Given up: nothing of it is offered, and its names are unknown.
    assert!(
        rt.catalogue().get("echo").is_none(),
        "{:?}",
        names(&rt.catalogue())
    );
    assert!(rt.prompt_catalogue().is_empty());
    assert!(rt.resource_owners("demo://text/hello").is_empty());
    let err = rt.call_tool("echo", json!({})).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnknownTool), "{err:?}");

    // Restarted on request (and able to serve again): back once it has listed them.
    std::fs::remove_file(&marker).unwrap();
    let before = rt.catalogue().version();
    rt.restart_server("demo").await.unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert!(rt.catalogue().get("echo").is_some());
    assert!(rt.catalogue().version() > before);
    rt.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_restarted_on_request_during_its_backoff_drops_its_entries_until_it_lists_again() {
    let slow = RestartPolicy::default()
        .with_initial_delay(Duration::from_secs(30))
        .with_jitter(0.0);
    let (rt, server) = started(demo_stdio(&["--faults"]).restart(slow).into()).await;
    let before = rt.catalogue().version();
    kill(&rt, &server).await;
    assert_eq!(rt.catalogue().version(), before, "kept while restarting");
    // Asked for a fresh start: what it listed is dropped, then listed again. A catalogue
    // version is new only when the entries change: without its tools, then with them.
    rt.restart_server("demo").await.unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    assert!(rt.catalogue().get("echo").is_some());
    let after = rt.catalogue().version();
    assert!(after >= before + 2, "versions {before} and then {after}");
    rt.shutdown().await;
}
