//! `subscriptions/listen`: the stateless era's long-lived notification stream, which
//! replaces the HTTP GET stream and `resources/subscribe`.
//!
//! The client opens it with a [`SubscriptionFilter`] saying which notifications it wants;
//! the server acknowledges with [`ACKNOWLEDGED`] (naming what it agreed to) before anything
//! else on the stream, and tags every notification of the stream with the listen request's
//! id under [`SUBSCRIPTION_ID`](super::meta::SUBSCRIPTION_ID) in `_meta`. A result answering
//! the listen request means the server closed it gracefully.
//!
//! ```
//! use switchboard_codecs::mcp::modern::listen::{Acknowledged, SubscriptionFilter};
//!
//! let mut filter = SubscriptionFilter::default();
//! filter.tools_list_changed = true;
//! filter.resource_subscriptions = vec!["file:///a".into()];
//! assert_eq!(
//!     serde_json::to_string(&filter)?,
//!     r#"{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}"#
//! );
//! let ack: Acknowledged = serde_json::from_str(
//!     r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true}}"#,
//! )?;
//! assert_eq!(ack.subscription_id(), Some(7));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Request: open a notification stream (params: `notifications`, a [`SubscriptionFilter`]).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// Notification: the server took a `subscriptions/listen` ([`Acknowledged`]).
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

fn is_false(b: &bool) -> bool {
    !*b
}

/// The notifications a `subscriptions/listen` asks for (or, acknowledged, the ones the
/// server agreed to send). Every field is opt-in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<String>,
}

impl SubscriptionFilter {
    /// Whether the filter asks for nothing (a listen for it would be useless).
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_empty()
    }
}

/// The params of [`ACKNOWLEDGED`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Acknowledged {
    /// What the server agreed to send (a subset of what was asked).
    #[serde(default)]
    pub notifications: SubscriptionFilter,
    /// The notification's `_meta`, with the subscription id.
    #[serde(default, rename = "_meta")]
    pub meta: Map<String, Value>,
}

impl Acknowledged {
    /// The id of the listen request acknowledged, when it is a number (ours always are).
    pub fn subscription_id(&self) -> Option<i64> {
        subscription_id(&self.meta)
    }
}

/// The subscription id in a notification's or result's `_meta`, when it is a number.
pub fn subscription_id(meta: &Map<String, Value>) -> Option<i64> {
    meta.get(super::meta::SUBSCRIPTION_ID)
        .and_then(Value::as_i64)
}
