//! The `[sessions]` TOML table, validated like `[ext_tasks]`: an error names
//! the table and the key.
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

/// Why a `[sessions]` table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration [sessions] {key}: {message}")]
#[non_exhaustive]
pub struct SessionConfigError {
    /// The key at fault (`sessions` for the table itself).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

fn err(key: &str, message: &str) -> SessionConfigError {
    SessionConfigError { key: key.to_owned(), message: message.to_owned() }
}

impl SessionConfig {
    /// Reads the `[sessions]` table of a TOML document (defaults when it is absent).
    pub fn from_toml(doc: &str) -> Result<Self, SessionConfigError> {
        let root: toml::Table = doc.parse().map_err(|e: toml::de::Error| err("sessions", e.message()))?;
        let mut cfg = Self::default();
        let Some(v) = root.get("sessions") else { return Ok(cfg) };
        let toml::Value::Table(t) = v else { return Err(err("sessions", "must be a table")) };
        for (k, v) in t {
            let n = v.as_integer().filter(|n| *n > 0).ok_or_else(|| err(k, "must be a positive integer"))? as u64;
            match k.as_str() {
                "idle_timeout_ms" => cfg.limits.idle_ms = n,
                "max_sessions" => cfg.limits.max_sessions = n as usize,
                "max_sessions_per_client" => cfg.limits.max_per_client = n as usize,
                "evict_idle_ms" => cfg.limits.evict_idle_ms = n,
                "replay_events" => cfg.replay_events = n as usize,
                "replay_bytes" => cfg.replay_bytes = n as usize,
                "oversize_replay_bytes_per_client" => cfg.oversize_replay_bytes_per_client = n as usize,
                "max_waiting_per_session" => cfg.max_waiting_per_session = n as usize,
                "max_waiting_per_client" => cfg.max_waiting_per_client = n as usize,
                "max_waiting_bytes_per_session" => cfg.max_waiting_bytes_per_session = n as usize,
                "max_waiting_bytes_per_client" => cfg.max_waiting_bytes_per_client = n as usize,
                "abandon_after_ms" => cfg.abandon_after = std::time::Duration::from_millis(n),
                "max_retained_bytes" => cfg.max_retained_bytes = n as usize,
                _ => {
                    return Err(err(
                        k,
                        "unknown key (expected idle_timeout_ms, max_sessions, max_sessions_per_client, evict_idle_ms, \
                         replay_events, replay_bytes, oversize_replay_bytes_per_client, max_waiting_per_session, max_waiting_per_client, \
                         max_waiting_bytes_per_session, max_waiting_bytes_per_client, abandon_after_ms, max_retained_bytes)",
                    ));
                }
            }
        }
        if cfg.max_retained_bytes < cfg.replay_bytes {
            return Err(err("max_retained_bytes", "must be at least replay_bytes (room for one session)"));
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_validates_the_table() {
        let c = SessionConfig::from_toml("[sessions]\nidle_timeout_ms = 1000\nmax_sessions = 3\n").expect("valid");
        assert_eq!((c.limits.idle_ms, c.limits.max_sessions), (1000, 3));
        assert_eq!(SessionConfig::from_toml("").expect("absent").limits.idle_ms, 30 * 60 * 1000);
        let e = SessionConfig::from_toml("[sessions]\nmax_sessions = 0\n").expect_err("zero");
        assert_eq!(e.key, "max_sessions");
        assert!(e.to_string().contains("[sessions] max_sessions"), "{e}");
        assert_eq!(SessionConfig::from_toml("[sessions]\nbogus = 1\n").expect_err("unknown").key, "bogus");
        assert_eq!(SessionConfig::from_toml("sessions = 1\n").expect_err("not a table").key, "sessions");
        let c = SessionConfig::from_toml("[sessions]\nmax_retained_bytes = 1048576\n").expect("valid");
        assert_eq!(c.max_retained_bytes, 1024 * 1024);
        let small = "[sessions]\nreplay_bytes = 2048\nmax_retained_bytes = 1024\n";
        assert_eq!(SessionConfig::from_toml(small).expect_err("no room for a session").key, "max_retained_bytes");
    }
}
