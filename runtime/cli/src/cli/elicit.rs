//! Form elicitation on the terminal: a server's `elicitation/create` asked field by field on
//! stderr and answered on stdin, or declined when either is not a terminal; or, with
//! `--answer FILE|JSON`, answered from that JSON object, for scripts ([`set_answer`]).
//!
//! Every subcommand that starts servers declares the capability ([`handlers`]), so a tool
//! that needs to ask its user something can. A script (stdin or stderr redirected) never
//! blocks on a question nobody sees: the form is declined at once. On a terminal each
//! property of the requested schema is one question, with its title, description, type and
//! default: text (with its length and `format`: email, uri, date, date-time), numbers and
//! integers (with their range), yes or no, one of a list (`enum`, `oneOf`, `enumNames`), or
//! several of a list (`type: array` with `items.enum` or `items.anyOf`, typed
//! comma-separated). Enter keeps the default, a value of the wrong type or outside the list
//! is asked again, and the end of input (Ctrl-D) cancels the whole form. A field this form
//! cannot ask is left out when it is optional (said so on the terminal), sent as its default
//! when it has one, and only a required field without a default declines the form:
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
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::{Map, Number, Value};
use tokio::runtime::Handle;

use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};

use super::{print, progress};

/// The answer of `--answer`, set once before any runtime starts.
static ANSWER: OnceLock<Map<String, Value>> = OnceLock::new();

/// Reads `--answer`: a JSON object, given as it is (it starts with `{`) or in a file; every
/// form is then answered with it instead of on the terminal. A bad one is a usage error.
pub(crate) fn set_answer(given: Option<&str>) -> Result<(), super::Failure> {
    let Some(given) = given else { return Ok(()) };
    let bad = |why: String| super::Failure::Usage(format!("--answer {given}: {why}"));
    let text = if given.trim_start().starts_with('{') {
        given.to_owned()
    } else {
        std::fs::read_to_string(given).map_err(|e| bad(format!("cannot read it ({e})")))?
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(answer)) => {
            let _ = ANSWER.set(answer);
            Ok(())
        }
        Ok(other) => Err(bad(format!(
            "expected a JSON object, not {}",
            super::call::kind(&other)
        ))),
        Err(e) => Err(bad(format!("not valid JSON ({e})"))),
    }
}

/// The client handlers of every runtime the CLI starts: form elicitation on the terminal
/// (or from `--answer`). Must be called within the CLI's tokio runtime, whose blocking pool
/// asks the questions.
pub(crate) fn handlers() -> ClientHandlers {
    let handlers = ClientHandlers::new().elicitation(Terminal {
        cli: Handle::current(),
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        answer: ANSWER.get(),
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
    /// The answer of `--answer`, which every form gets instead.
    answer: Option<&'static Map<String, Value>>,
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
        if let Some(answer) = self.answer {
            let response = from_answer(server, &request.requested_schema, answer);
            return Box::pin(async move { Ok(response) });
        }
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
/// when `out` fails), declined when the schema has a required field without a default that
/// this form cannot ask.
pub(crate) fn ask(
    server: &str,
    message: &str,
    schema: &Value,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> ElicitationResponse {
    let server = print::escape_line(server);
    let Form {
        fields,
        mut content,
        notes,
    } = match form(schema) {
        Ok(form) => form,
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
    for note in notes {
        let _ = writeln!(out, "  {note}");
    }
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

/// A form answered from `--answer`: the schema's defaults, then what the answer gives for
/// the schema's properties (others are not sent: the schema is what the server asked for).
/// Declined, with a line on stderr, when a required property has neither.
fn from_answer(server: &str, schema: &Value, answer: &Map<String, Value>) -> ElicitationResponse {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut content: Map<String, Value> = properties
        .iter()
        .filter_map(|(name, p)| Some((name.clone(), p.get("default")?.clone())))
        .collect();
    for (name, value) in answer {
        if properties.contains_key(name) {
            content.insert(name.clone(), value.clone());
        }
    }
    let missing: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !content.contains_key(*name))
        .map(|name| format!("`{}`", print::escape_line(name)))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "switchboard: declined the form of server `{}`: --answer gives no {}",
            print::escape_line(server),
            missing.join(", ")
        );
        return ElicitationResponse::decline();
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
    /// Several of these strings (`type: array`, its `items` an `enum` or an `anyOf` of
    /// `const`s), typed comma-separated.
    Several {
        choices: Vec<(String, Option<String>)>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
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

/// A form to ask: its fields, the content it starts from (the defaults of fields it cannot
/// ask), and what to say about the fields it leaves out.
#[derive(Debug)]
struct Form {
    fields: Vec<Field>,
    content: Map<String, Value>,
    notes: Vec<String>,
}

/// The form of a requested schema. A field that cannot be asked is left out when optional,
/// sent as its default when it has one; `Err` names a required one without a default.
fn form(schema: &Value) -> Result<Form, String> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut form = Form {
        fields: Vec::new(),
        content: Map::new(),
        notes: Vec::new(),
    };
    for (name, field) in fields(schema) {
        match field {
            Ok(field) => form.fields.push(field),
            Err(why) => {
                let property = &schema["properties"][&name];
                match property.get("default") {
                    Some(default) => {
                        form.notes.push(format!("{why}: its default is sent"));
                        form.content.insert(name.clone(), default.clone());
                    }
                    None if required.contains(&name.as_str()) => {
                        return Err(format!("its required {why}"));
                    }
                    None => form.notes.push(format!("{why}: left out (it is optional)")),
                }
            }
        }
    }
    Ok(form)
}

/// The fields of a requested schema: required ones first, in their order, then the others by
/// name; each one this form can ask, or why not.
fn fields(schema: &Value) -> Vec<(String, Result<Field, String>)> {
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
        .map(|name| {
            let field = field(name, &properties[name], required.contains(&name.as_str()));
            (name.clone(), field)
        })
        .collect()
}

fn field(name: &str, schema: &Value, required: bool) -> Result<Field, String> {
    let text = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    let count = |key: &str| schema.get(key).and_then(Value::as_u64);
    let cannot = |what: String| {
        format!(
            "field `{}` is {what}, which this terminal form cannot ask",
            print::escape_line(name)
        )
    };
    let kind = match (choices(schema), schema.get("type").and_then(Value::as_str)) {
        (None, Some("array")) => match schema.get("items").and_then(choices) {
            Some(choices) if !choices.is_empty() => Kind::Several {
                choices,
                min_items: count("minItems"),
                max_items: count("maxItems"),
            },
            _ => return Err(cannot("an array of anything but choices".to_owned())),
        },
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
            return Err(cannot(format!("of type {}", print::escape_line(other))))
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

/// The strings of `enum` (titled by `enumNames`), or the `const`s of `oneOf` or `anyOf`
/// (titled by their `title`), if the schema has any.
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
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
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
            return match (&self.default, self.required, &self.kind) {
                (Some(default), _, _) => Ok(Some(default.clone())),
                (None, false, _) => Ok(None),
                // A selection of none is a value, where the schema allows it.
                (None, true, Kind::Several { .. }) => self.kind.parse("").map(Some),
                (None, true, _) => Err("a value is required (end of input cancels)".to_owned()),
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
            Kind::Choice(choices) => format!("one of: {}", listed(choices)),
            Kind::Several {
                choices,
                min_items,
                max_items,
            } => {
                let count = match (min_items, max_items) {
                    (Some(min), Some(max)) => format!(", {min} to {max}"),
                    (Some(min), None) => format!(", at least {min}"),
                    (None, Some(max)) => format!(", at most {max}"),
                    (None, None) => String::new(),
                };
                format!("any of: {}; comma-separated{count}", listed(choices))
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
                format,
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
                if let Some(format) = format {
                    formatted(format, typed)?;
                }
                Ok(Value::from(typed))
            }
            Kind::Choice(choices) => choice(choices, typed).map(Value::from),
            Kind::Several {
                choices,
                min_items,
                max_items,
            } => {
                let mut picked: Vec<Value> = Vec::new();
                for item in typed.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                    let value = Value::from(choice(choices, item)?);
                    if !picked.contains(&value) {
                        picked.push(value);
                    }
                }
                let n = picked.len() as u64;
                if min_items.is_some_and(|min| n < min) {
                    return Err(format!("choose at least {}", min_items.unwrap_or_default()));
                }
                if max_items.is_some_and(|max| n > max) {
                    return Err(format!("choose at most {}", max_items.unwrap_or_default()));
                }
                Ok(Value::Array(picked))
            }
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

/// The choices as a hint lists them: `value`, or `value = Title`.
fn listed(choices: &[(String, Option<String>)]) -> String {
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
    listed.join(", ")
}

/// The choice typed: its value, or the value whose title was typed.
fn choice<'a>(choices: &'a [(String, Option<String>)], typed: &str) -> Result<&'a str, String> {
    choices
        .iter()
        .find(|(value, _)| value == typed)
        .or_else(|| {
            choices
                .iter()
                .find(|(_, title)| title.as_deref() == Some(typed))
        })
        .map(|(value, _)| value.as_str())
        .ok_or_else(|| {
            let values: Vec<_> = choices
                .iter()
                .map(|(v, _)| print::escape_line(v).into_owned())
                .collect();
            format!("not one of: {}", values.join(", "))
        })
}

/// Checks text of one of the formats a form's string may have (others are taken as typed).
fn formatted(format: &str, typed: &str) -> Result<(), String> {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let date = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        matches!(parts[..], [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
    };
    let ok = match format {
        "email" => typed.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !typed.contains(' ')
        }),
        "uri" => url::Url::parse(typed).is_ok(),
        "date" => date(typed),
        "date-time" => typed.split_once(['T', 't']).is_some_and(|(day, time)| {
            date(day) && time.len() >= 8 && time.get(..2).is_some_and(|h| digits(h, 2))
        }),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let (what, example) = match format {
        "email" => ("an email address", "name@example.com"),
        "uri" => ("a URI", "https://example.com/a"),
        "date" => ("a date", "2025-11-25"),
        _ => ("a date and time", "2025-11-25T09:30:00Z"),
    };
    Err(format!("not {what}, such as {example}"))
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
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
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
            "code": {"type": "string", "minLength": 2, "maxLength": 3, "format": "x-code"}
        }});
        // A choice is its value or its title.
        let (response, shown) = answered(schema, "x\nabcd\nab\nBlue\nRed\n1.5\n0.25\n");
        assert_eq!(
            response,
            accepted(json!({"code": "ab", "color": "r", "ratio": 0.25}))
        );
        assert!(shown.contains("code (text, x-code): "), "{shown}");
        assert!(shown.contains("  not one of: r, g\n"), "{shown}");
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
    fn an_answer_fills_the_form_over_its_defaults() {
        let answer = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            from_answer(
                "s",
                &person(),
                &answer(json!({"age": 7, "size": "L", "other": 1}))
            ),
            accepted(json!({"name": "John Doe", "age": 7, "size": "L", "subscribe": false}))
        );
        // `age` is required and has no default.
        assert_eq!(
            from_answer("s", &person(), &answer(json!({"name": "x"}))),
            ElicitationResponse::decline()
        );
    }

    #[test]
    fn only_a_required_field_that_cannot_be_asked_declines_the_form() {
        // Optional: left out, and the rest is asked.
        let schema = json!({"properties": {"blob": {"type": "object"}, "n": {"type": "integer"}}});
        let (response, shown) = answered(schema, "3\n");
        assert_eq!(response, accepted(json!({"n": 3})));
        assert!(shown.contains("field `blob` is of type object, which this terminal form cannot ask: left out (it is optional)"), "{shown}");
        // With a default: the default is sent.
        let schema = json!({"properties": {"blob": {"type": "object", "default": {"a": 1}}},
                            "required": ["blob"]});
        let (response, shown) = answered(schema, "");
        assert_eq!(response, accepted(json!({"blob": {"a": 1}})));
        assert!(shown.contains("its default is sent"), "{shown}");
        // Required without a default: declined.
        let schema = json!({"properties": {"blob": {"type": "object"}}, "required": ["blob"]});
        let (response, shown) = answered(schema, "a\n");
        assert_eq!(response, ElicitationResponse::decline());
        assert!(
            shown.contains("declined, its required field `blob` is of type object"),
            "{shown}"
        );
        // No properties: nothing to ask, accepted empty.
        let (response, _) = answered(json!({"type": "object"}), "");
        assert_eq!(response, ElicitationResponse::accept(Map::new()));
    }

    /// server-everything's form (2025-11-25): every field type, an optional multi-select.
    fn everything_form() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Full Name"},
            "check": {"type": "boolean", "title": "Agree", "default": false},
            "email": {"type": "string", "format": "email"},
            "homepage": {"type": "string", "format": "uri"},
            "birthdate": {"type": "string", "format": "date"},
            "integer": {"type": "integer", "default": 42, "minimum": 1, "maximum": 100},
            "number": {"type": "number", "minimum": 0, "maximum": 1000},
            "untitledSingleSelectEnum": {"type": "string", "enum": ["option1", "option2"]},
            "untitledMultipleSelectEnum": {"type": "array", "minItems": 1, "maxItems": 2,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledSingleSelectEnum": {"type": "string",
                "oneOf": [{"const": "value1", "title": "First"}, {"const": "value2", "title": "Second"}]},
            "titledMultipleSelectEnum": {"type": "array",
                "items": {"anyOf": [{"const": "value1", "title": "First"}, {"const": "value2", "title": "Second"}]},
                "default": ["value1"]},
            "legacyTitledEnum": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["One", "Two"]}
        }, "required": ["name"]})
    }

    #[test]
    fn every_field_type_is_asked_multi_selects_included() {
        // In the order asked: name, then the others by name.
        let typed = [
            "Ada",                 // name
            "1990-13",             // birthdate: refused
            "1990-12-10",          // birthdate
            "yes",                 // check
            "nope",                // email: refused
            "ada@example.com",     // email
            "example.com",         // homepage: refused
            "https://ada.example", // homepage
            "",                    // integer: the default
            "Two",                 // legacyTitledEnum, by its title
            "2000",                // number: refused
            "3.5",                 // number
            "value2, First",       // titledMultipleSelectEnum: by value and title
            "value1",              // titledSingleSelectEnum
            "option3",             // untitledMultipleSelectEnum
            "option1",             // untitledSingleSelectEnum
        ]
        .join("\n")
            + "\n";
        let (response, shown) = answered(everything_form(), &typed);
        assert_eq!(
            response,
            accepted(json!({
                "name": "Ada", "check": true, "birthdate": "1990-12-10",
                "email": "ada@example.com", "homepage": "https://ada.example", "integer": 42,
                "legacyTitledEnum": "opt2", "number": 3.5,
                "titledMultipleSelectEnum": ["value2", "value1"],
                "titledSingleSelectEnum": "value1",
                "untitledMultipleSelectEnum": ["option3"], "untitledSingleSelectEnum": "option1"
            }))
        );
        for said in [
            "not a date, such as 2025-11-25",
            "not an email address, such as name@example.com",
            "not a URI",
            "not from 0 to 1000",
            "titledMultipleSelectEnum (any of: value1 = First, value2 = Second; comma-separated) [default: value1]: ",
            "untitledMultipleSelectEnum (any of: option1, option2, option3; comma-separated, 1 to 2): ",
        ] {
            assert!(shown.contains(said), "{said:?} in {shown}");
        }
    }

    #[test]
    fn an_optional_multi_select_can_be_left_out_and_counts_are_checked() {
        // Enter on every optional field: only the required one and the defaults are sent.
        let (response, _) = answered(everything_form(), &("Ada\n".to_owned() + &"\n".repeat(11)));
        assert_eq!(
            response,
            accepted(json!({"name": "Ada", "check": false, "integer": 42,
                            "titledMultipleSelectEnum": ["value1"]}))
        );
        let schema = json!({"properties": {"pick": {"type": "array", "minItems": 1, "maxItems": 2,
            "items": {"enum": ["a", "b", "c"]}}}, "required": ["pick"]});
        let (response, shown) = answered(schema, "\na,b,c\nd\nc, a, c\n");
        assert_eq!(response, accepted(json!({"pick": ["c", "a"]})));
        assert!(shown.contains("  choose at least 1\n"), "{shown}");
        assert!(shown.contains("  choose at most 2\n"), "{shown}");
        assert!(shown.contains("  not one of: a, b, c\n"), "{shown}");
    }
}
