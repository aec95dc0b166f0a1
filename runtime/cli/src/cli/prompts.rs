//! `switchboard prompts` and `switchboard prompt`: the prompts of the servers (a config
//! file's or the one after `--`) with their arguments, and one prompt's messages.
//!
//! ```text
//! $ switchboard prompts -- switchboard demo-server
//! simple — A prompt without arguments.
//! greeting — Asks to greet someone, optionally in a style.
//!   name (required) — Who to greet
//!   style — How to greet them
//! $ switchboard prompt greeting '{"name":"Ada"}' -- switchboard demo-server
//! user: Say hello to Ada.
//! ```
//!
//! The listing goes as [`offered`] describes. `prompt` goes to `--server`, else to the only
//! server, else to the one server that lists the prompt (several: exit 2 naming them; none:
//! exit 3, as `call` of an unknown tool). Its arguments are checked against the prompt as
//! listed before it is asked for: a missing required one is exit 2, nothing sent.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};

use switchboard::model::{Content, GetPromptResult, Prompt, Role};
use switchboard::{ConfigFile, Runtime, ServerHandle};

use super::config;
use super::offered::{self, Found, Listing, Offer};
use super::{print, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP_LIST: &str = "\
Without `-- CMD`, the servers are those of the config file: -c FILE, else $SWITCHBOARD_CONFIG,
else ./.mcp.json. `-- CMD` runs one stdio server as if a config file listed only it, named
after CMD's file name and never restarted; `-- URL` one HTTP server. A server that offers no prompts is listed as such
(\"no prompts\"), which is no failure.

With --json, stdout is one document, the same for `-- CMD` and for a config file:
  {\"servers\": [{\"name\": \"one\", \"state\": \"ready\", \"error\": null,
                \"prompts\": [{\"name\": \"greeting\", \"description\": \"...\",
                             \"arguments\": [{\"name\": \"name\", \"required\": true}]}]}]}
one entry per enabled server in file order, each prompt as its server listed it; \"prompts\"
is null for a server that offers no prompts, and empty (with \"error\" saying why) for one
that is not ready or could not be listed.

Examples:
  switchboard prompts -c .mcp.json
  switchboard prompts --json -- npx -y @modelcontextprotocol/server-everything";

pub(crate) const AFTER_HELP_GET: &str = "\
Without --server, NAME is a prompt of the only server of `-- CMD` or a config of one, else
of the one server of the config file (-c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json)
that lists it. Several such servers is exit 2 naming them (--server picks one, and starts it
alone); none is exit 3. The arguments are one JSON object of strings, or KEY=VALUE pairs
(each VALUE a string as it is, prompt arguments being strings); they must give every argument
the prompt lists as required, else exit 2 before anything is asked.

Each message prints as `role: text`, other content as a one-line summary. With --json,
stdout is the result exactly as the server sent it, one JSON document:
  {\"description\": \"...\", \"messages\": [{\"role\": \"user\", \"content\": {\"type\": \"text\", ...}}]}

Examples:
  switchboard prompt greeting name=Ada style=pirate -- switchboard demo-server
  switchboard prompt greeting '{\"name\":\"Ada\"}' -- switchboard demo-server
  switchboard prompt review_code '{\"file\":\"main.rs\"}' --server github -c .mcp.json";

/// `switchboard prompts`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Print one JSON document, the same for `-- CMD` and a config file:
    /// {"servers":[{"name","state","error","prompts":[...]}]}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `switchboard prompt`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// The prompt's name, as its server lists it.
    name: String,
    /// The prompt's arguments: one JSON object of strings, or KEY=VALUE pairs (each VALUE a
    /// string as written).
    #[arg(value_name = "ARGS_JSON | KEY=VALUE")]
    arguments: Vec<String>,
    /// The server to ask, by its name in the config file.
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    /// Print the result exactly as the server sent it, one JSON document:
    /// {"description","messages":[{"role","content"}]}.
    #[arg(long)]
    json: bool,
    /// `_meta` entries for the request: a JSON object.
    #[arg(long, value_name = "JSON", value_parser = super::meta)]
    meta: Option<serde_json::Map<String, Value>>,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// Lists a server's prompts; `None` if it offers none.
async fn list(server: ServerHandle) -> switchboard::Result<Option<Vec<Prompt>>> {
    offered::offered(server.list_prompts().await)
}

/// `switchboard prompts`.
pub(crate) async fn run_list(
    args: ListArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    offered::run_listing(&file, args.json, "prompts", interrupt, list, document, text).await
}

/// The `prompts --json` document.
fn document(listings: &[Listing<Vec<Prompt>>]) -> Result<String, Failure> {
    offered::listing_document(listings, "prompts")
}

/// A line per prompt and one per argument under it; grouped under a line per server when
/// there are several servers.
fn text(listings: &[Listing<Vec<Prompt>>]) -> String {
    offered::grouped_text(listings, "prompts", |out, indent, prompts: &Vec<Prompt>| {
        lines(out, indent, prompts)
    })
}

fn lines(out: &mut String, indent: &str, prompts: &[Prompt]) {
    for prompt in prompts {
        out.push_str(indent);
        out.push_str(&print::named(&prompt.name, prompt.description.as_deref()));
        out.push('\n');
        for argument in prompt.arguments.iter().flatten() {
            let name = if argument.required == Some(true) {
                format!("{} (required)", argument.name)
            } else {
                argument.name.clone()
            };
            out.push_str(indent);
            out.push_str("  ");
            out.push_str(&print::named(&name, argument.description.as_deref()));
            out.push('\n');
        }
    }
}

/// `switchboard prompt`.
pub(crate) async fn run_get(args: GetArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    let arguments = arguments(&args.name, &args.arguments)?;
    // A prompt of one server: it alone is started.
    let file = match &args.from {
        Some(name) => offered::narrow(&file, name)?,
        None => file,
    };
    let runtime = config::start_all(&file, interrupt).await?;
    let (output, outcome) = match get(&runtime, &file, &args, arguments, interrupt).await {
        Ok(output) => (output, Ok(ExitCode::SUCCESS)),
        Err(failure) => (String::new(), Err(failure)),
    };
    super::finish(&runtime, &output, outcome, interrupt).await
}

async fn get(
    runtime: &Runtime,
    file: &ConfigFile,
    args: &GetArgs,
    arguments: BTreeMap<String, String>,
    interrupt: &mut Interrupt,
) -> Result<String, Failure> {
    let name = args.name.as_str();
    let server = match &args.from {
        Some(server) => Some(offered::named(runtime, file, server)?),
        None => offered::only(runtime, file)?,
    };
    let (server, prompt) = match server {
        Some(server) => {
            let prompt = listed(&server, name, interrupt).await?;
            (server, prompt)
        }
        None => lister(runtime, file, name, interrupt).await?,
    };
    let missing: Vec<String> = prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
        .map(|a| format!("`{}`", print::escape_line(&a.name)))
        .collect();
    if !missing.is_empty() {
        let noun = if missing.len() == 1 {
            "argument"
        } else {
            "arguments"
        };
        return Err(Failure::Usage(format!(
            "prompt `{name}` of server `{}` needs the required {noun} {} (as NAME=VALUE or in ARGS_JSON)",
            server.name(),
            missing.join(", ")
        )));
    }
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal} while getting prompt `{name}` from server `{}`",
            server.name()
        ))
    };
    if args.json || args.meta.is_some() {
        let mut params = json!({ "name": name, "arguments": arguments });
        if let Some(meta) = &args.meta {
            params["_meta"] = Value::Object(meta.clone());
        }
        let raw = interrupt
            .guard(server.request("prompts/get", Some(params)))
            .await
            .map_err(interrupted)??;
        if args.json {
            return Ok(format!("{}\n", raw.get()));
        }
        let result: GetPromptResult = serde_json::from_str(raw.get()).map_err(|e| {
            Failure::Run(format!(
                "server `{}` answered prompts/get with an invalid result: {e}",
                server.name()
            ))
        })?;
        return Ok(messages(&result));
    }
    let result = interrupt
        .guard(server.get_prompt(name, arguments))
        .await
        .map_err(interrupted)??;
    Ok(messages(&result))
}

/// The prompt `name` as `server` lists it.
async fn listed(
    server: &ServerHandle,
    name: &str,
    interrupt: &mut Interrupt,
) -> Result<Prompt, Failure> {
    let prompts =
        interrupt
            .guard(server.list_prompts())
            .await
            .map_err(|Interrupted(signal)| {
                Failure::Interrupted(format!(
                    "interrupted by {signal} while listing the prompts of server `{}`",
                    server.name()
                ))
            })??;
    prompts
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| Failure::Run(format!("server `{}` has no prompt `{name}`", server.name())))
}

/// The one server that lists prompt `name`, and the prompt as it lists it.
async fn lister(
    runtime: &Runtime,
    file: &ConfigFile,
    name: &str,
    interrupt: &mut Interrupt,
) -> Result<(ServerHandle, Prompt), Failure> {
    let listings = offered::list_each(runtime, file, "prompts", interrupt, list).await?;
    let server = match offered::unique(&listings, |prompts| prompts.iter().any(|p| p.name == name))
    {
        Found::One(server) => server,
        Found::Several(servers) => {
            return Err(Failure::Usage(format!(
                "prompt `{name}` is offered by several servers ({}): pick one with --server NAME",
                offered::quoted(&servers)
            )))
        }
        Found::None { unsearched } if unsearched.is_empty() => {
            return Err(Failure::Run(format!(
                "no server of {} lists a prompt `{name}`",
                file.path.display()
            )))
        }
        Found::None { unsearched } => {
            return Err(Failure::Run(format!(
                "no server of {} lists a prompt `{name}`; not searched: {}",
                file.path.display(),
                unsearched.join("; ")
            )))
        }
    };
    let prompt = listings
        .iter()
        .find(|l| l.report.name == server)
        .and_then(|l| match &l.offer {
            Offer::Listed(prompts) => prompts.iter().find(|p| p.name == name).cloned(),
            _ => None,
        })
        .ok_or_else(|| Failure::Run(format!("server `{server}` has no prompt `{name}`")))?;
    Ok((runtime.server(server)?, prompt))
}

/// The prompt's arguments: none, KEY=VALUE pairs (strings as written), or ARGS_JSON, which
/// must be a JSON object of strings (MCP's prompt arguments are).
fn arguments(prompt: &str, given: &[String]) -> Result<BTreeMap<String, String>, Failure> {
    let bad = |why: String| Failure::Usage(format!("bad arguments for prompt `{prompt}`: {why}"));
    let text = match given {
        [] => return Ok(BTreeMap::new()),
        [one] if !super::call::looks_like_pair(one) => one,
        pairs => {
            return super::call::pairs(pairs)
                .map(|pairs| pairs.into_iter().collect())
                .map_err(bad)
        }
    };
    let object = match serde_json::from_str(text) {
        Ok(Value::Object(object)) => object,
        Ok(other) => {
            return Err(bad(format!(
                "ARGS_JSON must be a JSON object of strings, not {}",
                super::call::kind(&other)
            )))
        }
        Err(e) => return Err(bad(format!("ARGS_JSON is not valid JSON ({e})"))),
    };
    object
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(value) => Ok((key, value)),
            other => Err(bad(format!(
                "ARGS_JSON must be a JSON object of strings, but `{key}` is {}",
                super::call::kind(&other)
            ))),
        })
        .collect()
}

/// Each message as `role: text`, other content summarised on one line, all escaped.
fn messages(result: &GetPromptResult) -> String {
    let mut out = String::new();
    for message in &result.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let content = match &message.content {
            Content::Text(t) => print::escape_text(&t.text).into_owned(),
            other => print::block(other),
        };
        out.push_str(role);
        out.push_str(": ");
        out.push_str(&content);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_an_object_of_strings_or_pairs() {
        let given = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let args = arguments("p", &given(&[r#"{"name":"Ada","style":"warm"}"#])).ok();
        assert_eq!(args.map(|a| a.len()), Some(2));
        // Pairs are strings as written, numbers and JSON included.
        let args = arguments("p", &given(&["name=Ada", "n=42", r#"j={"a":1}"#])).unwrap();
        assert_eq!(args["name"], "Ada");
        assert_eq!(args["n"], "42");
        assert_eq!(args["j"], r#"{"a":1}"#);
        assert!(arguments("p", &given(&[])).unwrap().is_empty());
        match arguments("p", &given(&["a=1", "a=2"])) {
            Err(Failure::Usage(m)) => assert!(m.contains("`a` is given twice"), "{m}"),
            other => panic!("{other:?}"),
        }
        for (bad, why) in [
            ("[1]", "must be a JSON object of strings, not an array"),
            (r#""x""#, "not a string"),
            (r#"{"n":1}"#, "but `n` is a number"),
            (r#"{"n":null}"#, "but `n` is null"),
            ("{", "is not valid JSON"),
        ] {
            match arguments("p", &given(&[bad])) {
                Err(Failure::Usage(m)) => {
                    assert!(m.starts_with("bad arguments for prompt `p`: "), "{m}");
                    assert!(m.contains(why), "{bad}: {m}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn messages_are_role_and_escaped_text() {
        let result: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "two\n\tlines\u{1b}[2J\r"}},
            {"role": "assistant", "content": {"type": "image", "data": "AAAA",
                                              "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "resource",
                "resource": {"uri": "demo://x\u{7}", "text": "hi"}}}
        ]}))
        .unwrap();
        assert_eq!(
            messages(&result),
            "user: two\n\tlines\\u{1b}[2J\\r\nassistant: [image image/png, 4 bytes base64]\n\
             user: [resource demo://x\\u{7} (text, 2 bytes)]\n"
        );
    }
}
