//! A local Streamable HTTP MCP server for the `http` bench: hyper 1 (HTTP/1.1, keep-alive)
//! on 127.0.0.1, on one thread of its own running a current-thread tokio runtime, so that
//! it uses one core at most and its CPU time can be read apart from the clients'
//! ([`HttpServer::cpu`], the thread's CPU clock).
//!
//! Every POST carries one JSON-RPC message and is answered with JSON
//! (`Content-Type: application/json`), never SSE, through the same handling as the blocking
//! echo server (`echo_server::answer`): `initialize` starts a session (`Mcp-Session-Id`),
//! notifications get 202, `tools/list`, `tools/call echo` and `ping` their answers. Any other
//! request needs a live session id (400 without one, 404 for an unknown one). GET (a server
//! stream) is 405: this server never sends anything unasked. DELETE ends the session (204).

use std::cell::RefCell;
use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::rc::Rc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

use super::echo_server::{self, Answered};

/// A future a server thread runs.
pub(crate) type LocalFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

/// The header that carries the session id.
const SESSION: &str = "mcp-session-id";

/// The running server; dropping it stops the thread.
#[derive(Debug)]
pub(crate) struct HttpServer {
    addr: SocketAddr,
    /// The server thread's CPU clock (`pthread_getcpuclockid`).
    clock: libc::clockid_t,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Binds 127.0.0.1 on a free port and starts serving on a new thread.
    pub(crate) fn start() -> HttpServer {
        HttpServer::start_with(|listener, stop| Box::pin(serve(listener, stop)))
    }

    /// Like [`start`](Self::start), with another server: `serve` runs on the thread's
    /// current-thread runtime (in a `LocalSet`) until `stop` fires.
    pub(crate) fn start_with(
        serve: impl FnOnce(std::net::TcpListener, oneshot::Receiver<()>) -> LocalFuture + Send + 'static,
    ) -> HttpServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("the bound address");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let (stop, stopped) = oneshot::channel();
        let (clock_tx, clock_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("bench-http-server".into())
            .spawn(move || {
                let _ = clock_tx.send(this_thread_clock());
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime");
                // `LocalSet`: the sessions live in an `Rc`, this runtime has one thread.
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, serve(listener, stopped));
            })
            .expect("spawn the server thread");
        let clock = clock_rx.recv().expect("the server thread's clock");
        HttpServer {
            addr,
            clock,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>/mcp`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// CPU time the server thread has used so far.
    pub(crate) fn cpu(&self) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` only writes the struct it is given; the clock id stays
        // valid while the thread runs, which it does until `self` is dropped.
        let rc = unsafe { libc::clock_gettime(self.clock, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime of the server thread");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The CPU clock of the calling thread, readable from any thread of the process.
fn this_thread_clock() -> libc::clockid_t {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_self` is always valid for the calling thread; the call only writes
    // `clock`.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    assert_eq!(rc, 0, "pthread_getcpuclockid");
    clock
}

/// Live session ids; a counter makes each new one.
#[derive(Default)]
struct Sessions {
    live: HashSet<String>,
    next: u64,
}

/// Accepts connections until `stop` fires (or its sender is dropped); each connection is a
/// task on this thread.
async fn serve(listener: std::net::TcpListener, mut stop: oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    let sessions = Rc::new(RefCell::new(Sessions::default()));
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        // Answers are small and written whole: never hold one back for Nagle.
        let _ = stream.set_nodelay(true);
        let sessions = sessions.clone();
        let service = hyper::service::service_fn(move |req| {
            let sessions = sessions.clone();
            async move { Ok::<_, Infallible>(handle(req, &sessions).await) }
        });
        tokio::task::spawn_local(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

async fn handle(
    req: Request<hyper::body::Incoming>,
    sessions: &RefCell<Sessions>,
) -> Response<Full<Bytes>> {
    let session = req
        .headers()
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let known = session
        .as_deref()
        .map(|s| sessions.borrow().live.contains(s));
    match *req.method() {
        Method::POST => {}
        Method::DELETE => {
            return match session {
                Some(s) if sessions.borrow_mut().live.remove(&s) => status(StatusCode::NO_CONTENT),
                Some(_) => status(StatusCode::NOT_FOUND),
                None => status(StatusCode::BAD_REQUEST),
            };
        }
        _ => return status(StatusCode::METHOD_NOT_ALLOWED),
    }
    let Ok(body) = req.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let body = body.to_bytes();
    let mut out = Vec::with_capacity(256);
    let answered = echo_server::answer(&body, &mut out).expect("writing to a Vec");
    if answered != Answered::Initialize {
        match known {
            None => return status(StatusCode::BAD_REQUEST),
            Some(false) => return status(StatusCode::NOT_FOUND),
            Some(true) => {}
        }
    }
    if answered == Answered::Nothing {
        return status(StatusCode::ACCEPTED);
    }
    let mut response = Response::new(Full::new(Bytes::from(out)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if answered == Answered::Initialize {
        let mut sessions = sessions.borrow_mut();
        sessions.next += 1;
        let id = format!("bench-session-{}", sessions.next);
        sessions.live.insert(id.clone());
        response.headers_mut().insert(
            SESSION,
            HeaderValue::from_str(&id).expect("a valid header value"),
        );
    }
    response
}

/// `switchboard serve`'s code (the gateway crate on `switchboard-server`, default options and
/// HTTP settings) over the runtime `builder` makes, on a thread of its own whose CPU clock
/// [`HttpServer::cpu`] reads: with `io_here`, the runtime's upstream connections run on that
/// thread too.
pub(crate) fn gateway(builder: switchboard::RuntimeBuilder, io_here: bool) -> HttpServer {
    HttpServer::start_with(move |listener, stop| {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let builder = if io_here {
                builder.io_runtime(tokio::runtime::Handle::current())
            } else {
                builder
            };
            let runtime = builder.build().await.expect("the gateway's runtime");
            let front = switchboard_gateway::Gateway::new(runtime.clone())
                .serve(switchboard_server::Options::default());
            let http = front
                .server()
                .http(listener, switchboard_server::http::Config::default());
            tokio::select! {
                _ = stop => {}
                _ = http.run() => {}
            }
            drop(front);
            runtime.shutdown().await;
        })
    })
}
