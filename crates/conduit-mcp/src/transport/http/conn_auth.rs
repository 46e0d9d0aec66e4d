//! A connection's last credentials and the principal they proved, so a client
//! that sends the same token on every request of a keep-alive connection is
//! not checked again on each of them.
//!
//! Only [`Bound::serve`](super::Bound::serve) keeps one per connection (an
//! application mounting [`router`](super::router) has none, and every request is
//! authenticated). It holds what the connection itself carried: the credentials
//! header's bytes, as sent, and the principal, for as long as the authenticator
//! allows ([`Authenticate::reuse_on_connection`]) and never past the principal's
//! [`valid_until_ms`](Principal::valid_until_ms) by the authenticator's clock.
//! Another token on the connection replaces it.

use crate::auth::{Authenticate, Principal};
use axum::http::HeaderValue;
use std::sync::Mutex;

/// The credentials header a connection keeps at most (a larger one is checked each time).
const MAX_KEPT_BYTES: usize = 8 * 1024;

/// One connection's last proven credentials (a request extension).
#[derive(Default)]
pub(super) struct ConnCredentials {
    last: Mutex<Option<Proven>>,
}

struct Proven {
    credentials: Box<[u8]>,
    principal: Principal,
    until_ms: u64,
}

impl ConnCredentials {
    /// The principal these credentials proved on this connection, while it may be reused.
    pub(super) fn recall(&self, auth: &dyn Authenticate, credentials: &HeaderValue) -> Option<Principal> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let proven = last.as_ref()?;
        (proven.credentials[..] == *credentials.as_bytes() && auth.now_ms() < proven.until_ms)
            .then(|| proven.principal.clone())
    }

    /// Keeps `principal` for these credentials, as long as the authenticator allows.
    pub(super) fn remember(&self, auth: &dyn Authenticate, credentials: &HeaderValue, principal: &Principal) {
        let Some(reuse) = auth.reuse_on_connection(principal) else { return };
        if credentials.len() > MAX_KEPT_BYTES {
            return;
        }
        let reuse_ms = u64::try_from(reuse.as_millis()).unwrap_or(u64::MAX);
        let until_ms = auth.now_ms().saturating_add(reuse_ms).min(principal.valid_until_ms.unwrap_or(u64::MAX));
        let proven = Proven { credentials: credentials.as_bytes().into(), principal: principal.clone(), until_ms };
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(proven);
    }
}
