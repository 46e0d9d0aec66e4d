//! The Events extension's wire vocabulary (`io.modelcontextprotocol/events`,
//! SEP-3415): its id, method and notification names, the event descriptor,
//! an occurrence, the params and results of `events/*`, and the error codes
//! in both numberings (the sketch's, which clients in the field use, and
//! SEP-3415's provisional ones).
//!
//! Results leave out `resultType`: the server adds `"complete"` to every
//! result it sends.

use super::jsonrpc::{ErrorCode, RpcError};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The id of the Events extension, the key under `capabilities.extensions`.
pub const EVENTS_EXTENSION_ID: &str = "io.modelcontextprotocol/events";

/// The top-level capability key clients in the field still read (`events: {}`).
pub const EVENTS_CAPABILITY: &str = "events";

/// `events/list`: the event types a server offers.
pub const EVENTS_LIST: &str = "events/list";
/// `events/poll`: the occurrences after a cursor.
pub const EVENTS_POLL: &str = "events/poll";
/// `events/stream`: occurrences pushed on the request's own stream.
pub const EVENTS_STREAM: &str = "events/stream";
/// `events/subscribe`: a webhook subscription (also its refresh).
pub const EVENTS_SUBSCRIBE: &str = "events/subscribe";
/// `events/unsubscribe`: ends a webhook subscription.
pub const EVENTS_UNSUBSCRIBE: &str = "events/unsubscribe";

/// First notification of a push stream (and again after a gap).
pub const EVENTS_ACTIVE: &str = "notifications/events/active";
/// One occurrence on a push stream.
pub const EVENTS_EVENT: &str = "notifications/events/event";
/// A push stream's keep-alive, carrying the position checked up to.
pub const EVENTS_HEARTBEAT: &str = "notifications/events/heartbeat";
/// A recoverable error on a push stream (the stream stays).
pub const EVENTS_ERROR: &str = "notifications/events/error";
/// The end of a push subscription.
pub const EVENTS_TERMINATED: &str = "notifications/events/terminated";
/// The set of event types, or a descriptor, changed (on `subscriptions/listen`).
pub const EVENTS_LIST_CHANGED: &str = "notifications/events/list_changed";

/// The `subscriptions/listen` filter field that asks for [`EVENTS_LIST_CHANGED`].
pub const EVENTS_LIST_CHANGED_FILTER: &str = "eventsListChanged";

/// How an event type can be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryMode {
    /// `events/poll`.
    Poll,
    /// `events/stream`.
    Push,
    /// `events/subscribe` with a webhook.
    Webhook,
}

impl DeliveryMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Poll => "poll",
            Self::Push => "push",
            Self::Webhook => "webhook",
        }
    }
}

/// One event type, as `events/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventDescriptor {
    /// The event type's name, e.g. `task.status_changed`.
    pub name: String,
    /// When it fires.
    pub description: String,
    /// The delivery modes offered (never empty).
    pub delivery: Vec<DeliveryMode>,
    /// JSON Schema of a subscription's `arguments`.
    pub input_schema: Value,
    /// JSON Schema of an occurrence's `data`.
    pub payload_schema: Value,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl EventDescriptor {
    /// A descriptor of these parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        delivery: Vec<DeliveryMode>,
        input_schema: Value,
        payload_schema: Value,
    ) -> Self {
        Self { name: name.into(), description: description.into(), delivery, input_schema, payload_schema, meta: None }
    }

    /// Whether `mode` is offered.
    pub fn offers(&self, mode: DeliveryMode) -> bool {
        self.delivery.contains(&mode)
    }
}

/// One occurrence of an event: an item of a poll result, the params of
/// `notifications/events/event`, the body of a webhook delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventOccurrence {
    /// The dedupe key, the same from every node and every mode.
    pub event_id: String,
    /// The event type.
    pub name: String,
    /// When it occurred (RFC 3339).
    pub timestamp: String,
    /// The payload, as the type's `payloadSchema` says.
    pub data: Value,
    /// The position after this occurrence (push and webhook; a poll carries it
    /// on the result). Absent is the same as `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Metadata not governed by `payloadSchema`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl EventOccurrence {
    /// An occurrence without cursor or `_meta`.
    pub fn new(
        event_id: impl Into<String>,
        name: impl Into<String>,
        timestamp: impl Into<String>,
        data: Value,
    ) -> Self {
        Self {
            event_id: event_id.into(),
            name: name.into(),
            timestamp: timestamp.into(),
            data,
            cursor: None,
            meta: None,
        }
    }
}

/// `events/list` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListEventsParams {
    /// The page to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `events/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListEventsResult {
    /// The event types of this page.
    pub events: Vec<EventDescriptor>,
    /// The next page, only when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `events/poll` params: one subscription per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PollEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (absent is `{}`).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Where to continue; absent or `null` starts from now.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Start no earlier than this many milliseconds ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_ms: Option<u64>,
    /// Most occurrences in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u64>,
    /// One sketch's long-poll wait; accepted and answered at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `events/poll` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PollEventsResult {
    /// The occurrences, oldest first (present even when empty).
    pub events: Vec<EventOccurrence>,
    /// The position after the last occurrence returned (or checked).
    pub cursor: Option<String>,
    /// Delivery started later than the cursor asked.
    pub truncated: bool,
    /// More occurrences wait: poll again at once.
    pub has_more: bool,
    /// When to poll next, in milliseconds (ignored when `hasMore`).
    pub next_poll_ms: u64,
}

/// `events/stream` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StreamEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (absent is `{}`).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Where to continue; absent or `null` starts from now.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Start no earlier than this many milliseconds ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_ms: Option<u64>,
}

/// `notifications/events/active` params (without the stream's `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ActiveParams {
    /// Where delivery starts.
    pub cursor: Option<String>,
    /// Delivery started later than the cursor asked.
    pub truncated: bool,
}

/// `notifications/events/heartbeat` params (without the stream's `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HeartbeatParams {
    /// The position checked up to.
    pub cursor: Option<String>,
}

/// The params of `notifications/events/error` and `…/terminated`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StreamErrorParams {
    /// What happened.
    pub error: RpcError,
}

/// `delivery` of `events/subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WebhookDelivery {
    /// Always `"webhook"`.
    pub mode: DeliveryMode,
    /// The callback, `https://` only.
    pub url: String,
    /// `whsec_` and base64 of 24 to 64 bytes.
    pub secret: String,
}

/// `events/subscribe` params (also the refresh: the same key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SubscribeEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (absent is `{}`).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Where to deliver.
    pub delivery: WebhookDelivery,
    /// The client's last position.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Start no earlier than this many milliseconds ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_ms: Option<u64>,
    /// The lifetime asked: absent = the server's default, `Some(None)` (`null`) =
    /// no expiry, `Some(Some(ms))` = that many milliseconds.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<Option<u64>>,
}

/// Tells a present `null` from an absent member.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

/// `delivery` of `events/unsubscribe`: the callback that is part of the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnsubscribeDelivery {
    /// `"webhook"` when sent (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<DeliveryMode>,
    /// The callback.
    pub url: String,
}

/// `events/unsubscribe` params: the subscription's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UnsubscribeEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (absent is `{}`).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The callback.
    pub delivery: UnsubscribeDelivery,
}

/// Which numbers the extension's own errors carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ErrorCodeProfile {
    /// `-32011…-32015`: the design sketch's, used by clients in the field and
    /// the draft conformance suite (the default until SEP-3415 is accepted).
    #[default]
    Sketch,
    /// `-32023…-32027`: SEP-3415's provisional numbers.
    Sep3415,
}

/// The extension's own error kinds (`-32602` and `-32603` are JSON-RPC's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventErrorKind {
    /// No such event type, or no subscription for the key.
    NotFound,
    /// No principal, not permitted, or access revoked.
    Forbidden,
    /// A limit was hit (`data.limit`).
    ResourceExhausted,
    /// Well-formed but not supported (`data.feature`).
    Unsupported,
    /// A webhook endpoint failed verification or could not be reached (`data.reason`).
    CallbackEndpointError,
}

impl EventErrorKind {
    /// The numeric code under `profile`.
    pub fn code(self, profile: ErrorCodeProfile) -> i64 {
        let offset = match self {
            Self::NotFound => 0,
            Self::Forbidden => 1,
            Self::ResourceExhausted => 2,
            Self::Unsupported => 3,
            Self::CallbackEndpointError => 4,
        };
        match profile {
            ErrorCodeProfile::Sketch => -32011 - offset,
            ErrorCodeProfile::Sep3415 => -32023 - offset,
        }
    }

    /// The kind a code names under `profile`, if any.
    pub fn of_code(code: i64, profile: ErrorCodeProfile) -> Option<Self> {
        [Self::NotFound, Self::Forbidden, Self::ResourceExhausted, Self::Unsupported, Self::CallbackEndpointError]
            .into_iter()
            .find(|k| k.code(profile) == code)
    }

    /// The name the sources give it, used as the error's message.
    pub fn name(self) -> &'static str {
        match self {
            Self::NotFound => "NotFound",
            Self::Forbidden => "Forbidden",
            Self::ResourceExhausted => "ResourceExhausted",
            Self::Unsupported => "Unsupported",
            Self::CallbackEndpointError => "CallbackEndpointError",
        }
    }

    /// The error, with `data`, under `profile`.
    pub fn error(self, profile: ErrorCodeProfile, data: Value) -> RpcError {
        RpcError::new(ErrorCode::Other(self.code(profile)), self.name()).data(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_profiles_number_the_five_kinds_in_order_and_read_back() {
        let kinds = [
            EventErrorKind::NotFound,
            EventErrorKind::Forbidden,
            EventErrorKind::ResourceExhausted,
            EventErrorKind::Unsupported,
            EventErrorKind::CallbackEndpointError,
        ];
        let sketch: Vec<i64> = kinds.iter().map(|k| k.code(ErrorCodeProfile::Sketch)).collect();
        let sep: Vec<i64> = kinds.iter().map(|k| k.code(ErrorCodeProfile::Sep3415)).collect();
        assert_eq!(sketch, [-32011, -32012, -32013, -32014, -32015]);
        assert_eq!(sep, [-32023, -32024, -32025, -32026, -32027]);
        for k in kinds {
            assert_eq!(EventErrorKind::of_code(k.code(ErrorCodeProfile::Sep3415), ErrorCodeProfile::Sep3415), Some(k));
        }
        assert_eq!(EventErrorKind::of_code(-32023, ErrorCodeProfile::Sketch), None);
    }

    #[test]
    fn ttl_tells_absent_from_null_and_cursor_absent_equals_null() {
        let base = json!({"name":"e","delivery":{"mode":"webhook","url":"https://h/","secret":"whsec_x"}});
        let p: SubscribeEventsParams = serde_json::from_value(base.clone()).unwrap();
        assert_eq!(p.ttl_ms, None);
        assert_eq!(p.cursor, None);
        let mut null = base.clone();
        null["ttlMs"] = Value::Null;
        null["cursor"] = Value::Null;
        let p: SubscribeEventsParams = serde_json::from_value(null).unwrap();
        assert_eq!(p.ttl_ms, Some(None));
        assert_eq!(p.cursor, None);
        let mut some = base;
        some["ttlMs"] = json!(60_000);
        assert_eq!(serde_json::from_value::<SubscribeEventsParams>(some).unwrap().ttl_ms, Some(Some(60_000)));
    }
}
