//! `switchboard tools` and `switchboard call` without `-- CMD`: the servers of a config file,
//! their tools under catalogue names (unique across servers, as a model would see them).
//!
//! ```text
//! $ switchboard tools -c .mcp.json
//! one (ready)
//!   one__greet — Greets someone by name.
//!   ...
//! two (restarting, server `two` could not be started: ...)
//! $ switchboard call one__greet '{"name":"x"}' -c .mcp.json
//! Hello, x!
//! ```
//!
//! Servers restart as their config says (by default they do), but the command reports on
//! them as they are once each has started or failed: `tools` lists every server and then
//! exits 3 if one is not ready.

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;

use serde::Serialize;

use switchboard::model::Tool;
use switchboard::{Catalogue, ConfigFile, Runtime, Unresolved};

use super::config::{self, Report};
use super::invoke::{self, Target};
use super::{print, CallArgs, Failure, Interrupt, ToolsArgs};

/// `switchboard tools` for a config file: per server its state and its catalogue tools.
pub(crate) async fn tools(args: ToolsArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = args.config.load(true)?;
    let runtime = config::start_all(&file, interrupt).await?;
    let reports = config::reports(&runtime, &file, false);
    let listing = list(&reports, &runtime.catalogue(), args.json, &file);
    runtime.shutdown().await;
    print::emit(&listing?);
    match config::not_ready(&reports) {
        Some(failure) => Err(failure),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn list(
    reports: &[Report],
    catalogue: &Catalogue,
    json: bool,
    file: &ConfigFile,
) -> Result<String, Failure> {
    let servers: Vec<ServerListing<'_>> = reports
        .iter()
        .map(|report| ServerListing {
            name: &report.name,
            state: report.state,
            error: report.error.as_deref(),
            tools: listed(report, catalogue),
        })
        .collect();
    if json {
        let document = serde_json::to_string_pretty(&Listing { servers }).map_err(|e| {
            Failure::Run(format!(
                "cannot write the tools of {} as JSON: {e}",
                file.path.display()
            ))
        })?;
        return Ok(document + "\n");
    }
    let mut out = String::new();
    for server in servers {
        out.push_str(server.name);
        out.push_str(" (");
        out.push_str(server.state);
        if let Some(error) = server.error {
            out.push_str(", ");
            out.push_str(error);
        }
        out.push_str(")\n");
        for tool in server.tools {
            out.push_str("  ");
            out.push_str(&print::tool_as(tool.catalogue_name, tool.tool));
            out.push('\n');
        }
    }
    Ok(out)
}

/// The server's tools in the catalogue, in the order the server listed them.
fn listed<'a>(report: &'a Report, catalogue: &'a Catalogue) -> Vec<ToolListing<'a>> {
    let Some(status) = report.status.as_ref().filter(|s| s.is_ready()) else {
        return Vec::new();
    };
    let names: HashMap<&str, &str> = catalogue
        .for_server(&report.name)
        .map(|entry| (entry.tool.name.as_str(), entry.name.as_str()))
        .collect();
    let mut seen = HashSet::new();
    status
        .tools
        .iter()
        .filter_map(|tool| {
            let catalogue_name = names.get(tool.name.as_str())?;
            // A tool listed twice is in the catalogue once.
            seen.insert(tool.name.as_str()).then_some(ToolListing {
                tool,
                catalogue_name,
            })
        })
        .collect()
}

/// The `tools --json` document, shaped as the ad-hoc one.
#[derive(Serialize)]
struct Listing<'a> {
    servers: Vec<ServerListing<'a>>,
}

#[derive(Serialize)]
struct ServerListing<'a> {
    name: &'a str,
    state: &'static str,
    error: Option<&'a str>,
    tools: Vec<ToolListing<'a>>,
}

/// A tool as its server listed it, plus its catalogue name.
#[derive(Serialize)]
struct ToolListing<'a> {
    #[serde(flatten)]
    tool: &'a Tool,
    #[serde(rename = "catalogueName")]
    catalogue_name: &'a str,
}

/// `switchboard call` for a config file: TOOL is a catalogue name.
pub(crate) async fn call(args: CallArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let arguments = invoke::arguments(
        &Target {
            tool: &args.tool,
            server: None,
        },
        &args.arguments,
    )?;
    let file = args.config.load(true)?;
    let runtime = config::start_all(&file, interrupt).await?;
    let answer = answer(&runtime, &args, arguments, &file, interrupt).await;
    runtime.shutdown().await;
    let (output, code) = answer?;
    print::emit(&output);
    Ok(code)
}

async fn answer(
    runtime: &Runtime,
    args: &CallArgs,
    arguments: serde_json::Value,
    file: &ConfigFile,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    let tool = args.tool.as_str();
    let server = match runtime.catalogue().resolve(tool) {
        Ok(entry) => Some(entry.server.clone()),
        Err(Unresolved::Unknown) => return Err(no_such_tool(runtime, tool, file)),
        // The call fails at once, naming the servers that share the name.
        Err(_) => None,
    };
    let target = Target {
        tool,
        server: server.as_deref(),
    };
    let call = runtime.call_tool(tool, arguments);
    invoke::invoke(call, target, args.timeout, args.json, interrupt).await
}

/// No tool of that name: say so, and which servers are not ready (their tools are missing).
fn no_such_tool(runtime: &Runtime, tool: &str, file: &ConfigFile) -> Failure {
    let missing = switchboard::Error::NoSuchTool { name: tool.into() };
    let not_ready: Vec<String> = config::reports(runtime, file, false)
        .into_iter()
        .filter(Report::failed)
        .map(|r| match r.error {
            Some(error) => format!("`{}` ({}: {error})", r.name, r.state),
            None => format!("`{}` ({})", r.name, r.state),
        })
        .collect();
    if not_ready.is_empty() {
        Failure::Run(format!("{missing} of {}", file.path.display()))
    } else {
        Failure::Run(format!(
            "{missing} of {}; not ready: {}",
            file.path.display(),
            not_ready.join("; ")
        ))
    }
}
