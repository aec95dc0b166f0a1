//! Who a session's requests come from, as an HTTP server's authenticator says
//! ([`http::Auth`](super::http::Auth)): a name, the token's claims and scopes, and the tools it
//! may use.

/// Who a request comes from, as the authenticator says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// A stable name: a key's name, a token's `sub` (with its issuer).
    pub subject: String,
    /// A short name: a key's name, a token's `sub` (what `${client.name}` becomes in a
    /// gateway's per-client config).
    pub name: String,
    /// The verified token's claims (none for a key).
    pub claims: serde_json::Map<String, serde_json::Value>,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// The tools it may see and call (names or `prefix*` patterns); `None`: every tool.
    pub tools: Option<Vec<String>>,
}

impl Principal {
    /// A principal named `subject`, with no scopes and every tool.
    pub fn new(subject: impl Into<String>) -> Self {
        let subject = subject.into();
        Principal {
            name: subject.clone(),
            claims: serde_json::Map::new(),
            subject,
            scopes: Vec::new(),
            tools: None,
        }
    }

    /// With this short name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// With these claims.
    pub fn with_claims(mut self, claims: serde_json::Map<String, serde_json::Value>) -> Self {
        self.claims = claims;
        self
    }

    /// With these scopes.
    pub fn with_scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = scopes;
        self
    }

    /// Limited to these tools (names, or `prefix*` patterns).
    pub fn with_tools(mut self, tools: Option<Vec<String>>) -> Self {
        self.tools = tools;
        self
    }

    /// Whether it may see and call tool `name`.
    pub fn may_use_tool(&self, name: &str) -> bool {
        match &self.tools {
            None => true,
            Some(patterns) => patterns.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_patterns_match_names_and_prefixes() {
        let p = Principal::new("ci").with_tools(Some(vec!["echo".into(), "fs__*".into()]));
        assert!(p.may_use_tool("echo"));
        assert!(p.may_use_tool("fs__read"));
        assert!(!p.may_use_tool("echo2"));
        assert!(!p.may_use_tool("git__log"));
        assert!(Principal::new("all").may_use_tool("anything"));
    }
}
