//! The rest of the protocol, one request or one stream each: `complete` (completion of a
//! prompt's or a resource template's argument), `ping`, `logs` (set a level and print what
//! the servers log until Ctrl-C) and `subscribe URI` (print its updates until Ctrl-C).
//!
//! ```text
//! $ switchboard complete greeting name A -- switchboard demo-server
//! Ada
//! Alan
//! Alice
//! $ switchboard ping -c .mcp.json
//! one: answered in 1 ms
//! ```
//!
//! Each goes to the server `--server` names (started alone), else to the only server; `ping`
//! and `logs` go to every server without `--server`, `complete` and `subscribe` to the one
//! server that offers the prompt, template or resource. `logs` and `subscribe` end on Ctrl-C
//! (or `SIGTERM`), which is their normal end: exit 0.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use futures_util::future::join_all;
use serde_json::Value;

use switchboard::model::{CompletionReference, LoggingLevel};
use switchboard::{ConfigFile, Runtime, ServerHandle};

use super::config;
use super::offered;
use super::{finish, print, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP_COMPLETE: &str = "\
REF is a prompt's name, or a resource template (it has `://` or `{`). The values are printed
one a line; with --json, the result exactly as the server sent it:
  {\"completion\": {\"values\": [\"Ada\", \"Alan\"], \"total\": 2, \"hasMore\": false}}
The server is --server NAME, else the only one, else the one that lists the prompt or
template (several: exit 2 naming them).

Examples:
  switchboard complete greeting name A -- switchboard demo-server
  switchboard complete 'demo://note/{id}' id 4 -- switchboard demo-server
  switchboard complete greeting style --context name=Ada -c .mcp.json";

pub(crate) const AFTER_HELP_PING: &str = "\
Pings every server (or --server NAME) and prints how long each took to answer; exit 3 if
one did not answer (the report is printed in full first).

Examples:
  switchboard ping -c .mcp.json
  switchboard ping -- switchboard demo-server";

pub(crate) const AFTER_HELP_LOGS: &str = "\
Asks every server that logs (or --server NAME) to log at LEVEL and above, then prints each
message as it arrives, until Ctrl-C (exit 0): `[level] server logger: message`, or with --json
one JSON object a line, {\"server\", \"level\", \"logger\", \"data\"}.

Examples:
  switchboard logs --level debug -c .mcp.json
  switchboard logs --server one -c .mcp.json";

pub(crate) const AFTER_HELP_SUBSCRIBE: &str = "\
Subscribes to the resource URI on the server that lists it (or --server NAME) and prints the
URI of each update, one a line, until Ctrl-C (exit 0). With --read, each update is followed
by the resource's contents as `read` prints them.

Examples:
  switchboard subscribe demo://text/hello -- switchboard demo-server
  switchboard subscribe file:///notes/todo.md --read --server fs -c .mcp.json";

/// `switchboard complete`.
#[derive(Debug, Args)]
pub(crate) struct CompleteArgs {
    /// A prompt's name, or a resource template.
    #[arg(value_name = "REF")]
    reference: String,
    /// The argument (of the prompt) or variable (of the template) to complete.
    argument: String,
    /// What is typed so far.
    #[arg(default_value = "")]
    value: String,
    /// An argument already chosen, KEY=VALUE (repeatable; 2025-06-18 and later).
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
    /// The server to ask, by its name in the config file.
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    /// Print the result exactly as the server sent it.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `switchboard ping`.
#[derive(Debug, Args)]
pub(crate) struct PingArgs {
    /// The server to ping, by its name in the config file [default: every one].
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `switchboard logs`.
#[derive(Debug, Args)]
pub(crate) struct LogsArgs {
    /// The least severe level to print: debug, info, notice, warning, error, critical, alert
    /// or emergency.
    #[arg(long, value_name = "LEVEL", default_value = "info", value_parser = level)]
    level: LoggingLevel,
    /// The server to follow, by its name in the config file [default: every one].
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    /// One JSON object a line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `switchboard subscribe`.
#[derive(Debug, Args)]
pub(crate) struct SubscribeArgs {
    /// The resource's URI.
    uri: String,
    /// Print the resource's contents after each update.
    #[arg(long)]
    read: bool,
    /// The server to subscribe on, by its name in the config file.
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// A log level as `--level` takes it.
fn level(text: &str) -> Result<LoggingLevel, String> {
    serde_json::from_value(Value::from(text.to_ascii_lowercase())).map_err(|_| {
        "expected debug, info, notice, warning, error, critical, alert or emergency".to_owned()
    })
}

/// The servers of a command about one server (`--server`) or all of them: the file with
/// that one alone (checked before anything starts), or all of it.
fn servers(
    config: &config::ConfigArgs,
    server: &config::ServerArgs,
    from: Option<&str>,
) -> Result<ConfigFile, Failure> {
    let file = config::servers(config, server)?;
    match from {
        Some(name) => offered::narrow(&file, name),
        None => Ok(file),
    }
}

/// The one server of a command that needs one: `--server`, else the only one, else the one
/// `owners` finds (none: `none`; several: exit 2 naming them).
fn one_server(
    runtime: &Runtime,
    file: &ConfigFile,
    from: Option<&str>,
    what: &str,
    owners: impl FnOnce() -> Vec<ServerHandle>,
) -> Result<ServerHandle, Failure> {
    if let Some(name) = from {
        return offered::named(runtime, file, name);
    }
    if let Some(server) = offered::only(runtime, file)? {
        return Ok(server);
    }
    let owners = owners();
    match &owners[..] {
        [one] => Ok(one.clone()),
        [] => Err(Failure::Usage(format!(
            "no server of {} offers {what}: name one with --server NAME",
            file.path.display()
        ))),
        several => {
            let names: Vec<&str> = several.iter().map(ServerHandle::name).collect();
            Err(Failure::Usage(format!(
                "{what} is offered by several servers ({}): pick one with --server NAME",
                offered::quoted(&names)
            )))
        }
    }
}

/// `switchboard complete`.
pub(crate) async fn run_complete(
    args: CompleteArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let mut context = Vec::new();
    for pair in &args.context {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| Failure::Usage(format!("--context {pair}: expected KEY=VALUE")))?;
        context.push((key.to_owned(), value.to_owned()));
    }
    let template = args.reference.contains("://") || args.reference.contains('{');
    let file = servers(&args.config, &args.server, args.from.as_deref())?;
    let runtime = config::start_all(&file, interrupt).await?;
    // Servers list their prompts and templates once ready: the owner is looked for there.
    interrupt
        .guard(runtime.lists_settled())
        .await
        .map_err(|Interrupted(signal)| {
            Failure::Interrupted(format!("interrupted by {signal} while listing prompts"))
        })?;
    let answer = async {
        let (reference, what) = if template {
            let uri = args.reference.clone();
            let what = format!("resource template `{uri}`");
            (CompletionReference::Resource { uri }, what)
        } else {
            let name = args.reference.clone();
            let what = format!("prompt `{name}`");
            (CompletionReference::Prompt { name }, what)
        };
        let server = one_server(&runtime, &file, args.from.as_deref(), &what, || {
            runtime
                .servers()
                .into_iter()
                .filter(|server| {
                    let status = server.status();
                    status.is_ready()
                        && if template {
                            status
                                .resource_templates
                                .iter()
                                .any(|t| t.uri_template == args.reference)
                        } else {
                            status.prompts.iter().any(|p| p.name == args.reference)
                        }
                })
                .collect()
        })?;
        let asked = server.complete(reference, &args.argument, &args.value, context);
        let result = interrupt
            .guard(asked)
            .await
            .map_err(|Interrupted(signal)| {
                Failure::Interrupted(format!(
                    "interrupted by {signal} while completing `{}` of {what}",
                    args.argument
                ))
            })??;
        if args.json {
            let document = serde_json::to_string(&result)
                .map_err(|e| Failure::Run(format!("cannot write the result as JSON: {e}")))?;
            return Ok::<String, Failure>(document + "\n");
        }
        let mut out = String::new();
        for value in &result.completion.values {
            let _ = writeln!(out, "{}", print::escape_line(value));
        }
        Ok(out)
    }
    .await;
    let (output, outcome) = match answer {
        Ok(output) => (output, Ok(ExitCode::SUCCESS)),
        Err(failure) => (String::new(), Err(failure)),
    };
    finish(&runtime, &output, outcome, interrupt).await
}

/// `switchboard ping`.
pub(crate) async fn run_ping(
    args: PingArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = servers(&args.config, &args.server, args.from.as_deref())?;
    let runtime = config::start_all(&file, interrupt).await?;
    let reports = config::reports(&runtime, &file, false);
    let pings = reports.iter().map(|report| {
        let server = runtime.server(&report.name).ok();
        let unready = report.unready();
        async move {
            if let Some(failure) = unready {
                return Err(failure.message().to_owned());
            }
            let server = server.ok_or_else(|| "not started".to_owned())?;
            let started = Instant::now();
            server.ping().await.map_err(|e| e.to_string())?;
            Ok(started.elapsed())
        }
    });
    let pinged = interrupt.guard(join_all(pings)).await;
    let (output, outcome) = match pinged {
        Err(Interrupted(signal)) => (
            String::new(),
            Err(Failure::Interrupted(format!(
                "interrupted by {signal} while pinging"
            ))),
        ),
        Ok(answers) => {
            let mut out = String::new();
            let mut failed = Vec::new();
            for (report, answer) in reports.iter().zip(answers) {
                match answer {
                    Ok(took) => {
                        let _ =
                            writeln!(out, "{}: answered in {} ms", report.name, took.as_millis());
                    }
                    Err(why) => {
                        let _ = writeln!(out, "{}: no answer: {why}", report.name);
                        failed.push(report.name.as_str());
                    }
                }
            }
            let outcome = match failed[..] {
                [] => Ok(ExitCode::SUCCESS),
                _ if reports.len() == 1 => Err(Failure::Run(
                    out.trim_end()
                        .split_once(": no answer: ")
                        .map_or(out.clone(), |(_, why)| why.to_owned()),
                )),
                _ => Err(Failure::Run(format!(
                    "{} of {} servers did not answer: {}",
                    failed.len(),
                    reports.len(),
                    failed.join(", ")
                ))),
            };
            // One server that did not answer: its failure is all there is to say.
            if reports.len() == 1 && outcome.is_err() {
                (String::new(), outcome)
            } else {
                (out, outcome)
            }
        }
    };
    finish(&runtime, &output, outcome, interrupt).await
}

/// `switchboard logs`.
pub(crate) async fn run_logs(
    args: LogsArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = servers(&args.config, &args.server, args.from.as_deref())?;
    let runtime = config::start_all(&file, interrupt).await?;
    let followed = follow_logs(&runtime, &file, &args, interrupt).await;
    let outcome = followed.map(|()| ExitCode::SUCCESS);
    finish(&runtime, "", outcome, interrupt).await
}

async fn follow_logs(
    runtime: &Runtime,
    file: &ConfigFile,
    args: &LogsArgs,
    interrupt: &mut Interrupt,
) -> Result<(), Failure> {
    let reports = config::reports(runtime, file, false);
    if let [only] = &reports[..] {
        if let Some(failure) = only.unready() {
            return Err(failure);
        }
    }
    let ready: Vec<ServerHandle> = reports
        .iter()
        .filter(|r| !r.failed())
        .filter_map(|r| runtime.server(&r.name).ok())
        .collect();
    // Subscribed before the level is set: a message sent in answer to it is not lost.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for server in &ready {
        let mut logs = server.logs();
        let tx = tx.clone();
        tokio::spawn(async move {
            loop {
                match logs.recv().await {
                    Ok(log) => {
                        if tx.send(log).is_err() {
                            return;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
    drop(tx);
    let levels = ready.iter().map(|server| async move {
        (
            server.name().to_owned(),
            server.set_log_level(args.level).await,
        )
    });
    let set = interrupt
        .guard(join_all(levels))
        .await
        .map_err(|Interrupted(_)| {
            Failure::Interrupted("interrupted while setting the log level".to_owned())
        })?;
    let mut logging = 0;
    for (name, result) in set {
        match result {
            Ok(()) => logging += 1,
            // A server named alone must log; among several, one that does not is left out.
            Err(e) if args.from.is_some() || reports.len() == 1 => return Err(e.into()),
            Err(e) => eprintln!("switchboard: not following server `{name}`: {e}"),
        }
    }
    if logging == 0 {
        return Err(Failure::Run(format!(
            "no server of {} logs",
            file.path.display()
        )));
    }
    loop {
        match interrupt.guard(rx.recv()).await {
            // Ctrl-C is how this ends.
            Err(Interrupted(_)) => return Ok(()),
            Ok(None) => return Err(Failure::Run("every server stopped".to_owned())),
            Ok(Some(log)) => {
                let line = if args.json {
                    serde_json::json!({
                        "server": &*log.server,
                        "level": log.level,
                        "logger": log.logger,
                        "data": log.data,
                    })
                    .to_string()
                } else {
                    let level = serde_json::to_value(log.level)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    let data = match &log.data {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    let logger = log
                        .logger
                        .as_deref()
                        .map(|l| format!(" {}", print::escape_line(l)))
                        .unwrap_or_default();
                    format!(
                        "[{level}] {}{logger}: {}",
                        log.server,
                        print::escape_line(&data)
                    )
                };
                print::emit(&(line + "\n"));
            }
        }
    }
}

/// `switchboard subscribe`.
pub(crate) async fn run_subscribe(
    args: SubscribeArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = servers(&args.config, &args.server, args.from.as_deref())?;
    let runtime = config::start_all(&file, interrupt).await?;
    let followed = follow_updates(&runtime, &file, &args, interrupt).await;
    let outcome = followed.map(|()| ExitCode::SUCCESS);
    finish(&runtime, "", outcome, interrupt).await
}

async fn follow_updates(
    runtime: &Runtime,
    file: &ConfigFile,
    args: &SubscribeArgs,
    interrupt: &mut Interrupt,
) -> Result<(), Failure> {
    let uri = args.uri.as_str();
    let what = format!("resource `{uri}`");
    // Servers list their resources once ready: the owner is looked for in those lists.
    interrupt
        .guard(runtime.lists_settled())
        .await
        .map_err(|Interrupted(signal)| {
            Failure::Interrupted(format!("interrupted by {signal} while listing resources"))
        })?;
    let server = one_server(runtime, file, args.from.as_deref(), &what, || {
        runtime.resource_owners(uri)
    })?;
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal} while subscribing to `{uri}` on server `{}`",
            server.name()
        ))
    };
    let mut updates = interrupt
        .guard(server.subscribe(uri))
        .await
        .map_err(interrupted)??;
    loop {
        let update = match interrupt.guard(updates.recv()).await {
            Err(Interrupted(_)) => return Ok(()),
            Ok(Ok(update)) => update,
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => {
                return Err(Failure::Run(format!(
                    "the subscription to `{uri}` on server `{}` ended",
                    server.name()
                )))
            }
        };
        let mut out = format!("{}\n", print::escape_line(&update.uri));
        if args.read {
            match interrupt.guard(server.read_resource(&update.uri)).await {
                Err(Interrupted(_)) => return Ok(()),
                Ok(Ok(read)) => out.push_str(&super::resources::contents(&read)),
                Ok(Err(e)) => eprintln!("switchboard: cannot read `{}`: {e}", update.uri),
            }
        }
        print::emit(&out);
    }
}
