//! What the server keeps of its client: the protocol version, the client capabilities the
//! server acts on, and who the client says it is, each bounded whatever the client sent.
//!
//! A client's capabilities (in `initialize`, or in each 2026-07-28 request's `_meta`) may be
//! a tree of any size: `experimental` alone can hold hundreds of thousands of keys, which
//! weigh some ten times their text as a value tree. A handshake-era session keeps what it
//! was told for as long as its client wants (on HTTP, 1,024 sessions at once, anonymous
//! ones included), and a sealed session id carries it in every request's headers. So the
//! server keeps only the client capabilities the specification defines, each reduced to
//! the fields it defines ([`capabilities_of`]), and the client's name and version cut at
//! [`MAX_NAME`] and [`MAX_VERSION`] bytes: a few hundred bytes per session, whatever
//! arrived.
//!
//! That is all that serving reads: whether the client can answer a sampling request (with
//! tools or context), an elicitation (form, url) or a roots request, which
//! [`Context::input`](crate::Context::input) and the gateway check before they ask, and
//! which a gateway tells a 2026-07-28 upstream; `tasks` is kept for a handler that runs
//! tasks. `experimental` and `extensions` are not kept: nothing here acts on them.

use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

use crate::HANDSHAKE_VERSIONS;

/// The longest client name kept, in bytes (cut at a character boundary).
pub(crate) const MAX_NAME: usize = 128;
/// The longest client version kept, in bytes: versions are short, and a sealed id
/// carries it in every request's headers.
pub(crate) const MAX_VERSION: usize = 64;

/// What a request's handling reads of its client: one per handshake-era session (from
/// `initialize`) and one per 2026-07-28 request (from its `_meta`), shared by every
/// [`Context`](crate::Context) of it.
#[derive(Debug)]
pub(crate) struct Negotiated {
    /// The protocol version: one of the server's own, never the client's text.
    pub(crate) version: String,
    /// The capabilities kept ([`capabilities_of`]): always an object.
    pub(crate) capabilities: Value,
    /// Who the client says it is, when it said.
    pub(crate) client: Option<ClientInfo>,
}

impl Negotiated {
    /// What is kept of a client speaking `version` that declared `capabilities` and
    /// `client_info` (both as it sent them).
    pub(crate) fn new(version: String, capabilities: &Value, client_info: Option<&Value>) -> Self {
        Negotiated {
            version,
            capabilities: capabilities_of(capabilities),
            client: client_info.and_then(ClientInfo::from_value),
        }
    }

    /// A session before `initialize`: the latest handshake-era version, no capabilities.
    pub(crate) fn before_initialize() -> Arc<Negotiated> {
        static BEFORE_INITIALIZE: OnceLock<Arc<Negotiated>> = OnceLock::new();
        BEFORE_INITIALIZE
            .get_or_init(|| {
                Arc::new(Negotiated {
                    version: HANDSHAKE_VERSIONS[0].to_owned(),
                    capabilities: Value::Object(Map::new()),
                    client: None,
                })
            })
            .clone()
    }

    /// What a sealed session id carries: bounded, since everything kept is.
    pub(crate) fn to_state(&self) -> Value {
        let mut state = json!({
            "protocolVersion": self.version,
            "capabilities": self.capabilities,
        });
        if let Some(client) = &self.client {
            state["clientInfo"] = json!({"name": client.name, "version": client.version});
        }
        state
    }

    /// A session's state from what [`to_state`](Self::to_state) gave, if it is one. Kept
    /// again through the same bounds: an id sealed before they existed carries the
    /// capabilities whole.
    pub(crate) fn from_state(state: &Value) -> Option<Self> {
        let version = state.get("protocolVersion")?.as_str()?;
        if !HANDSHAKE_VERSIONS.contains(&version) {
            return None;
        }
        let capabilities = state.get("capabilities").filter(|c| c.is_object())?;
        Some(Negotiated::new(
            version.to_owned(),
            capabilities,
            state.get("clientInfo"),
        ))
    }
}

/// Who the client says it is (`clientInfo` in `initialize`, or
/// `io.modelcontextprotocol/clientInfo` in a 2026-07-28 request's `_meta`): its name and
/// version, cut at 128 and 64 bytes. Its other fields (title, icons, …) are not kept.
///
/// Self-description, not identity: anyone can send any name. What authenticated the
/// request is [`Context::principal`](crate::Context::principal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    name: String,
    version: String,
}

impl ClientInfo {
    /// What is kept of `info`: `None` without a name.
    pub(crate) fn from_value(info: &Value) -> Option<ClientInfo> {
        let name = info.get("name")?.as_str()?;
        let version = info.get("version").and_then(Value::as_str).unwrap_or("");
        Some(ClientInfo {
            name: cut(name, MAX_NAME).to_owned(),
            version: cut(version, MAX_VERSION).to_owned(),
        })
    }

    /// The client's name (at most 128 bytes of it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client's version (at most 64 bytes of it; empty if it sent none).
    pub fn version(&self) -> &str {
        &self.version
    }
}

/// `text` cut at `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The fields of a client capability that the server keeps.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// A flag (`listChanged`): kept when it is a boolean.
    Flag,
    /// A capability: kept when declared (present and not `null`), with the fields it
    /// defines. A declared value that is no object (`"sampling": true`) is kept as `{}`:
    /// declared is what readers read.
    Capability(&'static [(&'static str, Field)]),
}

/// A capability with no fields of its own (`sampling.tools: {}`).
const DECLARED: Field = Field::Capability(&[]);

/// The client capabilities of the specification (2025-11-25, 2026-07-28) with the fields
/// each defines: all the server keeps.
const CLIENT_CAPABILITIES: &[(&str, Field)] = &[
    ("roots", Field::Capability(&[("listChanged", Field::Flag)])),
    (
        "sampling",
        Field::Capability(&[("context", DECLARED), ("tools", DECLARED)]),
    ),
    (
        "elicitation",
        Field::Capability(&[("form", DECLARED), ("url", DECLARED)]),
    ),
    (
        "tasks",
        Field::Capability(&[
            ("list", DECLARED),
            ("cancel", DECLARED),
            (
                "requests",
                Field::Capability(&[
                    (
                        "sampling",
                        Field::Capability(&[("createMessage", DECLARED)]),
                    ),
                    ("elicitation", Field::Capability(&[("create", DECLARED)])),
                ]),
            ),
        ]),
    ),
];

/// The capabilities kept of `declared`: an object with at most the fields of
/// [`CLIENT_CAPABILITIES`]. Looks up a handful of keys and walks nothing else, so a
/// client's `experimental` costs nothing here however large it is.
pub(crate) fn capabilities_of(declared: &Value) -> Value {
    Value::Object(kept(declared, CLIENT_CAPABILITIES))
}

fn kept(declared: &Value, fields: &[(&str, Field)]) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, field) in fields {
        let value = match (declared.get(*name), field) {
            (None | Some(Value::Null), _) => continue,
            (Some(flag @ Value::Bool(_)), Field::Flag) => flag.clone(),
            (Some(_), Field::Flag) => continue,
            (Some(value), Field::Capability(fields)) => Value::Object(kept(value, fields)),
        };
        out.insert((*name).to_owned(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field the server keeps, each declared.
    fn everything() -> Value {
        json!({
            "roots": {"listChanged": true},
            "sampling": {"context": {}, "tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "tasks": {"list": {}, "cancel": {}, "requests": {
                "sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
        })
    }

    #[test]
    fn the_capabilities_the_server_acts_on_are_kept_and_nothing_else() {
        let mut declared = everything();
        let big = "x".repeat(10_000);
        declared["experimental"] = json!({"a": big, "b": {"c": [1, 2, 3]}});
        declared["extensions"] = json!({"io.example/ui": {"mimeTypes": [big]}});
        declared["sampling"]["context"] = json!({"huge": big});
        declared["sampling"]["unknown"] = json!(big);
        declared["elicitation"]["url"] = json!({"nested": {"deeper": big}});
        declared["roots"]["other"] = json!(big);
        assert_eq!(capabilities_of(&declared), everything());

        // What each reader asks still has its answer.
        let kept = capabilities_of(&json!({"sampling": {"tools": {"x": big}}, "elicitation": {}}));
        assert!(kept.pointer("/sampling/tools").is_some());
        assert!(kept.pointer("/sampling/context").is_none());
        assert_eq!(kept["elicitation"], json!({}), "{{}} is form only");
        assert!(kept.pointer("/elicitation/url").is_none());
        assert!(kept.get("roots").is_none());
    }

    #[test]
    fn a_capability_of_another_shape_is_declared_or_absent_as_before() {
        let kept = capabilities_of(&json!({
            "sampling": true,
            "elicitation": null,
            "roots": {"listChanged": "yes"},
            "tasks": ["list"],
        }));
        // Declared is present and not null, whatever its shape; only flags must be flags.
        assert_eq!(kept, json!({"sampling": {}, "roots": {}, "tasks": {}}));
        for not_an_object in [json!(null), json!([1, 2]), json!("caps"), json!(7)] {
            assert_eq!(capabilities_of(&not_an_object), json!({}));
        }
    }

    #[test]
    fn the_kept_capabilities_have_a_fixed_largest_size() {
        // The largest anything can keep is every field declared: what a sealed id's size
        // is bounded by.
        let largest = serde_json::to_string(&capabilities_of(&everything())).unwrap();
        assert!(largest.len() < 256, "{} bytes: {largest}", largest.len());
    }

    #[test]
    fn a_client_name_and_version_are_cut_on_a_character_boundary() {
        let long = "é".repeat(100); // 200 bytes
        let info = ClientInfo::from_value(
            &json!({"name": long, "version": "x".repeat(500), "title": "t"}),
        )
        .unwrap();
        assert_eq!(info.name().len(), MAX_NAME);
        assert!(long.starts_with(info.name()));
        assert_eq!(info.version(), "x".repeat(MAX_VERSION));
        let odd = format!("a{long}"); // the 128th byte is inside an `é`
        let info = ClientInfo::from_value(&json!({"name": odd})).unwrap();
        assert_eq!(info.name().len(), MAX_NAME - 1);
        assert_eq!(info.version(), "");
        let short = ClientInfo::from_value(&json!({"name": "t", "version": "1"})).unwrap();
        assert_eq!((short.name(), short.version()), ("t", "1"));
        assert_eq!(ClientInfo::from_value(&json!({"version": "1"})), None);
        assert_eq!(ClientInfo::from_value(&json!({"name": 3})), None);
        assert_eq!(ClientInfo::from_value(&json!("t")), None);
    }

    #[test]
    fn a_state_restores_what_was_kept_and_keeps_an_old_one_to_the_same_bounds() {
        let big = "y".repeat(1_000);
        let client = json!({"name": big, "version": "2"});
        let negotiated = Negotiated::new(
            "2025-06-18".to_owned(),
            &json!({"sampling": {}, "experimental": {"k": big}}),
            Some(&client),
        );
        let state = negotiated.to_state();
        let restored = Negotiated::from_state(&state).unwrap();
        assert_eq!(restored.version, "2025-06-18");
        assert_eq!(restored.capabilities, json!({"sampling": {}}));
        assert_eq!(restored.client, negotiated.client);
        // A state sealed whole (before these bounds) comes back bounded.
        let old = json!({"protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}, "experimental": {"k": big}}});
        let restored = Negotiated::from_state(&old).unwrap();
        assert_eq!(restored.capabilities, json!({"roots": {}}));
        assert_eq!(restored.client, None);
        // Not a state of ours.
        for bad in [
            json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
            json!({"protocolVersion": "2025-11-25"}),
            json!({"protocolVersion": "2025-11-25", "capabilities": []}),
            json!({"capabilities": {}}),
        ] {
            assert!(Negotiated::from_state(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_largest_state_fits_a_session_id() {
        // Every capability, and a name and version of the characters JSON escapes longest:
        // still within the 2 KiB the HTTP transport seals into an id (`MAX_STATE` there).
        let escaped = "\u{1}".repeat(MAX_NAME);
        let negotiated = Negotiated::new(
            HANDSHAKE_VERSIONS[0].to_owned(),
            &everything(),
            Some(&json!({"name": escaped, "version": escaped})),
        );
        let client = negotiated.client.as_ref().unwrap();
        assert_eq!(
            (client.name.len(), client.version.len()),
            (MAX_NAME, MAX_VERSION)
        );
        let sealed = json!({"state": {"state": negotiated.to_state(), "owner": "o".repeat(64)}});
        let len = serde_json::to_string(&sealed).unwrap().len();
        assert!(len <= 2048, "{len} bytes");
    }
}
