//! `switchboard check`: start every server of a config file (or the one server on the
//! command line) and report on each, as a table or one JSON document; exit 3 if an enabled
//! server is not ready.
//!
//! ```text
//! SERVER  TRANSPORT  STATE       ERA     PROTOCOL    TASKS       TOOLS  HANDSHAKE  ERROR
//! one     stdio      ready       legacy  2025-11-25  2025-11-25  3      4 ms
//! two     stdio      restarting  -       -           -           -      -          server `two` could not be started: …
//! old     -          disabled    -       -           -           -      -
//! ```

use std::process::ExitCode;

use serde::Serialize;

use super::config::{self, Report};
use super::{finish, CheckArgs, Failure, Interrupt};

pub(crate) async fn run(args: CheckArgs, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = config::servers(&args.config, &args.server)?;
    let runtime = config::start_all(&file, interrupt).await?;
    let reports = config::reports(&runtime, &file, true);
    let rows: Vec<Row<'_>> = reports.iter().map(Row::from).collect();
    let output = if args.json {
        serde_json::to_string_pretty(&Document { servers: &rows })
            .map(|document| document + "\n")
            .map_err(|e| Failure::Run(format!("cannot write the report as JSON: {e}")))
    } else {
        Ok(table(&rows))
    };
    let (output, outcome) = match output {
        Ok(output) => match config::not_ready(&reports) {
            Some(failure) => (output, Err(failure)),
            None => (output, Ok(ExitCode::SUCCESS)),
        },
        Err(failure) => (String::new(), Err(failure)),
    };
    finish(&runtime, &output, outcome, interrupt).await
}

/// The `check --json` document.
#[derive(Serialize)]
struct Document<'a> {
    servers: &'a [Row<'a>],
}

/// One server's line of the report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    name: &'a str,
    transport: Option<&'static str>,
    state: &'static str,
    /// `legacy` (handshake era) or `modern` (stateless), once known.
    era: Option<&'static str>,
    protocol_version: Option<&'a str>,
    /// Which shape of tasks it speaks: `2025-11-25`, `extension`, or none.
    tasks: Option<&'static str>,
    /// How many tools it listed, if it is ready.
    tools: Option<usize>,
    handshake_ms: Option<u64>,
    error: Option<&'a str>,
}

impl<'a> From<&'a Report> for Row<'a> {
    fn from(report: &'a Report) -> Self {
        let status = report.status.as_ref();
        Row {
            name: &report.name,
            transport: report.transport,
            state: report.state,
            era: status.and_then(|s| s.era).map(|e| e.as_str()),
            protocol_version: status.and_then(|s| s.protocol_version.as_deref()),
            tasks: status.and_then(|s| s.task_shape()).map(|t| t.as_str()),
            tools: status.filter(|s| s.is_ready()).map(|s| s.tools.len()),
            handshake_ms: status
                .and_then(|s| s.handshake)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            error: report.error.as_deref(),
        }
    }
}

/// The rows as aligned columns under a header; `-` for what is unknown.
fn table(rows: &[Row<'_>]) -> String {
    const HEADER: [&str; 9] = [
        "SERVER",
        "TRANSPORT",
        "STATE",
        "ERA",
        "PROTOCOL",
        "TASKS",
        "TOOLS",
        "HANDSHAKE",
        "ERROR",
    ];
    let dash = || "-".to_owned();
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|row| {
            [
                row.name.to_owned(),
                row.transport.map_or_else(dash, str::to_owned),
                row.state.to_owned(),
                row.era.map_or_else(dash, str::to_owned),
                row.protocol_version.map_or_else(dash, str::to_owned),
                row.tasks.map_or_else(dash, str::to_owned),
                row.tools.map_or_else(dash, |n| n.to_string()),
                row.handshake_ms.map_or_else(dash, |ms| format!("{ms} ms")),
                // Errors are one line in a table.
                row.error
                    .map(|e| e.split_whitespace().collect::<Vec<_>>().join(" "))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header = HEADER.map(str::to_owned);
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&cells) {
        let line: String = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}  "))
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let rows = [
            Row {
                name: "one",
                transport: Some("stdio"),
                state: "ready",
                era: Some("legacy"),
                protocol_version: Some("2025-11-25"),
                tasks: Some("2025-11-25"),
                tools: Some(3),
                handshake_ms: Some(4),
                error: None,
            },
            Row {
                name: "second",
                transport: Some("stdio"),
                state: "restarting",
                era: None,
                protocol_version: None,
                tasks: None,
                tools: None,
                handshake_ms: None,
                error: Some("server `second` could not be started:\n  no such file"),
            },
            Row {
                name: "old",
                transport: None,
                state: "disabled",
                era: None,
                protocol_version: None,
                tasks: None,
                tools: None,
                handshake_ms: None,
                error: None,
            },
        ];
        assert_eq!(
            table(&rows),
            "\
SERVER  TRANSPORT  STATE       ERA     PROTOCOL    TASKS       TOOLS  HANDSHAKE  ERROR
one     stdio      ready       legacy  2025-11-25  2025-11-25  3      4 ms
second  stdio      restarting  -       -           -           -      -          server `second` could not be started: no such file
old     -          disabled    -       -           -           -      -
"
        );
    }
}
