//! Which requests are sent again when their response breaks.
//!
//! Over HTTP a request is answered on its own response, which the network can cut: a reset
//! or a truncated body after the request went out, or an event stream that ends before the
//! answer and cannot be resumed (the stateless era never resumes; the handshake era resumes
//! a stream that carried an event id, with `Last-Event-ID`). Then the request is lost and
//! the server may or may not have run it. Requests that change nothing (lists, reads,
//! prompt gets, completions, pings, discovery) are sent again under a new id, within the
//! call's deadline; a tool call only when the caller, the tool's policy or the server's
//! setting said the tool is safe to run twice. Anything else fails with
//! [`ErrorKind::StreamBroken`](crate::ErrorKind::StreamBroken).

use switchboard_codecs::mcp::methods;

/// How many times one request is sent again after broken streams.
pub(crate) const MAX_REISSUES: u32 = 2;

/// The methods that change nothing on the server, so that running them twice is harmless.
const SAFE: &[&str] = &[
    methods::TOOLS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCE_TEMPLATES_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_READ,
    methods::PROMPTS_GET,
    methods::COMPLETION_COMPLETE,
    methods::PING,
    switchboard_codecs::mcp::modern::SERVER_DISCOVER,
];

/// Whether a `method` request whose stream broke may be sent again: safe methods always,
/// `tools/call` when the call's or tool's policy (`policy`, `None`: neither said) or else
/// the server's setting (`server`) opted in.
pub(crate) fn allowed(method: &str, policy: Option<bool>, server: bool) -> bool {
    if method == methods::TOOLS_CALL {
        return policy.unwrap_or(server);
    }
    SAFE.contains(&method)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_sent_again_and_tool_calls_only_when_opted_in() {
        for method in [
            "tools/list",
            "resources/read",
            "prompts/get",
            "completion/complete",
        ] {
            assert!(allowed(method, None, false), "{method}");
        }
        assert!(!allowed("tools/call", None, false), "off by default");
        assert!(allowed("tools/call", None, true), "the server's setting");
        assert!(
            allowed("tools/call", Some(true), false),
            "the tool's policy"
        );
        assert!(
            !allowed("tools/call", Some(false), true),
            "the tool's policy beats the server's"
        );
        assert!(allowed("server/discover", None, false));
        assert!(allowed("ping", None, false));
        assert!(
            !allowed("initialize", None, true),
            "a new session each time"
        );
        assert!(!allowed("logging/setLevel", None, true));
    }
}
