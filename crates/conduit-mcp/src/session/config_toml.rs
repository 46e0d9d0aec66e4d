//! The `[sessions]` TOML table ([`ConfigFile`](crate::config_file::ConfigFile)
//! reads it) and its validation into a [`SessionConfig`].
//!
//! ```toml
//! [sessions]
//! idle_timeout_ms = 1800000   # idle sessions expire (default 30 min)
//! max_sessions = 10000        # live sessions at most
//! max_sessions_per_client = 64 # live sessions of one principal (or address) at most
//! evict_idle_ms = 60000       # at the cap, sessions idle this long may be evicted
//! replay_events = 256         # events kept per session for Last-Event-ID
//! replay_bytes = 262144       # bytes of messages kept per session for Last-Event-ID
//! oversize_replay_bytes_per_client = 16777216 # larger messages kept, per client on this node
//! max_waiting_per_session = 16 # server→client requests awaiting answers, per session
//! max_waiting_per_client = 64  # ... per client, over its sessions on this node
//! max_waiting_bytes_per_session = 4194304 # bytes those requests keep (params, _meta), per session
//! max_waiting_bytes_per_client = 16777216 # ... per client, over its sessions on this node
//! abandon_after_ms = 30000     # a waiting request's stream left unconnected this long gives up
//! max_retained_bytes = 268435456 # bytes all sessions on this node retain together (replay, waits)
//! ```

use super::manager::SessionConfig;
use crate::config::ConfigError;
use crate::config::shape::Positive;
use std::time::Duration;

/// The `[sessions]` table as written: each key a positive integer.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionsTable {
    idle_timeout_ms: Option<Positive>,
    max_sessions: Option<Positive>,
    max_sessions_per_client: Option<Positive>,
    evict_idle_ms: Option<Positive>,
    replay_events: Option<Positive>,
    replay_bytes: Option<Positive>,
    oversize_replay_bytes_per_client: Option<Positive>,
    max_waiting_per_session: Option<Positive>,
    max_waiting_per_client: Option<Positive>,
    max_waiting_bytes_per_session: Option<Positive>,
    max_waiting_bytes_per_client: Option<Positive>,
    abandon_after_ms: Option<Positive>,
    max_retained_bytes: Option<Positive>,
}

/// Sets `slot` when the table gives a value.
fn set<T>(slot: &mut T, value: Option<Positive>, into: impl Fn(Positive) -> T) {
    if let Some(v) = value {
        *slot = into(v);
    }
}

impl SessionsTable {
    /// The table over the defaults, validated.
    pub(crate) fn config(&self) -> Result<SessionConfig, ConfigError> {
        let mut cfg = SessionConfig::default();
        let (ms, count) = (|p: Positive| p.0, Positive::count);
        set(&mut cfg.limits.idle_ms, self.idle_timeout_ms, ms);
        set(&mut cfg.limits.max_sessions, self.max_sessions, count);
        set(&mut cfg.limits.max_per_client, self.max_sessions_per_client, count);
        set(&mut cfg.limits.evict_idle_ms, self.evict_idle_ms, ms);
        set(&mut cfg.replay_events, self.replay_events, count);
        set(&mut cfg.replay_bytes, self.replay_bytes, count);
        set(&mut cfg.oversize_replay_bytes_per_client, self.oversize_replay_bytes_per_client, count);
        set(&mut cfg.max_waiting_per_session, self.max_waiting_per_session, count);
        set(&mut cfg.max_waiting_per_client, self.max_waiting_per_client, count);
        set(&mut cfg.max_waiting_bytes_per_session, self.max_waiting_bytes_per_session, count);
        set(&mut cfg.max_waiting_bytes_per_client, self.max_waiting_bytes_per_client, count);
        set(&mut cfg.abandon_after, self.abandon_after_ms, |p| Duration::from_millis(p.0));
        set(&mut cfg.max_retained_bytes, self.max_retained_bytes, count);
        if cfg.max_retained_bytes < cfg.replay_bytes {
            let why = "must be at least replay_bytes (room for one session)";
            return Err(ConfigError::new("sessions", "max_retained_bytes", why));
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::read::one_table;

    fn read(text: &str) -> Result<SessionConfig, ConfigError> {
        one_table::<SessionsTable>("sessions", text)?.config()
    }

    #[test]
    fn reads_and_validates_the_table() {
        let c = read("[sessions]\nidle_timeout_ms = 1000\nmax_sessions = 3\n").expect("valid");
        assert_eq!((c.limits.idle_ms, c.limits.max_sessions), (1000, 3));
        assert_eq!(read("").expect("absent").limits.idle_ms, 30 * 60 * 1000);
        let e = read("[sessions]\nmax_sessions = 0\n").expect_err("zero");
        assert_eq!((e.table(), e.key()), ("sessions", "max_sessions"));
        assert!(e.to_string().contains("[sessions] max_sessions"), "{e}");
        assert_eq!(read("[sessions]\nbogus = 1\n").expect_err("unknown").key(), "bogus");
        assert_eq!(read("sessions = 1\n").expect_err("not a table").key(), "sessions");
        let c = read("[sessions]\nmax_retained_bytes = 1048576\n").expect("valid");
        assert_eq!(c.max_retained_bytes, 1024 * 1024);
        let small = "[sessions]\nreplay_bytes = 2048\nmax_retained_bytes = 1024\n";
        assert_eq!(read(small).expect_err("no room for a session").key(), "max_retained_bytes");
    }

    #[test]
    fn an_unknown_key_lists_the_allowed_ones() {
        let e = read("[sessions]\nidle_timeout = 5\n").expect_err("unknown");
        assert_eq!((e.table(), e.key()), ("sessions", "idle_timeout"));
        assert!(e.reason().starts_with("unknown key `idle_timeout`, expected one of `idle_timeout_ms`,"), "{e}");
        assert!(e.reason().ends_with("`max_retained_bytes`"), "every key of the struct: {e}");
    }
}
