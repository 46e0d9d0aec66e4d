//! The credentials a long-lived stream was opened with, checked again when
//! they stop proving its principal.
//!
//! A `subscriptions/listen` stream or a 2025-11-25 GET stream outlives the
//! request that opened it. Its principal says until when its credentials
//! prove it ([`Principal::valid_until_ms`]: a JWT's `exp` with the leeway, an
//! introspection answer's reuse limit). From that instant on, before the
//! stream carries anything more, the authenticator is asked again with the
//! stream's own `Authorization` header ([`Authenticate::reauthenticate`]: no
//! new request, so nothing proven per request, such as a DPoP proof, is asked
//! for again; a DPoP-bound token must still be bound to the key proven when
//! the stream opened): the same principal carries on to its
//! new limit (an introspected token still active), anything else (expired,
//! revoked, another principal, the authorization server unreachable) ends the
//! stream. The client reconnects, and is refused until it has a token again.

use super::HttpConfig;
use crate::auth::{Authenticate, Principal};
use axum::http::{HeaderMap, header};
use std::sync::Arc;
use std::time::Duration;

/// The most bytes of `Authorization` a stream keeps to check again; a stream opened
/// with more ends at its limit instead (no authenticator needs that much).
const MAX_KEPT_BYTES: usize = 8 * 1024;

/// What a stream keeps of its credentials, and until when they hold.
pub(super) struct StreamCredentials {
    auth: Arc<dyn Authenticate>,
    /// The opening request's `Authorization` header(s) only (empty: past the bound).
    headers: HeaderMap,
    /// The principal the credentials proved when the stream opened.
    opened: Principal,
    until_ms: u64,
}

impl StreamCredentials {
    /// The credentials of a stream opened with `headers` by `principal`; `None` when
    /// nothing ends them (no authentication, or credentials without a known end).
    pub(super) fn of(cfg: &HttpConfig, headers: &HeaderMap, principal: Option<&Principal>) -> Option<Self> {
        let auth = cfg.auth.clone()?;
        let principal = principal?;
        let until_ms = principal.valid_until_ms?;
        let mut kept = HeaderMap::new();
        let mut size = 0;
        for v in headers.get_all(header::AUTHORIZATION) {
            size += v.len();
            kept.append(header::AUTHORIZATION, v.clone());
        }
        if size > MAX_KEPT_BYTES {
            kept.clear();
        }
        Some(Self { auth, headers: kept, opened: principal.clone(), until_ms })
    }

    /// How long (in real time) until they must be checked: their limit by the
    /// authenticator's clock, and at most `at_most` (a clock that moves on its own, as a
    /// test's does, is read again then).
    pub(super) fn check_in(&self, at_most: Duration) -> Duration {
        Duration::from_millis(self.until_ms.saturating_sub(self.auth.now_ms())).min(at_most)
    }

    /// Whether they still prove the principal. Before their limit they do; from it on the
    /// authenticator is asked again, and only the same principal with a later limit holds.
    pub(super) async fn hold(&mut self) -> bool {
        if self.auth.now_ms() < self.until_ms {
            return true;
        }
        if self.headers.is_empty() {
            return false;
        }
        match self.auth.reauthenticate(&self.headers, &self.opened).await {
            Ok(p) if p.id == self.opened.id => {
                let until = p.valid_until_ms.unwrap_or(u64::MAX);
                let renewed = until > self.auth.now_ms();
                self.until_ms = until;
                renewed
            }
            Ok(_) => false,
            Err(e) => {
                tracing::debug!(error = %e, "a stream's credentials no longer hold; ending it");
                false
            }
        }
    }
}
