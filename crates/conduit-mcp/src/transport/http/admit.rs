//! What every HTTP request passes before its method is looked at: the
//! DNS-rebinding guard (Origin, Host → 403) and authentication (401).

use super::HttpConfig;
use super::guard::{Refusal, check};
use super::status::{challenge, forbidden};
use crate::auth::{AuthError, Principal};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The principal of an admitted request (`None` without authentication), or the refusal.
pub(super) async fn admit(cfg: &HttpConfig, headers: &HeaderMap) -> Result<Option<Principal>, Response> {
    match check(headers, &cfg.hosts) {
        Ok(()) => {}
        Err(Refusal::Origin) => return Err(forbidden("Forbidden: Origin not allowed")),
        Err(Refusal::Host) => return Err(forbidden("Forbidden: Host not allowed")),
        Err(Refusal::DuplicateHost) => {
            return Err((StatusCode::BAD_REQUEST, "Bad Request: more than one Host header").into_response());
        }
    }
    match &cfg.auth {
        None => Ok(None),
        Some(a) => match a.authenticate(headers).await {
            Ok(p) => Ok(Some(p)),
            Err(e) => {
                let extra = match &e {
                    AuthError::Missing => String::new(),
                    AuthError::Invalid(_) => "error=\"invalid_token\"".to_owned(),
                };
                tracing::debug!(error = %e, "authentication failed");
                let mut r = (StatusCode::UNAUTHORIZED, e.to_string()).into_response();
                r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, a.scheme(), &extra));
                Err(r)
            }
        },
    }
}
