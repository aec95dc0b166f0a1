//! Form elicitation on the terminal: a server's `elicitation/create` asked field by field on
//! stderr and answered on stdin, or declined when either is not a terminal.
//!
//! Every subcommand that starts servers declares the capability ([`handlers`]), so a tool
//! that needs to ask its user something can. A script (stdin or stderr redirected) never
//! blocks on a question nobody sees: the form is declined at once. On a terminal each
//! property of the requested schema is one question, with its title, description, type and
//! default; Enter keeps the default, a value of the wrong type or outside the `enum` is asked
//! again, and the end of input (Ctrl-D) cancels the whole form:
//!
//! ```text
//! server `shop` asks: Which size should I order?
//!   (Enter keeps the default; end of input cancels)
//! Size — T-shirt size (one of: S, M, L, required) [default: M]: XL
//!   not one of: S, M, L
//! Size — T-shirt size (one of: S, M, L, required) [default: M]:
//! ```
//!
//! The handler is called on a runtime thread, which must never wait for a person: the
//! questions run on the CLI's blocking pool, one form at a time, while the progress bar of a
//! call is paused. Everything the server wrote is shown escaped ([`print::escape_text`]).
//! The schema arrives as a JSON map without its order, so the required properties are asked
//! first, in the order of `required`, then the others by name.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Number, Value};
use tokio::runtime::Handle;

use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};

use super::{print, progress};

/// The client handlers of every runtime the CLI starts: form elicitation on the terminal.
/// Must be called within the CLI's tokio runtime, whose blocking pool asks the questions.
pub(crate) fn handlers() -> ClientHandlers {
    let handlers = ClientHandlers::new().elicitation(Terminal {
        cli: Handle::current(),
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
    });
    // `--root DIR` declares roots too.
    match super::roots::handler() {
        Some(roots) => handlers.roots(roots),
        None => handlers,
    }
}

/// Asks on the terminal, if there is one.
#[derive(Debug)]
struct Terminal {
    /// The CLI's runtime, whose blocking pool waits for the user.
    cli: Handle,
    /// Whether stdin and stderr are both terminals; otherwise every form is declined.
    interactive: bool,
}

/// Held while a form is asked, so that two servers asking at once do not interleave their
/// questions and answers.
static TURN: Mutex<()> = Mutex::new(());

impl ElicitationHandler for Terminal {
    fn elicit(
        &self,
        server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        if !self.interactive {
            return Box::pin(async { Ok(ElicitationResponse::decline()) });
        }
        let server = server.to_owned();
        let asked = self.cli.spawn_blocking(move || {
            let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
            let _paused = progress::pause();
            let mut err = std::io::stderr().lock();
            // The line a progress bar may have drawn.
            let _ = err.write_all(progress::ERASE.as_bytes());
            ask(
                &server,
                &request.message,
                &request.requested_schema,
                &mut std::io::stdin().lock(),
                &mut err,
            )
        });
        // Dropped (the call was interrupted or timed out), the question stays on the
        // terminal until answered or the process exits; nobody waits for it then.
        Box::pin(async move {
            asked
                .await
                .map_err(|e| format!("the terminal form failed: {e}"))
        })
    }
}

/// Asks `server`'s form `message` with `schema` on `out`, reading answers from `input`:
/// accepted with every answer once all fields are asked, cancelled at the end of input (or
/// when `out` fails), declined when the schema has a field this form cannot ask.
pub(crate) fn ask(
    server: &str,
    message: &str,
    schema: &Value,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> ElicitationResponse {
    let server = print::escape_line(server);
    let fields = match fields(schema) {
        Ok(fields) => fields,
        Err(why) => {
            let _ = writeln!(out, "server `{server}` asked for a form: declined, {why}");
            return ElicitationResponse::decline();
        }
    };
    let said = writeln!(
        out,
        "server `{server}` asks: {}\n  (Enter keeps the default; end of input cancels)",
        print::escape_text(message)
    );
    if said.is_err() {
        return ElicitationResponse::cancel();
    }
    let mut content = Map::new();
    for field in &fields {
        loop {
            if write!(out, "{}: ", field.question()).is_err() || out.flush().is_err() {
                return ElicitationResponse::cancel();
            }
            let Some(line) = read_line(input) else {
                let _ = writeln!(out, "\n  cancelled");
                return ElicitationResponse::cancel();
            };
            match field.answer(&line) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(why) => {
                    let _ = writeln!(out, "  {why}");
                }
            }
        }
    }
    ElicitationResponse::accept(content)
}

/// One line without its line ending; `None` at the end of input or on a read error.
fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            let end = line.trim_end_matches(['\n', '\r']).len();
            line.truncate(end);
            Some(line)
        }
    }
}

/// One property of the form.
#[derive(Debug)]
struct Field {
    name: String,
    /// Its title, else its name.
    label: String,
    description: Option<String>,
    kind: Kind,
    default: Option<Value>,
    required: bool,
}

/// What a field takes: the primitive types a form schema allows.
#[derive(Debug)]
enum Kind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<String>,
    },
    /// One of these strings (`enum`, or `oneOf` of `const`s), with their titles.
    Choice(Vec<(String, Option<String>)>),
    Integer {
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Number {
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
}

/// The fields of a requested schema: required ones first, in their order, then the others by
/// name. `Err` names a field this form cannot ask (not a primitive type).
fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&String> = properties.keys().collect();
    names.sort_by_key(|name| {
        (
            required
                .iter()
                .position(|r| r == name)
                .unwrap_or(usize::MAX),
            name.as_str(),
        )
    });
    names
        .into_iter()
        .map(|name| field(name, &properties[name], required.contains(&name.as_str())))
        .collect()
}

fn field(name: &str, schema: &Value, required: bool) -> Result<Field, String> {
    let text = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    let count = |key: &str| schema.get(key).and_then(Value::as_u64);
    let kind = match (choices(schema), schema.get("type").and_then(Value::as_str)) {
        (Some(choices), _) => Kind::Choice(choices),
        (None, Some("string") | None) => Kind::Text {
            min_length: count("minLength"),
            max_length: count("maxLength"),
            format: text("format"),
        },
        (None, Some("integer")) => Kind::Integer {
            minimum: number("minimum"),
            maximum: number("maximum"),
        },
        (None, Some("number")) => Kind::Number {
            minimum: number("minimum"),
            maximum: number("maximum"),
        },
        (None, Some("boolean")) => Kind::Boolean,
        (None, Some(other)) => {
            return Err(format!(
                "field `{}` is of type {}, which this terminal form cannot ask",
                print::escape_line(name),
                print::escape_line(other)
            ))
        }
    };
    Ok(Field {
        name: name.to_owned(),
        label: text("title").unwrap_or_else(|| name.to_owned()),
        description: text("description"),
        kind,
        default: schema.get("default").cloned(),
        required,
    })
}

/// The strings of `enum` (titled by `enumNames`), or the `const`s of `oneOf` (titled by
/// their `title`), if the schema has either.
fn choices(schema: &Value) -> Option<Vec<(String, Option<String>)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let titles = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let title = titles.and_then(|t| t.get(i)?.as_str()).map(str::to_owned);
                    Some((v.as_str()?.to_owned(), title))
                })
                .collect(),
        );
    }
    let options = schema.get("oneOf").and_then(Value::as_array)?;
    Some(
        options
            .iter()
            .filter_map(|o| {
                let title = o.get("title").and_then(Value::as_str).map(str::to_owned);
                Some((o.get("const")?.as_str()?.to_owned(), title))
            })
            .collect(),
    )
}

impl Field {
    /// The question, all on one line: `Label — description (hint, required) [default: d]`.
    fn question(&self) -> String {
        let mut q = print::named(&self.label, self.description.as_deref());
        q.push_str(" (");
        q.push_str(&self.kind.hint());
        if self.required {
            q.push_str(", required");
        }
        q.push(')');
        if let Some(default) = &self.default {
            q.push_str(" [default: ");
            q.push_str(&print::escape_line(&shown(default)));
            q.push(']');
        }
        q
    }

    /// The value of an answer: `Ok(None)` leaves an optional field out, `Err` says why the
    /// answer is refused (the question is asked again).
    fn answer(&self, line: &str) -> Result<Option<Value>, String> {
        let typed = match &self.kind {
            // Text is taken as typed, spaces included.
            Kind::Text { .. } => line,
            _ => line.trim(),
        };
        if typed.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, false) => Ok(None),
                (None, true) => Err("a value is required (end of input cancels)".to_owned()),
            };
        }
        self.kind.parse(typed).map(Some)
    }
}

impl Kind {
    fn hint(&self) -> String {
        match self {
            Kind::Text { format, .. } => match format {
                Some(format) => format!("text, {}", print::escape_line(format)),
                None => "text".to_owned(),
            },
            Kind::Choice(choices) => {
                let listed: Vec<String> = choices
                    .iter()
                    .map(|(value, title)| match title {
                        Some(title) if title != value => format!(
                            "{} = {}",
                            print::escape_line(value),
                            print::escape_line(title)
                        ),
                        _ => print::escape_line(value).into_owned(),
                    })
                    .collect();
                format!("one of: {}", listed.join(", "))
            }
            Kind::Integer { minimum, maximum } => format!("integer{}", range(*minimum, *maximum)),
            Kind::Number { minimum, maximum } => format!("number{}", range(*minimum, *maximum)),
            Kind::Boolean => "yes or no".to_owned(),
        }
    }

    /// A typed, non-empty answer as a value of this kind.
    fn parse(&self, typed: &str) -> Result<Value, String> {
        match self {
            Kind::Text {
                min_length,
                max_length,
                ..
            } => {
                let chars = typed.chars().count() as u64;
                if min_length.is_some_and(|min| chars < min) {
                    return Err(format!(
                        "at least {} characters",
                        min_length.unwrap_or_default()
                    ));
                }
                if max_length.is_some_and(|max| chars > max) {
                    return Err(format!(
                        "at most {} characters",
                        max_length.unwrap_or_default()
                    ));
                }
                Ok(Value::from(typed))
            }
            Kind::Choice(choices) => choices
                .iter()
                .find(|(value, _)| value == typed)
                .map(|(value, _)| Value::from(value.as_str()))
                .ok_or_else(|| {
                    let values: Vec<_> = choices
                        .iter()
                        .map(|(v, _)| print::escape_line(v).into_owned())
                        .collect();
                    format!("not one of: {}", values.join(", "))
                }),
            Kind::Integer { minimum, maximum } => {
                let n: i64 = typed.parse().map_err(|_| "not an integer".to_owned())?;
                within(n as f64, *minimum, *maximum)?;
                Ok(Value::from(n))
            }
            Kind::Number { minimum, maximum } => {
                if let Ok(n) = typed.parse::<i64>() {
                    within(n as f64, *minimum, *maximum)?;
                    return Ok(Value::from(n));
                }
                let n = typed
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .ok_or_else(|| "not a number".to_owned())?;
                within(n.as_f64().unwrap_or_default(), *minimum, *maximum)?;
                Ok(Value::Number(n))
            }
            Kind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Value::Bool(true)),
                "n" | "no" | "false" => Ok(Value::Bool(false)),
                _ => Err("answer yes or no".to_owned()),
            },
        }
    }
}

/// ` from MIN to MAX`, ` from MIN`, ` up to MAX`, or nothing.
fn range(minimum: Option<f64>, maximum: Option<f64>) -> String {
    match (minimum, maximum) {
        (Some(min), Some(max)) => format!(" from {min} to {max}"),
        (Some(min), None) => format!(" from {min}"),
        (None, Some(max)) => format!(" up to {max}"),
        (None, None) => String::new(),
    }
}

fn within(n: f64, minimum: Option<f64>, maximum: Option<f64>) -> Result<(), String> {
    let low = minimum.is_some_and(|min| n < min);
    let high = maximum.is_some_and(|max| n > max);
    if low || high {
        return Err(format!("not{}", range(minimum, maximum)));
    }
    Ok(())
}

/// A default as the user would type it.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The form `schema` answered with `typed` (lines): the response and what was shown.
    fn answered(schema: Value, typed: &str) -> (ElicitationResponse, String) {
        let mut out = Vec::new();
        let response = ask(
            "srv",
            "Who are you?",
            &schema,
            &mut typed.as_bytes(),
            &mut out,
        );
        (response, String::from_utf8(out).unwrap())
    }

    fn accepted(content: Value) -> ElicitationResponse {
        match content {
            Value::Object(map) => ElicitationResponse::accept(map),
            other => panic!("{other}"),
        }
    }

    fn person() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your full name",
                     "default": "John Doe"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "size": {"type": "string", "enum": ["S", "M", "L"], "default": "M"},
            "subscribe": {"type": "boolean", "default": false},
            "nick": {"type": "string"}
        }, "required": ["name", "age"]})
    }

    #[test]
    fn enter_keeps_the_defaults() {
        let (response, shown) = answered(person(), "\n42\n\n\n\n");
        assert_eq!(
            response,
            accepted(json!({"name": "John Doe", "age": 42, "size": "M", "subscribe": false}))
        );
        // Required fields first, in their order; then the others by name.
        assert!(
            shown.starts_with(
                "server `srv` asks: Who are you?\n  (Enter keeps the default; end of input \
                 cancels)\nName — Your full name (text, required) [default: John Doe]: \
                 age (integer from 0 to 150, required): nick (text): \
                 size (one of: S, M, L) [default: M]: subscribe (yes or no) [default: no]: "
            ),
            "{shown}"
        );
    }

    #[test]
    fn an_invalid_value_is_asked_again() {
        let (response, shown) = answered(
            person(),
            "Ada Lovelace \nold\n200\n-1\n36\nada\nXL\nL\nmaybe\nYES\n",
        );
        assert_eq!(
            response,
            accepted(json!({"name": "Ada Lovelace ", "age": 36, "size": "L",
                            "subscribe": true, "nick": "ada"}))
        );
        for why in [
            "  not an integer\n",
            "  not from 0 to 150\n",
            "  not one of: S, M, L\n",
            "  answer yes or no\n",
        ] {
            assert!(shown.contains(why), "{why:?} in {shown}");
        }
        assert_eq!(shown.matches("age (integer").count(), 4, "{shown}");
    }

    #[test]
    fn a_required_field_without_default_is_asked_until_given() {
        let (response, shown) = answered(person(), "\n\n  \n7\n\n\n\n");
        assert_eq!(
            response,
            accepted(json!({"name": "John Doe", "age": 7, "size": "M", "subscribe": false}))
        );
        assert_eq!(shown.matches("a value is required").count(), 2, "{shown}");
    }

    #[test]
    fn end_of_input_cancels() {
        for typed in ["", "\n", "\n42\n", "\n42\n\nXL\n"] {
            let (response, shown) = answered(person(), typed);
            assert_eq!(response, ElicitationResponse::cancel(), "{typed:?}");
            assert!(shown.ends_with("\n  cancelled\n"), "{shown}");
        }
    }

    #[test]
    fn numbers_titled_choices_and_lengths() {
        let schema = json!({"properties": {
            "ratio": {"type": "number", "maximum": 1},
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"},
                                                  {"const": "g", "title": "Green"}]},
            "code": {"type": "string", "minLength": 2, "maxLength": 3, "format": "email"}
        }});
        let (response, shown) = answered(schema, "x\nabcd\nab\nRed\nr\n1.5\n0.25\n");
        assert_eq!(
            response,
            accepted(json!({"code": "ab", "color": "r", "ratio": 0.25}))
        );
        assert!(shown.contains("code (text, email): "), "{shown}");
        assert!(shown.contains("  at least 2 characters\n"), "{shown}");
        assert!(shown.contains("  at most 3 characters\n"), "{shown}");
        assert!(
            shown.contains("color (one of: r = Red, g = Green): "),
            "{shown}"
        );
        assert!(shown.contains("  not up to 1\n"), "{shown}");
        let (response, _) = answered(json!({"properties": {"n": {"type": "number"}}}), "3\n");
        assert_eq!(response, accepted(json!({"n": 3})));
    }

    #[test]
    fn server_text_is_escaped() {
        let schema = json!({"properties": {
            "x": {"type": "string", "title": "X\u{1b}[2J", "description": "a\rb",
                  "default": "\u{7}"}
        }});
        let mut out = Vec::new();
        let response = ask(
            "s\u{1b}",
            "line one\n\u{1b}]0;title\u{7}line two",
            &schema,
            &mut "\n".as_bytes(),
            &mut out,
        );
        assert_eq!(response, accepted(json!({"x": "\u{7}"})));
        let shown = String::from_utf8(out).unwrap();
        assert!(
            shown.starts_with("server `s\\u{1b}` asks: line one\n\\u{1b}]0;title\\u{7}line two\n"),
            "{shown}"
        );
        assert!(
            shown.contains("X\\u{1b}[2J — a\\rb (text) [default: \\u{7}]: "),
            "{shown}"
        );
        assert!(!shown.contains('\u{1b}'), "{shown}");
    }

    #[test]
    fn a_field_that_cannot_be_asked_declines_the_form() {
        let schema = json!({"properties": {"tags": {"type": "array"}}});
        let (response, shown) = answered(schema, "a\n");
        assert_eq!(response, ElicitationResponse::decline());
        assert!(shown.contains("field `tags` is of type array"), "{shown}");
        // No properties: nothing to ask, accepted empty.
        let (response, _) = answered(json!({"type": "object"}), "");
        assert_eq!(response, ElicitationResponse::accept(Map::new()));
    }
}
