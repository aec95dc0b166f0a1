//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1), as far as a bearer-token client needs
//! them: the scheme and its `name=value` parameters.

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

/// What a server said when it answered 401: one parsed `WWW-Authenticate` challenge.
///
/// MCP servers (2025-06-18 and later) send `Bearer resource_metadata="<url>"`, often with
/// `scope` and `error`; [`Challenge::resource_metadata`] is the Protected Resource Metadata
/// URL an OAuth client starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Challenge {
    /// The auth scheme, as sent (e.g. `Bearer`); empty when the server sent no challenge.
    pub scheme: String,
    /// The parameters in order, names lower-cased, quoted values unescaped.
    pub params: Vec<(String, String)>,
    /// The `resource_metadata` parameter, if any.
    pub resource_metadata: Option<String>,
}

impl Challenge {
    /// Parses one header value. When it holds several challenges, the `Bearer` one is
    /// chosen, else the first. `None` for an empty value.
    pub fn parse(value: &str) -> Option<Challenge> {
        let challenges = parse_all(value);
        let pick = challenges
            .iter()
            .position(|c| c.scheme.eq_ignore_ascii_case("bearer"))
            .unwrap_or(0);
        challenges.into_iter().nth(pick)
    }

    /// The value of parameter `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The challenge of a 401 response: the `Bearer` one among its `WWW-Authenticate`
    /// headers, else the first, else an empty challenge.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Challenge {
        let mut all = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(parse_all)
            .collect::<Vec<_>>();
        let pick = all
            .iter()
            .position(|c| c.scheme.eq_ignore_ascii_case("bearer"))
            .unwrap_or(0);
        if all.is_empty() {
            Challenge::default()
        } else {
            all.swap_remove(pick)
        }
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Parses `scheme [token68 | name=value *(, name=value)] *(, challenge)`.
fn parse_all(value: &str) -> Vec<Challenge> {
    let mut out: Vec<Challenge> = Vec::new();
    let mut rest = value.trim_start_matches([' ', '\t', ',']);
    while !rest.is_empty() {
        // A token: a scheme, or a parameter name when `=` follows.
        let end = rest.find(|c| !is_token_char(c)).unwrap_or(rest.len());
        if end == 0 {
            // Not a token: skip one character and go on.
            let mut chars = rest.chars();
            chars.next();
            rest = chars.as_str().trim_start_matches([' ', '\t', ',']);
            continue;
        }
        let token = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        match (after.strip_prefix('='), out.last_mut()) {
            (Some(value_part), Some(challenge)) if !value_part.starts_with('=') => {
                let value_part = value_part.trim_start_matches([' ', '\t']);
                let (value, remaining) = parse_value(value_part);
                let name = token.to_ascii_lowercase();
                if name == "resource_metadata" {
                    challenge.resource_metadata = Some(value.clone());
                }
                challenge.params.push((name, value));
                rest = remaining;
            }
            _ => {
                // A new challenge; a token68 after it (`Basic abc==`) is kept as a nameless
                // parameter.
                let mut challenge = Challenge {
                    scheme: token.to_owned(),
                    ..Challenge::default()
                };
                rest = after;
                let t68_end = rest
                    .find(|c: char| !(is_token_char(c) || c == '/' || c == '='))
                    .unwrap_or(rest.len());
                let candidate = &rest[..t68_end];
                let followed = rest[t68_end..].trim_start_matches([' ', '\t']);
                let token68 = !candidate.is_empty()
                    && !candidate.trim_end_matches('=').contains('=')
                    && (followed.is_empty() || followed.starts_with(','));
                if token68 {
                    challenge.params.push((String::new(), candidate.to_owned()));
                    rest = &rest[t68_end..];
                }
                out.push(challenge);
            }
        }
        rest = rest.trim_start_matches([' ', '\t', ',']);
    }
    out
}

/// A token or a quoted string, and what follows it.
fn parse_value(input: &str) -> (String, &str) {
    if let Some(quoted) = input.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                c => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = input.find([',', ' ', '\t']).unwrap_or(input.len());
        (input[..end].to_owned(), &input[end..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_with_resource_metadata() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write", error=invalid_token"#,
        )
        .unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.param("SCOPE"), Some("files:read files:write"));
        assert_eq!(c.param("error"), Some("invalid_token"));
    }

    #[test]
    fn bearer_is_picked_among_several() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer realm="mcp", error="a\"b""#).unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(c.param("realm"), Some("mcp"));
        assert_eq!(c.param("error"), Some("a\"b"));
        assert_eq!(c.resource_metadata, None);
    }

    #[test]
    fn bare_scheme_and_token68() {
        assert_eq!(Challenge::parse("Bearer").unwrap().params, vec![]);
        let c = Challenge::parse("Negotiate abc123==").unwrap();
        assert_eq!(c.params, vec![(String::new(), "abc123==".to_owned())]);
        assert!(Challenge::parse("").is_none());
    }
}
