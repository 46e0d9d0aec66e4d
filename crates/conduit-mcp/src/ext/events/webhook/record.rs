//! What a [`WebhookStore`](super::WebhookStore) keeps: subscriptions (with
//! their secret, expiry, state and safe watermark) and the outbox entries
//! that nodes claim for delivery.

use super::key::SubscriptionKey;

/// A Standard Webhooks secret (`whsec_…`). A credential: its `Debug` shows
/// nothing of it, and nothing returns it to a client or writes it to a log.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    /// Wraps `secret` (checked by `events/subscribe` already).
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret, for signing and for the store.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

/// Why deliveries to a subscription fail, as `deliveryStatus.lastError`
/// says it (events.md §2.7 W12: a category, never the endpoint's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeliveryFailure {
    /// The endpoint refused the connection (or its address was refused).
    ConnectionRefused,
    /// No answer in time.
    Timeout,
    /// The TLS handshake failed.
    TlsError,
    /// A 4xx answer.
    Http4xx,
    /// A 5xx answer.
    Http5xx,
    /// The endpoint did not echo the verification challenge.
    ChallengeFailed,
}

impl DeliveryFailure {
    /// The category's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConnectionRefused => "connection_refused",
            Self::Timeout => "timeout",
            Self::TlsError => "tls_error",
            Self::Http4xx => "http_4xx",
            Self::Http5xx => "http_5xx",
            Self::ChallengeFailed => "challenge_failed",
        }
    }
}

/// One webhook subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSubscription {
    /// Derived from the key ([`SubscriptionKey::id`]).
    pub id: String,
    /// `(principal, url, name, arguments)`.
    pub key: SubscriptionKey,
    /// The secret deliveries are signed with.
    pub secret: WebhookSecret,
    /// The secret it replaced, signed with too until this time (Unix ms).
    pub previous_secret: Option<(WebhookSecret, u64)>,
    /// When it lapses unless refreshed (Unix ms); `None`: never.
    pub refresh_before_ms: Option<u64>,
    /// Whether deliveries go out (a refresh sets it; sustained failure clears it).
    pub active: bool,
    /// The position every occurrence up to which the endpoint acknowledged
    /// (the safe watermark the cursor it is given names).
    pub acked_through: u64,
    /// The position up to which the log's occurrences were put in this
    /// subscription's outbox (moved by [`WebhookStore::feed`](super::WebhookStore::feed)
    /// only, so that two nodes never enqueue the same occurrence twice).
    pub fed_through: u64,
    /// Since when deliveries fail (Unix ms), if they do.
    pub failing_since_ms: Option<u64>,
    /// The last failure's category.
    pub last_failure: Option<DeliveryFailure>,
}

impl WebhookSubscription {
    /// What the subscription makes the server hold, in bytes (its strings
    /// and arguments as JSON): what the per-principal byte cap counts.
    pub fn held_bytes(&self) -> usize {
        let k = &self.key;
        let previous = self.previous_secret.as_ref().map_or(0, |(s, _)| s.expose().len());
        k.principal.len()
            + k.url.len()
            + k.name.len()
            + k.arguments.to_string().len()
            + self.id.len()
            + self.secret.expose().len()
            + previous
    }

    /// Whether it has lapsed at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.refresh_before_ms.is_some_and(|t| t <= now_ms)
    }
}

/// One message waiting in the outbox for one subscription; keyed by
/// `(subscription_id, id)` (one occurrence goes to many subscriptions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    /// The entry's id (also the `webhook-id` of every attempt).
    pub id: String,
    /// The subscription it goes to.
    pub subscription_id: String,
    /// The occurrence's position in its log (0 for an envelope).
    pub position: u64,
    /// The body, serialised once (events.md H10: the bytes signed are the bytes sent).
    pub body: Vec<u8>,
    /// Attempts made so far.
    pub attempts: u32,
    /// Not before this time (Unix ms).
    pub due_ms: u64,
    /// The node holding it and until when (Unix ms), while one does.
    pub lease: Option<(String, u64)>,
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// Delivered (2xx): the entry goes; the watermark moves past it.
    Delivered,
    /// Failed, to be tried again at this time (Unix ms).
    RetryAt(u64, DeliveryFailure),
    /// Failed for good (410, 413, or its retry window is over): the entry goes.
    Dropped(DeliveryFailure),
}

/// Per-principal limits on webhook subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookCaps {
    /// Most live subscriptions per principal (default 100).
    pub max_per_principal: usize,
    /// Most bytes of live subscriptions per principal (default 1 MiB).
    pub max_bytes_per_principal: usize,
}

impl WebhookCaps {
    /// At most `max_per_principal` live subscriptions and
    /// `max_bytes_per_principal` bytes of them per principal.
    pub fn new(max_per_principal: usize, max_bytes_per_principal: usize) -> Self {
        Self { max_per_principal, max_bytes_per_principal }
    }
}

impl Default for WebhookCaps {
    fn default() -> Self {
        Self { max_per_principal: 100, max_bytes_per_principal: 1024 * 1024 }
    }
}
