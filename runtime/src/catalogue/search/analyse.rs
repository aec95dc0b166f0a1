//! Text analysis for tool search: how a tool's fields and a query become terms.
//!
//! One pipeline for both sides, so that they meet:
//!
//! 1. **Words.** Text splits on every character that is not a letter or a digit, so
//!    `snake_case`, `kebab-case`, `dotted.names` and `path/like` names come apart; inside a
//!    run, `camelCase` and `HTMLParser` split at their case changes (`html`, `parser`) and
//!    letters split from digits (`v2` is `v`, `2`).
//! 2. **Lower case.**
//! 3. **Stop words.** A fixed English list ([`STOP_WORDS`]): function words, and the
//!    request filler that carries nothing about a tool (`please`, `want`, `need`, `get`).
//! 4. **Stems.** The Snowball English (Porter2) stemmer of the `rust-stemmers` crate folds
//!    plurals and common suffixes (`repositories` and `repository` are `repositori`,
//!    `running` is `run`).
//!
//! Queries, and only queries, are then widened by [`SYNONYMS`]: groups of words that name
//! the same operation or object in any tool catalogue (`delete`/`remove`, `folder`/
//! `directory`, `pr`/`pull request`), each added at [`SYNONYM_WEIGHT`] of a word the user
//! wrote.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Words dropped from fields and queries (lower case, before stemming).
pub(crate) const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
    "y",
    "don",
    "doesn",
    "isn",
    "aren",
    "wasn",
    "weren",
    "won",
    "wouldn",
    "shouldn",
    "let",
    "lets",
    "please",
    "want",
    "need",
    "like",
    "get",
];

/// Groups of words that name one operation or object in tool catalogues in general (CRUD
/// verbs, files and folders, code hosting, messaging, payments...), one group a line; `_`
/// joins the words of a phrase (`pull_request`). A query word of a group brings in every
/// other member of it. Written for tool catalogues at large, not for one evaluation set:
/// none names a product, a server or a tool.
pub(crate) const SYNONYMS: &[&str] = &[
    "delete remove erase discard purge destroy",
    "create make new add",
    "update modify change edit alter",
    "get fetch retrieve read obtain",
    "show view display",
    "list enumerate",
    "search find lookup look query hunt locate",
    "send post publish",
    "directory folder dir",
    "file document",
    "repository repo",
    "pull_request pr",
    "merge_request mr",
    "issue ticket bug",
    "comment reply note remark",
    "user member person people account",
    "image picture photo screenshot",
    "url link address website webpage",
    "page webpage",
    "message chat",
    "move rename relocate",
    "copy duplicate clone",
    "run execute",
    "download save",
    "upload attach",
    "start begin launch",
    "stop cancel halt abort",
    "close shut",
    "open launch",
    "approve review",
    "permission access allowed rights",
    "subscribe follow watch watcher",
    "unsubscribe unfollow unwatch",
    "history log changelog",
    "status state progress",
    "schedule calendar",
    "time clock",
    "price cost pricing",
    "payment charge pay",
    "invoice bill",
    "label tag",
    "table sheet",
];

/// The weight of a synonym next to a word the query has (1).
pub(crate) const SYNONYM_WEIGHT: f32 = 0.5;

/// The terms of `text`, in order, as [`analyse`] makes them, into `out`.
pub(crate) fn terms_into(text: &str, out: &mut Vec<String>) {
    let stemmer = stemmer();
    for_each_word(text, |word| {
        if !is_stop_word(word) {
            out.push(stemmer.stem(word).into_owned());
        }
    });
}

/// Analyses many texts, remembering each word's stem: the words of a server's tools repeat
/// (their names, `issue`, `page`, `the` property names), and stemming is most of the cost
/// of analysing them.
#[derive(Debug, Default)]
pub(crate) struct Analyser {
    stems: HashMap<String, String>,
}

impl Analyser {
    /// [`terms_into`], remembering stems.
    pub(crate) fn terms_into(&mut self, text: &str, out: &mut Vec<String>) {
        let stemmer = stemmer();
        let stems = &mut self.stems;
        for_each_word(text, |word| {
            if is_stop_word(word) {
                return;
            }
            let stem = match stems.get(word) {
                Some(stem) => stem.clone(),
                None => {
                    let stem = stemmer.stem(word).into_owned();
                    stems.insert(word.to_owned(), stem.clone());
                    stem
                }
            };
            out.push(stem);
        });
    }
}

/// The terms of `text`, in order: words split, lower-cased, stop words dropped, stemmed.
pub(crate) fn analyse(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    terms_into(text, &mut out);
    out
}

/// The weighted terms of a query: each term it has (weight 1, however often it occurs),
/// and the members of their [`SYNONYMS`] groups (at [`SYNONYM_WEIGHT`], unless the query
/// has them itself), in first-seen order.
pub(crate) fn query_terms(query: &str) -> Vec<(String, f32)> {
    let own = analyse(query);
    let mut terms: Vec<(String, f32)> = Vec::with_capacity(own.len() * 2);
    let push = |term: &str, weight: f32, terms: &mut Vec<(String, f32)>| match terms
        .iter_mut()
        .find(|(t, _)| t == term)
    {
        Some((_, w)) => *w = w.max(weight),
        None => terms.push((term.to_owned(), weight)),
    };
    for term in &own {
        push(term, 1.0, &mut terms);
    }
    let table = synonyms();
    for term in &own {
        for phrase in table.get(term.as_str()).into_iter().flatten() {
            for word in phrase {
                push(word, SYNONYM_WEIGHT, &mut terms);
            }
        }
    }
    terms
}

fn is_stop_word(word: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
        .contains(word)
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Stemmed single word → the stemmed phrases of its groups' other members.
fn synonyms() -> &'static HashMap<String, Vec<Vec<String>>> {
    static TABLE: OnceLock<HashMap<String, Vec<Vec<String>>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let stemmer = stemmer();
        // Members are stemmed but not stop-worded: `get` is a member though never a query
        // term, so that `fetch` still brings in `get_*` tools.
        let stem_phrase = |phrase: &str| -> Vec<String> {
            let mut words = Vec::new();
            for_each_word(phrase, |w| words.push(stemmer.stem(w).into_owned()));
            words
        };
        let mut table: HashMap<String, Vec<Vec<String>>> = HashMap::new();
        for group in SYNONYMS {
            let members: Vec<Vec<String>> = group.split_whitespace().map(stem_phrase).collect();
            for member in &members {
                // Only a single word is looked up: a phrase is what an abbreviation becomes.
                let [key] = &member[..] else { continue };
                let others = table.entry(key.clone()).or_default();
                for other in &members {
                    if other != member && !others.contains(other) {
                        others.push(other.clone());
                    }
                }
            }
        }
        table
    })
}

/// The lower-cased words of `text` (see the module's step 1): `git_log` is `git log`.
#[cfg(feature = "semantic")]
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for_each_word(text, |word| words.push(word.to_owned()));
    words
}

/// Calls `f` with each lower-cased word of `text` (see the module's step 1).
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let flush_run = |run: &mut Vec<char>, word: &mut String, f: &mut dyn FnMut(&str)| {
        split_run(run, |part| {
            word.clear();
            word.extend(part.iter().flat_map(|c| c.to_lowercase()));
            f(word.as_str());
        });
        run.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            run.push(c);
        } else if !run.is_empty() {
            flush_run(&mut run, &mut word, &mut f);
        }
    }
    if !run.is_empty() {
        flush_run(&mut run, &mut word, &mut f);
    }
}

/// The kind of a character, for case and digit boundaries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
}

fn class(c: char) -> Class {
    if c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else {
        // Lower case, and letters without case.
        Class::Lower
    }
}

/// Splits a run of letters and digits at its case and digit boundaries: `getHTTPResponse2`
/// is `get`, `HTTP`, `Response`, `2`.
fn split_run(run: &[char], mut f: impl FnMut(&[char])) {
    let mut start = 0;
    for (before, pair) in run.windows(2).enumerate() {
        // A boundary between `pair[0]` and `pair[1]` splits at `i`.
        let i = before + 1;
        let (prev, here) = (class(pair[0]), class(pair[1]));
        let next = run.get(i + 1).map(|c| class(*c));
        let boundary = match (prev, here) {
            (Class::Lower, Class::Upper) => true,
            // The last capital of an acronym starts the next word: `HTTPResponse`.
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            (a, b) => (a == Class::Digit) != (b == Class::Digit),
        };
        if boundary {
            f(&run[start..i]);
            start = i;
        }
    }
    if start < run.len() {
        f(&run[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, |w| out.push(w.to_owned()));
        out
    }

    #[test]
    fn names_split_in_every_convention() {
        assert_eq!(words("git_diff_unstaged"), ["git", "diff", "unstaged"]);
        assert_eq!(words("API-post-page"), ["api", "post", "page"]);
        assert_eq!(words("files.readFile"), ["files", "read", "file"]);
        assert_eq!(words("getHTTPResponse2"), ["get", "http", "response", "2"]);
        assert_eq!(
            words("browser_take_screenshot"),
            ["browser", "take", "screenshot"]
        );
        assert_eq!(words("ÉtéCafé naïve"), ["été", "café", "naïve"]);
        assert_eq!(words("  "), Vec::<String>::new());
    }

    #[test]
    fn terms_are_stemmed_without_stop_words() {
        assert_eq!(
            analyse("Lists the repositories of a user"),
            ["list", "repositori", "user"]
        );
        assert_eq!(analyse("listRepositories"), ["list", "repositori"]);
        assert_eq!(analyse("please get me the issues"), ["issu"]);
    }

    #[test]
    fn an_analyser_remembers_stems_and_agrees() {
        let mut analyser = Analyser::default();
        let text = "Lists the repositories of a user; lists users' repositories";
        for _ in 0..2 {
            let mut out = Vec::new();
            analyser.terms_into(text, &mut out);
            assert_eq!(out, analyse(text));
        }
        assert_eq!(
            analyser.stems.get("repositories").map(String::as_str),
            Some("repositori")
        );
    }

    #[test]
    fn queries_bring_in_synonyms_at_a_lower_weight() {
        let terms = query_terms("remove the folder");
        let weight = |t: &str| terms.iter().find(|(term, _)| term == t).map(|(_, w)| *w);
        assert_eq!(weight("remov"), Some(1.0));
        assert_eq!(weight("folder"), Some(1.0));
        assert_eq!(weight("delet"), Some(SYNONYM_WEIGHT));
        assert_eq!(weight("directori"), Some(SYNONYM_WEIGHT));
        assert_eq!(weight("move"), None);
        // An abbreviation brings in its phrase's words; the words do not bring it back.
        let pr = query_terms("merge my PR");
        assert!(pr.contains(&("pull".to_owned(), SYNONYM_WEIGHT)));
        assert!(pr.contains(&("request".to_owned(), SYNONYM_WEIGHT)));
        assert!(!query_terms("pull").iter().any(|(t, _)| t == "pr"));
        // A word the query has keeps its own weight when a synonym would bring it in too.
        let both = query_terms("delete or remove");
        assert_eq!(
            both,
            [
                ("delet".to_owned(), 1.0),
                ("remov".to_owned(), 1.0),
                ("eras".to_owned(), SYNONYM_WEIGHT),
                ("discard".to_owned(), SYNONYM_WEIGHT),
                ("purg".to_owned(), SYNONYM_WEIGHT),
                ("destroy".to_owned(), SYNONYM_WEIGHT)
            ]
        );
    }
}
