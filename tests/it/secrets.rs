//! Secrets never reach the logs: a bearer token, a secret header and an env value, with every
//! log level on, through a successful HTTP session, a refused one and a stdio server.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard::transport::HttpKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig};

/// A log sink the test can read back.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const TOKEN: &str = "tok-3f9a1c-very-secret";
const HEADER: &str = "hdr-77e2b0-very-secret";
const ENV: &str = "env-5d1c4e-very-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_absent_from_logs_at_every_level() {
    let sink = Sink::default();
    let writer = sink.clone();
    // Global, because the runtime logs from its own actor thread.
    let installed = tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_writer(move || writer.clone())
        .try_init()
        .is_ok();
    assert!(
        installed,
        "another test installed a global subscriber first"
    );

    let refused = crate::http_session::serve_unauthorized().await;
    let rt = Runtime::builder()
        .server(
            "locked",
            ServerConfig::http(&refused, HttpKind::Auto)
                .bearer_token(TOKEN)
                .header("X-Api-Key", HEADER)
                .restart(RestartPolicy::off())
                .liveness(Liveness::off()),
        )
        .server(
            "local",
            // A stdio server that exits at once: spawn, disconnect and failure are all logged.
            ServerConfig::stdio("/bin/sh")
                .args(["-c", "echo starting >&2; exit 3"])
                .env("DEMO_SECRET", ENV)
                .restart(RestartPolicy::off()),
        )
        .build()
        .await
        .unwrap();
    let _ = rt.server("locked").unwrap().call_tool("x", json!({})).await;
    rt.shutdown().await;

    let logs = String::from_utf8_lossy(&sink.0.lock().unwrap()).into_owned();
    assert!(logs.contains("locked"), "no logs captured at all:\n{logs}");
    for secret in [TOKEN, HEADER, ENV] {
        assert!(
            !logs.contains(secret),
            "{secret} leaked into the logs:\n{logs}"
        );
    }
}
