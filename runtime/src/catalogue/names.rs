//! Catalogue names: what LLM APIs accept (`^[A-Za-z0-9_-]{1,64}$`), and the stable hash that
//! keeps shortened or sanitised names apart.
//!
//! ```text
//! sanitise("my.tool/v2")                    == "my_tool_v2"
//! with_hash("<70 × x>", "srv", "<70 × x>")  == "<55 × x>_<8 hex digits>"   (64 characters)
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// The longest name LLM APIs accept.
pub(crate) const MAX_LEN: usize = 64;
/// Hex digits in a hash suffix.
pub(crate) const HASH_LEN: usize = 8;
/// Between a shortened name and its hash.
const HASH_JOIN: char = '_';

/// Replaces every character outside `[A-Za-z0-9_-]` with `_` (one `_` per character, not per
/// byte). Does not shorten.
pub(crate) fn sanitise(name: &str) -> String {
    name.chars()
        .map(|c| if is_allowed(c) { c } else { '_' })
        .collect()
}

/// Whether `c` may appear in a catalogue name.
pub(crate) fn is_allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `name` is a name LLM APIs accept.
#[cfg(test)]
pub(crate) fn is_valid(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_LEN && name.chars().all(is_allowed)
}

/// `name` (already sanitised) cut to fit, then `_` and the stable hash of (server, original
/// name, salt): always a valid name of at most [`MAX_LEN`] characters.
///
/// `salt` is 0 unless the salted-0 form is already taken in the catalogue.
pub(crate) fn with_hash(name: &str, server: &str, original: &str, salt: u32) -> String {
    debug_assert!(name.chars().all(is_allowed));
    // Sanitised names are ASCII, so any byte index is a char boundary.
    let keep = name.len().min(MAX_LEN - 1 - HASH_LEN);
    let mut out = String::with_capacity(keep + 1 + HASH_LEN);
    out.push_str(&name[..keep]);
    out.push(HASH_JOIN);
    // Writing to a String cannot fail.
    let _ = write!(out, "{:08x}", stable_hash(server, original, salt));
    out
}

/// The name a tool would like in the catalogue, before names are made unique.
#[derive(Debug)]
pub(crate) struct Wanted<'a> {
    /// Sanitised, and prefixed if the naming says so; may be empty or too long.
    pub(crate) name: String,
    /// Whether `name` is exactly the configured prefix, separator and listed tool name (or
    /// just the listed name when unprefixed), i.e. sanitising changed nothing.
    pub(crate) exact: bool,
    /// The server offering the tool.
    pub(crate) server: &'a str,
    /// The tool's name as listed.
    pub(crate) original: &'a str,
}

/// The final name of each wanted name: unique, valid, at most [`MAX_LEN`] characters.
///
/// A wanted name is kept when it is valid and no other tool wants it, or when it is the one
/// exact name among several equal ones (so `a_b` stays `a_b` when `a.b` sanitises onto it);
/// every other name gets a hash. A hashed name that meets a name already given (say a tool
/// listed as `x_12b64103`) is salted until it is unique, in input order, so the result is
/// deterministic.
pub(crate) fn unique(wanted: &[Wanted<'_>]) -> Vec<String> {
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, w) in wanted.iter().enumerate() {
        groups.entry(w.name.as_str()).or_default().push(i);
    }
    let mut keep = vec![false; wanted.len()];
    for (name, group) in &groups {
        if name.is_empty() || name.len() > MAX_LEN {
            continue;
        }
        let mut exacts = group.iter().filter(|&&i| wanted[i].exact);
        let keeper = match (group.as_slice(), exacts.next(), exacts.next()) {
            ([only], _, _) => Some(*only),
            (_, Some(&one), None) => Some(one),
            _ => None,
        };
        if let Some(i) = keeper {
            keep[i] = true;
        }
    }
    let mut taken: HashSet<String> = wanted
        .iter()
        .zip(&keep)
        .filter(|(_, &keep)| keep)
        .map(|(w, _)| w.name.clone())
        .collect();
    let mut hashed: Vec<Option<String>> = vec![None; wanted.len()];
    for (i, w) in wanted.iter().enumerate() {
        if keep[i] {
            continue;
        }
        let mut salt = 0;
        let mut name = with_hash(&w.name, w.server, w.original, salt);
        while taken.contains(&name) {
            salt += 1;
            name = with_hash(&w.name, w.server, w.original, salt);
        }
        taken.insert(name.clone());
        hashed[i] = Some(name);
    }
    wanted
        .iter()
        .zip(hashed)
        .map(|(w, hashed)| hashed.unwrap_or_else(|| w.name.clone()))
        .collect()
}

/// FNV-1a 64 over `server`, NUL, `original` (and, for a non-zero salt, NUL and its decimal
/// digits), folded to 32 bits. The same on every platform, Rust version and run, unlike std's
/// `DefaultHasher`; catalogue names derived from it are stable across restarts.
pub(crate) fn stable_hash(server: &str, original: &str, salt: u32) -> u32 {
    let mut hash = Fnv1a::new();
    hash.write(server.as_bytes());
    hash.write(&[0]);
    hash.write(original.as_bytes());
    if salt != 0 {
        hash.write(&[0]);
        hash.write(salt.to_string().as_bytes());
    }
    let h = hash.0;
    // Truncation is the point: xor-fold the 64-bit hash to 32 bits.
    #[allow(clippy::cast_possible_truncation)]
    let folded = (h ^ (h >> 32)) as u32;
    folded
}

/// 64-bit FNV-1a.
struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Fnv1a(Self::OFFSET)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitise_replaces_each_disallowed_char() {
        assert_eq!(sanitise("my.tool/v2"), "my_tool_v2");
        assert_eq!(sanitise("ok_Name-9"), "ok_Name-9");
        assert_eq!(sanitise("caf\u{e9} bar"), "caf__bar");
        assert_eq!(sanitise(""), "");
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        let fnv = |s: &str| {
            let mut h = Fnv1a::new();
            h.write(s.as_bytes());
            h.0
        };
        assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn hash_is_stable() {
        // Fixed values: if these change, every hashed catalogue name changes with them.
        assert_eq!(
            format!("{:08x}", stable_hash("files", "my.tool", 0)),
            "12b64103"
        );
        assert_eq!(
            with_hash("my_tool", "files", "my.tool", 0),
            "my_tool_12b64103"
        );
        assert_eq!(
            format!("{:08x}", stable_hash("files", "my.tool", 1)),
            "e50a0598"
        );
        assert_ne!(stable_hash("a", "bc", 0), stable_hash("ab", "c", 0));
    }

    #[test]
    fn with_hash_fits_and_keeps_the_start() {
        let long = "x".repeat(200);
        let name = with_hash(&long, "srv", &long, 0);
        assert_eq!(name.len(), MAX_LEN);
        assert!(name.starts_with(&"x".repeat(MAX_LEN - 1 - HASH_LEN)));
        assert!(is_valid(&name));
        let short = with_hash("", "srv", "", 0);
        assert_eq!(short.len(), 1 + HASH_LEN);
        assert!(is_valid(&short));
    }
}
