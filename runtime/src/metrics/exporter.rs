//! A Prometheus recorder of the runtime's own, served at `/metrics` by a tiny HTTP/1.1
//! responder on a thread of its own (a scrape never delays the actor thread).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};

use super::Sink;

/// Histogram buckets, in seconds: from half a millisecond to five minutes.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0, 300.0,
];

/// How often histograms are drained between scrapes, to bound their memory.
const UPKEEP: Duration = Duration::from_secs(5);

/// Scrapes answered at once; a connection past that is closed at once.
const MAX_CONNECTIONS: usize = 8;

/// The longest request head read, and how long a client may take to send it.
const MAX_HEAD: usize = 8 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// A running exporter; dropping it stops the listener.
#[derive(Debug)]
pub(crate) struct Exporter {
    pub(crate) addr: SocketAddr,
    pub(crate) handle: PrometheusHandle,
    /// Dropping it ends the listener's loop.
    _stop: oneshot::Sender<()>,
}

impl Exporter {
    /// Binds `addr` now (so that a bad address fails the build) and serves from a thread.
    pub(crate) fn start(addr: SocketAddr) -> std::io::Result<(Exporter, Sink)> {
        let recorder = PrometheusBuilder::new()
            .set_buckets(BUCKETS)
            // The buckets are constants: a refusal of them is a bug here, told as such.
            .map_err(|e| std::io::Error::other(e.to_string()))?
            .build_recorder();
        let handle = recorder.handle();
        let listener = std::net::TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let (stop_tx, stop_rx) = oneshot::channel();
        let served = handle.clone();
        std::thread::Builder::new()
            .name("switchboard-metrics".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    tracing::error!("cannot start the metrics exporter's runtime");
                    return;
                };
                rt.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => serve(listener, served, stop_rx).await,
                        Err(e) => tracing::error!(%e, "cannot serve metrics"),
                    }
                });
            })?;
        tracing::info!(%addr, "serving metrics at /metrics");
        let exporter = Exporter {
            addr,
            handle,
            _stop: stop_tx,
        };
        Ok((exporter, Sink::Own(Arc::new(recorder))))
    }
}

async fn serve(listener: TcpListener, handle: PrometheusHandle, mut stop: oneshot::Receiver<()>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut upkeep = tokio::time::interval(UPKEEP);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = upkeep.tick() => handle.run_upkeep(),
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                // Busy with other scrapes: close this one rather than queue it.
                let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
                let handle = handle.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    answer(stream, &handle).await;
                });
            }
        }
    }
}

/// Reads one request head and answers it; the connection is closed after.
async fn answer(mut stream: TcpStream, handle: &PrometheusHandle) {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Some(head)) => head,
        _ => return,
    };
    let (status, body) = respond(&head, || handle.render());
    let head_only = head.starts_with("HEAD ");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status.starts_with("200") {
            "text/plain; version=0.0.4; charset=utf-8"
        } else {
            "text/plain; charset=utf-8"
        },
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    if !head_only {
        let _ = stream.write_all(body.as_bytes()).await;
    }
    let _ = stream.shutdown().await;
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.len() >= MAX_HEAD {
            break;
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The status line and body for a request head.
pub(super) fn respond(head: &str, render: impl FnOnce() -> String) -> (&'static str, String) {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return ("400 Bad Request", "bad request\n".into());
    };
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return ("404 Not Found", "not found: try /metrics\n".into());
    }
    match method {
        "GET" | "HEAD" => ("200 OK", render()),
        _ => ("405 Method Not Allowed", "only GET and HEAD\n".into()),
    }
}
