use switchboard_server::{Error, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// What to say back.
    text: String,
}

fn server() -> Result<Server, Error> {
    Server::builder("demo", "1.0.0")
        .tool("echo", "Says it back", |e: Echo| async move { Ok(e.text) })
        .tool("pi", "The number π", || async { Ok("3.14159") })
        .resource("demo://about", "about", || async { Ok("A demo") })
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    server()?.serve_stdio().await
}
