//! `switchboard resources` and `switchboard read`: the resources and resource templates of
//! the servers (a config file's or the one after `--`), and one resource's contents.
//!
//! ```text
//! $ switchboard resources -- switchboard demo-server
//! demo://text/hello — hello (text/plain)
//! demo://blob/bytes — bytes (application/octet-stream)
//! demo://note/{id} — note (text/plain) [template]
//! $ switchboard read demo://note/7 -- switchboard demo-server
//! note 7
//! $ switchboard read demo://blob/bytes -- switchboard demo-server
//! <blob: 256 bytes, application/octet-stream>
//! ```
//!
//! The listing goes as [`offered`] describes. `read` goes to `--server`, else to the only
//! server, else to the one server that lists the URI or a template matching it
//! ([`matches`]); none or several is a usage error (exit 2) naming them. A text part prints
//! as it is: it is what was asked for, as `cat` prints a file.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use switchboard::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use switchboard::{ConfigFile, Runtime, ServerHandle};

use super::config;
use super::offered::{self, Found, Listing, Offer};
use super::{print, Failure, Interrupt, Interrupted};

pub(crate) const AFTER_HELP_LIST: &str = "\
Without `-- CMD`, the servers are those of the config file: -c FILE, else $SWITCHBOARD_CONFIG,
else ./.mcp.json. `-- CMD` runs one stdio server as if a config file listed only it, named
after CMD's file name and never restarted; `-- URL` one HTTP server. A server that offers no resources is listed as
such (\"no resources\"), which is no failure.

With --json, stdout is one document, the same for `-- CMD` and for a config file:
  {\"servers\": [{\"name\": \"one\", \"state\": \"ready\", \"error\": null,
                \"resources\": [{\"uri\": \"demo://text/hello\", \"name\": \"hello\", ...}],
                \"resourceTemplates\": [{\"uriTemplate\": \"demo://note/{id}\", ...}]}]}
one entry per enabled server in file order, each resource and template as its server listed
it; \"resources\" and \"resourceTemplates\" are null for a server that offers no resources, and
empty (with \"error\" saying why) for one that is not ready or could not be listed.

Examples:
  switchboard resources -c .mcp.json
  switchboard resources --json -- npx -y @modelcontextprotocol/server-everything";

pub(crate) const AFTER_HELP_READ: &str = "\
Without --server, URI is read from the only server of `-- CMD` or a config of one, else from
the one server of the config file (-c FILE, else $SWITCHBOARD_CONFIG, else ./.mcp.json) that
lists URI or a template matching it ({var} matches one or more characters other than /).
No such server, or several, is exit 2 naming them; --server picks one, and starts it alone
(a name the file does not have is refused before anything starts). A resource the server
does not have is exit 3.

Text parts print as they are; a binary part prints as one line, <blob: N bytes, MIME>.
With --json, stdout is the result exactly as the server sent it, one JSON document:
  {\"contents\": [{\"uri\": \"demo://note/7\", \"mimeType\": \"text/plain\", \"text\": \"note 7\"}]}

Examples:
  switchboard read demo://text/readme -- switchboard demo-server
  switchboard read demo://note/7 --server one -c .mcp.json
  switchboard read demo://blob/bytes --json -- switchboard demo-server";

/// `switchboard resources`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Print one JSON document, the same for `-- CMD` and a config file:
    /// {"servers":[{"name","state","error","resources":[...],"resourceTemplates":[...]}]}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// `switchboard read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// The resource's URI.
    uri: String,
    /// The server to read from, by its name in the config file.
    #[arg(long = "server", value_name = "NAME")]
    from: Option<String>,
    /// Print the result exactly as the server sent it, one JSON document:
    /// {"contents":[{"uri","mimeType","text" or "blob"}]}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: config::ConfigArgs,
    #[command(flatten)]
    server: config::ServerArgs,
}

/// What one server lists.
#[derive(Debug, Default)]
struct Listed {
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

impl Listed {
    /// Whether `uri` is one of the resources or matches one of the templates.
    fn has(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.uri == uri)
            || self.templates.iter().any(|t| matches(&t.uri_template, uri))
    }
}

/// Lists a server's resources and templates; `None` if it offers no resources.
async fn list(server: ServerHandle) -> switchboard::Result<Option<Listed>> {
    let Some(resources) = offered::offered(server.list_resources().await)? else {
        return Ok(None);
    };
    // Templates came later than resources: an older server may answer "method not found".
    let templates = offered::offered(server.list_resource_templates().await)?.unwrap_or_default();
    Ok(Some(Listed {
        resources,
        templates,
    }))
}

/// `switchboard resources`.
pub(crate) async fn run_list(
    args: ListArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    offered::run_listing(
        &file,
        args.json,
        "resources",
        interrupt,
        list,
        document,
        text,
    )
    .await
}

/// The `resources --json` document.
#[derive(Serialize)]
struct Document<'a> {
    servers: Vec<ServerDocument<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerDocument<'a> {
    name: &'a str,
    state: &'static str,
    error: Option<&'a str>,
    resources: Option<&'a [Resource]>,
    resource_templates: Option<&'a [ResourceTemplate]>,
}

fn document(listings: &[Listing<Listed>]) -> Result<String, Failure> {
    let servers = listings
        .iter()
        .map(|listing| {
            let (resources, resource_templates) = match &listing.offer {
                Offer::Listed(l) => (Some(&l.resources[..]), Some(&l.templates[..])),
                Offer::NotOffered => (None, None),
                Offer::NotReady | Offer::Failed(_) => (Some(&[][..]), Some(&[][..])),
            };
            ServerDocument {
                name: &listing.report.name,
                state: listing.report.state,
                error: listing.error(),
                resources,
                resource_templates,
            }
        })
        .collect();
    let document = serde_json::to_string_pretty(&Document { servers })
        .map_err(|e| Failure::Run(format!("cannot write the resources as JSON: {e}")))?;
    Ok(document + "\n")
}

/// One line per resource and template; grouped under a line per server when there are
/// several servers.
fn text(listings: &[Listing<Listed>]) -> String {
    offered::grouped_text(listings, "resources", lines)
}

fn lines(out: &mut String, indent: &str, listed: &Listed) {
    let resources = listed
        .resources
        .iter()
        .map(|r| (&r.uri, &r.name, r.mime_type.as_deref(), ""));
    let templates = listed.templates.iter().map(|t| {
        let mime = t.mime_type.as_deref();
        (&t.uri_template, &t.name, mime, " [template]")
    });
    for (uri, name, mime, kind) in resources.chain(templates) {
        out.push_str(indent);
        out.push_str(&print::escape_line(uri));
        out.push_str(" — ");
        out.push_str(&print::escape_line(name));
        if let Some(mime) = mime {
            out.push_str(" (");
            out.push_str(&print::escape_line(mime));
            out.push(')');
        }
        out.push_str(kind);
        out.push('\n');
    }
}

/// `switchboard read`.
pub(crate) async fn run_read(
    args: ReadArgs,
    interrupt: &mut Interrupt,
) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    // Read from one server: it alone is started.
    let file = match &args.from {
        Some(name) => offered::narrow(&file, name)?,
        None => file,
    };
    let runtime = config::start_all(&file, interrupt).await?;
    let (output, outcome) = match read(&runtime, &file, &args, interrupt).await {
        Ok(output) => (output, Ok(ExitCode::SUCCESS)),
        Err(failure) => (String::new(), Err(failure)),
    };
    super::finish(&runtime, &output, outcome, interrupt).await
}

async fn read(
    runtime: &Runtime,
    file: &ConfigFile,
    args: &ReadArgs,
    interrupt: &mut Interrupt,
) -> Result<String, Failure> {
    let uri = args.uri.as_str();
    let server = match &args.from {
        Some(name) => offered::named(runtime, file, name)?,
        None => match offered::only(runtime, file)? {
            Some(server) => server,
            None => lister(runtime, file, uri, interrupt).await?,
        },
    };
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal} while reading `{uri}` from server `{}`",
            server.name()
        ))
    };
    if args.json {
        let raw = interrupt
            .guard(server.read_resource_raw(uri))
            .await
            .map_err(interrupted)??;
        return Ok(format!("{}\n", raw.get()));
    }
    let result = interrupt
        .guard(server.read_resource(uri))
        .await
        .map_err(interrupted)??;
    Ok(contents(&result))
}

/// The one server that lists `uri` or a template matching it.
async fn lister(
    runtime: &Runtime,
    file: &ConfigFile,
    uri: &str,
    interrupt: &mut Interrupt,
) -> Result<ServerHandle, Failure> {
    let listings = offered::list_each(runtime, file, "resources", interrupt, list).await?;
    match offered::unique(&listings, |listed| listed.has(uri)) {
        Found::One(name) => Ok(runtime.server(name)?),
        Found::Several(names) => Err(Failure::Usage(format!(
            "resource `{uri}` is offered by several servers ({}): pick one with --server NAME",
            offered::quoted(&names)
        ))),
        Found::None { unsearched } if unsearched.is_empty() => Err(Failure::Usage(format!(
            "no server lists resource `{uri}` or a template matching it: name one with \
             --server NAME to read it anyway"
        ))),
        Found::None { unsearched } => Err(Failure::Usage(format!(
            "no server lists resource `{uri}` or a template matching it (not searched: {}): \
             name one with --server NAME to read it anyway",
            unsearched.join("; ")
        ))),
    }
}

/// The parts of a resource: text as it is, binary as one line; each ends with a newline.
pub(crate) fn contents(result: &ReadResourceResult) -> String {
    let mut out = String::new();
    for part in &result.contents {
        match part {
            ResourceContents::Text(t) => out.push_str(&t.text),
            ResourceContents::Blob(b) => {
                out.push_str(&print::blob(&b.blob, b.mime_type.as_deref()))
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Whether `uri` is one `template` expands to, for the simple expressions of RFC 6570 level 1:
/// `{var}` stands for one or more characters other than `/` (an expanded value has its `/`
/// percent-encoded). A template with any other kind of expression (`{+path}`, `{?q}`, ...)
/// matches nothing: `--server` reads from such a server.
pub(crate) fn matches(template: &str, uri: &str) -> bool {
    parts(template).is_some_and(|parts| match_parts(&parts, uri))
}

#[derive(Debug, PartialEq)]
enum Part<'a> {
    Literal(&'a str),
    Variable,
}

/// The literals and variables of a level-1 template; `None` for anything else.
fn parts(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let close = open + rest[open..].find('}')?;
        let name = &rest[open + 1..close];
        let simple = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%' || c == '.');
        if !simple {
            return None;
        }
        parts.push(Part::Variable);
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return None;
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    Some(parts)
}

fn match_parts(parts: &[Part<'_>], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(literal), rest)) => uri
            .strip_prefix(literal)
            .is_some_and(|uri| match_parts(rest, uri)),
        Some((Part::Variable, rest)) => {
            // As short as the rest allows, within one path segment.
            let segment = uri.find('/').unwrap_or(uri.len());
            (1..=segment)
                .filter(|&end| uri.is_char_boundary(end))
                .any(|end| match_parts(rest, &uri[end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn level_one_templates() {
        assert!(matches("demo://note/{id}", "demo://note/7"));
        assert!(matches("demo://note/{id}", "demo://note/a%2Fb"));
        assert!(!matches("demo://note/{id}", "demo://note/"));
        assert!(!matches("demo://note/{id}", "demo://note/7/8"));
        assert!(!matches("demo://note/{id}", "demo://notes/7"));
        assert!(matches("file:///{dir}/{name}.txt", "file:///docs/a.b.txt"));
        assert!(!matches("file:///{dir}/{name}.txt", "file:///docs/a.md"));
        assert!(matches("x://{a}-{b}", "x://1-2-3"));
        assert!(matches("x://ünï/{a}", "x://ünï/é"));
        assert!(matches("x://fixed", "x://fixed"));
        assert!(!matches("x://fixed", "x://fixed/more"));
        // Other levels, and broken templates, match nothing.
        for template in [
            "x://{+path}",
            "x://a{?q}",
            "x://{a,b}",
            "x://{}",
            "x://{a",
            "x://a}",
        ] {
            assert!(!matches(template, "x://a"), "{template}");
            assert!(!matches(template, "x://ab"), "{template}");
        }
    }

    #[test]
    fn parts_are_text_or_one_line_for_a_blob() {
        let result: ReadResourceResult = serde_json::from_value(json!({"contents": [
            {"uri": "a", "text": "two\nlines"},
            {"uri": "b", "blob": "AAEC", "mimeType": "application/x"},
            {"uri": "c", "text": "kept \u{1b}[1m as is\n"}
        ]}))
        .unwrap();
        assert_eq!(
            contents(&result),
            "two\nlines\n<blob: 3 bytes, application/x>\nkept \u{1b}[1m as is\n"
        );
    }
}
