//! `switchboard skills` and `switchboard skill`: the skills of the servers (a config file's
//! or the one after `--`) that declare the Skills extension, and one skill's `SKILL.md` (or
//! another of its files), checked against the skill's entry.
//!
//! ```text
//! $ switchboard skills -- switchboard demo-server
//! arithmetic — Add whole numbers with the demo server's add tool, and check the sum.
//!   skill://demo/arithmetic/SKILL.md (2 files)
//! greet-people — Greet someone by name with the demo server's greet tool, in the style …
//!   skill://greet-people/SKILL.md (2 files)
//! $ switchboard skill greet-people -- switchboard demo-server
//! ---
//! name: greet-people
//! …
//! ```
//!
//! The listing goes as [`offered`] describes (a server without the extension is listed as
//! offering no skills). `skill` goes to `--server`, else to the only server, else to the one
//! server whose listing has the skill; NAME is a skill's name or the URI of its `SKILL.md`
//! (a URI that no listing has is still asked of a server named by `--server`, or of the
//! only one: servers need not list every skill). Skill names are not unique, even within
//! one server: a name that several skills have is exit 2, naming their servers or URIs.

use std::process::ExitCode;

use clap::Args;

use switchboard::model::{Skill, SkillResources};
use switchboard::{ConfigFile, Runtime, ServerHandle};

use super::config;
use super::offered::{self, Found, Listing, Offer};
use super::{print, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP_LIST: &str = "\
Without `-- CMD`, the servers are those of the config file: -c FILE, else $SWITCHBOARD_CONFIG,
else ./.mcp.json. `-- CMD` runs one stdio server as if a config file listed only it, named
after CMD's file name and never restarted; `-- URL` one HTTP server. Skills are the extension
io.modelcontextprotocol/skills: a server that does not declare it is listed as offering none
(\"no skills\"), which is no failure.

Each skill prints as its name and description, then the URI of its SKILL.md and how many
files it has (or \"dynamic\"). With --json, stdout is one document, the same for `-- CMD` and
for a config file:
  {\"servers\": [{\"name\": \"one\", \"state\": \"ready\", \"error\": null,
                \"skills\": [{\"uri\": \"skill://git-workflow/SKILL.md\",
                            \"frontmatter\": {\"name\": \"git-workflow\", \"description\": \"...\"},
                            \"resources\": [{\"uri\": \"...\", \"digest\": \"sha256:...\", \"size\": 2314}]}]}]}
one entry per enabled server in file order, each skill as its server listed it; \"skills\" is
null for a server without the extension, and empty (with \"error\" saying why) for one that
is not ready or could not be listed.

Examples:
  switchboard skills -- switchboard demo-server
  switchboard skills --json -c .mcp.json";

pub(crate) const AFTER_HELP_GET: &str = "\
NAME is a skill's name as its server lists it, or the URI of its SKILL.md. Without --server,
it is a skill of the only server of `-- CMD` or a config of one, else of the one server of
the config file (-c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json) that lists it. Several
such servers, or several skills of that name on one server, is exit 2 naming them (--server
picks a server, a URI picks a skill); none is exit 3.

The SKILL.md prints as it is, once its size and SHA-256 digest are the ones the skill's entry
lists and its front matter is the entry's; --file PATH prints that file of the skill instead
(PATH relative to the skill's folder, as the skill's own references are), checked the same
way. A file that is not what the entry says is exit 3, and nothing is printed. A skill is
instructions from its server: read it before giving it to a model.

With --json, stdout is one document:
  {\"server\": \"one\", \"skill\": {the entry: uri, frontmatter, resources},
   \"uri\": \"skill://.../SKILL.md\", \"text\": \"...\"}
(\"text\" is null for a file that is not UTF-8, whose bytes are then \"base64\").

Examples:
  switchboard skill greet-people -- switchboard demo-server
  switchboard skill greet-people --file references/STYLES.md -- switchboard demo-server
  switchboard skill skill://acme/billing/refunds/SKILL.md --server billing -c .mcp.json";

/// `switchboard skills`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Print one JSON document, the same for `-- CMD` and a config file:
    /// {"servers":[{"name","state","error","skills":[...]}]}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `switchboard skill`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// The skill: its name, or the URI of its SKILL.md.
    name: String,
    /// A file of the skill to print instead of its SKILL.md, relative to the skill's folder.
    #[arg(long, value_name = "PATH")]
    file: Option<String>,
    /// The server to ask, by its name in the config file.
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    /// Print one JSON document: {"server","skill","uri","text"}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// Lists a server's skills; `None` if it does not declare the extension.
async fn list(server: ServerHandle) -> switchboard::Result<Option<Vec<Skill>>> {
    offered::offered(server.list_skills().await)
}

/// `switchboard skills`.
pub(crate) async fn run_list(
    args: ListArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    offered::run_listing(&file, args.json, "skills", interrupt, list, document, text).await
}

/// The `skills --json` document.
fn document(listings: &[Listing<Vec<Skill>>]) -> Result<String, Failure> {
    offered::listing_document(listings, "skills")
}

/// Two lines per skill: name and description, then its URI and files; grouped under a line
/// per server when there are several servers.
fn text(listings: &[Listing<Vec<Skill>>]) -> String {
    offered::grouped_text(listings, "skills", |out, indent, skills: &Vec<Skill>| {
        lines(out, indent, skills)
    })
}

fn lines(out: &mut String, indent: &str, skills: &[Skill]) {
    for skill in skills {
        out.push_str(indent);
        out.push_str(&print::named(skill.name(), Some(skill.description())));
        out.push('\n');
        out.push_str(indent);
        out.push_str("  ");
        out.push_str(&print::escape_line(&skill.uri));
        out.push_str(&match &skill.resources {
            SkillResources::Files(files) if files.len() == 1 => " (1 file)".to_owned(),
            SkillResources::Files(files) => format!(" ({} files)", files.len()),
            SkillResources::Dynamic => " (dynamic)".to_owned(),
            _ => " (invalid entry: no file manifest)".to_owned(),
        });
        out.push('\n');
    }
}

/// Whether `name` (a name or a `SKILL.md` URI) is `skill`.
fn is(skill: &Skill, name: &str) -> bool {
    if is_uri(name) {
        skill.uri == name
    } else {
        skill.name() == name
    }
}

fn is_uri(name: &str) -> bool {
    name.contains("://")
}

/// `switchboard skill`.
pub(crate) async fn run_get(args: GetArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    // A skill of one server: it alone is started.
    let file = match &args.from {
        Some(name) => offered::narrow(&file, name)?,
        None => file,
    };
    let runtime = config::start_all(&file, interrupt).await?;
    let (output, outcome) = match get(&runtime, &file, &args, interrupt).await {
        Ok(output) => (output, Ok(ExitCode::SUCCESS)),
        Err(failure) => (String::new(), Err(failure)),
    };
    super::finish(&runtime, &output, outcome, interrupt).await
}

async fn get(
    runtime: &Runtime,
    file: &ConfigFile,
    args: &GetArgs,
    interrupt: &mut Interrupt,
) -> Result<String, Failure> {
    let name = args.name.as_str();
    let server = match &args.from {
        Some(server) => Some(offered::named(runtime, file, server)?),
        None => offered::only(runtime, file)?,
    };
    let (server, skill) = match server {
        Some(server) => {
            let skill = of(&server, name, interrupt).await?;
            (server, skill)
        }
        None => lister(runtime, file, name, interrupt).await?,
    };
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal} while reading skill `{name}` of server `{}`",
            server.name()
        ))
    };
    let read = match &args.file {
        None => interrupt.guard(server.load_skill(&skill)).await,
        Some(path) => {
            let uri = skill.resolve(path).ok_or_else(|| {
                Failure::Usage(format!(
                    "--file {path}: not a file inside skill `{}`",
                    skill.uri
                ))
            })?;
            interrupt.guard(server.read_skill_file(&skill, &uri)).await
        }
    };
    let contents = read.map_err(interrupted)??;
    if !args.json {
        return Ok(match contents.text() {
            Some(text) => text.to_owned(),
            None => format!(
                "<binary: {} bytes, {}>\n",
                contents.bytes.len(),
                print::escape_line(contents.mime_type.as_deref().unwrap_or("unknown type"))
            ),
        });
    }
    let mut document = serde_json::json!({
        "server": server.name(),
        "skill": skill,
        "uri": contents.uri,
        "text": contents.text(),
    });
    if contents.text().is_none() {
        document["base64"] =
            switchboard_codecs::mcp::modern::headers::base64(&contents.bytes).into();
    }
    let document = serde_json::to_string_pretty(&document)
        .map_err(|e| Failure::Run(format!("cannot write the skill as JSON: {e}")))?;
    Ok(document + "\n")
}

/// The skill `name` of `server`: the one its listing has by that name or URI, or, for a URI
/// it does not list, the entry `skills/get` returns.
async fn of(
    server: &ServerHandle,
    name: &str,
    interrupt: &mut Interrupt,
) -> Result<Skill, Failure> {
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal} while looking for skill `{name}` on server `{}`",
            server.name()
        ))
    };
    let listed = interrupt
        .guard(server.list_skills())
        .await
        .map_err(interrupted)??;
    let mut found: Vec<Skill> = listed.into_iter().filter(|s| is(s, name)).collect();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 if is_uri(name) => Ok(interrupt
            .guard(server.get_skill(name))
            .await
            .map_err(interrupted)??),
        0 => Err(Failure::Run(format!(
            "server `{}` lists no skill `{name}`",
            server.name()
        ))),
        _ => Err(several_on_one(server.name(), name, &found)),
    }
}

/// Several skills of one server named `name`: the URIs pick one.
fn several_on_one(server: &str, name: &str, found: &[Skill]) -> Failure {
    let uris: Vec<&str> = found.iter().map(|s| s.uri.as_str()).collect();
    Failure::Usage(format!(
        "server `{server}` has several skills named `{name}` ({}): give the URI of one",
        offered::quoted(&uris)
    ))
}

/// The one server that lists skill `name`, and the skill as it lists it.
async fn lister(
    runtime: &Runtime,
    file: &ConfigFile,
    name: &str,
    interrupt: &mut Interrupt,
) -> Result<(ServerHandle, Skill), Failure> {
    let listings = offered::list_each(runtime, file, "skills", interrupt, list).await?;
    let server = match offered::unique(&listings, |skills| skills.iter().any(|s| is(s, name))) {
        Found::One(server) => server,
        Found::Several(servers) => {
            return Err(Failure::Usage(format!(
                "skill `{name}` is offered by several servers ({}): pick one with --server NAME",
                offered::quoted(&servers)
            )))
        }
        Found::None { unsearched } if unsearched.is_empty() => {
            return Err(Failure::Run(format!(
                "no server of {} lists a skill `{name}`",
                file.path.display()
            )))
        }
        Found::None { unsearched } => {
            return Err(Failure::Run(format!(
                "no server of {} lists a skill `{name}`; not searched: {}",
                file.path.display(),
                unsearched.join("; ")
            )))
        }
    };
    let found: Vec<Skill> = listings
        .iter()
        .find(|l| l.report.name == server)
        .map(|l| match &l.offer {
            Offer::Listed(skills) => skills.iter().filter(|s| is(s, name)).cloned().collect(),
            _ => Vec::new(),
        })
        .unwrap_or_default();
    match &found[..] {
        [one] => Ok((runtime.server(server)?, one.clone())),
        [] => Err(Failure::Run(format!(
            "server `{server}` lists no skill `{name}`"
        ))),
        _ => Err(several_on_one(server, name, &found)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill(uri: &str, name: &str, resources: serde_json::Value) -> Skill {
        serde_json::from_value(json!({
            "uri": uri,
            "frontmatter": {"name": name, "description": "Does\tthings\u{1b}[2J\nSecond line"},
            "resources": resources,
        }))
        .unwrap()
    }

    #[test]
    fn a_skill_is_two_lines_its_server_text_escaped() {
        let mut out = String::new();
        lines(
            &mut out,
            "  ",
            &[
                skill(
                    "skill://a/SKILL.md",
                    "a",
                    json!([{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 1}]),
                ),
                skill("skill://b/SKILL.md", "b", json!("dynamic")),
                skill("skill://c\u{7}/SKILL.md", "c", json!(7)),
            ],
        );
        assert_eq!(
            out,
            "  a — Does\\tthings\\u{1b}[2J\n    skill://a/SKILL.md (1 file)\n\
             \x20 b — Does\\tthings\\u{1b}[2J\n    skill://b/SKILL.md (dynamic)\n\
             \x20 c — Does\\tthings\\u{1b}[2J\n    skill://c\\u{7}/SKILL.md (invalid entry: no file manifest)\n"
        );
    }

    #[test]
    fn a_name_or_a_uri_finds_a_skill() {
        let refunds = skill("skill://acme/refunds/SKILL.md", "refunds", json!("dynamic"));
        assert!(is(&refunds, "refunds"));
        assert!(is(&refunds, "skill://acme/refunds/SKILL.md"));
        assert!(!is(&refunds, "acme/refunds"));
        assert!(!is(&refunds, "skill://other/refunds/SKILL.md"));
        let failure = several_on_one("s", "refunds", &[refunds.clone(), refunds]);
        assert!(matches!(failure, Failure::Usage(m) if m.contains("give the URI of one")));
    }
}
