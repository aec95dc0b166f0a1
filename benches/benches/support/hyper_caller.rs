//! A handshake-era session on a Streamable HTTP server through hyper's pooled keep-alive
//! client, the least an HTTP client does: the `server` and `gateway` benches drive their
//! servers with it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http_body_util::BodyExt;

const VERSION: &str = "2025-11-25";

type HyperClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// A session on one server (none on a stateless one), and hyper's pooled client to it.
pub(crate) struct Caller {
    client: HyperClient,
    uri: hyper::Uri,
    session: Option<hyper::header::HeaderValue>,
    next_id: AtomicU64,
}

impl Caller {
    /// A POST of `body`; after `initialize` (`initialized`), with the session's headers.
    fn request(
        &self,
        initialized: bool,
        body: String,
    ) -> hyper::Request<http_body_util::Full<bytes::Bytes>> {
        let mut request = hyper::Request::post(self.uri.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        if initialized {
            request = request.header("mcp-protocol-version", VERSION);
            if let Some(session) = &self.session {
                request = request.header("mcp-session-id", session.clone());
            }
        }
        request
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .expect("a request")
    }

    pub(crate) async fn connect(url: &str) -> Arc<Caller> {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let mut caller = Caller {
            client,
            uri: url.parse().expect("the server's URI"),
            session: None,
            next_id: AtomicU64::new(1),
        };
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{VERSION}","capabilities":{{}},"clientInfo":{{"name":"server-bench","version":"0.1.0"}}}}}}"#
        );
        let response = caller
            .client
            .request(caller.request(false, init))
            .await
            .expect("initialize");
        assert_eq!(response.status(), hyper::StatusCode::OK);
        caller.session = response.headers().get("mcp-session-id").cloned();
        let _ = response.into_body().collect().await;
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
        let response = caller
            .client
            .request(caller.request(true, initialized))
            .await
            .expect("initialized");
        assert_eq!(response.status(), hyper::StatusCode::ACCEPTED);
        Arc::new(caller)
    }

    /// One `tools/call echo`, its answer read whole.
    pub(crate) async fn call(self: Arc<Self>) {
        self.call_tool("echo").await
    }

    /// One `tools/call` of `tool` (an echo under another name), its answer read whole.
    pub(crate) async fn call_tool(self: Arc<Self>, tool: &str) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"hello","message":"hello"}}}}}}"#
        );
        let response = self
            .client
            .request(self.request(true, body))
            .await
            .expect("POST");
        assert_eq!(response.status(), hyper::StatusCode::OK);
        let answer = response
            .into_body()
            .collect()
            .await
            .expect("the answer")
            .to_bytes();
        debug_assert!(answer.starts_with(format!(r#"{{"jsonrpc":"2.0","id":{id},"#).as_bytes()));
    }
}
