//! [`EventsConfig`]: the error numbering, the stream's heartbeat, and what one
//! client can make the server hold or send.

#[cfg(feature = "webhooks")]
use super::webhook::WebhookConfig;
use crate::config::ConfigError;
use crate::protocol::events::ErrorCodeProfile;
use std::time::Duration;

/// The configuration of the Events extension.
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct EventsConfig {
    /// Which numbers the extension's errors carry (default: the sketch's).
    pub error_codes: ErrorCodeProfile,
    /// How often a push stream sends `notifications/events/heartbeat` (default 15 s;
    /// the extension asks for at most 30 s).
    pub heartbeat: Duration,
    /// The `nextPollMs` a poll answers with when nothing more waits (default 5 s).
    pub next_poll: Duration,
    /// Most occurrences in one poll answer, whatever `maxEvents` asks (default 100).
    pub max_poll_events: usize,
    /// Most event types on one `events/list` page (default 100); more are
    /// listed on the pages `nextCursor` leads to.
    pub list_page_size: usize,
    /// Most bytes of occurrences in one poll answer or one read of a stream (default 1 MiB;
    /// at least one occurrence is always sent).
    pub max_page_bytes: usize,
    /// Most bytes of a subscription's `arguments`, as JSON (default 64 KiB).
    pub max_argument_bytes: usize,
    /// Most bytes of one occurrence as delivered: its payload with the
    /// `eventId`, name, timestamp and cursor around it, which is a webhook's
    /// whole body (default 256 KiB, the body's bound in events.md §3.1 H9).
    /// `EventPublisher::publish` refuses a payload that would pass it.
    pub max_payload_bytes: usize,
    /// Most occurrences an event type keeps for replay (default 10 000; for
    /// `task.status_changed`, the changes of the Tasks handle's log).
    pub retained_events: usize,
    /// Most bytes an event type keeps for replay (default 16 MiB).
    pub retained_bytes: usize,
    /// Most push streams one client may hold at once (default 16).
    pub max_streams_per_client: usize,
    /// Most push streams open at once on this server (default 10 000).
    pub max_streams: usize,
    /// Most bytes of a push stream's notifications the server holds for a
    /// client that has not read them (default 4 MiB); past it, a write waits
    /// for the client to read.
    pub max_stream_backlog_bytes: usize,
    /// How long a write waits for a slow reader to make room before its
    /// stream is terminated with `ResourceExhausted` (default 30 s).
    pub slow_reader_grace: Duration,
    /// The secret cursors are sealed with (default: a random one per handle,
    /// so cursors do not outlive the process). Give every node, and every
    /// restart, the same secret for cursors of a durable change log to
    /// resume there.
    pub cursor_key: Option<[u8; 32]>,
    /// Webhook delivery (`events/subscribe`): off unless set.
    #[cfg(feature = "webhooks")]
    pub webhooks: Option<WebhookConfig>,
}

impl std::fmt::Debug for EventsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The cursor key is a secret: never printed.
        f.debug_struct("EventsConfig")
            .field("error_codes", &self.error_codes)
            .field("heartbeat", &self.heartbeat)
            .field("max_poll_events", &self.max_poll_events)
            .field("max_streams_per_client", &self.max_streams_per_client)
            .field("max_stream_backlog_bytes", &self.max_stream_backlog_bytes)
            .field("slow_reader_grace", &self.slow_reader_grace)
            .field("cursor_key", &self.cursor_key.map(|_| ".."))
            .field("webhooks", &self.delivers_webhooks())
            .finish_non_exhaustive()
    }
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            error_codes: ErrorCodeProfile::Sketch,
            heartbeat: Duration::from_secs(15),
            next_poll: Duration::from_secs(5),
            max_poll_events: 100,
            list_page_size: 100,
            max_page_bytes: 1024 * 1024,
            max_argument_bytes: 64 * 1024,
            max_payload_bytes: 256 * 1024,
            retained_events: 10_000,
            retained_bytes: 16 * 1024 * 1024,
            max_streams_per_client: 16,
            max_streams: 10_000,
            max_stream_backlog_bytes: 4 * 1024 * 1024,
            slow_reader_grace: Duration::from_secs(30),
            cursor_key: None,
            #[cfg(feature = "webhooks")]
            webhooks: None,
        }
    }
}

impl EventsConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Which numbers the extension's errors carry.
    pub fn error_codes(mut self, profile: ErrorCodeProfile) -> Self {
        self.error_codes = profile;
        self
    }

    /// How often a push stream sends a heartbeat.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every;
        self
    }

    /// The `nextPollMs` of a quiet poll.
    pub fn next_poll(mut self, after: Duration) -> Self {
        self.next_poll = after;
        self
    }

    /// Most occurrences in one poll answer.
    pub fn max_poll_events(mut self, n: usize) -> Self {
        self.max_poll_events = n;
        self
    }

    /// Most event types on one `events/list` page.
    pub fn list_page_size(mut self, n: usize) -> Self {
        self.list_page_size = n;
        self
    }

    /// Most bytes of occurrences in one poll answer or stream read.
    pub fn max_page_bytes(mut self, bytes: usize) -> Self {
        self.max_page_bytes = bytes;
        self
    }

    /// Most bytes of a subscription's `arguments`.
    pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
        self.max_argument_bytes = bytes;
        self
    }

    /// Most bytes of one occurrence as delivered (see
    /// [`max_payload_bytes`](Self::max_payload_bytes)).
    pub fn max_payload_bytes(mut self, bytes: usize) -> Self {
        self.max_payload_bytes = bytes;
        self
    }

    /// What an event type keeps for replay.
    pub fn retained(mut self, events: usize, bytes: usize) -> Self {
        self.retained_events = events;
        self.retained_bytes = bytes;
        self
    }

    /// Most push streams per client and in all.
    pub fn max_streams(mut self, per_client: usize, total: usize) -> Self {
        self.max_streams_per_client = per_client;
        self.max_streams = total;
        self
    }

    /// What a push stream holds for a client that does not read, and how
    /// long it waits for it to read before ending the stream.
    pub fn stream_backlog(mut self, bytes: usize, grace: Duration) -> Self {
        self.max_stream_backlog_bytes = bytes;
        self.slow_reader_grace = grace;
        self
    }

    /// The secret cursors are sealed with (see [`cursor_key`](Self::cursor_key)).
    pub fn cursor_key(mut self, key: [u8; 32]) -> Self {
        self.cursor_key = Some(key);
        self
    }

    /// Delivers webhooks as `webhooks` says: `task.status_changed` (and the
    /// application's types that list `"webhook"`) offer the mode.
    #[cfg(feature = "webhooks")]
    pub fn webhooks(mut self, webhooks: WebhookConfig) -> Self {
        self.webhooks = Some(webhooks);
        self
    }

    /// Checks the values; errors name the `ext_events` table and the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("max_poll_events", self.max_poll_events),
            ("list_page_size", self.list_page_size),
            ("max_page_bytes", self.max_page_bytes),
            ("max_argument_bytes", self.max_argument_bytes),
            ("max_payload_bytes", self.max_payload_bytes),
            ("retained_events", self.retained_events),
            ("retained_bytes", self.retained_bytes),
            ("max_streams_per_client", self.max_streams_per_client),
            ("max_streams", self.max_streams),
            ("max_stream_backlog_bytes", self.max_stream_backlog_bytes),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(ConfigError::new("ext_events", key, "must be a positive integer"));
            }
        }
        if self.heartbeat.is_zero() || self.heartbeat > Duration::from_secs(30) {
            return Err(ConfigError::new("ext_events", "heartbeat", "must be more than 0 and at most 30 seconds"));
        }
        #[cfg(feature = "webhooks")]
        if let Some(w) = &self.webhooks {
            w.validate()?;
        }
        Ok(())
    }

    /// Whether webhook delivery is configured (never without the `webhooks` feature).
    pub(crate) fn delivers_webhooks(&self) -> bool {
        #[cfg(feature = "webhooks")]
        return self.webhooks.is_some();
        #[cfg(not(feature = "webhooks"))]
        false
    }
}
