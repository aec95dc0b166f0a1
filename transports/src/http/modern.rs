//! The headers of a 2026-07-28 (stateless) request over Streamable HTTP, from what the
//! framer said of it ([`Stateless`]): `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
//! and the tool's `Mcp-Param-{Name}` headers. The framer built them from the same values
//! as the body, so they always match it.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::connection::Stateless;

/// The headers of a stateless request of `method`.
pub(crate) fn headers(method: &str, stateless: &Stateless) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut put = |name: &str, value: &str| {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    };
    put("mcp-protocol-version", &stateless.protocol_version);
    put("mcp-method", method);
    if let Some(name) = &stateless.name {
        put("mcp-name", name);
    }
    for (name, value) in &stateless.params {
        put(name, value);
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_request_gets_the_headers_it_was_framed_with() {
        let stateless = Stateless::new("2026-07-28".into())
            .name("q".into())
            .param("Mcp-Param-Region".into(), "=?base64?ZXUgMSA=?=".into());
        let h = headers("tools/call", &stateless);
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "q");
        assert_eq!(h["mcp-param-region"], "=?base64?ZXUgMSA=?=");
        assert_eq!(h.len(), 4);

        let list = headers("tools/list", &Stateless::new("2026-07-28".into()));
        assert_eq!(list.len(), 2, "no name, no params");
    }
}
