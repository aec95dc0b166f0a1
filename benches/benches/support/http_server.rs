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
//!
//! Two more servers on the same thread set-up: [`gateway`] (`switchboard serve`'s code) and
//! [`forwarder`] (this server passing calls to a blocking echo server child: the gateway's
//! floor).

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
        HttpServer::start_with(|listener, stop| Box::pin(serve(listener, stop, None)))
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
/// task on this thread; with `upstream`, calls go to it ([`forwarder`]).
async fn serve(
    listener: std::net::TcpListener,
    mut stop: oneshot::Receiver<()>,
    upstream: Option<Rc<Upstream>>,
) {
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
        let upstream = upstream.clone();
        let service = hyper::service::service_fn(move |req| {
            let sessions = sessions.clone();
            let upstream = upstream.clone();
            async move { Ok::<_, Infallible>(handle(req, &sessions, upstream.as_deref()).await) }
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

/// A 200 answer of JSON text.
fn json(body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// One request; with `upstream`, a `tools/call` is passed to it as it came and its answer
/// passed back as it went.
async fn handle(
    req: Request<hyper::body::Incoming>,
    sessions: &RefCell<Sessions>,
    upstream: Option<&Upstream>,
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
    if let Some(upstream) = upstream {
        if let Some(id) = upstream::call_id(&body) {
            if known != Some(true) {
                return status(StatusCode::NOT_FOUND);
            }
            return json(upstream.call(id, &body).await);
        }
    }
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
    let mut response = json(Bytes::from(out));
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
/// thread too; with `audit`, every forwarded call is written to it (`serve --audit`).
pub(crate) fn gateway(
    builder: switchboard::RuntimeBuilder,
    io_here: bool,
    audit: Option<switchboard_gateway::audit::Audit>,
) -> HttpServer {
    HttpServer::start_with(move |listener, stop| {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let builder = if io_here {
                builder.io_runtime(tokio::runtime::Handle::current())
            } else {
                builder
            };
            let runtime = builder.build().await.expect("the gateway's runtime");
            let gateway = switchboard_gateway::Gateway::new(runtime.clone());
            if let Some(audit) = audit {
                gateway.audit_to(audit);
            }
            let front = gateway.serve(switchboard_server::Options::default());
            let http = front.server().http(listener, served_config());
            tokio::select! {
                _ = stop => {}
                _ = http.run() => {}
            }
            drop(front);
            runtime.shutdown().await;
        })
    })
}

/// The least an HTTP-to-stdio forwarder does, the gateway's floor: this server's sessions
/// and handling, except that a `tools/call` is written as it came, as one line, to one
/// blocking echo server child and its answer line passed back as the HTTP answer, matched
/// by id (the bench's ids are unique). No MCP parsing beyond the id, no checks, no deadline,
/// no cancellation, no metrics: what any gateway of this shape costs on this machine.
pub(crate) fn forwarder() -> HttpServer {
    HttpServer::start_with(|listener, stop| {
        Box::pin(async move { serve(listener, stop, Some(Rc::new(Upstream::start()))).await })
    })
}

use upstream::Upstream;

mod upstream {
    //! The forwarder's one upstream: a blocking echo server child, its stdin behind an async
    //! lock, its stdout read by a task that hands each answer line to its waiter.

    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::process::Stdio;
    use std::rc::Rc;

    use bytes::Bytes;
    use serde::Deserialize;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::process::{Child, ChildStdin};
    use tokio::sync::oneshot;

    type Waiters = Rc<RefCell<HashMap<u64, oneshot::Sender<Bytes>>>>;

    pub(crate) struct Upstream {
        stdin: tokio::sync::Mutex<ChildStdin>,
        waiters: Waiters,
        _child: Child,
    }

    #[derive(Deserialize)]
    struct Peek<'a> {
        id: Option<u64>,
        #[serde(borrow)]
        method: Option<&'a str>,
    }

    /// The id of `message` if it is a `tools/call`.
    pub(crate) fn call_id(message: &[u8]) -> Option<u64> {
        let peek: Peek<'_> = serde_json::from_slice(message).ok()?;
        (peek.method == Some("tools/call"))
            .then_some(peek.id)
            .flatten()
    }

    impl Upstream {
        /// Starts the child and the task reading its answers (on the current `LocalSet`).
        pub(crate) fn start() -> Upstream {
            let mut child = tokio::process::Command::from(super::super::echo_command())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("the forwarder's echo server");
            let stdin = child.stdin.take().expect("its stdin");
            let stdout = child.stdout.take().expect("its stdout");
            let waiters = Waiters::default();
            let settle = waiters.clone();
            tokio::task::spawn_local(async move {
                let mut reader = BufReader::with_capacity(64 * 1024, stdout);
                loop {
                    let mut line = Vec::with_capacity(256);
                    match reader.read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let Some(id) = serde_json::from_slice::<Peek<'_>>(&line)
                        .ok()
                        .and_then(|p| p.id)
                    else {
                        continue;
                    };
                    line.pop();
                    if let Some(waiter) = settle.borrow_mut().remove(&id) {
                        let _ = waiter.send(Bytes::from(line));
                    }
                }
            });
            Upstream {
                stdin: tokio::sync::Mutex::new(stdin),
                waiters,
                _child: child,
            }
        }

        /// `message` written to the child as one line; the answer line with its id.
        pub(crate) async fn call(&self, id: u64, message: &[u8]) -> Bytes {
            let (tx, rx) = oneshot::channel();
            self.waiters.borrow_mut().insert(id, tx);
            let mut line = Vec::with_capacity(message.len() + 1);
            line.extend_from_slice(message);
            line.push(b'\n');
            self.stdin
                .lock()
                .await
                .write_all(&line)
                .await
                .expect("writing to the echo server");
            rx.await.expect("the echo server's answer")
        }
    }
}

/// The serving side's HTTP config in the benches: the defaults, but for the per-client rate,
/// which one client making tens of thousands of calls a second would pass. Raised, not
/// removed, so that its check is measured with the rest.
pub(crate) fn served_config() -> switchboard_server::http::Config {
    let config = switchboard_server::http::Config::default();
    let limits =
        switchboard_server::http::ClientLimits::share_of(&config).with_rate(Some(1e9), u32::MAX);
    config.with_client_limits(limits)
}
