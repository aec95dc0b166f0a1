//! A server's JSON-RPC error answer as the caller's [`Error`]: the codes MCP gives a meaning
//! become their typed kinds, anything else stays [`ErrorKind::Rpc`].

use std::sync::Arc;

use switchboard_codecs::jsonrpc::ErrorObject;
use switchboard_codecs::mcp::modern;

use super::{Error, ErrorContext, ErrorKind};
use crate::client::UrlElicitation;

/// A JSON-RPC error answer, as the caller's error: -32042 with its elicitations becomes
/// [`ErrorKind::UrlElicitationRequired`], the 2026-07-28 codes their typed kinds, anything
/// else [`ErrorKind::Rpc`].
pub(crate) fn rpc_error(
    server: Arc<str>,
    method: Arc<str>,
    tool: Option<Arc<str>>,
    e: ErrorObject,
) -> Error {
    let cx = ErrorContext::of_request(server, method, tool);
    let data: Option<serde_json::Value> = e.data.and_then(|d| serde_json::from_str(d.get()).ok());
    if e.code == switchboard_codecs::mcp::URL_ELICITATION_REQUIRED {
        if let Some(elicitations) = data.as_ref().and_then(url_elicitations) {
            return cx.error(ErrorKind::UrlElicitationRequired {
                message: e.message,
                elicitations,
            });
        }
    }
    let kind = match e.code {
        modern::MISSING_REQUIRED_CLIENT_CAPABILITY => ErrorKind::MissingClientCapability {
            missing: required_capabilities(data.as_ref()),
            message: e.message,
        },
        modern::HEADER_MISMATCH => ErrorKind::HeaderMismatch { message: e.message },
        modern::UNSUPPORTED_PROTOCOL_VERSION => {
            let parsed: modern::UnsupportedVersionData = data
                .and_then(|d| serde_json::from_value(d).ok())
                .unwrap_or_default();
            ErrorKind::VersionRejected {
                requested: parsed.requested,
                supported: parsed.supported.into(),
            }
        }
        code => ErrorKind::Rpc {
            code,
            message: e.message,
            data: data.map(Arc::new),
        },
    };
    cx.error(kind)
}

/// The names of the capabilities in `data.requiredCapabilities` of a -32021 error (its
/// keys: `elicitation`, `sampling`, …), or `unknown` when the server named none.
fn required_capabilities(data: Option<&serde_json::Value>) -> Arc<[String]> {
    let names: Vec<String> = data
        .and_then(|d| d.get("requiredCapabilities"))
        .and_then(|c| c.as_object())
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default();
    if names.is_empty() {
        Arc::from(vec!["unknown".to_owned()])
    } else {
        names.into()
    }
}

/// The `data.elicitations` of a -32042 error, when there are some and each is a URL-mode
/// elicitation; otherwise the error stays an [`ErrorKind::Rpc`] with its data as sent.
fn url_elicitations(data: &serde_json::Value) -> Option<Arc<[UrlElicitation]>> {
    let list = data.get("elicitations")?.as_array()?;
    let parsed: Option<Vec<UrlElicitation>> = list
        .iter()
        .map(|e| {
            // Only URL-mode elicitations may come with this error; the mode must say so.
            (e.get("mode")?.as_str()? == "url")
                .then(|| UrlElicitation::from_params(e.clone()).ok())
                .flatten()
        })
        .collect();
    parsed.filter(|p| !p.is_empty()).map(Arc::from)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A JSON-RPC error answer of `code` with `data` to a call of tool `t` on server `s`.
    pub(in crate::error) fn error(code: i64, data: serde_json::Value) -> Error {
        let mut e = ErrorObject::new(code, "needs more");
        e.data = Some(serde_json::value::to_raw_value(&data).unwrap());
        rpc_error("s".into(), "tools/call".into(), Some("t".into()), e)
    }

    #[test]
    fn the_stateless_error_codes_become_typed_errors_naming_server_and_tool() {
        let e = error(
            -32021,
            serde_json::json!({"requiredCapabilities": {"elicitation": {}, "sampling": {}}}),
        );
        let ErrorKind::MissingClientCapability { missing, .. } = e.kind() else {
            panic!("{e:?}")
        };
        assert_eq!(&missing[..], ["elicitation", "sampling"]);
        assert_eq!(e.tool(), Some("t"));
        let text = e.to_string();
        assert!(
            text.contains("`s`") && text.contains("elicitation, sampling"),
            "{text}"
        );

        let e = error(-32020, serde_json::json!(null));
        assert!(
            matches!(e.kind(), ErrorKind::HeaderMismatch { .. }),
            "{e:?}"
        );
        assert_eq!(e.server(), Some("s"));

        let e = error(
            -32022,
            serde_json::json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}),
        );
        let ErrorKind::VersionRejected {
            requested,
            supported,
        } = e.kind()
        else {
            panic!("{e:?}")
        };
        assert_eq!(requested.as_deref(), Some("2026-07-28"));
        assert_eq!(&supported[..], ["2099-01-01"]);
        assert!(e.to_string().contains("2099-01-01"));
    }

    #[test]
    fn url_elicitation_required_carries_the_urls() {
        let e = error(
            -32042,
            serde_json::json!({"elicitations": [
                {"mode": "url", "elicitationId": "e1", "url": "https://a.example/x", "message": "log in"},
                {"mode": "url", "elicitationId": "e2", "url": "https://b.example/y", "message": "pay"}
            ]}),
        );
        let ErrorKind::UrlElicitationRequired { elicitations, .. } = e.kind() else {
            panic!("{e:?}")
        };
        assert_eq!((e.server(), e.tool()), (Some("s"), Some("t")));
        let urls: Vec<&str> = elicitations.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(urls, ["https://a.example/x", "https://b.example/y"]);
        assert_eq!(elicitations[1].elicitation_id, "e2");
        assert!(e.to_string().contains("https://b.example/y"), "{e}");
    }

    #[test]
    fn a_malformed_url_elicitation_error_stays_rpc() {
        for data in [
            serde_json::json!({}),
            serde_json::json!({"elicitations": []}),
            serde_json::json!({"elicitations": [{"mode": "form", "message": "m"}]}),
            serde_json::json!({"elicitations": [{"mode": "url", "message": "m"}]}),
        ] {
            let e = error(-32042, data.clone());
            assert!(
                matches!(e.kind(), ErrorKind::Rpc { code: -32042, data: Some(d), .. } if **d == data),
                "{e:?}"
            );
        }
        assert!(matches!(
            error(-32000, serde_json::json!({})).kind(),
            ErrorKind::Rpc { .. }
        ));
    }
}
