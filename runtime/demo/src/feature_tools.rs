//! The ordinary tools that drive the server features: they send the notifications of
//! resources, prompts and logging on demand, so that tests choose when those arrive.
//!
//! They are listed with or without `--faults`, and also with `--no-server-features`: a client
//! that was never told about resources should still cope with a stray
//! `notifications/resources/updated`.

use serde_json::{json, Value};

use switchboard_server::logging::LEVELS;
use switchboard_server::Context;

use super::tools::{object, opt_str_arg, str_arg, text, tool, ToolResult};

/// The definitions, listed after `greet`, `add` and `echo`.
pub(super) fn definitions() -> Vec<Value> {
    let string = |description: &str| json!({"type": "string", "description": description});
    let none = || object(json!({}), &[]);
    vec![
        tool(
            "touch",
            "Sends notifications/resources/updated for `uri` if the client subscribed to it, then answers \"touched\".",
            object(json!({"uri": string("The resource URI")}), &["uri"]),
        ),
        tool(
            "resources_changed",
            "Sends notifications/resources/list_changed, then answers.",
            none(),
        ),
        tool(
            "prompts_changed",
            "Sends notifications/prompts/list_changed, then answers.",
            none(),
        ),
        tool(
            "log",
            "Sends notifications/message if `level` is at or above the level set with logging/setLevel; answers \"logged\" or \"filtered\".",
            object(
                json!({
                    "level": {"type": "string", "enum": LEVELS, "description": "The message's severity"},
                    "message": string("The message, sent as `data`"),
                    "logger": string("The logger's name"),
                }),
                &["level", "message"],
            ),
        ),
        tool(
            "log_level",
            "Answers the level set with logging/setLevel (\"info\" until one is set).",
            none(),
        ),
    ]
}

/// Runs one of these tools, or returns `None` if `name` is not one of them.
pub(super) async fn run(ctx: &Context, name: &str, args: &Value) -> Option<ToolResult> {
    Some(match name {
        "touch" => touch(ctx, args),
        "resources_changed" => {
            ctx.resources_changed();
            Ok(text("sent notifications/resources/list_changed"))
        }
        "prompts_changed" => {
            ctx.prompts_changed();
            Ok(text("sent notifications/prompts/list_changed"))
        }
        "log" => log(ctx, args).await,
        "log_level" => Ok(text(ctx.log_level().unwrap_or("info"))),
        _ => return None,
    })
}

fn touch(ctx: &Context, args: &Value) -> ToolResult {
    let uri = str_arg(args, "uri")?;
    // The notification is queued before the answer, so a client sees it first.
    ctx.resource_updated(uri);
    Ok(text("touched"))
}

async fn log(ctx: &Context, args: &Value) -> ToolResult {
    let level = str_arg(args, "level")?;
    if !LEVELS.contains(&level) {
        return Err(format!("unknown log level: {level:?}").into());
    }
    let message = str_arg(args, "message")?;
    let logger = opt_str_arg(args, "logger")?;
    let sent = ctx.log(level, logger, json!(message)).await;
    Ok(text(if sent { "logged" } else { "filtered" }))
}
