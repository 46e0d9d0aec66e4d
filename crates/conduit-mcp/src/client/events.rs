//! The Events extension (`io.modelcontextprotocol/events`) from the client's
//! side: list the event types, poll, open a push stream ([`EventStream`]),
//! and subscribe, refresh and unsubscribe webhooks. Every method refuses with
//! [`ClientError::Unsupported`] before sending anything when the server did
//! not advertise the extension (in `capabilities.extensions` or as top-level
//! `events`) or the connection speaks `2025-11-25`, where the extension is
//! not defined.

use super::client::Client;
use super::error::ClientError;
use super::event_stream::EventStream;
use crate::protocol::events::{
    EVENTS_LIST, EVENTS_POLL, EVENTS_SUBSCRIBE, EVENTS_UNSUBSCRIBE, EventDescriptor, ListEventsResult, PollEventsResult,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// How many pages of `events/list` one listing reads before it stops.
const MAX_LIST_PAGES: usize = 64;

/// A subscription: an event type and its arguments, and where to start.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct EventQuery {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (filters), matched against the type's `inputSchema` by the server.
    pub arguments: Map<String, Value>,
    /// Where to continue (`None`: from now). Never a `null` the server sent back.
    pub cursor: Option<String>,
    /// Start no earlier than this many milliseconds ago.
    pub max_age_ms: Option<u64>,
}

impl EventQuery {
    /// `name` with no arguments, from now.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), ..Self::default() }
    }

    /// With these arguments.
    pub fn arguments(mut self, arguments: Map<String, Value>) -> Self {
        self.arguments = arguments;
        self
    }

    /// Continuing from `cursor`.
    pub fn cursor(mut self, cursor: Option<String>) -> Self {
        self.cursor = cursor;
        self
    }

    /// Starting no earlier than `ms` milliseconds ago.
    pub fn max_age_ms(mut self, ms: u64) -> Self {
        self.max_age_ms = Some(ms);
        self
    }

    /// The params common to poll, stream and subscribe.
    pub(crate) fn params(&self) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("name".into(), Value::String(self.name.clone()));
        p.insert("arguments".into(), Value::Object(self.arguments.clone()));
        p.insert("cursor".into(), self.cursor.clone().map_or(Value::Null, Value::String));
        if let Some(ms) = self.max_age_ms {
            p.insert("maxAgeMs".into(), json!(ms));
        }
        p
    }
}

/// A webhook subscription as `events/subscribe` asks for it; sending the
/// same one again is its refresh (the client owns the refresh: do it before
/// [`WebhookLease::refresh_before`]).
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct WebhookSubscription {
    /// The event type, arguments, and the cursor to start (or resume) from.
    pub query: EventQuery,
    /// The callback (`https://`).
    pub url: String,
    /// The signing secret, `whsec_` and base64 of 24 to 64 bytes.
    pub secret: String,
    /// The lifetime asked: `None` = the server's default, `Some(None)` = no
    /// expiry, `Some(Some(ms))` = that many milliseconds.
    pub ttl_ms: Option<Option<u64>>,
}

impl std::fmt::Debug for WebhookSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSubscription")
            .field("query", &self.query)
            .field("url", &self.url)
            .field("ttl_ms", &self.ttl_ms)
            .finish_non_exhaustive()
    }
}

impl WebhookSubscription {
    /// A subscription of `query` delivered to `url`, signed with `secret`, with the server's default lifetime.
    pub fn new(query: EventQuery, url: impl Into<String>, secret: impl Into<String>) -> Self {
        Self { query, url: url.into(), secret: secret.into(), ttl_ms: None }
    }

    /// Asking for this lifetime (`None`: no expiry).
    pub fn ttl_ms(mut self, ttl: Option<u64>) -> Self {
        self.ttl_ms = Some(ttl);
        self
    }
}

/// What `events/subscribe` granted.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WebhookLease {
    /// The server's routing handle (`X-MCP-Subscription-Id` on deliveries).
    pub id: String,
    /// Refresh before this instant (RFC 3339); `None`: no expiry.
    #[serde(default)]
    pub refresh_before: Option<String>,
    /// The safe watermark: everything before it is delivered or abandoned.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Delivery starts later than the cursor asked.
    #[serde(default)]
    pub truncated: bool,
    /// On a refresh, how delivery goes (as the server sent it).
    #[serde(default)]
    pub delivery_status: Option<Value>,
}

impl WebhookLease {
    /// When to refresh, in Unix milliseconds: `margin_ms` before
    /// `refreshBefore`. `None` for no expiry; an error when the server's
    /// `refreshBefore` is not RFC 3339.
    pub fn refresh_at_ms(&self, margin_ms: i64) -> Result<Option<i64>, ClientError> {
        let Some(at) = &self.refresh_before else { return Ok(None) };
        let ms = super::time::parse_rfc3339_ms(at).ok_or_else(|| {
            ClientError::protocol(format!("refreshBefore is not RFC 3339: {}", super::sanitize::excerpt(at, 64)))
        })?;
        Ok(Some(ms - margin_ms))
    }
}

impl Client {
    /// Whether the server offers the Events extension on this connection.
    pub fn offers_events(&self) -> bool {
        self.server().offers_events()
    }

    /// Refuses clearly when [`Client::offers_events`] is false.
    fn events_offered(&self) -> Result<(), ClientError> {
        if self.offers_events() {
            Ok(())
        } else {
            Err(ClientError::Unsupported(
                "the server does not offer the Events extension (io.modelcontextprotocol/events) on 2026-07-28".into(),
            ))
        }
    }

    /// `events/list`, every page (at most 64).
    pub async fn list_events(&self) -> Result<Vec<EventDescriptor>, ClientError> {
        self.events_offered()?;
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor.take().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
            let page: ListEventsResult = serde_json::from_value(self.request(EVENTS_LIST, params).await?)
                .map_err(|e| ClientError::malformed("an events/list result", e))?;
            all.extend(page.events);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
        Err(ClientError::protocol(format!("events/list has more than {MAX_LIST_PAGES} pages")))
    }

    /// One `events/poll`; at most `max_events` occurrences when given. Carry
    /// the result's `cursor` into the next poll (unless it is `None`), wait
    /// `nextPollMs` (floored by the caller) unless `hasMore`; `truncated`
    /// says occurrences were skipped.
    pub async fn poll_events(
        &self,
        query: &EventQuery,
        max_events: Option<u64>,
    ) -> Result<PollEventsResult, ClientError> {
        self.events_offered()?;
        let mut params = query.params();
        if let Some(n) = max_events {
            params.insert("maxEvents".into(), json!(n));
        }
        serde_json::from_value(self.request(EVENTS_POLL, Value::Object(params)).await?)
            .map_err(|e| ClientError::malformed("an events/poll result", e))
    }

    /// Opens `events/stream` for `query`: the occurrences as they happen.
    /// A refused subscription is the request's error; dropping the stream
    /// cancels it.
    pub async fn stream_events(&self, query: &EventQuery) -> Result<EventStream, ClientError> {
        self.events_offered()?;
        EventStream::open(self.dialect(), query).await
    }

    /// `events/subscribe`: creates the webhook subscription, or refreshes it
    /// when one with the same key (principal, url, name, arguments) lives.
    pub async fn subscribe_webhook(&self, sub: &WebhookSubscription) -> Result<WebhookLease, ClientError> {
        self.events_offered()?;
        let mut params = sub.query.params();
        params.insert("delivery".into(), json!({ "mode": "webhook", "url": sub.url, "secret": sub.secret }));
        if let Some(ttl) = sub.ttl_ms {
            params.insert("ttlMs".into(), ttl.map_or(Value::Null, |ms| json!(ms)));
        }
        serde_json::from_value(self.request(EVENTS_SUBSCRIBE, Value::Object(params)).await?)
            .map_err(|e| ClientError::malformed("an events/subscribe result", e))
    }

    /// `events/unsubscribe` of the subscription with this key.
    pub async fn unsubscribe_webhook(&self, sub: &WebhookSubscription) -> Result<(), ClientError> {
        self.events_offered()?;
        let params = json!({
            "name": sub.query.name,
            "arguments": sub.query.arguments,
            "delivery": { "mode": "webhook", "url": sub.url },
        });
        self.request(EVENTS_UNSUBSCRIBE, params).await.map(drop)
    }
}
