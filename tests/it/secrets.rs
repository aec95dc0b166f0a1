//! Secrets never reach the logs: a bearer token, a secret header and an env value, with every
//! log level on, through a successful HTTP session, a refused one and a stdio server; and
//! every token, code, verifier and client secret of an OAuth login and refresh.

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
    let oauth_secrets = oauth_flow().await;

    let logs = String::from_utf8_lossy(&sink.0.lock().unwrap()).into_owned();
    assert!(logs.contains("locked"), "no logs captured at all:\n{logs}");
    assert!(
        logs.contains("authorized"),
        "no OAuth logs captured:\n{logs}"
    );
    for secret in [TOKEN, HEADER, ENV]
        .into_iter()
        .chain(oauth_secrets.iter().map(String::as_str))
    {
        assert!(
            !logs.contains(secret),
            "{secret} leaked into the logs:\n{logs}"
        );
    }
}

/// An OAuth login through the runtime, a call, a refused token and its refresh, against the
/// scripted authorization server; returns every secret that crossed the wire (access and
/// refresh tokens, the code and its verifier, client secrets and assertions).
async fn oauth_flow() -> Vec<String> {
    use crate::oauth_fixture::{serve, Knobs};

    let fixture = serve(Knobs::default()).await;
    let auth = crate::oauth::client(&fixture);
    let (rt, server) = crate::oauth::runtime(&fixture, &auth).await;
    server.call_tool("whoami", json!({})).await.unwrap();
    fixture.invalidate_access_tokens();
    server.call_tool("whoami", json!({})).await.unwrap();
    rt.shutdown().await;

    let mut secrets = Vec::new();
    for seen in fixture.seen() {
        if let Some(token) = seen
            .authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "))
        {
            secrets.push(token.to_owned());
        }
        for name in [
            "code",
            "code_verifier",
            "refresh_token",
            "client_secret",
            "client_assertion",
        ] {
            if let Some(value) = seen.params.get(name) {
                secrets.push(value.clone());
            }
        }
    }
    assert!(
        secrets.iter().any(|s| s.starts_with("ref-")),
        "no refresh happened: {secrets:?}"
    );
    secrets.sort();
    secrets.dedup();
    secrets
}
