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
        // The front runtime lists the gateway's resources and prompts in the background too.
        let mut watch = front.watch();
        tokio::time::timeout(WAIT, async {
            while gateway.status().resources.is_empty() || gateway.status().prompts.is_empty() {
                assert!(watch.changed().await, "the front runtime is gone");
            }
        })
        .await
        .expect("the gateway's resources and prompts are listed");
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
