//! What every HTTP request passes before its method is looked at: the
//! DNS-rebinding guard (Origin, Host → 403) and authentication (401).

use super::HttpConfig;
use super::guard::{host_allowed, origin_host};
use super::status::{challenge, forbidden};
use crate::auth::{AuthError, Principal};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The principal of an admitted request (`None` without authentication), or the refusal.
pub(super) async fn admit(cfg: &HttpConfig, headers: &HeaderMap) -> Result<Option<Principal>, Response> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin.to_str().ok().and_then(origin_host).is_some_and(|h| host_allowed(&cfg.hosts, h));
        if !ok {
            return Err(forbidden("Forbidden: Origin not allowed"));
        }
    }
    let host_ok = headers.get(header::HOST).and_then(|h| h.to_str().ok()).is_none_or(|h| host_allowed(&cfg.hosts, h));
    if !host_ok {
        return Err(forbidden("Forbidden: Host not allowed"));
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
