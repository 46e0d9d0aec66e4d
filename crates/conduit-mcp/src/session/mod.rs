//! Legacy (2025-11-25) sessions: the record, the [`SessionStore`] trait, the
//! in-memory default, the id minted on `initialize`, and what a node holds
//! while it serves a session (its SSE streams and replay buffer, the
//! server→client requests awaiting answers), and the relay that carries a
//! client's response to the node holding the call when several nodes share
//! the store.
//!
//! A session is bound to the principal that opened it: another principal
//! presenting its id is answered exactly like an unknown id. Idle sessions
//! expire (default 30 minutes, measured on the server's injected clock), and
//! the number of live sessions is capped, in all and per client (the principal,
//! or without authentication the address: [`ClientKey`](crate::quota::ClientKey);
//! a client's cap is at most a quarter of the total). A session with an open
//! stream or a request in flight is in use: it is not idle, and is not evicted.
//! What all sessions of a node retain (replay buffers, waiting requests) stays
//! under one ceiling in bytes.
//!

// Only the HTTP transport reads a session's SSE streams, the forwarding of a response to
// another node and the relay's node tags: a server built without `http` (stdio only)
// compiles them unused.
#![cfg_attr(not(feature = "http"), allow(dead_code, unused_imports))]
// The guide to both eras on one endpoint (docs/eras.md).
#![doc = include_str!("../../guides/eras.md")]

pub(crate) mod config_toml;
mod events;
mod forward;
mod live;
mod manager;
mod memory;
mod relay;
mod retained;
mod store;
mod waits;

pub use events::{DEFAULT_OVERSIZE_REPLAY_BYTES_PER_CLIENT, DEFAULT_REPLAY, DEFAULT_REPLAY_BYTES, Event, EventLog};
pub(crate) use forward::Routed;
pub use live::LegacySession;
pub(crate) use live::{StreamOpen, UnsolicitedSink, lock_changes, lock_uris};
pub(crate) use manager::Sessions;
pub use manager::{SessionConfig, SessionStats};
pub use memory::MemorySessionStore;
#[cfg(feature = "testing")]
pub(crate) use relay::session_digest;
pub use relay::{ForwardedResponse, RelayError, RelaySink, ResponseRelay, session_key};
pub use retained::DEFAULT_RETAINED_BYTES;
pub use store::{Created, SessionError, SessionLimits, SessionRecord, SessionStore};
pub(crate) use waits::Asking;
pub use waits::{
    DEFAULT_ABANDON_AFTER, DEFAULT_WAITING_BYTES_PER_CLIENT, DEFAULT_WAITING_BYTES_PER_SESSION,
    DEFAULT_WAITING_PER_CLIENT, DEFAULT_WAITING_PER_SESSION,
};

/// A new session id: 32 random bytes as 64 lowercase hex digits (visible ASCII,
/// `0x21..=0x7E`, as the 2025-11-25 transport requires).
pub fn new_session_id() -> String {
    let bytes: [u8; 32] = rand::random();
    let mut s = String::with_capacity(64);
    for b in bytes {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_visible_ascii_and_distinct() {
        let a = new_session_id();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_ne!(a, new_session_id());
    }
}
