//! One tool call from the command line, whichever way its server was found: the arguments,
//! the timeout, a progress bar, an interruption, and the output and exit code of the answer.

use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use switchboard::Call;

use super::{print, progress, Failure, Interrupt, Interrupted};

/// The tool a call is for, and its server when known, for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) tool: &'a str,
    pub(crate) server: Option<&'a str>,
}

impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.server {
            Some(server) => write!(f, "tool `{}` on server `{server}`", self.tool),
            None => write!(f, "tool `{}`", self.tool),
        }
    }
}

/// Sends `call` and renders its answer: the result readable, or raw with `json`, and exit 1
/// if the tool reported an error (`isError: true`). A signal cancels the call.
pub(crate) async fn invoke(
    mut call: Call,
    target: Target<'_>,
    timeout: Option<Duration>,
    json: bool,
    interrupt: &mut Interrupt,
) -> Result<(String, ExitCode), Failure> {
    if let Some(timeout) = timeout {
        call = call.timeout(timeout);
    }
    let (call, bar) = progress::attach(call);
    let interrupted = |Interrupted(signal)| {
        Failure::Interrupted(format!(
            "interrupted by {signal}: cancelled the call to {target}"
        ))
    };
    let answered = if json {
        let raw = interrupt.guard(call.raw()).await;
        bar.finish().await;
        let raw = raw.map_err(interrupted)??;
        let is_error = serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|v| v.get("isError")?.as_bool())
            == Some(true);
        (format!("{}\n", raw.get()), is_error)
    } else {
        let result = interrupt.guard(async { call.await }).await;
        bar.finish().await;
        let result = result.map_err(interrupted)??;
        (print::result(&result), result.is_error())
    };
    let (output, is_error) = answered;
    if is_error {
        eprintln!("switchboard: {target} reported an error (isError: true)");
        return Ok((output, ExitCode::from(1)));
    }
    Ok((output, ExitCode::SUCCESS))
}

/// Parses ARGS_JSON, which must be a JSON object.
pub(crate) fn arguments(target: &Target<'_>, text: &str) -> Result<Value, Failure> {
    let bad = |why: String| Failure::Usage(format!("bad arguments for {target}: {why}"));
    match serde_json::from_str(text) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(other) => Err(bad(format!(
            "ARGS_JSON must be a JSON object, not {}",
            kind(&other)
        ))),
        Err(e) => Err(bad(format!("ARGS_JSON is not valid JSON ({e})"))),
    }
}

fn kind(value: &Value) -> &'static str {
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
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        let on_server = Target {
            tool: "t",
            server: Some("s"),
        };
        assert_eq!(
            arguments(&on_server, r#"{"a":1}"#).ok(),
            Some(serde_json::json!({"a": 1}))
        );
        for bad in ["[1]", "nope", "1", "null", "\"x\"", "{"] {
            match arguments(&on_server, bad) {
                Err(Failure::Usage(m)) => assert!(m.contains("tool `t` on server `s`"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let by_name = Target {
            tool: "t",
            server: None,
        };
        match arguments(&by_name, "[1]") {
            Err(Failure::Usage(m)) => assert_eq!(
                m,
                "bad arguments for tool `t`: ARGS_JSON must be a JSON object, not an array"
            ),
            other => panic!("{other:?}"),
        }
    }
}
