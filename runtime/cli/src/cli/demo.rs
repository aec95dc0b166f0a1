//! `switchboard demo`: a tour of the runtime against the bundled demo server.
//!
//! The server is this very binary, started as a child process (`switchboard demo-server
//! --faults`), so the tour needs nothing installed. It shows the handshake, two ordinary
//! calls, a per-tool timeout that cancels its request, and a crash that fails every pending
//! call at once. Output is collected and printed at the end (the tour takes well under a
//! second), so that a failed tour leaves stdout empty like every other failure.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use switchboard::{Runtime, ServerConfig, ServerHandle};

use super::{describe, print, ready, start, Failure, Interrupt};

/// The server's name in the runtime.
const SERVER: &str = "demo";

/// The per-tool timeout of `hang`, which never answers.
const HANG_TIMEOUT: Duration = Duration::from_millis(300);

/// How many `sleep` calls are pending when the server crashes.
const SLEEPERS: usize = 3;

/// How long each of them would sleep.
const SLEEP_MS: u64 = 30_000;

/// The tools the tour uses or shows, listed with their descriptions; the rest are counted.
const SHOWN: &[&str] = &[
    "greet",
    "add",
    "echo",
    "sleep",
    "hang",
    "crash",
    "cancellations",
];

pub(crate) async fn run(interrupt: &mut Interrupt) -> Result<ExitCode, Failure> {
    let program = std::env::current_exe().map_err(|e| {
        Failure::Run(format!(
            "cannot find this program to start the demo server: {e}"
        ))
    })?;
    // The tour shows a crash failing pending calls; a restart would only add noise.
    let config = ServerConfig::stdio(program)
        .args(["demo-server", "--faults"])
        .tool_timeout("hang", HANG_TIMEOUT)
        .restart(switchboard::RestartPolicy::off());
    // The tour is the same everywhere: MCP_TIMEOUT and MCP_TOOL_TIMEOUT are not read.
    // Like every subcommand, it answers form elicitation on a terminal (and `--root`).
    let builder = Runtime::builder()
        .client_handlers(super::elicit::handlers())
        .server(SERVER, config);
    let runtime = start(
        builder,
        format!("server `{SERVER}` was starting"),
        interrupt,
    )
    .await?;
    let toured = match interrupt.guard(tour(&runtime)).await {
        Ok(toured) => toured,
        Err(interrupted) => Err(interrupted.into()),
    };
    super::shut_down(&runtime, super::Shutdown::after(&toured), interrupt).await;
    let mut out = toured?;
    out.push_str("runtime shut down: no server process is left\n");
    print::emit(&out);
    Ok(ExitCode::SUCCESS)
}

/// Everything the tour prints; `writeln!` into a `String` cannot fail.
async fn tour(runtime: &Runtime) -> Result<String, Failure> {
    let mut out = String::new();
    let server = runtime.server(SERVER)?;
    let status = ready(&server, None)?;
    let _ = writeln!(
        out,
        "{} (the bundled demo server, a child process)",
        describe(SERVER, &status)
    );
    let shown: Vec<_> = status
        .tools
        .iter()
        .filter(|t| SHOWN.contains(&t.name.as_str()))
        .collect();
    for tool in &shown {
        let _ = writeln!(out, "  {}", first_sentence(&print::tool(tool)));
    }
    let more = status.tools.len() - shown.len();
    if more > 0 {
        let program = super::program::hint();
        let _ = writeln!(
            out,
            "  … and {more} more fault tools (`{program} tools -- {program} demo-server --faults`)"
        );
    }

    for (tool, arguments) in [
        ("greet", json!({"name": "Switchboard"})),
        ("add", json!({"a": 2, "b": 3})),
    ] {
        let result = server.call_tool(tool, arguments.clone()).await?;
        let _ = writeln!(out, "{tool} {arguments} → {}", result.text());
    }

    timeout(&server, &mut out).await?;
    let cancellations = server.call_tool("cancellations", json!({})).await?;
    let recorded = cancellations.structured_content.unwrap_or(Value::Null);
    let _ = writeln!(
        out,
        "cancellations {{}} → {recorded} (recorded by the server)"
    );

    crash(&server, &mut out).await?;
    Ok(out)
}

/// `hang` never answers: its per-tool timeout fires and the request is cancelled.
async fn timeout(server: &ServerHandle, out: &mut String) -> Result<(), Failure> {
    let started = Instant::now();
    match server.call_tool("hang", json!({})).await {
        Err(error) if error.is_timeout() => {
            // A call's timeout always had its request on the wire.
            let request_id = error.request_id().unwrap_or_default();
            let _ = writeln!(
                out,
                "hang {{}} (per-tool timeout {} ms) → failed after {} ms:\n  {error}\n  \
                 and the runtime sent notifications/cancelled for request {request_id}",
                HANG_TIMEOUT.as_millis(),
                started.elapsed().as_millis(),
            );
            Ok(())
        }
        Err(error) => Err(error.into()),
        Ok(result) => Err(Failure::Run(format!(
            "call to tool `hang` on server `{SERVER}` answered instead of timing out: {}",
            result.text()
        ))),
    }
}

/// `SLEEPERS` long `sleep` calls are pending when `crash` kills the server: they all fail at
/// once, with the same `Disconnected` error, instead of waiting out their 60 s timeout.
async fn crash(server: &ServerHandle, out: &mut String) -> Result<(), Failure> {
    let sleeper = |server: ServerHandle| async move {
        let result = server.call_tool("sleep", json!({"ms": SLEEP_MS})).await;
        (result, Instant::now())
    };
    let crasher = async {
        // Give the sleeps time to reach the server, so that they are pending, not refused.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sent = Instant::now();
        (server.call_tool("crash", json!({"code": 3})).await, sent)
    };
    let sleepers = futures_util::future::join_all((0..SLEEPERS).map(|_| sleeper(server.clone())));
    let (slept, (crashed, sent)) = tokio::join!(sleepers, crasher);

    let _ = writeln!(
        out,
        "{SLEEPERS} × sleep {} pending, then crash {}:",
        json!({"ms": SLEEP_MS}),
        json!({"code": 3})
    );
    let mut last = sent;
    let mut first_error = None;
    for (result, at) in slept {
        match result {
            Err(error) if error.is_disconnected() => {
                last = last.max(at);
                first_error.get_or_insert(error);
            }
            Err(error) => return Err(error.into()),
            Ok(result) => {
                return Err(Failure::Run(format!(
                    "call to tool `sleep` on server `{SERVER}` answered although the server crashed: {}",
                    result.text()
                )))
            }
        }
    }
    let Some(error) = first_error else {
        return Err(Failure::Run("the demo started no sleep calls".to_owned()));
    };
    let _ = writeln!(
        out,
        "  all {SLEEPERS} failed {} ms after the crash call (not {} s later), each with:\n  {error}",
        last.duration_since(sent).as_millis(),
        SLEEP_MS / 1000,
    );
    let _ = match crashed {
        Err(error) if error.is_disconnected() => {
            writeln!(out, "  and so did the crash call itself")
        }
        Err(other) => writeln!(out, "  the crash call: {other}"),
        Ok(_) => writeln!(out, "  the crash call answered?"),
    };
    Ok(())
}

/// `name — First sentence.` of a tool line, to keep the listing to one short line per tool.
fn first_sentence(line: &str) -> &str {
    match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    }
}
