//! What every HTTP request passes before its method is looked at: the
//! DNS-rebinding guard (Origin, Host → 403) and authentication (401, 403 for
//! missing scopes, 503 when it cannot be checked now).

use super::HttpConfig;
use super::guard::{Refusal, check};
use super::status::{challenge, forbidden};
use crate::auth::{AuthError, INSUFFICIENT_SCOPE, INVALID_TOKEN, Principal};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The principal of an admitted request (`None` without authentication), or the refusal.
/// `authority` is the request target's, when it has one (absolute form, HTTP/2).
pub(super) async fn admit(
    cfg: &HttpConfig,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<Option<Principal>, Response> {
    match check(headers, authority, &cfg.hosts) {
        Ok(()) => {}
        Err(Refusal::Origin) => return Err(forbidden("Forbidden: Origin not allowed")),
        Err(Refusal::Host) => return Err(forbidden("Forbidden: Host not allowed")),
        Err(Refusal::DuplicateHost) => {
            return Err((StatusCode::BAD_REQUEST, "Bad Request: more than one Host header").into_response());
        }
        Err(Refusal::MissingHost) => {
            return Err((StatusCode::BAD_REQUEST, "Bad Request: missing Host header").into_response());
        }
    }
    match &cfg.auth {
        None => Ok(None),
        Some(a) => match a.authenticate(headers).await {
            Ok(p) => Ok(Some(p)),
            Err(e) => Err(refusal(cfg, a.scheme(), &e)),
        },
    }
}

/// The answer to a failed authentication, with its challenge (RFC 6750 §3).
fn refusal(cfg: &HttpConfig, scheme: &str, e: &AuthError) -> Response {
    tracing::debug!(error = %e, "authentication failed");
    let base = super::base_scope(cfg);
    let scope = |s: Option<&str>| s.map(|s| format!("scope=\"{s}\"")).unwrap_or_default();
    let (status, params) = match e {
        AuthError::Missing => (StatusCode::UNAUTHORIZED, vec![scope(base)]),
        AuthError::Invalid(why) => (
            StatusCode::UNAUTHORIZED,
            vec![scope(base), format!("error=\"{INVALID_TOKEN}\""), format!("error_description=\"{}\"", quoted(why))],
        ),
        AuthError::InsufficientScope(needed) => (
            StatusCode::FORBIDDEN,
            vec![format!("error=\"{INSUFFICIENT_SCOPE}\""), format!("scope=\"{}\"", needed.join(" "))],
        ),
        AuthError::Unavailable(_) => {
            let mut r = (StatusCode::SERVICE_UNAVAILABLE, "authentication is unavailable; try again").into_response();
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return r;
        }
    };
    let params: Vec<String> = params.into_iter().filter(|p| !p.is_empty()).collect();
    let mut r = (status, e.to_string()).into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, scheme, &params.join(", ")));
    r
}

/// Text fit for a quoted header parameter: printable ASCII without quotes or backslashes.
fn quoted(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').filter(|c| !matches!(c, '"' | '\\')).take(200).collect()
}
