//! The demo server's tools: three ordinary ones, the ones that drive the server features (in
//! `feature_tools`), and fault tools that misbehave on purpose.
//!
//! [`definitions`] is what `tools/list` shows; [`call`] runs a `tools/call`. A tool that fails
//! (bad arguments, or `fail`) answers a normal result with `isError: true`, as MCP wants; only
//! an unknown tool is a JSON-RPC error. Fault tools exist only with `--faults`, and each one
//! provokes one failure the runtime must survive (see the descriptions below).

use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use switchboard_server::{Arguments, Context, HandlerError, Outcome, Reply};

use super::demo::{lock, log, Demo};
use super::{conformance, feature_tools};

/// The most bytes `large`, `garbage` and `stderr_burst` will produce on request.
const MAX_BYTES: u64 = 1 << 30;

/// `garbage`'s default oversized line: just over a 16 MiB line limit.
const DEFAULT_OVERSIZED: u64 = 17 * 1024 * 1024;

/// How long `ping_client` waits for the client's answer.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Grandchildren spawned by `spawn_grandchild`, kept so that they are never waited for or
/// reaped: they must outlive us until whoever supervises our process group kills them.
static GRANDCHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// The tools `tools/list` shows, in a stable order (pagination cursors are indices into it):
/// the ordinary ones, then the fault tools (with `--faults`), then the conformance fixture's
/// (with `--conformance`).
pub(super) fn definitions(faults: bool, with_conformance: bool) -> Cow<'static, [Value]> {
    static ALL: OnceLock<(usize, Vec<Value>)> = OnceLock::new();
    let (ordinary, all) = ALL.get_or_init(|| {
        let mut ordinary = ordinary_tools();
        ordinary.extend(feature_tools::definitions());
        let count = ordinary.len();
        (count, ordinary.into_iter().chain(fault_tools()).collect())
    });
    let listed = if faults { &all[..] } else { &all[..*ordinary] };
    if with_conformance {
        Cow::Owned(listed.iter().cloned().chain(conformance::tools()).collect())
    } else {
        Cow::Borrowed(listed)
    }
}

pub(super) fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

pub(super) fn tool(name: &str, description: &str, input: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input})
}

fn ordinary_tools() -> Vec<Value> {
    let read_only = json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false});
    let mut greet = tool(
        "greet",
        "Greets someone by name.",
        object(
            json!({"name": {"type": "string", "description": "Who to greet"}}),
            &["name"],
        ),
    );
    let mut add = tool(
        "add",
        "Adds two numbers and returns the sum, also as structured content.",
        object(
            json!({
                "a": {"type": "number", "description": "The first addend"},
                "b": {"type": "number", "description": "The second addend"},
            }),
            &["a", "b"],
        ),
    );
    add["outputSchema"] = object(json!({"sum": {"type": "number"}}), &["sum"]);
    let mut echo = tool(
        "echo",
        "Returns its text unchanged.",
        object(
            json!({"text": {"type": "string", "description": "The text to return"}}),
            &["text"],
        ),
    );
    for t in [&mut greet, &mut add, &mut echo] {
        t["annotations"] = read_only.clone();
    }
    vec![greet, add, echo]
}

fn fault_tools() -> Vec<Value> {
    let int =
        |description: &str| json!({"type": "integer", "minimum": 0, "description": description});
    let string = |description: &str| json!({"type": "string", "description": description});
    let none = || object(json!({}), &[]);
    let mut spawn_grandchild = tool(
        "spawn_grandchild",
        "Spawns `sleep 600` in the server's process group, leaves it running and returns its pid.",
        none(),
    );
    spawn_grandchild["outputSchema"] = object(json!({"pid": {"type": "integer"}}), &["pid"]);
    let mut cancellations = tool(
        "cancellations",
        "Returns the params of every notifications/cancelled the server has received.",
        none(),
    );
    cancellations["outputSchema"] = object(json!({"cancelled": {"type": "array"}}), &["cancelled"]);
    let mut calls = tool(
        "calls",
        "Returns the id and tool name of the latest tools/call requests received (up to 1000, oldest first, this one included).",
        none(),
    );
    calls["outputSchema"] = object(json!({"calls": {"type": "array"}}), &["calls"]);
    vec![
        tool(
            "sleep",
            "Sleeps, then answers. With a progress token and steps > 0, reports progress after each step.",
            object(
                json!({"ms": int("How long to sleep, in milliseconds"), "steps": int("How many progress notifications to send")}),
                &["ms"],
            ),
        ),
        tool("hang", "Never answers, until cancelled.", none()),
        tool(
            "crash",
            "Writes a message to stderr and exits the server process at once.",
            object(
                json!({"code": {"type": "integer", "description": "The exit code (default 1)"}, "message": string("What to write to stderr")}),
                &[],
            ),
        ),
        tool(
            "fail",
            "Answers a tool error (isError: true).",
            object(json!({"message": string("The error text")}), &[]),
        ),
        tool(
            "large",
            "Answers a text block of exactly `bytes` 'x' characters.",
            object(json!({"bytes": int("The size of the text")}), &["bytes"]),
        ),
        tool(
            "garbage",
            "Writes one line that is not a valid MCP message to stdout, then answers \"ok\".",
            object(
                json!({
                    "kind": {"type": "string", "enum": ["text", "non_utf8", "oversized", "non_jsonrpc"], "description": "What kind of bad line (default text)"},
                    "bytes": int("The length of an oversized line (default 17 MiB)"),
                }),
                &[],
            ),
        ),
        tool(
            "stderr_burst",
            "Writes many lines to stderr, then answers.",
            object(
                json!({"lines": int("How many lines"), "bytes_per_line": int("The length of each line (default 100)")}),
                &["lines"],
            ),
        ),
        spawn_grandchild,
        cancellations,
        calls,
        tool(
            "ping_client",
            "Sends a ping (or `method`) request to the client and answers \"pong\" once the client answers {}.",
            object(json!({"method": {"type": "string"}}), &[]),
        ),
        tool(
            "unknown_id",
            "Writes responses to ids nobody sent, then answers \"ok\".",
            none(),
        ),
        tool(
            "batch_answer",
            "Answers inside a JSON array, together with a notifications/message.",
            none(),
        ),
        tool(
            "malformed_answer",
            "Answers with neither result nor error.",
            none(),
        ),
        tool(
            "stats",
            "Counts of the requests and notifications received, by method.",
            none(),
        ),
        tool(
            "list_changed",
            "Sends `count` notifications/tools/list_changed at once, then answers.",
            object(json!({"count": {"type": "integer", "minimum": 0}}), &[]),
        ),
        tool(
            "freeze",
            "Answers \"frozen\", then ignores every input from then on (a hung server).",
            none(),
        ),
        tool(
            "drop_answer",
            "Writes a truncated, unreadable answer and never answers properly.",
            none(),
        ),
    ]
}

/// Whether `name` is a tool [`definitions`] lists: a search of its sorted names, since every
/// call asks (and a few dozen names need no hashing).
fn is_listed(name: &str, faults: bool, with_conformance: bool) -> bool {
    static SETS: OnceLock<[Vec<String>; 4]> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        [(false, false), (false, true), (true, false), (true, true)].map(|(f, c)| {
            let mut names: Vec<String> = definitions(f, c)
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect();
            names.sort_unstable();
            names
        })
    });
    sets[usize::from(faults) * 2 + usize::from(with_conformance)]
        .binary_search_by(|listed| listed.as_str().cmp(name))
        .is_ok()
}

/// A tool's failure, reported as an `isError` result.
pub(super) struct ToolError(String);

impl<T: Into<String>> From<T> for ToolError {
    fn from(message: T) -> Self {
        ToolError(message.into())
    }
}

pub(super) type ToolResult = Result<Reply, ToolError>;

/// Runs a `tools/call` request.
pub(super) async fn call(
    demo: &Demo,
    name: &str,
    args: Arguments,
    ctx: &Context,
) -> Result<Reply, HandlerError> {
    if let Some(reply) = quick(name, &args) {
        return Ok(reply);
    }
    let args = match args.into_value() {
        Ok(args) => args,
        Err(e) => return Ok(error_result(format!("invalid arguments: {e}"))),
    };
    let args = &args;
    let options = &demo.options;
    if !is_listed(name, options.faults, options.conformance) {
        return Err(HandlerError::invalid_params(format!(
            "unknown tool: {name}"
        )));
    }
    if !args.is_object() {
        return Ok(error_result("arguments must be an object"));
    }
    // The fixture and the tools that wait are boxed where they run: inline, their states
    // made every call's future (allocated once per call) 1,336 bytes, a size glibc serves
    // from its large bins after consolidating the fast ones, even for an `echo`.
    if options.conformance {
        if let Some(result) = Box::pin(conformance::call(name, args, ctx)).await {
            return result;
        }
    }
    let result = match at_once(name, args) {
        Some(result) => result,
        None => Box::pin(run(demo, ctx, name, args)).await,
    };
    Ok(result.unwrap_or_else(|ToolError(message)| error_result(message)))
}

/// `echo` and `greet` with the arguments they take, read from the request's text with no
/// tree built; `None` for anything else, which the general path answers (with its own
/// message for arguments that are wrong). Both tools are in every tool set.
fn quick(name: &str, args: &Arguments) -> Option<Reply> {
    #[derive(Deserialize)]
    struct Echo<'a> {
        #[serde(borrow)]
        text: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Greet<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
    }
    // A struct also reads from an array; only an object is arguments.
    if !args.is_object() {
        return None;
    }
    match name {
        "echo" => args.parse::<Echo<'_>>().ok().map(|a| text(a.text)),
        "greet" => args
            .parse::<Greet<'_>>()
            .ok()
            .map(|a| text(greeting(&a.name))),
        _ => None,
    }
}

/// What `greet` answers.
fn greeting(name: &str) -> String {
    format!("Hello, {name}!")
}

/// The ordinary tools, which answer without waiting for anything; `None` for the others.
fn at_once(name: &str, args: &Value) -> Option<ToolResult> {
    Some(match name {
        "greet" => str_arg(args, "name").map(|name| text(greeting(name))),
        "add" => add(args),
        "echo" => str_arg(args, "text").map(text),
        _ => return None,
    })
}

async fn run(demo: &Demo, ctx: &Context, name: &str, args: &Value) -> ToolResult {
    match name {
        "sleep" => sleep(ctx, args).await,
        "hang" => std::future::pending().await,
        "crash" => crash(args),
        "fail" => Err(opt_str_arg(args, "message")?
            .unwrap_or("the fail tool failed, as asked")
            .into()),
        "large" => Ok(text("x".repeat(bytes_arg(args, "bytes")?.unwrap_or(0)))),
        "garbage" => garbage(ctx, args).await,
        "stderr_burst" => stderr_burst(args).await,
        "spawn_grandchild" => spawn_grandchild(),
        "cancellations" => {
            let cancelled = json!({"cancelled": demo.cancellations()});
            Ok(structured(cancelled.to_string(), cancelled))
        }
        "calls" => {
            let calls = json!({"calls": demo.calls()});
            Ok(structured(calls.to_string(), calls))
        }
        "ping_client" => ping_client(ctx, args).await,
        "stats" => {
            let counts = json!({ "methods": demo.method_counts() });
            Ok(structured(counts.to_string(), counts))
        }
        "list_changed" => {
            let count = args
                .get("count")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .min(1000);
            let note = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
            for _ in 0..count {
                ctx.send_raw(Bytes::from_static(note)).await;
            }
            Ok(text(format!("sent {count} notifications")))
        }
        "freeze" => {
            // Answer, then go silent: the client sees a live but stuck server. Frozen before
            // the answer leaves, or a request the client sends on seeing it could still be
            // taken in (and answered).
            let answer = json!({
                "jsonrpc": "2.0",
                "id": ctx.request_id(),
                "result": {"content": [{"type": "text", "text": "frozen"}]}
            });
            demo.frozen.store(true, Ordering::Relaxed);
            ctx.send_raw(Bytes::from(answer.to_string())).await;
            std::future::pending::<()>().await;
            Ok(text("unreachable"))
        }
        "unknown_id" => {
            for id in [json!(999_999_999), json!("nobody-asked")] {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {}});
                ctx.send_raw(Bytes::from(answer.to_string())).await;
            }
            Ok(text("ok"))
        }
        "batch_answer" => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "batched"}});
            let answer =
                json!({"jsonrpc": "2.0", "id": ctx.request_id(), "result": text_result("ok")});
            Ok(Reply::Raw(json!([note, answer]).to_string().into()))
        }
        "malformed_answer" => Ok(Reply::Raw(
            json!({"jsonrpc": "2.0", "id": ctx.request_id()})
                .to_string()
                .into(),
        )),
        "drop_answer" => {
            let id = serde_json::to_string(ctx.request_id()).unwrap_or_default();
            Ok(Reply::Raw(
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into(),
            ))
        }
        // definitions() lists these names and feature_tools' ones.
        other => match feature_tools::run(ctx, other, args).await {
            Some(result) => result,
            None => Err(format!("tool {other} is listed but not implemented").into()),
        },
    }
}

fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

pub(super) fn text(text: impl Into<String>) -> Reply {
    Reply::text(text)
}

fn structured(text: String, content: Value) -> Reply {
    let mut result = text_result(text);
    result["structuredContent"] = content;
    Reply::Result(result)
}

fn error_result(message: impl Into<String>) -> Reply {
    Reply::tool_error(message)
}

pub(super) fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    opt_str_arg(args, key)?.ok_or_else(|| format!("missing argument {key:?}").into())
}

pub(super) fn opt_str_arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("argument {key:?} must be a string, not {other}").into()),
    }
}

fn opt_u64_arg(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            format!("argument {key:?} must be a non-negative integer, not {v}").into()
        }),
    }
}

/// A size argument, refused over [`MAX_BYTES`] so that a typo cannot eat the machine's memory.
fn bytes_arg(args: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    match opt_u64_arg(args, key)? {
        Some(n) if n > MAX_BYTES => {
            Err(format!("argument {key:?} is over the limit of {MAX_BYTES}").into())
        }
        // MAX_BYTES fits in usize on every platform we build for.
        n => Ok(n.map(|n| n as usize)),
    }
}

fn add(args: &Value) -> ToolResult {
    let number = |key: &str| match args.get(key) {
        Some(Value::Number(n)) => Ok(n),
        Some(other) => Err(ToolError(format!(
            "argument {key:?} must be a number, not {other}"
        ))),
        None => Err(ToolError(format!("missing argument {key:?}"))),
    };
    let (a, b) = (number("a")?, number("b")?);
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
        _ => {
            let sum = a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN);
            // Whole sums print as integers ("5", not "5.0") when f64 still holds them exactly.
            if sum.is_finite() && sum.fract() == 0.0 && sum.abs() < 9_007_199_254_740_992.0 {
                json!(sum as i64)
            } else if sum.is_finite() {
                json!(sum)
            } else {
                return Err("the sum is not a finite number".into());
            }
        }
    };
    Ok(structured(sum.to_string(), json!({"sum": sum})))
}

async fn sleep(ctx: &Context, args: &Value) -> ToolResult {
    let ms = opt_u64_arg(args, "ms")?.ok_or("missing argument \"ms\"")?;
    let steps = opt_u64_arg(args, "steps")?.unwrap_or(0);
    match ctx.progress_token() {
        Some(_) if steps > 0 => {
            let step =
                Duration::from_millis(ms) / u32::try_from(steps).map_err(|_| "too many steps")?;
            for i in 1..=steps {
                tokio::time::sleep(step).await;
                let message = format!("step {i}");
                ctx.progress(i as f64, Some(steps as f64), Some(&message))
                    .await;
            }
        }
        _ => tokio::time::sleep(Duration::from_millis(ms)).await,
    }
    Ok(text(format!("slept {ms} ms")))
}

fn crash(args: &Value) -> ToolResult {
    let code = match args.get("code") {
        None | Some(Value::Null) => 1,
        Some(v) => v
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .ok_or_else(|| format!("argument \"code\" must be an exit code, not {v}"))?,
    };
    let message = opt_str_arg(args, "message")?.unwrap_or("demo server crashing on purpose");
    eprintln!("{message}");
    std::process::exit(code)
}

async fn garbage(ctx: &Context, args: &Value) -> ToolResult {
    let line = match opt_str_arg(args, "kind")?.unwrap_or("text") {
        "text" => b"this is not json".to_vec(),
        "non_utf8" => vec![0xff, 0xfe],
        "oversized" => {
            let default = DEFAULT_OVERSIZED as usize;
            vec![b'a'; bytes_arg(args, "bytes")?.unwrap_or(default)]
        }
        "non_jsonrpc" => br#"{"hello":"world"}"#.to_vec(),
        other => return Err(format!("unknown kind {other:?}").into()),
    };
    ctx.send_raw(Bytes::from(line)).await;
    Ok(text("ok"))
}

async fn stderr_burst(args: &Value) -> ToolResult {
    let lines = opt_u64_arg(args, "lines")?.ok_or("missing argument \"lines\"")?;
    let width = bytes_arg(args, "bytes_per_line")?.unwrap_or(100);
    if lines.saturating_mul(width as u64) > MAX_BYTES {
        return Err(format!("more than {MAX_BYTES} bytes in all").into());
    }
    // Blocking writes, so that a client that stops reading stderr really stalls us.
    let written = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut stderr = std::io::stderr().lock();
        let mut line = Vec::with_capacity(width + 1);
        for i in 0..lines {
            line.clear();
            line.extend_from_slice(format!("stderr line {i} ").as_bytes());
            line.resize(width, b'.');
            line.push(b'\n');
            stderr.write_all(&line)?;
        }
        stderr.flush()
    })
    .await;
    match written {
        Ok(Ok(())) => Ok(text(format!("wrote {lines} lines"))),
        Ok(Err(e)) => Err(format!("writing to stderr failed: {e}").into()),
        Err(e) => Err(format!("the writing task failed: {e}").into()),
    }
}

fn spawn_grandchild() -> ToolResult {
    // stdout and stderr are inherited on purpose: a grandchild that holds the server's pipes
    // open is exactly the situation the runtime must cope with.
    let child = Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot spawn sleep: {e}"))?;
    let pid = child.id();
    log(format_args!("spawned grandchild {pid}"));
    lock(&GRANDCHILDREN).push(child);
    Ok(structured(pid.to_string(), json!({"pid": pid})))
}

async fn ping_client(ctx: &Context, args: &Value) -> ToolResult {
    // `method` lets tests send requests the client does not serve (it must answer -32601).
    let method = args.get("method").and_then(Value::as_str).unwrap_or("ping");
    match ctx.request_client(method, None, PING_TIMEOUT).await {
        Ok(Outcome::Result(raw)) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(map)) if map.is_empty() => Ok(text("pong")),
            // Any other method's answer is shown as it came (`roots/list`, say).
            Ok(answer) if method != "ping" => Ok(text(answer.to_string())),
            _ => Err(format!("the client answered {method} with {}, not {{}}", raw.get()).into()),
        },
        Ok(Outcome::Error(e)) => Err(format!(
            "the client answered {method} with error {}: {}",
            e.code, e.message
        )
        .into()),
        Err(e) => Err(format!("the client did not answer {method}: {e}").into()),
    }
}
