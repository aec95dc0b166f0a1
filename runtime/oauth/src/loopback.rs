//! [`Loopback`]: the [`Authorizer`] of a program on the user's machine (RFC 8252 §7.3): it
//! shows the authorization URL and receives the browser's redirect on a listener on
//! `127.0.0.1`.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::connection::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use super::authorizer::{AuthorizationRequest, Authorizer};

/// How long a person has to approve.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a browser has to send its request once connected.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// The redirect's path.
const CALLBACK: &str = "/callback";

/// Shows the authorization URL (through the callback given to [`Loopback::new`], e.g. to
/// print it or open a browser) and waits for the redirect to
/// `http://127.0.0.1:<port>/callback`.
///
/// The listener is bound once, when the authorizer is made, so that its redirect URI is
/// known for registration. A redirect whose `state` is not the pending authorization's is
/// answered 400 and ignored; the first matching one ends the wait (one use). One
/// authorization at a time; at most five minutes each.
pub struct Loopback {
    shared: Arc<Shared>,
    show: Arc<dyn Fn(&Url) + Send + Sync>,
}

/// What a pending authorization needs ('static, for its future).
struct Shared {
    listener: std::net::TcpListener,
    port: u16,
    busy: tokio::sync::Mutex<()>,
}

impl fmt::Debug for Loopback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loopback")
            .field("port", &self.shared.port)
            .finish_non_exhaustive()
    }
}

impl Loopback {
    /// Binds `127.0.0.1:port` (0: a port the system picks); `show` is given each
    /// authorization URL.
    pub fn new(port: u16, show: impl Fn(&Url) + Send + Sync + 'static) -> io::Result<Loopback> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(Loopback {
            shared: Arc::new(Shared {
                listener,
                port,
                busy: tokio::sync::Mutex::new(()),
            }),
            show: Arc::new(show),
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.shared.port
    }
}

impl Shared {
    async fn wait(&self, state: &str) -> Result<String, String> {
        let _one_at_a_time = self.busy.lock().await;
        let listener = self
            .listener
            .try_clone()
            .and_then(tokio::net::TcpListener::from_std)
            .map_err(|e| format!("cannot listen for the redirect: {e}"))?;
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| format!("cannot accept the redirect: {e}"))?;
            let target = match tokio::time::timeout(REQUEST_TIMEOUT, read_target(&mut stream)).await
            {
                Ok(Some(target)) => target,
                _ => continue,
            };
            let url = format!("http://127.0.0.1:{}{target}", self.port);
            let Ok(parsed) = Url::parse(&url) else {
                respond(&mut stream, "400 Bad Request", "Not a redirect.").await;
                continue;
            };
            if parsed.path() != CALLBACK {
                respond(&mut stream, "404 Not Found", "Not found.").await;
                continue;
            }
            let matches = parsed
                .query_pairs()
                .any(|(k, v)| k == "state" && v == state);
            if !matches {
                respond(
                    &mut stream,
                    "400 Bad Request",
                    "This redirect is not the one awaited.",
                )
                .await;
                continue;
            }
            respond(
                &mut stream,
                "200 OK",
                "Authorization received; you can close this window.",
            )
            .await;
            return Ok(url);
        }
    }
}

impl Authorizer for Loopback {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK}", self.shared.port)
    }

    fn authorize(&self, request: AuthorizationRequest) -> BoxFuture<Result<String, String>> {
        (self.show)(&request.url);
        let shared = self.shared.clone();
        Box::pin(async move {
            tokio::time::timeout(APPROVAL_TIMEOUT, shared.wait(&request.state))
                .await
                .map_err(|_| "nobody approved the authorization within 5 minutes".to_owned())?
        })
    }
}

/// The request target of a `GET` request head.
async fn read_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = std::str::from_utf8(&head).ok()?.lines().next()?.to_owned();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_owned()),
        _ => None,
    }
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn only_the_matching_state_is_taken() {
        let shown = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = shown.clone();
        let loopback = Loopback::new(0, move |u| seen.lock().unwrap().push(u.to_string())).unwrap();
        let port = loopback.port();
        assert_eq!(
            loopback.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let request = AuthorizationRequest {
            server: "s".into(),
            url: Url::parse("https://as.example/authorize?x=1").unwrap(),
            redirect_uri: loopback.redirect_uri(),
            state: "st-1".into(),
        };
        let waiting = tokio::spawn(loopback.authorize(request));
        assert!(get(port, "/callback?code=c&state=other")
            .await
            .starts_with("HTTP/1.1 400"));
        assert!(get(port, "/elsewhere?state=st-1")
            .await
            .starts_with("HTTP/1.1 404"));
        assert!(get(port, "/callback?code=c1&state=st-1")
            .await
            .starts_with("HTTP/1.1 200"));
        let redirect = waiting.await.unwrap().unwrap();
        assert_eq!(
            redirect,
            format!("http://127.0.0.1:{port}/callback?code=c1&state=st-1")
        );
        assert_eq!(
            shown.lock().unwrap().as_slice(),
            ["https://as.example/authorize?x=1"]
        );
    }
}
