//! A gateway over the demo server, and a front runtime connected to it, all in memory.

use std::time::Duration;

use switchboard::{Runtime, ServerConfig, ServerHandle};
use switchboard_gateway::{Front, Gateway};

/// How long anything awaited may take before the test fails.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// The demo server in this process, with these command-line options.
pub(crate) fn demo(args: &[&str]) -> ServerConfig {
    let options = switchboard_demo::Options::from_args(args.iter().map(|s| s.to_string()))
        .expect("demo options");
    ServerConfig::memory(move |io| {
        let options = options.clone();
        async move {
            let (reader, writer) = tokio::io::split(io);
            let _ = switchboard_demo::serve(reader, writer, options).await;
        }
    })
    .into()
}

/// An MCP server of this process (a gateway's, or a test upstream's), as a runtime's server
/// over an in-memory line stream.
pub(crate) fn in_memory(server: switchboard_server::Server) -> ServerConfig {
    ServerConfig::memory(move |io| {
        let server = server.clone();
        async move {
            let (reader, writer) = tokio::io::split(io);
            let _ = server.serve(reader, writer).await;
        }
    })
    .into()
}

/// A gateway over `upstream`, served in memory to a front runtime whose one server is it:
/// the front runtime, its `gateway` server, and the gateway (kept while the test runs).
pub(crate) async fn fronted(upstream: &Runtime) -> (Runtime, ServerHandle, Front) {
    let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
    let front = Runtime::builder()
        .server("gateway", in_memory(served.server().clone()))
        .build()
        .await
        .expect("the front runtime");
    let gateway = front.server("gateway").expect("the gateway");
    (front, gateway, served)
}

/// A front runtime whose one server, `gateway`, is `served`, in `era`, with `handlers`.
pub(crate) async fn front_client(
    served: &Front,
    era: switchboard::Protocol,
    handlers: switchboard::client::ClientHandlers,
) -> (Runtime, ServerHandle) {
    let front = Runtime::builder()
        .client_handlers(handlers)
        .server("gateway", in_memory(served.server().clone()).protocol(era))
        .build()
        .await
        .expect("the front runtime");
    let gateway = front.server("gateway").expect("the gateway");
    (front, gateway)
}

/// Waits until `front`'s `gateway` lists resources and prompts: the front runtime lists
/// them in the background once the gateway is ready.
pub(crate) async fn lists_seen(front: &Runtime, gateway: &ServerHandle) {
    let mut watch = front.watch();
    tokio::time::timeout(WAIT, async {
        while gateway.status().resources.is_empty() || gateway.status().prompts.is_empty() {
            assert!(watch.changed().await, "the front runtime is gone");
        }
    })
    .await
    .expect("the gateway's resources and prompts are listed");
}

/// The gateway's side and the front client's.
pub(crate) struct Setup {
    pub(crate) upstream: Runtime,
    pub(crate) front: Runtime,
    pub(crate) gateway: ServerHandle,
    _served: Front,
}

impl Setup {
    /// A gateway over one demo server (`demo`, with `--faults`), and a front runtime whose
    /// one server (`gateway`) is the gateway.
    pub(crate) async fn start() -> Setup {
        let upstream = Runtime::builder()
            .server("demo", demo(&["--faults"]))
            .build()
            .await
            .expect("the upstream runtime");
        // The runtime lists resources and prompts once a server is ready, in the background:
        // the front client's first lists should see them.
        let mut watch = upstream.watch();
        let demo = upstream.server("demo").expect("the demo server");
        tokio::time::timeout(WAIT, async {
            while demo.status().resources.is_empty() || demo.status().prompts.is_empty() {
                assert!(watch.changed().await, "the upstream runtime is gone");
            }
        })
        .await
        .expect("the demo server's resources and prompts are listed");
        let served = Gateway::new(upstream.clone()).serve(switchboard_server::Options::default());
        let front = Runtime::builder()
            .server("gateway", in_memory(served.server().clone()))
            .build()
            .await
            .expect("the front runtime");
        let gateway = front.server("gateway").expect("the gateway");
        assert!(gateway.status().is_ready(), "{:?}", gateway.status());
        lists_seen(&front, &gateway).await;
        Setup {
            upstream,
            front,
            gateway,
            _served: served,
        }
    }

    pub(crate) async fn stop(self) {
        self.front.shutdown().await;
        self.upstream.shutdown().await;
    }
}

/// A front client that speaks raw lines to the gateway.
pub(crate) struct RawFront {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl RawFront {
    pub(crate) fn start(server: switchboard_server::Server) -> RawFront {
        use tokio::io::AsyncBufReadExt;
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let (reader, writer) = tokio::io::split(theirs);
            let _ = server.serve(reader, writer).await;
        });
        let (read, write) = tokio::io::split(ours);
        RawFront {
            write,
            read: tokio::io::BufReader::new(read).lines(),
        }
    }

    pub(crate) async fn send(&mut self, message: serde_json::Value) {
        use tokio::io::AsyncWriteExt;
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    pub(crate) async fn next(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(WAIT, self.read.next_line())
            .await
            .expect("in time")
            .unwrap()
            .expect("the gateway's stream is open");
        serde_json::from_str(&line).unwrap()
    }
}

impl RawFront {
    /// Sends request `id` and returns its answer, skipping the notifications before it.
    pub(crate) async fn request(
        &mut self,
        id: i64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
        loop {
            let message = self.next().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}
