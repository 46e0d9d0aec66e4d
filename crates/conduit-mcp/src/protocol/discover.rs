//! `server/discover` and the caching fields shared by list results.

use serde::{Deserialize, Serialize};

/// Who may reuse a cached result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data; shared caches allowed.
    #[default]
    Public,
    /// Reuse only within the same authorization context.
    Private,
}

/// Caching hints on a `CacheableResult` (`ttlMs` is freshness, not a task lifetime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheHints {
    /// Freshness in milliseconds.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub cache_scope: CacheScope,
}

impl Default for CacheHints {
    fn default() -> Self {
        Self { ttl_ms: 60_000, cache_scope: CacheScope::Public }
    }
}
