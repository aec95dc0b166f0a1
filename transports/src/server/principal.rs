//! Who a session's requests come from, as an HTTP server's authenticator says
//! ([`http::Auth`](super::http::Auth)): a name, the token's claims and scopes, and the tools it
//! may use.

/// A bearer token a client presented: `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct PresentedToken(String);

impl PresentedToken {
    /// The token.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for PresentedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PresentedToken(<redacted>)")
    }
}

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
    /// The verified token itself (none for a key): what a gateway exchanges for an
    /// upstream's token on the client's behalf. Never shown.
    pub token: Option<PresentedToken>,
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
            token: None,
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

    /// With the token it presented.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(PresentedToken(token.into()));
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
    fn the_token_is_never_shown() {
        let p = Principal::new("i#alice").with_token("eyJ.secret.sig");
        assert!(!format!("{p:?}").contains("secret"));
        assert_eq!(p.token.unwrap().expose(), "eyJ.secret.sig");
    }

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
