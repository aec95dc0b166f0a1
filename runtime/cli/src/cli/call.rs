//! `switchboard call`: one tool call, on the servers of a config file or the one after
//! `--`: the arguments, the tool's server, the timeout, a progress bar, an interruption, and
//! the output and exit code of the answer.
//!
//! ```text
//! $ switchboard call one__greet '{"name":"x"}' -c .mcp.json
//! Hello, x!
//! $ switchboard call add '{"a":2,"b":3}' -- switchboard demo-server
//! 5
//! ```
//!
//! TOOL is a catalogue name, or a tool's name exactly as its server listed it when only one
//! server lists it (a name the catalogue had to sanitise, such as `my.tool`, still works).

use std::fmt;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use switchboard::{Call, Catalogue, ConfigFile, Runtime, Unresolved};

use super::config::{self, Report};
use super::{print, progress, CallArgs, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP: &str = "\
Without `-- CMD`, TOOL is a catalogue name across the servers of the config file: -c FILE,
else $SWITCHBOARD_CONFIG, else ./.mcp.json. `-- CMD` runs one stdio server as if a config file
listed only it, named after CMD's file name and never restarted. TOOL may also be a tool's
name as its server listed it, when no other server lists that name. MCP_TIMEOUT and
MCP_TOOL_TIMEOUT (milliseconds) set default timeouts. A DURATION is written as in a config
file (500ms, 1.5s, 2m, 1h); a bare number is refused.

With --json, stdout is the tool's result exactly as the server sent it, one JSON document
(a CallToolResult), the same for `-- CMD` and for a config file:
  {\"content\": [{\"type\": \"text\", \"text\": \"5\"}], \"structuredContent\": {\"sum\": 5}, \"isError\": false}
Exit 1 when it says \"isError\": true.

Examples:
  switchboard call search_code '{\"q\":\"actix\"}' -c .mcp.json
  switchboard call add '{\"a\":2,\"b\":3}' --timeout 1.5s -- switchboard demo-server";

/// `switchboard call`: the result, readable or raw; exit 1 if the tool reported an error.
pub(crate) async fn run(args: CallArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    let arguments = arguments(
        &Target {
            tool: &args.tool,
            server: config::only_server(&file),
        },
        &args.arguments,
    )?;
    let runtime = config::start_all(&file, interrupt).await?;
    let answer = answer(&runtime, &args, arguments, &file, interrupt).await;
    // The answer first: shutting the servers down may take a while.
    if let Ok((output, _)) = &answer {
        print::emit(output);
    }
    runtime.shutdown().await;
    answer.map(|(_, code)| code)
}

async fn answer(
    runtime: &Runtime,
    args: &CallArgs,
    arguments: Value,
    file: &ConfigFile,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    let tool = args.tool.as_str();
    let catalogue = runtime.catalogue();
    let (name, server) = match catalogue.resolve(tool) {
        Ok(entry) => (tool, Some(entry.server.clone())),
        // The call fails at once, naming the servers that share the name.
        Err(Unresolved::Ambiguous(_)) => (tool, None),
        Err(_) => match by_listed_name(listed(&catalogue), tool) {
            Listed::One { name, server } => (name, Some(server.clone())),
            Listed::Several(servers) => {
                return Err(switchboard::Error::AmbiguousTool {
                    name: tool.into(),
                    servers,
                }
                .into())
            }
            Listed::None => return Err(no_such_tool(runtime, tool, file)),
        },
    };
    let target = Target {
        tool,
        server: server.as_deref(),
    };
    let call = runtime.call_tool(name, arguments);
    let listed = catalogue
        .resolve(name)
        .map_or(name, |e| e.tool.name.as_str());
    if super::tasks::wanted(runtime, target.server, listed) {
        return super::tasks::invoke(
            call,
            &target,
            args.timeout,
            args.json,
            args.detach,
            interrupt,
        )
        .await;
    }
    invoke(call, target, args.timeout, args.json, interrupt).await
}

/// The catalogue's tools as `(catalogue name, server, name as listed)`.
fn listed(catalogue: &Catalogue) -> impl Iterator<Item = (&str, &Arc<str>, &str)> {
    catalogue
        .iter()
        .map(|entry| (entry.name.as_str(), &entry.server, entry.tool.name.as_str()))
}

/// What a tool's name as its server listed it finds in the catalogue.
#[derive(Debug, PartialEq)]
enum Listed<'a> {
    /// One tool: its catalogue name and server.
    One { name: &'a str, server: &'a Arc<str> },
    /// Several servers list a tool of that name.
    Several(Vec<Arc<str>>),
    /// No server lists a tool of that name.
    None,
}

/// The tool listed as `tool`, among `(catalogue name, server, name as listed)`.
fn by_listed_name<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a Arc<str>, &'a str)>,
    tool: &str,
) -> Listed<'a> {
    let found: Vec<(&str, &Arc<str>)> = entries
        .into_iter()
        .filter(|(_, _, listed)| *listed == tool)
        .map(|(name, server, _)| (name, server))
        .collect();
    match found[..] {
        [] => Listed::None,
        [(name, server)] => Listed::One { name, server },
        _ => Listed::Several(found.into_iter().map(|(_, s)| s.clone()).collect()),
    }
}

/// No tool of that name. With one server: why it is not ready, or that it has no such tool;
/// with several: which are not ready (their tools are missing).
fn no_such_tool(runtime: &Runtime, tool: &str, file: &ConfigFile) -> Failure {
    let reports = config::reports(runtime, file, false);
    if let [only] = &reports[..] {
        return only.unready().unwrap_or_else(|| {
            switchboard::Error::UnknownTool {
                server: Some(only.name.as_str().into()),
                tool: tool.into(),
            }
            .into()
        });
    }
    let missing = switchboard::Error::UnknownTool {
        server: None,
        tool: tool.into(),
    };
    let not_ready: Vec<String> = reports
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

/// The tool a call is for, and its server when known, for messages.
#[derive(Debug, Clone, Copy)]
struct Target<'a> {
    tool: &'a str,
    server: Option<&'a str>,
}

impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.server {
            Some(server) => write!(f, "tool `{}` on server `{server}`", self.tool),
            None => write!(f, "tool `{}`", self.tool),
        }
    }
}

/// Sends `call` and renders its answer: the result readable, or raw with `json`, and exit 1
/// if the tool reported an error (`isError: true`). A signal cancels the call.
async fn invoke(
    mut call: Call,
    target: Target<'_>,
    timeout: Option<Duration>,
    json: bool,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    if let Some(timeout) = timeout {
        call = call.timeout(timeout);
    }
    let (call, bar) = progress::attach(call);
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal}: cancelled the call to {target}"
        ))
    };
    let answered = if json {
        let raw = interrupt.guard(call.raw()).await;
        bar.finish().await;
        let raw = raw.map_err(interrupted)??;
        let is_error = serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|v| v.get("isError")?.as_bool())
            == Some(true);
        (format!("{}\n", raw.get()), is_error)
    } else {
        let result = interrupt.guard(call).await;
        bar.finish().await;
        let result = result.map_err(interrupted)??;
        (print::result(&result), result.is_error())
    };
    let (output, is_error) = answered;
    if is_error {
        eprintln!("switchboard: {target} reported an error (isError: true)");
        return Ok((output, ExitCode::from(1)));
    }
    Ok((output, ExitCode::SUCCESS))
}

/// Parses ARGS_JSON, which must be a JSON object.
fn arguments(target: &Target<'_>, text: &str) -> Result<Value, Failure> {
    let bad = |why: String| Failure::Usage(format!("bad arguments for {target}: {why}"));
    match serde_json::from_str(text) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(other) => Err(bad(format!(
            "ARGS_JSON must be a JSON object, not {}",
            kind(&other)
        ))),
        Err(e) => Err(bad(format!("ARGS_JSON is not valid JSON ({e})"))),
    }
}

/// What kind of JSON value this is, for messages: `an array`, `a number`, ...
pub(crate) fn kind(value: &Value) -> &'static str {
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

    #[test]
    fn a_tool_by_the_name_its_server_listed() {
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let entries = [
            ("my_tool", &a, "my.tool"),
            ("a__shared_x", &a, "shared.x"),
            ("b__shared_x", &b, "shared.x"),
            ("plain", &b, "plain"),
        ];
        assert_eq!(
            by_listed_name(entries, "my.tool"),
            Listed::One {
                name: "my_tool",
                server: &a
            }
        );
        assert_eq!(
            by_listed_name(entries, "shared.x"),
            Listed::Several(vec![a.clone(), b.clone()])
        );
        assert_eq!(by_listed_name(entries, "my_tool"), Listed::None);
        assert_eq!(by_listed_name(entries, "nosuch"), Listed::None);
    }

    #[test]
    fn arguments_must_be_an_object() {
        let on_server = Target {
            tool: "t",
            server: Some("s"),
        };
        assert_eq!(
            arguments(&on_server, r#"{"a":1}"#).ok(),
            Some(serde_json::json!({"a": 1}))
        );
        for bad in ["[1]", "nope", "1", "null", "\"x\"", "{"] {
            match arguments(&on_server, bad) {
                Err(Failure::Usage(m)) => assert!(m.contains("tool `t` on server `s`"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let by_name = Target {
            tool: "t",
            server: None,
        };
        match arguments(&by_name, "[1]") {
            Err(Failure::Usage(m)) => assert_eq!(
                m,
                "bad arguments for tool `t`: ARGS_JSON must be a JSON object, not an array"
            ),
            other => panic!("{other:?}"),
        }
    }
}
