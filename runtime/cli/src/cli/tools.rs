//! `switchboard tools`: the tools of the servers, a config file's or the one after `--`,
//! under their catalogue names (unique across servers, as a model would see them).
//!
//! ```text
//! $ switchboard tools -c .mcp.json
//! one (ready)
//!   one__greet — Greets someone by name.
//!   ...
//! two (restarting, server `two` could not be started: ...)
//! $ switchboard tools -- switchboard demo-server
//! greet — Greets someone by name.
//! ...
//! ```
//!
//! A config of one server (`-- CMD` is one) is listed without the grouping, after a line on
//! stderr about the server, and a server that is not ready is a failure of its own: exit 3,
//! one line on stderr, nothing on stdout. A listing of several servers is printed in full,
//! every server with its state, and then exits 3 if one is not ready. Servers restart as their
//! config says (a `-- CMD` server never does), but the listing shows them as they are once
//! each has started or failed. `--json` is one document, the same whichever way the servers
//! were given: see [`AFTER_HELP`].
//!
//! `--search QUERY` prints the catalogue's best matches for a request instead, best first
//! with their scores ([`switchboard::search`]'s ranking):
//!
//! ```text
//! $ switchboard tools --search "sum of two numbers" --limit 2 -- switchboard demo-server
//!    3.214  add — Adds two numbers and returns the sum, also as structured content.
//!    ...
//! ```

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;

use serde::Serialize;

use switchboard::model::Tool;
use switchboard::Catalogue;

use super::config::{self, Report};
use super::{describe, finish, print, Failure, Interrupt, ToolsArgs};

pub(crate) const AFTER_HELP: &str = "\
Without `-- CMD`, the servers are those of the config file: -c FILE, else $SWITCHBOARD_CONFIG,
else ./.mcp.json. `-- CMD` runs one stdio server as if a config file listed only it, named
after CMD's file name and never restarted (-e KEY=VALUE and --cwd DIR set its environment
and folder); `-- URL` (http:// or https://) runs one HTTP server, and --sse URL one over
HTTP+SSE (--header 'Name: value' for either). A listing of several servers is printed in
full, the servers that answered included, then exit 3 if one is not ready. MCP_TIMEOUT and MCP_TOOL_TIMEOUT (milliseconds) set
default timeouts. A DURATION is written as in a config file (500ms, 1.5s, 2m, 1h); a bare
number is refused.

With --json, stdout is one document, the same for `-- CMD` and for a config file:
  {\"servers\": [{\"name\": \"one\", \"state\": \"ready\", \"error\": null,
                \"tools\": [{\"name\": \"greet\", \"description\": \"...\", \"inputSchema\": {...},
                           ..., \"catalogueName\": \"one__greet\"}]}]}
one entry per enabled server in file order (state \"ready\", \"restarting\", \"failed\", ...; error
says why it is not ready), each tool as its server listed it plus \"catalogueName\", the name
`switchboard call` takes.

--search QUERY prints the best matches for QUERY instead (at most --limit N, default 10),
best first: `SCORE  [SERVER]  NAME — DESCRIPTION` (the server when there are several), or
with --json {\"query\": \"...\", \"matches\": [{...tool, \"catalogueName\", \"server\", \"score\"}]}.
Scores compare matches of one search only. With --model DIR (a build with the feature
`semantic`), the lexical ranking is fused with a sentence-embedding model's (the folder of
all-MiniLM-L6-v2: config.json, tokenizer.json, model.safetensors), so that a request in
other words than the tool's still finds it; the tools are embedded first, some seconds.

Examples:
  switchboard tools -c .mcp.json --json
  switchboard tools -- npx -y @modelcontextprotocol/server-everything
  switchboard tools -c .mcp.json --search \"who changed this file lately\" --limit 5
  switchboard tools -H 'Authorization: Bearer TOKEN' -- https://mcp.example.com/mcp";

/// `switchboard tools`.
pub(crate) async fn run(args: ToolsArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let scorer = super::semantic::load(args.model.as_deref())?;
    let file = config::servers(&args.config, &args.server)?;
    let runtime = config::start_all(&file, interrupt).await?;
    let reports = config::reports(&runtime, &file, false);
    let catalogue = runtime.catalogue();
    let printed = match &args.search {
        Some(query) => search(
            &reports,
            &catalogue,
            scorer.as_ref(),
            query,
            args.limit,
            args.json,
        ),
        None => list(&reports, &catalogue, args.json),
    };
    let (listing, outcome) = match printed {
        Ok(listing) => match config::not_ready(&reports) {
            Some(failure) => (listing, Err(failure)),
            None => (listing, Ok(ExitCode::SUCCESS)),
        },
        Err(failure) => (String::new(), Err(failure)),
    };
    finish(&runtime, &listing, outcome, interrupt).await
}

/// The listing of `reports`: one JSON document, or text; a config of one server that is not
/// ready is a failure instead.
fn list(reports: &[Report], catalogue: &Catalogue, json: bool) -> Result<String, Failure> {
    if let [only] = reports {
        if let Some(failure) = only.unready() {
            return Err(failure);
        }
    }
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
        let document = serde_json::to_string_pretty(&Listing { servers })
            .map_err(|e| Failure::Run(format!("cannot write the tools as JSON: {e}")))?;
        return Ok(document + "\n");
    }
    let mut out = String::new();
    if let ([report], [server]) = (reports, &servers[..]) {
        if let Some(status) = &report.status {
            eprintln!("{}", describe(server.name, status));
        }
        for tool in &server.tools {
            out.push_str(&print::tool_as(tool.catalogue_name, tool.tool));
            out.push('\n');
        }
        return Ok(out);
    }
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

/// The tools of `reports`' servers that best match `query`, best first, at most `limit`: one
/// JSON document, or a line each (`score  name — description`, the server after the score
/// when there are several); a config of one server that is not ready is a failure instead.
fn search(
    reports: &[Report],
    catalogue: &Catalogue,
    scorer: Option<&super::semantic::Scorer>,
    query: &str,
    limit: usize,
    json: bool,
) -> Result<String, Failure> {
    if let [only] = reports {
        if let Some(failure) = only.unready() {
            return Err(failure);
        }
        if let Some(status) = &only.status {
            if !json {
                eprintln!("{}", describe(&only.name, status));
            }
        }
    }
    let search = switchboard::search::ToolSearch::new(query).limit(limit);
    let matches = match scorer {
        None => catalogue.search_with(&search),
        // A one-shot command embeds the tools it has now, then searches.
        #[cfg(feature = "semantic")]
        Some(scorer) => {
            scorer.prepare_now(catalogue);
            catalogue.search_with(&search.scorer(&**scorer))
        }
        #[cfg(not(feature = "semantic"))]
        Some(never) => match *never {},
    };
    if json {
        let document = SearchListing {
            query,
            matches: matches
                .iter()
                .map(|found| MatchListing {
                    tool: &found.tool,
                    catalogue_name: &found.name,
                    server: &found.server,
                    score: found.score,
                })
                .collect(),
        };
        let document = serde_json::to_string_pretty(&document)
            .map_err(|e| Failure::Run(format!("cannot write the matches as JSON: {e}")))?;
        return Ok(document + "\n");
    }
    let mut out = String::new();
    for found in &matches {
        out.push_str(&format!("{:>8.3}  ", found.score));
        if reports.len() > 1 {
            out.push_str(&print::escape_line(&found.server));
            out.push_str("  ");
        }
        out.push_str(&print::tool_as(&found.name, &found.tool));
        out.push('\n');
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

/// The `tools --json` document, whichever way the servers were given.
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

/// The `tools --search --json` document.
#[derive(Serialize)]
struct SearchListing<'a> {
    query: &'a str,
    matches: Vec<MatchListing<'a>>,
}

/// A match: the tool as its server listed it, plus its catalogue name, server and score.
#[derive(Serialize)]
struct MatchListing<'a> {
    #[serde(flatten)]
    tool: &'a Tool,
    #[serde(rename = "catalogueName")]
    catalogue_name: &'a str,
    server: &'a str,
    score: f64,
}
