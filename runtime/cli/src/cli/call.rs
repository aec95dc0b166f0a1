//! `switchboard call`: one tool call, on the servers of a config file or the one after
//! `--`: the arguments, the tool's server, the timeout, a progress bar, an interruption, and
//! the output and exit code of the answer.
//!
//! ```text
//! $ switchboard call one__greet '{"name":"x"}' -c .mcp.json
//! Hello, x!
//! $ switchboard call add a=2 b=3 -- switchboard demo-server
//! 5
//! ```
//!
//! TOOL is a catalogue name, or a tool's name exactly as its server listed it when only one
//! server lists it (a name the catalogue had to sanitise, such as `my.tool`, still works). A
//! name prefixed with a server's name (`one__greet`) starts that server alone. The arguments
//! are one JSON object, or `key=value` pairs (a value that parses as JSON is that JSON, else a
//! string, as httpie has it); either way they are checked against the tool's `inputSchema`
//! before anything is sent ([`arguments`]).

use std::fmt;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Map, Value};

use switchboard::{Call, Catalogue, ConfigFile, Runtime, Unresolved};
use switchboard::{ErrorContext, ErrorKind};

use super::config::{self, Report};
use super::{finish, print, progress, typed_value, CallArgs, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP: &str = "\
Without `-- CMD`, TOOL is a catalogue name across the servers of the config file: -c FILE,
else $SWITCHBOARD_CONFIG, else ./.mcp.json. A name prefixed with a server's name and the
separator (one__greet) starts that server only. `-- CMD` runs one stdio server as if a config
file listed only it, named after CMD's file name and never restarted; `-- URL` (http:// or
https://) one HTTP server. TOOL may also be a tool's name as its server listed it, when no
other server lists that name; a name several servers list is exit 2, naming the catalogue
names to call instead.

ARGS is one JSON object ('{\"a\":2}'), or KEY=VALUE pairs (a=2 b=3): a VALUE that parses as
JSON is that JSON (2, true, [1], {\"x\":1}, \"quoted text\"), anything else a string. They are
checked against the tool's inputSchema before the call: a mismatch is exit 2, in the
schema's own words, and nothing is sent.

--timeout bounds the call, and caps each server's start: a server that has not finished
its handshake within it (or within its startup timeout, if shorter: --startup-timeout, a
config file's startupTimeout, MCP_TIMEOUT, else 30s) fails with exit 3, on a line naming
the flag that bounded it and what the server left unanswered. MCP_TIMEOUT and
MCP_TOOL_TIMEOUT (milliseconds) set default timeouts. A DURATION is written as in a config
file (500ms, 1.5s, 2m, 1h); a bare number is refused. A deadline or a Ctrl-C is reported at
once, and the servers then get 50 ms to leave (stdin closed, SIGTERM, SIGKILL): the command
exits right away, no server left running.

With --json, stdout is the tool's result exactly as the server sent it, one JSON document
(a CallToolResult), the same for `-- CMD` and for a config file:
  {\"content\": [{\"type\": \"text\", \"text\": \"5\"}], \"structuredContent\": {\"sum\": 5}, \"isError\": false}
Exit 1 when it says \"isError\": true.

Examples:
  switchboard call search_code '{\"q\":\"actix\"}' -c .mcp.json
  switchboard call add a=2 b=3 --timeout 1.5s -- switchboard demo-server
  switchboard call echo message=hi -- http://127.0.0.1:3001/mcp";

/// `switchboard call`: the result, readable or raw; exit 1 if the tool reported an error.
pub(crate) async fn run(args: CallArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    // --timeout bounds the call, and no server's start waits longer than it either.
    if let Some(timeout) = args.timeout {
        super::startup::set_cap(timeout);
    }
    let file = config::servers(&args.config, &args.server)?;
    let arguments = arguments(
        &Target {
            tool: &args.tool,
            server: config::only_server(&file),
        },
        &args.arguments,
    )?;
    // A name prefixed with a server's name needs that server alone.
    let (file, prefixed) = match by_prefix(&file, &args.tool) {
        Some((server, tool)) => (config::only(&file, server), Some(tool.to_owned())),
        None => (file, None),
    };
    let runtime = config::start_all(&file, interrupt).await?;
    let asked = Asked {
        tool: &args.tool,
        prefixed: prefixed.as_deref(),
        arguments,
    };
    let answer = answer(&runtime, &args, asked, &file, interrupt).await;
    let (output, outcome) = match answer {
        Ok((output, code)) => (output, Ok(code)),
        Err(failure) => (String::new(), Err(failure)),
    };
    finish(&runtime, &output, outcome, interrupt).await
}

/// What the command line asked for.
struct Asked<'a> {
    /// TOOL as given.
    tool: &'a str,
    /// TOOL without the server prefix, when it named one server (the only one started).
    prefixed: Option<&'a str>,
    arguments: Given,
}

/// The server a prefixed name (`server__tool`, with the file's separator) names, and the
/// rest, when the file has several servers and exactly one of them is named so.
fn by_prefix<'a>(file: &'a ConfigFile, tool: &'a str) -> Option<(&'a str, &'a str)> {
    if file.servers.len() < 2 {
        return None;
    }
    let separator = file
        .defaults
        .naming
        .as_ref()
        .map_or("__", |n| n.separator.as_str());
    let mut named = file.servers.iter().filter_map(|(name, _)| {
        let rest = tool.strip_prefix(name.as_str())?.strip_prefix(separator)?;
        (!rest.is_empty()).then_some((name.as_str(), rest))
    });
    match (named.next(), named.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

async fn answer(
    runtime: &Runtime,
    args: &CallArgs,
    asked: Asked<'_>,
    file: &ConfigFile,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    let catalogue = runtime.catalogue();
    let names = [Some(asked.tool), asked.prefixed];
    let mut found = None;
    for name in names.into_iter().flatten() {
        match lookup(&catalogue, name, file) {
            Lookup::Found {
                name,
                server,
                schema,
            } => {
                found = Some((name, server, schema));
                break;
            }
            Lookup::Several(failure) => return Err(failure),
            Lookup::None => {}
        }
    }
    let call = match found {
        Some((name, server, schema)) => {
            let target = Target {
                tool: asked.tool,
                server: Some(&server),
            };
            let arguments = asked.arguments.read(schema.as_ref());
            check_schema(&target, schema.as_ref(), &arguments)?;
            let listed = catalogue
                .resolve(&name)
                .map_or(name.as_str(), |e| e.tool.name.as_str());
            let as_task = super::tasks::wanted(runtime, Some(&server), listed);
            let mut call = runtime.call_tool(&name, arguments);
            if as_task {
                if let Some(meta) = &args.meta {
                    call = call.meta(meta.clone());
                }
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
            return invoke(call, target, args, interrupt, Failure::from).await;
        }
        // A tool the config hides is not called "unknown".
        None => match denied(
            runtime,
            &catalogue,
            asked.prefixed.unwrap_or(asked.tool),
            file,
        ) {
            Some(failure) => return Err(failure),
            // No list has it yet: the runtime routes it once a re-listing a server
            // announced is over (within the call's deadline), or fails it as unknown.
            None => runtime.call_tool(asked.tool, asked.arguments.read(None)),
        },
    };
    let target = Target {
        tool: asked.tool,
        server: config::only_server(file),
    };
    let unknown = |error: switchboard::Error| match error.kind() {
        switchboard::ErrorKind::UnknownTool => {
            no_such_tool(runtime, asked.prefixed.unwrap_or(asked.tool), file)
        }
        _ => Failure::from(error),
    };
    invoke(call, target, args, interrupt, unknown).await
}

/// What a name finds in the catalogue.
enum Lookup {
    /// One tool: its catalogue name, server and input schema.
    Found {
        name: String,
        server: Arc<str>,
        schema: Option<Value>,
    },
    /// Several servers offer it: the usage error naming what to call instead.
    Several(Failure),
    None,
}

/// `name` as a catalogue name, else as a tool's name as one server listed it.
fn lookup(catalogue: &Catalogue, name: &str, file: &ConfigFile) -> Lookup {
    let found = |entry: &switchboard::CatalogueEntry| Lookup::Found {
        name: entry.name.clone(),
        server: entry.server.clone(),
        schema: Some(entry.tool.input_schema.clone()),
    };
    match catalogue.resolve(name) {
        Ok(entry) => return found(entry),
        Err(Unresolved::Ambiguous(collision)) => {
            return Lookup::Several(several(catalogue, name, &collision.servers, file))
        }
        Err(_) => {}
    }
    let listed: Vec<_> = catalogue
        .iter()
        .filter(|entry| entry.tool.name == name)
        .collect();
    match listed[..] {
        [] => Lookup::None,
        [one] => found(one),
        _ => {
            let servers: Vec<Arc<str>> = listed.iter().map(|e| e.server.clone()).collect();
            Lookup::Several(several(catalogue, name, &servers, file))
        }
    }
}

/// The usage error of a tool name several servers offer: the servers, and the catalogue
/// names to call instead (exit 2, as for a prompt or a resource several servers offer).
fn several(catalogue: &Catalogue, tool: &str, servers: &[Arc<str>], file: &ConfigFile) -> Failure {
    let separator = file
        .defaults
        .naming
        .as_ref()
        .map_or("__", |n| n.separator.as_str());
    let names: Vec<String> = servers
        .iter()
        .map(|server| {
            catalogue
                .for_server(server)
                .find(|entry| entry.tool.name == tool && entry.name != tool)
                .map(|entry| entry.name.clone())
                .unwrap_or_else(|| format!("{server}{separator}{tool}"))
        })
        .collect();
    let servers: Vec<&str> = servers.iter().map(|s| &**s).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    Failure::Usage(format!(
        "tool `{tool}` is offered by several servers ({}): call one of {}",
        super::offered::quoted(&servers),
        super::offered::quoted(&names)
    ))
}

/// A tool a ready server lists but the catalogue leaves out: the config's `allowTools` or
/// `denyTools` hide it.
fn denied(
    runtime: &Runtime,
    catalogue: &Catalogue,
    tool: &str,
    file: &ConfigFile,
) -> Option<Failure> {
    let server = runtime.servers().into_iter().find(|server| {
        let status = server.status();
        status.is_ready()
            && status.tools.iter().any(|t| t.name == tool)
            && !catalogue
                .for_server(server.name())
                .any(|entry| entry.tool.name == tool)
    })?;
    Some(Failure::Run(format!(
        "tool `{tool}` of server `{}` is denied by the config ({}: its allowTools or denyTools \
         leave it out)",
        server.name(),
        file.path.display()
    )))
}

/// No tool of that name. With one server: why it is not ready, or that it has no such tool;
/// with several: which are not ready (their tools are missing).
fn no_such_tool(runtime: &Runtime, tool: &str, file: &ConfigFile) -> Failure {
    let reports = config::reports(runtime, file, false);
    if let [only] = &reports[..] {
        return only.unready().unwrap_or_else(|| {
            ErrorContext::of_tool(only.name.as_str().into(), tool.into())
                .error(ErrorKind::UnknownTool)
                .into()
        });
    }
    let missing = ErrorContext::new()
        .with_tool(Some(tool.into()))
        .error(ErrorKind::UnknownTool);
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

/// Sends `call` and renders its answer: the result readable, or raw with `--json`, and exit
/// 1 if the tool reported an error (`isError: true`); `failed` says what an error means. A
/// signal cancels the call.
async fn invoke(
    mut call: Call,
    target: Target<'_>,
    args: &CallArgs,
    interrupt: &mut Interrupt,
    failed: impl FnOnce(switchboard::Error) -> Failure,
) -> Result<(String, ExitCode), Failure> {
    if let Some(timeout) = args.timeout {
        call = call.timeout(timeout);
    }
    if let Some(meta) = &args.meta {
        call = call.meta(meta.clone());
    }
    let (call, bar) = progress::attach(call);
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal}: cancelled the call to {target}"
        ))
    };
    let answered = if args.json {
        let raw = interrupt.guard(call.raw()).await;
        bar.finish().await;
        let raw = raw.map_err(interrupted)?.map_err(failed)?;
        let is_error = serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|v| v.get("isError")?.as_bool())
            == Some(true);
        (format!("{}\n", raw.get()), is_error)
    } else {
        let result = interrupt.guard(call).await;
        bar.finish().await;
        let result = result.map_err(interrupted)?.map_err(failed)?;
        (print::result(&result), result.is_error())
    };
    let (output, is_error) = answered;
    if is_error {
        eprintln!("switchboard: {target} reported an error (isError: true)");
        return Ok((output, ExitCode::from(1)));
    }
    Ok((output, ExitCode::SUCCESS))
}

/// The arguments as the command line gave them: one JSON object, or `key=value` pairs whose
/// values are read once the tool's input schema says what type each property is.
#[derive(Debug)]
enum Given {
    Object(Value),
    Pairs(Vec<(String, String)>),
}

impl Given {
    /// The arguments, each pair's value read as `schema` types its property
    /// ([`typed_value::read`]).
    fn read(self, schema: Option<&Value>) -> Value {
        match self {
            Given::Object(object) => object,
            Given::Pairs(pairs) => Value::Object(
                pairs
                    .into_iter()
                    .map(|(key, text)| {
                        let value = typed_value::read(typed_value::property(schema, &key), &text);
                        (key, value)
                    })
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

/// The arguments of the command line: one JSON object (ARGS_JSON), or `key=value` pairs.
/// Nothing given is `{}`.
fn arguments(target: &Target<'_>, given: &[String]) -> Result<Given, Failure> {
    let bad = |why: String| Failure::Usage(format!("bad arguments for {target}: {why}"));
    match given {
        [] => Ok(Given::Object(Value::Object(Map::new()))),
        [one] if !looks_like_pair(one) => match serde_json::from_str(one) {
            Ok(object @ Value::Object(_)) => Ok(Given::Object(object)),
            Ok(other) => Err(bad(format!(
                "ARGS_JSON must be a JSON object, not {}",
                kind(&other)
            ))),
            Err(e) => Err(bad(format!("ARGS_JSON is not valid JSON ({e})"))),
        },
        many => pairs(many).map(Given::Pairs).map_err(bad),
    }
}

/// `key=value` pairs, each key once.
pub(crate) fn pairs(given: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for pair in given {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(format!("`{pair}` is neither a JSON object nor KEY=VALUE"));
        };
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(format!("`{key}` is given twice"));
        }
        pairs.push((key.to_owned(), value.to_owned()));
    }
    Ok(pairs)
}

/// Whether an argument is `key=value` rather than ARGS_JSON: it has a `=` after a key that
/// does not start a JSON text.
pub(crate) fn looks_like_pair(text: &str) -> bool {
    let trimmed = text.trim_start();
    !matches!(trimmed.chars().next(), Some('{' | '[' | '"') | None)
        && text.split_once('=').is_some_and(|(key, _)| !key.is_empty())
}

/// Checks `arguments` against the tool's `inputSchema` (no remote `$ref` is fetched: a
/// schema that needs one is not checked here, and the server checks). A mismatch is a usage
/// error in the validator's words, which quote the schema.
fn check_schema(
    target: &Target<'_>,
    schema: Option<&Value>,
    arguments: &Value,
) -> Result<(), Failure> {
    let Some(schema) = schema.filter(|s| s.is_object()) else {
        return Ok(());
    };
    let Some(why) = switchboard::schema_mismatch(schema, arguments) else {
        return Ok(());
    };
    Err(Failure::Usage(format!(
        "bad arguments for {target}: {why} (by its inputSchema; nothing was sent)"
    )))
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
    use serde_json::json;

    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_are_an_object_or_pairs() {
        let on_server = Target {
            tool: "t",
            server: Some("s"),
        };
        // With no schema to ask, a value is JSON when it parses as JSON.
        let parsed = |args: &[&str]| {
            arguments(&on_server, &strings(args))
                .ok()
                .map(|g| g.read(None))
        };
        assert_eq!(parsed(&[r#"{"a":1}"#]), Some(json!({"a": 1})));
        assert_eq!(parsed(&[]), Some(json!({})));
        assert_eq!(
            parsed(&["a=2", "b=x y", "c=true", "d=[1]", r#"e="5""#, "f=", "g=a=b"]),
            Some(json!({"a": 2, "b": "x y", "c": true, "d": [1], "e": "5", "f": "", "g": "a=b"}))
        );
        assert_eq!(parsed(&["n=1.5"]), Some(json!({"n": 1.5})));
        // With one, as its properties' types say.
        let schema = json!({"type": "object", "properties": {
            "message": {"type": "string"}, "count": {"type": "integer"}, "on": {"type": "boolean"}}});
        let typed = arguments(
            &on_server,
            &strings(&["message=42", "count=42", "on=true", "x=1"]),
        )
        .map(|g| g.read(Some(&schema)))
        .ok();
        assert_eq!(
            typed,
            Some(json!({"message": "42", "count": 42, "on": true, "x": 1}))
        );
        // ARGS_JSON is taken as written, whatever the schema.
        let object = arguments(&on_server, &strings(&[r#"{"message":42}"#]))
            .map(|g| g.read(Some(&schema)))
            .ok();
        assert_eq!(object, Some(json!({"message": 42})));
        for bad in [
            &["[1]"][..],
            &["nope"],
            &["1"],
            &["null"],
            &["\"x\""],
            &["{"],
            &["a=1", "a=2"],
            &["a=1", "b"],
            &["=1"],
        ] {
            match arguments(&on_server, &strings(bad)) {
                Err(Failure::Usage(m)) => assert!(m.contains("tool `t` on server `s`"), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let by_name = Target {
            tool: "t",
            server: None,
        };
        match arguments(&by_name, &strings(&["[1]"])) {
            Err(Failure::Usage(m)) => assert_eq!(
                m,
                "bad arguments for tool `t`: ARGS_JSON must be a JSON object, not an array"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn arguments_are_checked_against_the_input_schema() {
        let target = Target {
            tool: "add",
            server: Some("s"),
        };
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}
        }, "required": ["a", "b"]});
        assert!(check_schema(&target, Some(&schema), &json!({"a": 1, "b": 2})).is_ok());
        match check_schema(&target, Some(&schema), &json!({"a": "x"})) {
            Err(Failure::Usage(m)) => {
                assert!(m.contains("\"b\" is a required property"), "{m}");
                assert!(m.contains("is not of type \"number\" at `/a`"), "{m}");
                assert!(m.contains("nothing was sent"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        // No schema, or one that cannot be compiled here: the server checks.
        assert!(check_schema(&target, None, &json!({"x": 1})).is_ok());
        let remote = json!({"$ref": "https://example.invalid/s.json"});
        assert!(check_schema(&target, Some(&remote), &json!({"x": 1})).is_ok());
    }

    #[test]
    fn a_prefixed_name_names_one_server() {
        let file = ConfigFile::new(
            "f.json",
            [
                ("one".to_owned(), switchboard::ServerConfig::stdio("a")),
                ("two".to_owned(), switchboard::ServerConfig::stdio("b")),
            ],
        );
        assert_eq!(by_prefix(&file, "one__greet"), Some(("one", "greet")));
        assert_eq!(by_prefix(&file, "two__a__b"), Some(("two", "a__b")));
        assert_eq!(by_prefix(&file, "greet"), None);
        assert_eq!(by_prefix(&file, "one__"), None);
        assert_eq!(by_prefix(&file, "three__greet"), None);
        let single = ConfigFile::new(
            "f",
            [("one".to_owned(), switchboard::ServerConfig::stdio("a"))],
        );
        assert_eq!(
            by_prefix(&single, "one__greet"),
            None,
            "one server: nothing to narrow"
        );
    }
}
