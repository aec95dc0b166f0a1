//! A server an embedder writes: two typed tools, a resource and a prompt, served over stdio,
//! or over Streamable HTTP with `--http ADDR` (a bare port is 127.0.0.1:PORT).
//!
//! ```sh
//! cargo run -p switchboard-server --example hello                 # stdio
//! cargo run -p switchboard-server --example hello -- --http 3000  # http://127.0.0.1:3000/mcp
//! ```
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::{Context, Error, Server, ToolError};

const USAGE: &str = "\
usage: hello [--http ADDR]

Serves MCP on stdin and stdout, or with --http on http://ADDR/mcp
(ADDR is HOST:PORT, or a port alone for 127.0.0.1:PORT).";

/// Whom to greet.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Their name; "world" if not given.
    name: Option<String>,
}

async fn greet(Greet { name }: Greet, ctx: Context) -> Result<String, ToolError> {
    ctx.log("info", Some("hello"), "greeting".into()).await;
    Ok(format!("Hello, {}!", name.as_deref().unwrap_or("world")))
}

async fn now() -> Result<String, ToolError> {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH)?;
    Ok(format!("{} seconds since 1970", since_epoch.as_secs()))
}

/// What the greeting is for.
#[derive(Deserialize, JsonSchema)]
struct Occasion {
    /// The occasion, e.g. "a birthday".
    occasion: String,
}

fn server() -> Result<Server, Error> {
    Server::builder("hello", "1.0.0")
        .with_instructions("Greets people; `now` tells the time.")
        .tool("greet", "Greets someone by name", greet)
        .tool("now", "The current time", now)
        .resource("hello://readme", "readme", || async { Ok("Say hello.") })
        .prompt(
            "greeting",
            "A greeting for an occasion",
            |o: Occasion| async move { Ok(format!("Write a short greeting for {}.", o.occasion)) },
        )
        .build()
}

/// Where to serve.
#[derive(Debug, PartialEq)]
enum Serve {
    Stdio,
    Http(String),
    Help,
}

/// Reads the command line (without the program's name).
fn parse(args: impl IntoIterator<Item = String>) -> Result<Serve, String> {
    let mut serve = Serve::Stdio;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let addr = match arg.as_str() {
            "-h" | "--help" => return Ok(Serve::Help),
            "--http" => args.next().ok_or("--http needs an address")?,
            _ => match arg.strip_prefix("--http=") {
                Some(addr) => addr.to_owned(),
                None => return Err(format!("unexpected argument {arg:?}")),
            },
        };
        serve = Serve::Http(match addr.parse::<u16>() {
            Ok(port) => format!("127.0.0.1:{port}"),
            Err(_) => addr,
        });
    }
    Ok(serve)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let serve = match parse(std::env::args().skip(1)) {
        Ok(Serve::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(serve) => serve,
        Err(e) => {
            eprintln!("hello: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(serve).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hello: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(serve: Serve) -> Result<(), Box<dyn std::error::Error>> {
    let server = server()?;
    if let Serve::Http(addr) = serve {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        eprintln!(
            "hello: serving MCP at http://{}/mcp",
            listener.local_addr()?
        );
        server.serve_http(listener, Default::default()).await?;
    } else {
        eprintln!("hello: serving MCP on stdin and stdout");
        server.serve_stdio().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Serve, String> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn http_is_read_wherever_it_stands() {
        let http = |addr: &str| Ok(Serve::Http(addr.to_owned()));
        assert_eq!(args(""), Ok(Serve::Stdio));
        assert_eq!(args("--http 0.0.0.0:8080"), http("0.0.0.0:8080"));
        assert_eq!(args("--http=localhost:3000"), http("localhost:3000"));
        assert_eq!(args("--http 3000"), http("127.0.0.1:3000"));
        assert_eq!(args("--http [::1]:3000"), http("[::1]:3000"));
    }

    #[test]
    fn help_and_mistakes_are_said() {
        assert_eq!(args("--help"), Ok(Serve::Help));
        assert_eq!(args("--http 3000 -h"), Ok(Serve::Help));
        assert!(args("--http").unwrap_err().contains("needs an address"));
        assert!(args("3000").unwrap_err().contains("\"3000\""));
    }

    #[test]
    fn the_server_can_be_served() {
        assert!(server().is_ok());
    }
}
