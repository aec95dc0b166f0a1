//! A TCP proxy on loopback that cuts HTTP responses as a broken network does: it forwards a
//! prefix of a chosen response, then resets both connections (`SO_LINGER` 0, so the client
//! reads `ECONNRESET`, not a clean end).
//!
//! It reads just enough HTTP/1.1 to know where each request ends (its head and a
//! `Content-Length` body): a keep-alive client sends its next request only once the last
//! answer is read, so every byte the server sends after a request belongs to that request's
//! response. Which responses are cut is decided per request: those whose bytes contain a
//! marker, or about one in N at random (from a seed, so a failing run can be replayed).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest prefix of a cut response that is forwarded.
const MAX_PREFIX: u64 = 512;

/// Which responses the proxy cuts.
#[derive(Debug, Clone)]
pub(crate) enum Cut {
    /// The responses to the first `times` requests whose bytes (head or body) contain
    /// `text`, each after `keep` of it.
    Matching {
        text: String,
        times: usize,
        keep: Keep,
    },
    /// About one response in `one_in`, chosen by a generator seeded with `seed`, each after a
    /// random prefix.
    Random { one_in: u64, seed: u64 },
}

impl Cut {
    /// The first response to a request containing `text`, after `keep`.
    pub(crate) fn once(text: &str, keep: Keep) -> Cut {
        Cut::Matching {
            text: text.to_owned(),
            times: 1,
            keep,
        }
    }
}

/// How much of a cut response is forwarded before the reset.
#[derive(Debug, Clone)]
pub(crate) enum Keep {
    /// This many bytes (0: the reset comes before anything).
    Bytes(usize),
    /// Everything up to and including the first occurrence of this text (the head's end
    /// `"\r\n\r\n"`, an SSE event's end `"\n\n"`), then nothing.
    Through(&'static str),
    /// A random prefix, up to 512 bytes (most answers here are longer).
    Random,
}

/// A running proxy; it stops with the test's runtime.
#[derive(Debug, Clone)]
pub(crate) struct CuttingProxy {
    /// Where clients connect.
    pub(crate) addr: SocketAddr,
    cuts: Arc<AtomicUsize>,
}

impl CuttingProxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr, cut: Cut) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let proxy = CuttingProxy {
            addr,
            cuts: Arc::default(),
        };
        let decide = Arc::new(Decide::new(cut));
        let cuts = proxy.cuts.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (decide, cuts) = (decide.clone(), cuts.clone());
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        relay(client, server, decide, cuts).await;
                    }
                });
            }
        });
        proxy
    }

    /// Responses cut so far.
    pub(crate) fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }

    /// The URL of `path` through the proxy.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// The cutting decisions, shared by every connection.
struct Decide {
    cut: Cut,
    matched: AtomicUsize,
    rng: Mutex<u64>,
}

impl Decide {
    fn new(cut: Cut) -> Self {
        let seed = match &cut {
            Cut::Random { seed, .. } => *seed,
            Cut::Matching { .. } => 1,
        };
        Decide {
            cut,
            matched: AtomicUsize::new(0),
            rng: Mutex::new(seed.max(1)),
        }
    }

    /// xorshift64: small, seeded, good enough to spread cuts and cut points.
    fn next(&self) -> u64 {
        let mut state = self.rng.lock().unwrap();
        let mut x = *state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *state = x;
        x
    }

    /// How the response to `request` is cut, if it is.
    fn cuts(&self, request: &[u8]) -> Option<Keep> {
        match &self.cut {
            Cut::Matching { text, times, keep } => {
                let found = request
                    .windows(text.len())
                    .any(|window| window == text.as_bytes());
                (found && self.matched.fetch_add(1, Ordering::SeqCst) < *times)
                    .then(|| keep.clone())
            }
            Cut::Random { one_in, .. } => {
                self.next().is_multiple_of(*one_in).then_some(Keep::Random)
            }
        }
    }

    /// How many bytes of a response to forward before the reset.
    fn budget(&self, keep: &Keep) -> Budget {
        match keep {
            Keep::Bytes(n) => Budget::Bytes(*n),
            Keep::Through(text) => Budget::Through {
                text,
                seen: Vec::new(),
            },
            Keep::Random => Budget::Bytes((self.next() % MAX_PREFIX) as usize),
        }
    }
}

/// What is left to forward of a response being cut.
enum Budget {
    Bytes(usize),
    Through {
        text: &'static str,
        /// What was forwarded so far (to find `text` across reads).
        seen: Vec<u8>,
    },
}

impl Budget {
    /// How much of `chunk` to forward; `Err(n)`: forward `n` bytes, then reset.
    fn take(&mut self, chunk: &[u8]) -> Result<(), usize> {
        match self {
            Budget::Bytes(left) if *left < chunk.len() => Err(*left),
            Budget::Bytes(left) => {
                *left -= chunk.len();
                Ok(())
            }
            Budget::Through { text, seen } => {
                let before = seen.len();
                seen.extend_from_slice(chunk);
                match seen
                    .windows(text.len())
                    .position(|window| window == text.as_bytes())
                {
                    Some(at) => Err(at + text.len() - before),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Relays one client connection. After a request whose response is to be cut, the first
/// read of the response decides the cut point: somewhere in those bytes (none of them, part
/// of the head, part of the body), never all of them.
async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    decide: Arc<Decide>,
    cuts: Arc<AtomicUsize>,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // Set by the request side when the next response must be cut; taken by the response side.
    let armed: Mutex<Option<Keep>> = Mutex::new(None);
    let cut = {
        let (mut client_read, mut client_write) = client.split();
        let (mut server_read, mut server_write) = server.split();
        let upstream = async {
            let mut pending: Vec<u8> = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match client_read.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                pending.extend_from_slice(&buf[..n]);
                // Whole requests, each one's cut decided before its last byte goes out.
                while let Some(len) = request_len(&pending) {
                    let request: Vec<u8> = pending.drain(..len).collect();
                    if let Some(keep) = decide.cuts(&request) {
                        *armed.lock().unwrap() = Some(keep);
                    }
                    if server_write.write_all(&request).await.is_err() {
                        return;
                    }
                }
            }
        };
        let downstream = async {
            let mut buf = vec![0u8; 64 * 1024];
            // What is left to forward of the response being cut.
            let mut budget: Option<Budget> = None;
            loop {
                let n = match server_read.read(&mut buf).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => n,
                };
                if let Some(keep) = armed.lock().unwrap().take() {
                    budget = Some(decide.budget(&keep));
                }
                if let Some(Err(keep)) = budget.as_mut().map(|b| b.take(&buf[..n])) {
                    let _ = client_write.write_all(&buf[..keep]).await;
                    let _ = client_write.flush().await;
                    return true;
                }
                if client_write.write_all(&buf[..n]).await.is_err() {
                    return false;
                }
            }
        };
        tokio::select! {
            () = upstream => false,
            cut = downstream => cut,
        }
    };
    if cut {
        cuts.fetch_add(1, Ordering::SeqCst);
        // A reset, not a clean close: what a broken network or a crashed middlebox shows.
        // (Deprecated because a non-zero linger blocks the dropping thread; zero never does.)
        #[allow(deprecated)]
        {
            let _ = client.set_linger(Some(Duration::ZERO));
            let _ = server.set_linger(Some(Duration::ZERO));
        }
    }
}

/// The length of the first complete request in `bytes` (head and `Content-Length` body),
/// if it is all there.
fn request_len(bytes: &[u8]) -> Option<usize> {
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&bytes[..head_end]).ok()?;
    let body = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    (bytes.len() >= head_end + body).then_some(head_end + body)
}
