//! Protocol revisions.

/// The newest revision this library speaks.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";

/// Every revision this library serves, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[LATEST_PROTOCOL_VERSION];

/// Legacy revisions, which open with an `initialize` handshake.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Which family of the protocol a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// `2026-07-28` and later: stateless, per-request `_meta`.
    Modern,
    /// `2025-11-25` and earlier: `initialize` handshake and sessions.
    Legacy,
}

/// Whether `version` is one this library serves.
pub fn is_supported(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}
