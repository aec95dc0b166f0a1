//! Deadlines: precedence, cancellation on expiry, progress.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use switchboard::ErrorKind;
use switchboard::{Error, Runtime, ToolPolicy};

use crate::support::*;

fn elapsed_of(err: &Error) -> Duration {
    match err.kind() {
        ErrorKind::Timeout { elapsed, .. } => *elapsed,
        _ => panic!("expected a timeout, got {err:?}"),
    }
}

#[tokio::test]
async fn per_call_beats_per_tool_beats_per_server_beats_default() {
    let config = demo_memory(&["--faults"])
        .timeout(Duration::from_millis(1600))
        .tool_timeout("hang", Duration::from_millis(800));
    let rt = Runtime::builder()
        .default_timeout(Duration::from_secs(30))
        .server("demo", config)
        .server("plain", demo_memory(&["--faults"]))
        .build()
        .await
        .unwrap();
    let demo = rt.server("demo").unwrap();
    let call = demo
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let tool = demo.call_tool("hang", json!({})).await.unwrap_err();
    let server = demo
        .call_tool("sleep", json!({"ms": 30000}))
        .await
        .unwrap_err();
    let (call, tool, server) = (elapsed_of(&call), elapsed_of(&tool), elapsed_of(&server));
    assert!(
        call >= Duration::from_millis(200) && call < Duration::from_millis(800),
        "{call:?}"
    );
    assert!(
        tool >= Duration::from_millis(800) && tool < Duration::from_millis(1600),
        "{tool:?}"
    );
    assert!(
        server >= Duration::from_millis(1600) && server < Duration::from_secs(30),
        "{server:?}"
    );
    rt.shutdown().await;

    let rt = Runtime::builder()
        .default_timeout(Duration::from_millis(250))
        .server("demo", demo_memory(&["--faults"]))
        .build()
        .await
        .unwrap();
    let err = rt
        .server("demo")
        .unwrap()
        .call_tool("hang", json!({}))
        .await
        .unwrap_err();
    let default = elapsed_of(&err);
    assert!(
        default >= Duration::from_millis(250) && default < Duration::from_secs(5),
        "{default:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_timeout_names_everything_and_sends_cancelled() {
    let (rt, server) = runtime_with(demo_stdio(&["--faults"])).await;
    let err = server
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let (ErrorKind::Timeout { elapsed, .. }, Some(request_id)) = (err.kind(), err.request_id())
    else {
        panic!("{err:?}")
    };
    assert_eq!(err.server(), Some("demo"));
    assert_eq!(err.tool(), Some("hang"));
    assert!(*elapsed >= Duration::from_millis(200));
    let text = err.to_string();
    assert!(
        text.contains("hang") && text.contains("demo") && text.contains(&request_id.to_string()),
        "{text}"
    );
    assert_eq!(call_ids(&server, "hang").await, [request_id]);
    let seen = server.call_tool("cancellations", json!({})).await.unwrap();
    let cancelled = seen.structured_content.unwrap()["cancelled"].clone();
    let ids: Vec<i64> = cancelled
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["requestId"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [request_id]);
    assert!(cancelled[0]["reason"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    assert_eq!(server.in_flight(), 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn progress_extends_the_deadline_but_not_past_max_total() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    // 1.2 s of work with progress every 100 ms outlives a 300 ms timeout that progress resets.
    let r = server
        .call_tool("sleep", json!({"ms": 2000, "steps": 20}))
        .timeout(Duration::from_millis(700))
        .reset_on_progress(true)
        .on_progress(move |p| sink.lock().unwrap().push(p.progress))
        .await
        .unwrap();
    assert_eq!(r.text(), "slept 2000 ms");
    assert!(
        seen.lock().unwrap().len() >= 10,
        "{:?}",
        seen.lock().unwrap()
    );

    // Without reset it times out.
    let err = server
        .call_tool("sleep", json!({"ms": 2000, "steps": 20}))
        .timeout(Duration::from_millis(700))
        .await
        .unwrap_err();
    assert!(elapsed_of(&err) < Duration::from_millis(1800));

    // With a cap it stops at the cap, progress or not.
    let err = server
        .call_tool("sleep", json!({"ms": 5000, "steps": 50}))
        .timeout(Duration::from_millis(700))
        .reset_on_progress(true)
        .max_total(Duration::from_millis(1400))
        .await
        .unwrap_err();
    let e = elapsed_of(&err);
    assert!(
        e >= Duration::from_millis(1400) && e < Duration::from_millis(4500),
        "{e:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn per_tool_policy_can_reset_on_progress() {
    let config = demo_memory(&["--faults"]).tool(
        "sleep",
        ToolPolicy::new()
            .timeout(Duration::from_millis(700))
            .reset_on_progress(true),
    );
    let (rt, server) = runtime_with(config).await;
    let r = server
        .call_tool("sleep", json!({"ms": 1500, "steps": 15}))
        .await
        .unwrap();
    assert_eq!(r.text(), "slept 1500 ms");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_progress_reset_call_that_times_out_sends_cancelled_with_its_id() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let err = server
        .call_tool("hang", json!({}))
        .timeout(Duration::from_millis(200))
        .reset_on_progress(true)
        .max_total(Duration::from_secs(60))
        .await
        .unwrap_err();
    let (true, Some(request_id)) = (err.is_timeout(), err.request_id()) else {
        panic!("{err:?}")
    };
    // The id in the error is the one the server received, and the one it was told to drop.
    assert_eq!(call_ids(&server, "hang").await, [request_id]);
    let cancelled = until_cancelled(&server, request_id).await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert!(
        cancelled[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("timed out")),
        "{cancelled:?}"
    );
    assert_eq!(server.in_flight(), 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn progress_keeps_a_call_alive_past_its_timeout_until_max_total() {
    let (rt, server) = runtime_with(demo_memory(&["--faults"])).await;
    let progress = Arc::new(Mutex::new(0u32));
    let sink = progress.clone();
    let timeout = Duration::from_millis(600);
    let max_total = Duration::from_secs(2);
    // Progress every 100 ms for 30 s: only `max_total` can end it early.
    let call = server
        .call_tool("sleep", json!({"ms": 30000, "steps": 300}))
        .timeout(timeout)
        .reset_on_progress(true)
        .max_total(max_total)
        .on_progress(move |_| *sink.lock().unwrap() += 1);
    let err = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("max_total ends the call long before the tool does")
        .unwrap_err();
    let (ErrorKind::Timeout { elapsed, .. }, Some(request_id)) = (err.kind(), err.request_id())
    else {
        panic!("{err:?}")
    };
    let elapsed = *elapsed;
    // Alive well past its own timeout, thanks to progress, and stopped at the cap.
    assert!(elapsed >= max_total, "{elapsed:?}");
    assert!(*progress.lock().unwrap() > 6, "{progress:?}");
    let cancelled = until_cancelled(&server, request_id).await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert!(
        cancelled[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("timed out")),
        "{cancelled:?}"
    );
    rt.shutdown().await;
}
