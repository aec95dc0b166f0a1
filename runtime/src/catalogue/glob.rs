//! Allow/deny globs over a server's original tool names.
//!
//! A glob is literal text with two wildcards: `*` matches any run of characters (including
//! none) and `?` matches exactly one. There is no escaping and no character classes; matching
//! is case-sensitive and covers the whole name.
//!
//! ```text
//! allow ["get_*"], deny ["*delete*"]:  get_user ✓   get_deleted ✗   put_user ✗
//! ```

/// Whether a server's tool is offered: (allow is empty or some allow glob matches) and no deny
/// glob matches. `tool` is the name as the server listed it.
///
/// The call path enforces this too, so a denied tool cannot be called by any name.
pub(crate) fn tool_allowed(allow: &[String], deny: &[String], tool: &str) -> bool {
    (allow.is_empty() || allow.iter().any(|glob| matches(glob, tool)))
        && !deny.iter().any(|glob| matches(glob, tool))
}

/// Whether `glob` matches all of `text`.
///
/// Greedy with one backtrack point (the last `*`), so it runs in O(len(glob) × len(text)) at
/// worst and never recurses.
pub(crate) fn matches(glob: &str, text: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut g, mut t) = (0, 0);
    // After the last `*` seen: the glob position after it and the text position it absorbed up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g + 1, t));
                g += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                g += 1;
                t += 1;
            }
            _ => match star {
                // Let the last `*` absorb one more character and retry from there.
                Some((after, absorbed)) => {
                    star = Some((after, absorbed + 1));
                    g = after;
                    t = absorbed + 1;
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn literal_matches_whole_name_only() {
        assert!(matches("search", "search"));
        assert!(!matches("search", "search2"));
        assert!(!matches("search", "re_search"));
        assert!(!matches("search", "Search"));
        assert!(matches("", ""));
        assert!(!matches("", "a"));
    }

    #[test]
    fn star_matches_any_run() {
        assert!(matches("*", ""));
        assert!(matches("*", "anything.at/all"));
        assert!(matches("get_*", "get_"));
        assert!(matches("get_*", "get_user"));
        assert!(!matches("get_*", "xget_user"));
        assert!(matches("*delete*", "delete"));
        assert!(matches("*delete*", "soft_delete_user"));
        assert!(!matches("*delete*", "soft_del_user"));
        assert!(matches("a*b*c", "aXXbYYbc"));
        assert!(!matches("a*b*c", "aXXbYYbcd"));
        assert!(matches("**x", "x"));
    }

    #[test]
    fn question_mark_matches_one_char() {
        assert!(matches("v?", "v1"));
        assert!(!matches("v?", "v"));
        assert!(!matches("v?", "v12"));
        assert!(matches("t?ol", "t\u{e9}ol"));
        assert!(matches("?*?", "ab"));
        assert!(!matches("?*?", "a"));
    }

    #[test]
    fn regex_and_path_characters_are_literal() {
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "axb"));
        assert!(matches("[x]", "[x]"));
        assert!(!matches("[x]", "x"));
        assert!(matches("fs/*", "fs/read/deep"));
    }

    #[test]
    fn allow_then_deny() {
        let allow = globs(&["get_*", "list_*"]);
        let deny = globs(&["*delete*"]);
        assert!(tool_allowed(&allow, &deny, "get_user"));
        assert!(tool_allowed(&allow, &deny, "list_files"));
        assert!(!tool_allowed(&allow, &deny, "get_deleted_items"));
        assert!(!tool_allowed(&allow, &deny, "put_user"));
        // An empty allow list allows everything the deny list does not name.
        assert!(tool_allowed(&[], &deny, "put_user"));
        assert!(!tool_allowed(&[], &deny, "delete"));
        assert!(tool_allowed(&[], &[], ""));
    }
}
