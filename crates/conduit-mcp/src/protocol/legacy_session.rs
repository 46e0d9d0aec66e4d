//! The legacy (2025-11-25) session: the handshake's version negotiation, the
//! header that carries the session, and the log levels of its `logging/setLevel`.

/// The legacy revisions a dual-era server answers, newest first. An
/// `initialize` asking for anything else is answered with the first.
pub const SERVED_LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18"];

/// The header carrying the legacy session id.
pub const SESSION_ID_HEADER: &str = "mcp-session-id";

/// The log levels of `logging/setLevel`, least severe first.
pub const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// The version an `initialize` asking for `requested` is answered with: the
/// same when served, else the newest served (negotiation down, never an error).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SERVED_LEGACY_VERSIONS.iter().find(|v| **v == r).copied())
        .unwrap_or(SERVED_LEGACY_VERSIONS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_down() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate(Some("2026-07-28")), "2025-11-25");
        assert_eq!(negotiate(Some("1999-01-01")), "2025-11-25");
        assert_eq!(negotiate(None), "2025-11-25");
    }
}
