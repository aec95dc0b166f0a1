//! Tasks on the command line: `call` of a tool that runs as a task shows the task's status
//! while it runs, and Ctrl-C cancels the task (`tasks/cancel`) before exiting.
//!
//! ```text
//! $ switchboard call simulate-research-query '{"topic":"tides"}' -c .mcp.json
//! task 1f0c…: working: Gathering sources...
//! task 1f0c…: working: Analyzing content...
//! task 1f0c…: completed
//! # Research Report: tides
//! ```
//!
//! A call goes as a task when its server speaks tasks ([`ServerStatus::task_shape`]) and, for
//! a 2025-11-25 server, its tool allows one; otherwise as any call. Status lines go to
//! stderr, one per change; on a terminal the line is redrawn in place and erased at the end,
//! so that only the answer stays. What a server says is shown with control characters
//! escaped.
//!
//! [`ServerStatus::task_shape`]: switchboard::ServerStatus::task_shape

use std::fmt::Display;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use switchboard::model::TaskSupport;
use switchboard::task::{FileTaskStore, TaskOrResult, TaskShape, TaskState, TaskStatus, TaskStore};
use switchboard::{Call, Runtime};

use super::{print, Failure, Interrupt, Interrupted};

/// Whether a call of `tool` (as its server `server` lists it) goes as a task.
pub(crate) fn wanted(runtime: &Runtime, server: Option<&str>, tool: &str) -> bool {
    let Some(handle) = server.and_then(|s| runtime.server(s).ok()) else {
        return false;
    };
    match handle.task_shape() {
        Some(TaskShape::Experimental) => handle
            .tools()
            .iter()
            .find(|t| t.name == tool)
            .is_some_and(|t| {
                matches!(
                    t.task_support(),
                    TaskSupport::Optional | TaskSupport::Required
                )
            }),
        // The server decides for every call.
        Some(_) => true,
        None => false,
    }
}

/// Sends `call` as a task and renders its answer as `call` does; status lines meanwhile, and
/// a signal cancels the task.
pub(crate) async fn invoke(
    mut call: Call,
    target: &dyn Display,
    timeout: Option<Duration>,
    json: bool,
    detach: bool,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    if let Some(timeout) = timeout {
        call = call.timeout(timeout);
    }
    let interrupted = |Interrupted(signal), what: String| {
        Failure::Interrupted(format!("interrupted by {signal}: cancelled {what}"))
    };
    let started = interrupt
        .guard(call.as_task())
        .await
        .map_err(|i| interrupted(i, format!("the call to {target}")))??;
    let task = match started {
        TaskOrResult::Task(task) => task,
        TaskOrResult::Result(result) => return Ok(rendered(&result, None, json, target)),
    };
    if detach {
        // Left running, and kept in the store for `switchboard tasks`.
        let id = task.detach();
        return Ok((format!("{id}\n"), ExitCode::SUCCESS));
    }
    let mut task = task;
    let id = task.id();
    let mut lines = Lines::new(std::io::stderr().is_terminal());
    lines.show(&task.state()).await;
    let watched = interrupt
        .guard(async {
            while let Some(state) = task.changed().await {
                lines.show(&state).await;
            }
        })
        .await;
    lines.finish().await;
    if let Err(signal) = watched {
        // Cancelled before we go: the runtime shuts down right after.
        let cancelled = task.cancel().await;
        drop(task);
        return Err(match cancelled {
            Ok(()) => interrupted(signal, format!("task `{id}` of {target}")),
            Err(e) => Failure::Interrupted(format!(
                "interrupted by {}: could not cancel task `{id}` of {target}: {e}",
                signal.0
            )),
        });
    }
    let server = task.server().clone();
    let tool: std::sync::Arc<str> = task.tool().into();
    let raw = task.raw().await?;
    if json {
        let is_error = serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|v| v.get("isError")?.as_bool())
            == Some(true);
        return Ok(exit((format!("{}\n", raw.get()), is_error), target));
    }
    let result: switchboard::model::CallToolResult = serde_json::from_str(raw.get())
        .map_err(|e| {
            Failure::Run(format!(
                "the result of task `{id}` of tool `{tool}` on server `{}` is not a CallToolResult: {e}",
                server.name()
            ))
        })?;
    Ok(rendered(&result, Some(&id), json, target))
}

fn rendered(
    result: &switchboard::model::CallToolResult,
    _task: Option<&str>,
    json: bool,
    target: &dyn Display,
) -> (String, ExitCode) {
    let output = if json {
        match serde_json::to_string(result) {
            Ok(text) => text + "\n",
            Err(_) => print::result(result),
        }
    } else {
        print::result(result)
    };
    exit((output, result.is_error()), target)
}

fn exit((output, is_error): (String, bool), target: &dyn Display) -> (String, ExitCode) {
    if is_error {
        eprintln!("switchboard: {target} reported an error (isError: true)");
        return (output, ExitCode::from(1));
    }
    (output, ExitCode::SUCCESS)
}

pub(crate) const AFTER_HELP: &str = "\
Lists the tasks earlier commands left running on the servers (`call --detach`, or a call
whose process was killed), with each one's status now, asked of its server. They are kept in
$SWITCHBOARD_TASKS, else $XDG_STATE_HOME/switchboard/tasks.json, else
~/.local/state/switchboard/tasks.json. A task that ended or that its server no longer knows is
shown once more, then forgotten.

Example: switchboard tasks -c .mcp.json";

/// `switchboard tasks`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    config: super::config::ConfigArgs,
    #[command(flatten)]
    server: super::config::ServerArgs,
}

/// Where the command line keeps the tasks it starts: `$SWITCHBOARD_TASKS`, else
/// `$XDG_STATE_HOME/switchboard/tasks.json`, else `~/.local/state/switchboard/tasks.json`
/// (`./.switchboard-tasks.json` without a home).
pub(crate) fn store() -> Arc<FileTaskStore> {
    let env = |name| std::env::var_os(name).filter(|v: &std::ffi::OsString| !v.is_empty());
    let path = env("SWITCHBOARD_TASKS")
        .map(PathBuf::from)
        .or_else(|| env("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("switchboard/tasks.json")))
        .or_else(|| {
            env("HOME").map(|h| PathBuf::from(h).join(".local/state/switchboard/tasks.json"))
        })
        .unwrap_or_else(|| PathBuf::from(".switchboard-tasks.json"));
    Arc::new(FileTaskStore::new(path))
}

/// `switchboard tasks`: the stored tasks of the config's servers, each with its status now.
pub(crate) async fn run(args: Args, interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let file = super::config::servers(&args.config, &args.server)?;
    let runtime = super::config::start_all(&file, interrupt).await?;
    let rows = interrupt.guard(rows(&runtime)).await;
    runtime.shutdown().await;
    let rows = rows.map_err(|Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal} while asking for the tasks"
        ))
    })??;
    print::emit(&table(&rows));
    Ok(ExitCode::SUCCESS)
}

/// `[server, tool, task, status, message]` of every stored task of a server of `runtime`.
async fn rows(runtime: &Runtime) -> Result<Vec<[String; 5]>, Failure> {
    let records = runtime
        .stored_tasks()
        .map_err(|e| Failure::Run(e.to_string()))?;
    let mut rows = Vec::new();
    for record in records {
        if runtime.server(&record.server).is_err() {
            continue;
        }
        let (status, message) = match runtime.resume_task(&record).await {
            Ok(task) => {
                let state = task.state();
                if state.status.is_terminal() {
                    // Watched to its end: the runtime forgets it.
                    let _ = task.raw().await;
                } else {
                    task.detach();
                }
                (state.status.as_str().to_owned(), state.message)
            }
            Err(e) if matches!(e.kind(), switchboard::ErrorKind::TaskLost { .. }) => {
                let _ = store().remove(&record.server, &record.id);
                ("lost".to_owned(), Some(e.to_string()))
            }
            Err(e) => ("unknown".to_owned(), Some(e.to_string())),
        };
        let message = message
            .as_deref()
            .and_then(|m| m.lines().next())
            .map(|m| print::escape_line(m.trim()).into_owned())
            .unwrap_or_default();
        rows.push([record.server, record.tool, record.id, status, message]);
    }
    Ok(rows)
}

fn table(rows: &[[String; 5]]) -> String {
    const HEADER: [&str; 5] = ["SERVER", "TOOL", "TASK", "STATUS", "MESSAGE"];
    let header = HEADER.map(str::to_owned);
    let mut widths = HEADER.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
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

/// One status line per state: `task ID: STATUS: MESSAGE`.
pub(crate) fn line(state: &TaskState) -> String {
    line_of(&state.id, state.status, state.message.as_deref())
}

fn line_of(id: &str, status: TaskStatus, message: Option<&str>) -> String {
    let mut out = format!("task {id}: {}", status.as_str());
    if let Some(message) = message
        .and_then(|m| m.lines().next())
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        out.push_str(": ");
        out.push_str(&print::escape_line(message));
    }
    out
}

/// Where status lines go: redrawn in place on a terminal, one per line otherwise.
struct Lines {
    terminal: bool,
    drawn: bool,
    last: Option<String>,
}

impl Lines {
    fn new(terminal: bool) -> Self {
        Lines {
            terminal,
            drawn: false,
            last: None,
        }
    }

    async fn show(&mut self, state: &TaskState) {
        let text = line(state);
        if self.last.as_deref() == Some(&text) {
            return;
        }
        let out = if self.terminal {
            format!("{}{text}", super::progress::ERASE)
        } else {
            format!("{text}\n")
        };
        self.drawn |= write(&out).await;
        self.last = Some(text);
    }

    async fn finish(self) {
        if self.terminal && self.drawn {
            write(super::progress::ERASE).await;
        }
    }
}

/// Writes `text` to stderr; a terminal that went away is no reason to fail the call.
async fn write(text: &str) -> bool {
    let mut err = tokio::io::stderr();
    err.write_all(text.as_bytes()).await.is_ok() && err.flush().await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_names_the_task_and_escapes_what_the_server_says() {
        assert_eq!(
            line_of(
                "t1",
                TaskStatus::Working,
                Some("Gathering sources...\nmore")
            ),
            "task t1: working: Gathering sources..."
        );
        assert_eq!(
            line_of("t1", TaskStatus::Completed, None),
            "task t1: completed"
        );
        let hostile = line_of("t1", TaskStatus::Working, Some("a\u{1b}[2Jb"));
        assert!(hostile.starts_with("task t1: working: a"), "{hostile}");
        assert!(!hostile.contains('\u{1b}'), "{hostile}");
    }

    #[test]
    fn the_tasks_table_lines_up() {
        let row = |a: &str, b: &str| [a, "research", b, "working", ""].map(str::to_owned);
        assert_eq!(
            table(&[row("everything", "t-1"), row("py", "a-long-id")]),
            "\
SERVER      TOOL      TASK       STATUS   MESSAGE
everything  research  t-1        working
py          research  a-long-id  working
"
        );
    }
}
