//! Whether a URI is one a resource template names: RFC 6570 level 1, where each
//! `{variable}` stands for one or more characters other than `/` (and the operators of higher
//! levels, `{+x}` or `{/x}` say, are taken as plain variables).

/// Whether `uri` matches `template`.
pub(crate) fn matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    // The text before the first variable must be the URI's start.
    let Some(head) = parts.next() else {
        return false;
    };
    let Some(after) = rest.strip_prefix(head) else {
        return false;
    };
    rest = after;
    for part in parts {
        let Some((_, literal)) = part.split_once('}') else {
            return false;
        };
        // The variable takes the shortest run that lets the literal follow; the last one
        // takes everything that is left.
        let taken = if literal.is_empty() {
            rest.len()
        } else {
            match rest.find(literal) {
                Some(at) => at,
                None => return false,
            }
        };
        let value = &rest[..taken];
        if value.is_empty() || value.contains('/') {
            return false;
        }
        rest = &rest[taken + literal.len()..];
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn variables_match_one_segment() {
        assert!(matches("demo://note/{id}", "demo://note/42"));
        assert!(!matches("demo://note/{id}", "demo://note/"));
        assert!(!matches("demo://note/{id}", "demo://note/4/2"));
        assert!(!matches("demo://note/{id}", "demo://other/42"));
        assert!(matches("file:///{dir}/{name}.txt", "file:///a/b.txt"));
        assert!(!matches("file:///{dir}/{name}.txt", "file:///a/b.md"));
        assert!(matches("plain://x", "plain://x"));
        assert!(!matches("plain://x", "plain://xy"));
        assert!(!matches("broken://{x", "broken://{x"));
    }
}
