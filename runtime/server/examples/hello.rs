//! A server an embedder writes: two tools and a resource, over stdio (or `--http ADDR`).
use serde_json::{json, Value};
use std::{borrow::Cow, sync::Arc};
use switchboard_server::{
    Arguments, BoxFuture, Context, Handler, HandlerError, Info, Reply, Server,
};

struct Hello;

#[derive(serde::Deserialize)]
struct Greet<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

impl Handler for Hello {
    fn info(&self) -> Info {
        Info::new("hello", "1.0.0").with_resources()
    }
    fn tools(&self) -> Cow<'_, [Value]> {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        Cow::Owned(vec![
            json!({"name": "greet", "inputSchema": schema}),
            json!({"name": "now", "inputSchema": {"type": "object"}}),
        ])
    }
    fn call_tool(
        self: Arc<Self>,
        name: String,
        args: Arguments,
        _: Context,
    ) -> BoxFuture<Result<Reply, HandlerError>> {
        Box::pin(async move {
            match name.as_str() {
                "greet" => Ok(match args.parse::<Greet<'_>>() {
                    Ok(Greet { name }) => {
                        Reply::text(format!("Hello, {}!", name.as_deref().unwrap_or("world")))
                    }
                    Err(e) => Reply::tool_error(format!("invalid arguments: {e}")),
                }),
                "now" => Ok(Reply::text(format!("{:?}", std::time::SystemTime::now()))),
                _ => Err(HandlerError::invalid_params(format!(
                    "unknown tool: {name}"
                ))),
            }
        })
    }
    fn resources(&self) -> Cow<'_, [Value]> {
        Cow::Owned(vec![json!({"uri": "hello://readme", "name": "readme"})])
    }
    fn read_resource(
        self: Arc<Self>,
        uri: String,
        _: Context,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        Box::pin(async move {
            match uri.as_str() {
                "hello://readme" => Ok(
                    json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": "Say hello."}]}),
                ),
                _ => Err(HandlerError::resource_not_found(&uri)),
            }
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::new(Hello);
    match std::env::args().nth(2) {
        Some(addr) => {
            server
                .serve_http(
                    tokio::net::TcpListener::bind(addr).await?,
                    Default::default(),
                )
                .await?
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
