//! The `SessionStore` trait: where legacy (2025-11-25) sessions live, so any
//! node sharing the store serves any session's requests.

use crate::quota::ClientKey;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::fmt;

/// One legacy session as stored.
///
/// The id is a bearer capability: it is never logged at info level or above.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The `Mcp-Session-Id` (see [`new_session_id`](super::new_session_id)).
    pub id: String,
    /// The principal id that opened the session (`None` without authentication).
    pub owner: Option<String>,
    /// Who the per-client cap counts the session against: the text of its
    /// [`ClientKey`](crate::quota::ClientKey) (`principal:<id>`, or without authentication
    /// `ip:<address>`).
    pub client_key: String,
    /// The negotiated protocol revision.
    pub protocol_version: String,
    /// What the server reads of the capabilities the client declared at `initialize`:
    /// its input declarations ([`ClientCapabilities::input_only`]), whatever else it sent.
    ///
    /// [`ClientCapabilities::input_only`]: crate::protocol::meta::ClientCapabilities::input_only
    pub client_capabilities: Map<String, Value>,
    /// The client's `clientInfo` as compact JSON text (`null` when it sent none), within
    /// [`crate::bounds::client_info`]'s bound: kept for operators; the server never reads it back.
    pub client_info: String,
    /// The level set by `logging/setLevel` (`None`: no log messages are sent).
    pub log_level: Option<String>,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// When the session was opened (epoch ms).
    pub created_ms: u64,
    /// When the session last served a request (epoch ms); idle expiry counts from here.
    pub last_seen_ms: u64,
}

impl fmt::Debug for SessionRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The id is a capability: not printed.
        f.debug_struct("SessionRecord")
            .field("owner", &self.owner)
            .field("client_key", &self.client_key)
            .field("protocol_version", &self.protocol_version)
            .field("initialized", &self.initialized)
            .field("last_seen_ms", &self.last_seen_ms)
            .finish_non_exhaustive()
    }
}

impl SessionRecord {
    /// A fresh, not yet initialized session opened at `now_ms`.
    ///
    /// Its [`client_key`](Self::client_key) is the owner's (`local` without one): set it to
    /// the client's address for an unauthenticated HTTP client.
    pub fn new(id: String, owner: Option<String>, protocol_version: impl Into<String>, now_ms: u64) -> Self {
        let client_key = match &owner {
            Some(o) => ClientKey::Principal(o.as_str().into()).to_string(),
            None => ClientKey::Local.to_string(),
        };
        Self {
            id,
            owner,
            client_key,
            protocol_version: protocol_version.into(),
            client_capabilities: Map::new(),
            client_info: "null".to_owned(),
            log_level: None,
            initialized: false,
            created_ms: now_ms,
            last_seen_ms: now_ms,
        }
    }

    /// Whether the session is still live at `now_ms` with this idle timeout.
    pub fn is_live(&self, now_ms: u64, idle_ms: u64) -> bool {
        self.last_seen_ms.saturating_add(idle_ms) > now_ms
    }
}

/// The bounds a store enforces on `create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    /// Live sessions at most.
    pub max_sessions: usize,
    /// Live sessions of one client (one [`client_key`](SessionRecord::client_key)) at most,
    /// and never more than a quarter of `max_sessions` (see [`per_client`](Self::per_client)).
    pub max_per_client: usize,
    /// A session idle this long is expired (ms).
    pub idle_ms: u64,
    /// At the cap, a session idle at least this long may be evicted (oldest first) to make room;
    /// when none is, `create` fails with [`SessionError::LimitReached`].
    pub evict_idle_ms: u64,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self { max_sessions: 10_000, max_per_client: 64, idle_ms: 30 * 60 * 1000, evict_idle_ms: 60 * 1000 }
    }
}

impl SessionLimits {
    /// The cap a store applies per client: `max_per_client`, and at most a quarter of
    /// `max_sessions` (at least one), as tasks are capped per principal at a quarter of the
    /// row cap: whatever the per-client setting, one client never holds more than a
    /// quarter of the node's sessions, so at least four clients always fit.
    pub fn per_client(&self) -> usize {
        self.max_per_client.min((self.max_sessions / 4).max(1))
    }
}

/// Why a session store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No such session, expired, or another principal's. Deliberately one variant.
    #[error("session not found")]
    NotFound,
    /// The cap on live sessions is reached and no session is idle long enough to evict.
    #[error("too many live sessions")]
    LimitReached,
    /// The client holds its cap of live sessions and none of them is idle long enough to evict.
    #[error("too many live sessions for this client")]
    ClientLimitReached,
    /// The node's sessions retain their ceiling of bytes
    /// ([`SessionConfig::max_retained_bytes`](super::SessionConfig::max_retained_bytes)): no new
    /// session until some give theirs back. Returned by the node, never by a store.
    #[error("the sessions on this node retain all the bytes it allows")]
    RetainedBytesReached,
    /// A session with this id exists already.
    #[error("session id already exists")]
    Duplicate,
    /// The backend failed. Built with [`SessionError::backend`].
    #[error("session store backend error: {message}")]
    #[non_exhaustive]
    Backend {
        /// What failed, whole: the operation and the backend's own words, so a
        /// log line of this error alone says everything.
        message: String,
        /// The backend's error (downcast it to the driver's type).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl SessionError {
    /// A backend failure: `what` failed because of `source` (whose words end the message).
    pub fn backend(what: impl fmt::Display, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        SessionError::Backend { message: format!("{what}: {source}"), source: Box::new(source) }
    }
}

/// What a [`create`](SessionStore::create) removed to make room.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Created {
    /// The SHA-256 digests of the ids ([`session_key`](super::session_key)) of the sessions
    /// it removed, expired or evicted: the node that created the session drops what it
    /// holds of them at once.
    pub removed: Vec<[u8; 32]>,
}

impl Created {
    /// A create that removed the sessions with these id digests.
    pub fn new(removed: Vec<[u8; 32]>) -> Self {
        Self { removed }
    }
}

/// Storage of legacy sessions. Every method takes the time from the caller
/// (the server's injected clock), so stores never read a clock of their own.
#[async_trait]
pub trait SessionStore: Send + Sync + fmt::Debug + 'static {
    /// Stores a new session and says which sessions it removed to make room.
    ///
    /// When the record's client holds [`limits.per_client()`](SessionLimits::per_client) live sessions, that
    /// client's least recently seen session idle at least `limits.evict_idle_ms` is
    /// evicted; if none qualifies it fails with `ClientLimitReached`. Then, at
    /// `limits.max_sessions` live sessions, it drops expired ones, then evicts the least
    /// recently seen session idle at least `limits.evict_idle_ms`; if none qualifies it
    /// fails with `LimitReached`. A failed create removes nothing.
    async fn create(&self, record: SessionRecord, limits: SessionLimits) -> Result<Created, SessionError>;

    /// The live session `id` owned by `owner`, its `last_seen_ms` moved to `now_ms`.
    /// Unknown, expired (idle `idle_ms` or more) and foreign sessions are all `NotFound`.
    async fn touch(
        &self,
        id: &str,
        owner: Option<&str>,
        now_ms: u64,
        idle_ms: u64,
    ) -> Result<SessionRecord, SessionError>;

    /// Like [`touch`](Self::touch), for a caller that already holds the session's record
    /// (the node serving it) and needs only the new `last_seen_ms`. The default calls
    /// `touch`; a store overrides it to skip building the record on every request.
    async fn touch_seen(&self, id: &str, owner: Option<&str>, now_ms: u64, idle_ms: u64) -> Result<u64, SessionError> {
        self.touch(id, owner, now_ms, idle_ms).await.map(|r| r.last_seen_ms)
    }

    /// Writes the mutable fields of `record` (capabilities, log level, initialized,
    /// last seen) to the session with its id and owner; `NotFound` when it is gone.
    async fn update(&self, record: &SessionRecord) -> Result<(), SessionError>;

    /// Ends session `id` of `owner`; `NotFound` when it is unknown or foreign.
    async fn delete(&self, id: &str, owner: Option<&str>) -> Result<(), SessionError>;

    /// Drops sessions idle since before `now_ms - idle_ms`; returns how many.
    async fn sweep(&self, now_ms: u64, idle_ms: u64) -> Result<usize, SessionError>;

    /// How many sessions are stored (live or not yet swept).
    async fn count(&self) -> Result<usize, SessionError>;
}

#[cfg(test)]
mod limits_tests {
    use super::SessionLimits;

    #[test]
    fn the_per_client_cap_is_at_most_a_quarter_of_the_total() {
        let of = |max_sessions, max_per_client| {
            SessionLimits { max_sessions, max_per_client, ..SessionLimits::default() }.per_client()
        };
        assert_eq!(SessionLimits::default().per_client(), 64, "the default stands under the default total");
        assert_eq!(of(8, 64), 2);
        assert_eq!(of(8, 1), 1, "a smaller setting stays");
        assert_eq!(of(3, 64), 1, "at least one");
    }
}

#[cfg(test)]
mod error_tests {
    use super::SessionError;
    use std::error::Error as _;

    #[test]
    fn a_backend_error_says_everything_and_keeps_its_cause() {
        let cause = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
        let e = SessionError::backend("postgres: cannot read the session", cause);
        assert_eq!(e.to_string(), "session store backend error: postgres: cannot read the session: timed out");
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("the driver's error");
        assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
    }
}
