//! `switchboard tools` and `switchboard call`: ad-hoc use of any stdio MCP server.
//!
//! The server is the command after `--`, named after its file name (`npx`, `uvx`, ...), and
//! lives only as long as the one listing or call. It is not restarted; `MCP_TIMEOUT` and
//! `MCP_TOOL_TIMEOUT` set its default timeouts, as they do for a config file's servers:
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

use switchboard::model::Tool;
use switchboard::RestartPolicy;
use switchboard::{Runtime, ServerConfig};

use super::invoke::{self, Target};
use super::{describe, duration, print, ready, start, CallArgs, Failure, Interrupt, ToolsArgs};

/// The server to run: its command line and how long it may take to start.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// With `-- CMD`: how long the server may take to start and finish its handshake, written
    /// as in a config file: 500ms, 10s, 1.5m [default: MCP_TIMEOUT (milliseconds), else 30s].
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "command")]
    startup_timeout: Option<Duration>,
    /// One stdio server to run instead of a config file's: its command and arguments.
    #[arg(last = true, value_name = "CMD", num_args = 1..)]
    command: Vec<OsString>,
}

impl ServerArgs {
    /// Whether a server was given after `--`.
    pub(crate) fn is_given(&self) -> bool {
        !self.command.is_empty()
    }

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
        // One-shot use: a server that fails is reported, not restarted.
        let mut config = ServerConfig::stdio(program.map(OsString::as_os_str).unwrap_or_default())
            .args(args.unwrap_or_default())
            .restart(RestartPolicy::never());
        if let Some(timeout) = self.startup_timeout {
            config = config.startup_timeout(timeout);
        }
        config
    }

    async fn start(&self, interrupt: &mut Interrupt) -> Result<Runtime, Failure> {
        let name = self.name();
        let builder = Runtime::builder()
            .with_env_defaults()
            .server(&name, self.config());
        start(builder, format!("server `{name}` was starting"), interrupt).await
    }
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
    let target = Target {
        tool: &args.tool,
        server: Some(&name),
    };
    let arguments = invoke::arguments(&target, &args.arguments)?;
    let runtime = args.server.start(interrupt).await?;
    let answer = answer(&runtime, &args, target, arguments, interrupt).await;
    if let Ok((output, _)) = &answer {
        print::emit(output);
    }
    runtime.shutdown().await;
    answer.map(|(_, code)| code)
}

async fn answer(
    runtime: &Runtime,
    args: &CallArgs,
    target: Target<'_>,
    arguments: serde_json::Value,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    let name = target.server.unwrap_or_default();
    let server = runtime.server(name)?;
    ready(&server)?;
    if !server.tools().iter().any(|t| t.name == target.tool) {
        return Err(switchboard::Error::UnknownTool {
            server: name.into(),
            tool: target.tool.into(),
        }
        .into());
    }
    let call = server.call_tool(target.tool, arguments);
    invoke::invoke(call, target, args.timeout, args.json, interrupt).await
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
        // Without `-- CMD`, the servers come from a config file.
        let cli = super::super::Cli::try_parse_from(["switchboard", "call", "t", "-c", "f.json"])
            .unwrap();
        let Some(super::super::Command::Call(call)) = cli.command else {
            panic!("{cli:?}")
        };
        assert!(!call.server.is_given());
        for bad in [
            &["switchboard", "call", "t", "--timeout", "5", "--", "srv"][..],
            &["switchboard", "call"],
            &["switchboard", "tools", "srv"],
            &["switchboard", "tools", "--startup-timeout", "5s"],
            &["switchboard", "check", "--", "srv"],
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
