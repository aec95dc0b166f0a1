//! Each client's own secrets, for servers whose config says `${client.secret.NAME}`: a
//! credentials file (`serve --credentials FILE`) maps a principal, named as the gateway names
//! it (`key:NAME` for a key, `ISSUER#SUB` for a token), to its secrets.
//!
//! ```json
//! { "key:alice": { "GITHUB_TOKEN": "ghp_…" }, "https://idp.example.com#bob": { "GITHUB_TOKEN": "ghp_…" } }
//! ```
//!
//! The file is read again when it changes; an instance started with a secret that changed
//! is replaced on its client's next request (the old one finishing its calls first). No
//! secret is ever logged: errors name the principal and the secret, never a value.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

/// The secrets of each principal.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    secrets: HashMap<String, BTreeMap<String, String>>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Who has secrets, never what they are.
        f.debug_struct("Credentials")
            .field("principals", &self.secrets.len())
            .finish()
    }
}

/// A credentials file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// It could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// It is not an object of principals, each an object of string secrets. The message
    /// says where, never a value.
    #[error("{path}: {message}")]
    Shape {
        /// The file.
        path: String,
        /// What is wrong, and where.
        message: String,
    },
}

impl Credentials {
    /// Reads a credentials file.
    pub fn load(path: &Path) -> Result<Credentials, CredentialsError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CredentialsError::Read {
            path: shown.clone(),
            source,
        })?;
        Credentials::parse(&text).map_err(|message| CredentialsError::Shape {
            path: shown,
            message,
        })
    }

    /// Parses a credentials file's text: `{principal: {NAME: value}}`.
    pub fn parse(text: &str) -> Result<Credentials, String> {
        // serde_json's own messages may quote the text: only its position is kept.
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "not JSON (line {}, column {}): expected {{\"principal\": {{\"NAME\": \"value\"}}}}",
                e.line(),
                e.column()
            )
        })?;
        let serde_json::Value::Object(principals) = value else {
            return Err("expected an object of principals".to_owned());
        };
        let mut secrets = HashMap::new();
        for (principal, entry) in principals {
            let serde_json::Value::Object(entry) = entry else {
                return Err(format!("{principal}: expected an object of secrets"));
            };
            let mut own = BTreeMap::new();
            for (name, value) in entry {
                let serde_json::Value::String(value) = value else {
                    return Err(format!("{principal}.{name}: expected a string"));
                };
                own.insert(name, value);
            }
            secrets.insert(principal, own);
        }
        Ok(Credentials { secrets })
    }

    /// The secrets of `principal` (its subject), if the file names it.
    pub fn of(&self, principal: &str) -> Option<&BTreeMap<String, String>> {
        self.secrets.get(principal)
    }

    /// How many principals have secrets.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// Whether no principal has secrets.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_and_their_secrets() {
        let c = Credentials::parse(r#"{"key:alice": {"T": "s3cret"}, "key:bob": {}}"#).unwrap();
        assert_eq!(c.of("key:alice").unwrap()["T"], "s3cret");
        assert!(c.of("key:bob").unwrap().is_empty());
        assert!(c.of("key:carol").is_none());
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn a_bad_file_is_refused_without_its_values() {
        let e = Credentials::parse(r#"{"key:alice": {"T": 1}}"#).unwrap_err();
        assert!(e.contains("key:alice.T"), "{e}");
        let e = Credentials::parse(r#"{"key:alice": {"T": "s3cret""#).unwrap_err();
        assert!(!e.contains("s3cret") && e.contains("line 1"), "{e}");
        assert!(Credentials::parse("[]").is_err());
        assert!(Credentials::parse(r#"{"key:a": "x"}"#).is_err());
    }
}
