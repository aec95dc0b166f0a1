//! Variable expansion in config values: `${VAR}`, `${VAR:-default}`, `${env:VAR}`,
//! `${workspaceFolder}` and `${userHome}`.
//!
//! The forms come from the hosts whose files we read: Claude Code writes `${VAR}` and
//! `${VAR:-default}`, Cursor and VS Code write `${env:VAR}`, `${workspaceFolder}` and
//! `${userHome}`. VS Code's `${input:...}` prompts the user, which a runtime cannot do, so it
//! is an error naming the input. A `$` not followed by `{` is literal. `${client.…}` is left
//! as it is: a per-client value (see [`client_values`](crate::client_values)), filled for
//! each client of a gateway.
//!
//! ```text
//! "${API_URL:-http://localhost:8080}/mcp"  →  "http://localhost:8080/mcp" when API_URL is unset or empty
//! ```

/// What variables expand to.
pub(super) struct Vars<'a> {
    /// The environment (the process's, or a test's).
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
    /// What `${workspaceFolder}` expands to.
    pub(super) workspace: &'a str,
}

impl Vars<'_> {
    /// Expands every `${...}` in `text`; the error is a message naming the variable.
    pub(super) fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(dollar) = rest.find("${") {
            out.push_str(&rest[..dollar]);
            let after = &rest[dollar + 2..];
            let end = after.find('}').ok_or_else(|| {
                format!("unterminated `${{` in {text:?} (expected a closing `}}`)")
            })?;
            let content = &after[..end];
            if content.starts_with("client.") {
                // A per-client value, filled per client when its instance starts.
                out.push_str(&rest[dollar..dollar + 2 + end + 1]);
            } else {
                out.push_str(&self.variable(content)?);
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The value of one `${content}`.
    fn variable(&self, content: &str) -> Result<String, String> {
        if content.starts_with("input:") {
            return Err(format!(
                "`${{{content}}}` asks for a VS Code input, which cannot be prompted for here; \
                 put the value in an environment variable and write `${{env:NAME}}`"
            ));
        }
        let (name, default) = match content.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (content, None),
        };
        if default.is_some_and(|d| d.contains("${")) {
            return Err(format!(
                "`${{{content}}}`: variables inside a default are not supported"
            ));
        }
        let value = match name {
            "workspaceFolder" => Some(self.workspace.to_owned()),
            "userHome" => (self.env)("HOME"),
            _ => {
                let name = name.strip_prefix("env:").unwrap_or(name);
                if name.is_empty() {
                    return Err(format!("`${{{content}}}` has no variable name"));
                }
                if name.contains(':') {
                    return Err(format!("unsupported variable `${{{content}}}`"));
                }
                (self.env)(name)
            }
        };
        match (value, default) {
            // As in the shell, `:-` also replaces an empty value.
            (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
            (Some(value), _) => Ok(value),
            (None, Some(default)) => Ok(default.to_owned()),
            (None, None) => {
                let name = name.strip_prefix("env:").unwrap_or(name);
                let name = if name == "userHome" { "HOME" } else { name };
                Err(format!(
                    "environment variable `{name}` is not set (write `${{{name}:-default}}` for a default)"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".to_owned()),
            "EMPTY" => Some(String::new()),
            "HOME" => Some("/home/me".to_owned()),
            _ => None,
        }
    }

    fn expand(text: &str) -> Result<String, String> {
        Vars {
            env: &env,
            workspace: "/ws",
        }
        .expand(text)
    }

    #[test]
    fn forms() {
        assert_eq!(expand("Bearer ${TOKEN}").unwrap(), "Bearer t0k");
        assert_eq!(expand("${env:TOKEN}!").unwrap(), "t0k!");
        assert_eq!(expand("${NOPE:-x:y}").unwrap(), "x:y");
        assert_eq!(expand("${TOKEN:-x}").unwrap(), "t0k");
        assert_eq!(expand("${EMPTY:-fallback}").unwrap(), "fallback");
        assert_eq!(expand("${EMPTY}").unwrap(), "");
        assert_eq!(expand("${NOPE:-}").unwrap(), "");
        assert_eq!(expand("${workspaceFolder}/src").unwrap(), "/ws/src");
        assert_eq!(expand("${userHome}/.cache").unwrap(), "/home/me/.cache");
        assert_eq!(expand("${A:-1}${B:-2}").unwrap(), "12");
        assert_eq!(
            expand("${TOKEN}/${client.name}/${client.secret.T:-x}").unwrap(),
            "t0k/${client.name}/${client.secret.T:-x}"
        );
    }

    #[test]
    fn a_lone_dollar_is_literal() {
        assert_eq!(expand("$HOME costs $5 {x}").unwrap(), "$HOME costs $5 {x}");
        assert_eq!(expand("trailing $").unwrap(), "trailing $");
    }

    #[test]
    fn errors_name_the_variable() {
        assert!(expand("${NOPE}").unwrap_err().contains("`NOPE` is not set"));
        assert!(expand("${env:NOPE}")
            .unwrap_err()
            .contains("`NOPE` is not set"));
        assert!(expand("${input:api-key}")
            .unwrap_err()
            .contains("`${input:api-key}`"));
        assert!(expand("x ${TOKEN").unwrap_err().contains("unterminated"));
        assert!(expand("${}").unwrap_err().contains("no variable name"));
        assert!(expand("${command:foo}")
            .unwrap_err()
            .contains("unsupported"));
        assert!(expand("${A:-${B}}")
            .unwrap_err()
            .contains("inside a default"));
    }
}
