//! VS Code's `envFile`: a dotenv file of `KEY=VALUE` lines.
//!
//! Blank lines and `#` comments are skipped, an `export ` prefix is allowed, and a value may
//! be quoted: single quotes keep it verbatim, double quotes understand `\n`, `\"` and `\\`.
//! An unquoted value ends at ` #` (a trailing comment). Values are not expanded.
//!
//! ```text
//! # credentials
//! export API_KEY="s3cret"
//! REGION=eu-west-1   # trailing comment
//! ```

/// Parses a dotenv file into distinct variables in first-seen order; the error is
/// `line N: ...`.
pub(super) fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let bad = |what: &str| format!("line {}: {what}", index + 1);
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUE"))?;
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(bad("expected a variable name before `=`"));
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                let inner = &value[1..];
                let end = if quote == '"' {
                    closing_double_quote(inner)
                } else {
                    inner.find('\'')
                };
                let end = end.ok_or_else(|| bad("unterminated quoted value"))?;
                let inner = &inner[..end];
                if quote == '"' {
                    unescape(inner)
                } else {
                    inner.to_owned()
                }
            }
            _ => match value.find(" #") {
                Some(comment) => value[..comment].trim_end().to_owned(),
                None => value.to_owned(),
            },
        };
        // A repeated key: the later line wins, as it would in a shell.
        match vars.iter_mut().find(|slot| slot.0 == key) {
            Some(slot) => slot.1 = value,
            None => vars.push((key.to_owned(), value)),
        }
    }
    Ok(vars)
}

/// Whether the byte at `at` is preceded by an odd number of backslashes.
fn escaped(text: &str, at: usize) -> bool {
    text[..at].bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// The first `"` in `text` that is not escaped.
fn closing_double_quote(text: &str) -> Option<usize> {
    text.match_indices('"')
        .map(|(at, _)| at)
        .find(|&at| !escaped(text, at))
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other @ ('"' | '\\')) => out.push(other),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    #[test]
    fn lines_comments_quotes_and_export() {
        let text = "# a comment\n\nA=1\nexport B = two words \nC='single # kept'\n\
                    D=\"dq \\\"x\\\" \\n end\"\nE=\nF=v # trailing\nG=a=b\nA=again\n";
        let want = [
            ("A", "again"),
            ("B", "two words"),
            ("C", "single # kept"),
            ("D", "dq \"x\" \n end"),
            ("E", ""),
            ("F", "v"),
            ("G", "a=b"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(pairs(text), want);
    }

    #[test]
    fn malformed_lines_are_errors_with_line_numbers() {
        assert_eq!(
            parse("A=1\njunk\n").unwrap_err(),
            "line 2: expected KEY=VALUE"
        );
        assert!(parse("=1").unwrap_err().starts_with("line 1:"));
        assert!(parse("A=\"open").unwrap_err().contains("unterminated"));
    }
}
