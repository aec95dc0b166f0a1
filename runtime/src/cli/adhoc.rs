//! `switchboard tools` and `switchboard call`: ad-hoc use of any stdio MCP server.
//!
//! The server is the command after `--`, named after its file name (`npx`, `uvx`, ...), and
//! lives only as long as the one listing or call:
//!
//! ```text
//! switchboard tools -- npx -y @modelcontextprotocol/server-everything
//! switchboard call add '{"a":2,"b":3}' --timeout 5s -- switchboard demo-server
//! ```

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use switchboard::model::Tool;
use switchboard::{Runtime, ServerConfig};

use super::{describe, duration, print, ready, start, Failure, Interrupt, Interrupted};

/// The server to run: its command line and how long it may take to start.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// How long the server may take to start and finish its handshake, e.g. 10s [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = duration::parse)]
    startup_timeout: Option<Duration>,
    /// The server's command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD", num_args = 1..)]
    command: Vec<OsString>,
}

impl ServerArgs {
    /// The server's name: its command's file name.
    fn name(&self) -> String {
        let program = self
            .command
            .first()
            .map(OsString::as_os_str)
            .unwrap_or_default();
        Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| program.to_string_lossy().into_owned())
    }

    fn config(&self) -> ServerConfig {
        let (program, args) = self.command.split_first().unzip();
        let mut config = ServerConfig::stdio(program.map(OsString::as_os_str).unwrap_or_default())
            .args(args.unwrap_or_default());
        if let Some(timeout) = self.startup_timeout {
            config = config.startup_timeout(timeout);
        }
        config
    }

    async fn start(&self, interrupt: &mut Interrupt) -> Result<Runtime, Failure> {
        start(&self.name(), self.config(), interrupt).await
    }
}

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print one JSON document: {"servers":[{"name","state","error","tools":[...]}]}, the tools
    /// as the server listed them.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool to call.
    tool: String,
    /// The tool's arguments: a JSON object.
    #[arg(value_name = "ARGS_JSON", default_value = "{}")]
    arguments: String,
    /// How long the call may take, e.g. 500ms, 5s, 2m [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = duration::parse)]
    timeout: Option<Duration>,
    /// Print the result exactly as the server sent it, as one JSON document.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// `switchboard tools`: one line per tool, or one JSON document.
pub(crate) async fn tools(args: ToolsArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let name = args.server.name();
    let runtime = args.server.start(interrupt).await?;
    let listing = list(&runtime, &name, args.json);
    if let Ok(listing) = &listing {
        print::emit(listing);
    }
    runtime.shutdown().await;
    listing.map(|_| ExitCode::SUCCESS)
}

fn list(runtime: &Runtime, name: &str, json: bool) -> Result<String, Failure> {
    let server = runtime.server(name)?;
    let status = ready(&server)?;
    if json {
        let listing = Listing {
            servers: [ServerListing {
                name,
                state: status.state.as_str(),
                // Only ready servers get here; the field is there for listings of several.
                error: None,
                tools: &status.tools,
            }],
        };
        let document = serde_json::to_string_pretty(&listing).map_err(|e| {
            Failure::Run(format!(
                "cannot write the tools of server `{name}` as JSON: {e}"
            ))
        })?;
        Ok(document + "\n")
    } else {
        eprintln!("{}", describe(name, &status));
        Ok(status.tools.iter().map(|t| print::tool(t) + "\n").collect())
    }
}

/// The `tools --json` document; tools keep the fields and the order the server gave them.
#[derive(Serialize)]
struct Listing<'a> {
    servers: [ServerListing<'a>; 1],
}

#[derive(Serialize)]
struct ServerListing<'a> {
    name: &'a str,
    state: &'static str,
    error: Option<String>,
    tools: &'a [Tool],
}

/// `switchboard call`: the result, readable or raw; exit 1 if the tool reported an error.
pub(crate) async fn call(args: CallArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let name = args.server.name();
    let arguments = arguments(&name, &args.tool, &args.arguments)?;
    let runtime = args.server.start(interrupt).await?;
    let answer = answer(&runtime, &name, &args, arguments, interrupt).await;
    if let Ok((output, _)) = &answer {
        print::emit(output);
    }
    runtime.shutdown().await;
    answer.map(|(_, code)| code)
}

async fn answer(
    runtime: &Runtime,
    name: &str,
    args: &CallArgs,
    arguments: Value,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    let tool = args.tool.as_str();
    let server = runtime.server(name)?;
    ready(&server)?;
    if !server.tools().iter().any(|t| t.name == tool) {
        return Err(switchboard::Error::UnknownTool {
            server: name.into(),
            tool: tool.into(),
        }
        .into());
    }
    let mut call = server.call_tool(tool, arguments);
    if let Some(timeout) = args.timeout {
        call = call.timeout(timeout);
    }
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal}: cancelled the call to tool `{tool}` on server `{name}`"
        ))
    };
    let (output, is_error) = if args.json {
        let raw = interrupt.guard(call.raw()).await.map_err(interrupted)??;
        let is_error = serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|v| v.get("isError")?.as_bool())
            == Some(true);
        (format!("{}\n", raw.get()), is_error)
    } else {
        let result = interrupt
            .guard(async { call.await })
            .await
            .map_err(interrupted)??;
        (print::result(&result), result.is_error())
    };
    if is_error {
        eprintln!(
            "switchboard: tool `{tool}` on server `{name}` reported an error (isError: true)"
        );
        return Ok((output, ExitCode::from(1)));
    }
    Ok((output, ExitCode::SUCCESS))
}

/// Parses ARGS_JSON, which must be a JSON object.
fn arguments(server: &str, tool: &str, text: &str) -> Result<Value, Failure> {
    let bad = |why: String| {
        Failure::Usage(format!(
            "bad arguments for tool `{tool}` on server `{server}`: {why}"
        ))
    };
    match serde_json::from_str(text) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(other) => Err(bad(format!(
            "ARGS_JSON must be a JSON object, not {}",
            kind(&other)
        ))),
        Err(e) => Err(bad(format!("ARGS_JSON is not valid JSON ({e})"))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn server(command: &[&str]) -> ServerArgs {
        ServerArgs {
            startup_timeout: None,
            command: command.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn servers_are_named_after_their_program() {
        assert_eq!(server(&["npx", "-y", "x"]).name(), "npx");
        assert_eq!(server(&["/usr/local/bin/uvx"]).name(), "uvx");
        assert_eq!(
            server(&["./target/debug/switchboard", "demo-server"]).name(),
            "switchboard"
        );
        assert_eq!(server(&[".."]).name(), "..");
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(
            arguments("s", "t", r#"{"a":1}"#).ok(),
            Some(serde_json::json!({"a": 1}))
        );
        for bad in ["[1]", "nope", "1", "null", "\"x\"", "{"] {
            match arguments("s", "t", bad) {
                Err(Failure::Usage(m)) => assert!(m.contains("tool `t` on server `s`"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn command_line_surface() {
        let cli = super::super::Cli::try_parse_from([
            "switchboard",
            "call",
            "add",
            r#"{"a":2}"#,
            "--timeout",
            "200ms",
            "--json",
            "--",
            "srv",
            "--flag",
        ])
        .unwrap();
        let Some(super::super::Command::Call(call)) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(call.tool, "add");
        assert_eq!(call.timeout, Some(Duration::from_millis(200)));
        assert!(call.json);
        assert_eq!(call.server.command, ["srv", "--flag"]);
        let cli =
            super::super::Cli::try_parse_from(["switchboard", "call", "t", "--", "srv"]).unwrap();
        let Some(super::super::Command::Call(call)) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(call.arguments, "{}");
        for bad in [
            &["switchboard", "call", "t", "--timeout", "5", "--", "srv"][..],
            &["switchboard", "call", "t"],
            &["switchboard", "tools", "srv"],
        ] {
            let e = super::super::Cli::try_parse_from(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        assert!(super::super::Cli::try_parse_from(["switchboard"])
            .unwrap()
            .command
            .is_none());
    }
}
