//! What every HTTP request passes before its method is looked at: the
//! DNS-rebinding guard (Origin, Host → 403), the address's budget of failed
//! authentications (429), and authentication (400 for credentials given twice,
//! 401, 403 for missing scopes, 503 when it cannot be checked now).

use super::AppState;
use super::HttpConfig;
use super::conn_auth::ConnCredentials;
use super::guard::{Refusal, check};
use super::status::{challenge, error_response, forbidden};
use crate::auth::{AuthError, Authenticate, Principal};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::oauth::challenge::Challenge;
use crate::protocol::oauth::dpop::{NONCE_HEADER, SCHEME as DPOP_SCHEME};
use crate::protocol::oauth::errors::{INVALID_REQUEST, INVALID_TOKEN};
use crate::quota::ClientKey;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// An admitted request: who made it, and who per-client limits count it against
/// (computed here once, then carried with the request).
pub(super) struct Admitted {
    /// The authenticated caller (`None` without authentication).
    pub(super) principal: Option<Principal>,
    /// The principal, else the client's address.
    pub(super) client: ClientKey,
}

/// The admitted request, or the refusal.
pub(super) async fn admit(st: &AppState, parts: &Parts) -> Result<Admitted, Response> {
    let principal = authenticate(st, parts).await?;
    let client = ClientKey::of(principal.as_ref(), super::peer::peer(&parts.extensions));
    Ok(Admitted { principal, client })
}

/// The principal of a request past the guard and authentication (`None` without
/// authentication), or the refusal.
async fn authenticate(st: &AppState, parts: &Parts) -> Result<Option<Principal>, Response> {
    let cfg = &st.config;
    let headers = &parts.headers;
    // The request target's authority, when it has one (absolute form, HTTP/2).
    match check(headers, parts.uri.authority().map(|a| a.as_str()), &cfg.hosts) {
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
    let Some(auth) = &cfg.auth else { return Ok(None) };
    let credentials_header = auth.credentials_header();
    if let Some(name) = duplicated(headers, &credentials_header) {
        let e = AuthError::InvalidRequest(format!("more than one {name} header"));
        charge(st, parts);
        return Err(refusal(cfg, auth.as_ref(), &e));
    }
    // The same credentials this connection proved a moment ago prove the same principal.
    let proven = parts.extensions.get::<Arc<ConnCredentials>>();
    let credentials = headers.get(&credentials_header);
    if let (Some(proven), Some(credentials)) = (proven, credentials)
        && let Some(p) = proven.recall(auth.as_ref(), credentials)
    {
        return Ok(Some(p));
    }
    // Failed authentications count by address, whatever the credentials claim to be.
    let address = super::peer::peer(&parts.extensions).map(|ip| ClientKey::of(None, Some(ip)));
    let budget = st.auth_failures.as_ref().zip(address.as_ref());
    if let Some((failures, address)) = budget
        && let Err(wait) = failures.peek(address)
    {
        crate::metrics::limited("auth_failures");
        let e = RpcError::too_many(
            "Too many failed authentications from this address; try again after data.retryAfterMs",
            Some(wait),
        );
        return Err(error_response(cfg, None, e));
    }
    match auth.authenticate_request(&parts.method, headers).await {
        Ok(p) => {
            if let (Some(proven), Some(credentials)) = (proven, credentials) {
                proven.remember(auth.as_ref(), credentials, &p);
            }
            Ok(Some(p))
        }
        Err(e) => {
            // Credentials that were read and refused; not their absence, a missing scope
            // or an authorization server that could not answer.
            if matches!(e, AuthError::Invalid(_) | AuthError::InvalidRequest(_) | AuthError::Proof { .. }) {
                charge(st, parts);
            }
            Err(refusal(cfg, auth.as_ref(), &e))
        }
    }
}

/// Counts one failed authentication against the request's address.
fn charge(st: &AppState, parts: &Parts) {
    let address = super::peer::peer(&parts.extensions).map(|ip| ClientKey::of(None, Some(ip)));
    if let (Some(failures), Some(address)) = (st.auth_failures.as_ref(), address.as_ref()) {
        let _ = failures.check(address);
    }
}

/// The first of `Authorization` and `credentials` that the request carries more than once.
fn duplicated(headers: &HeaderMap, credentials: &header::HeaderName) -> Option<header::HeaderName> {
    [header::AUTHORIZATION, credentials.clone()].into_iter().find(|name| headers.get_all(name).iter().nth(1).is_some())
}

/// The answer to a failed authentication, with its challenge (RFC 6750 §3).
/// An authenticator that takes DPoP-bound tokens adds its `DPoP` challenge (RFC 9449 §7.1)
/// to a 401: with the `algs` it takes, beside the Bearer one or, DPoP required, in its place.
fn refusal(cfg: &HttpConfig, auth: &dyn Authenticate, e: &AuthError) -> Response {
    tracing::debug!(error = %e, "authentication failed");
    let scheme = auth.scheme();
    let base = Challenge { scopes: super::base_scopes(cfg), ..Challenge::default() };
    let described = |code: &str, why: &str| Challenge {
        error: Some(code.to_owned()),
        error_description: Some(why.to_owned()),
        ..base.clone()
    };
    let (status, c) = match e {
        AuthError::Missing => (StatusCode::UNAUTHORIZED, base.clone()),
        AuthError::Invalid(why) => (StatusCode::UNAUTHORIZED, described(INVALID_TOKEN, why)),
        AuthError::InvalidRequest(why) => (StatusCode::BAD_REQUEST, described(INVALID_REQUEST, why)),
        AuthError::InsufficientScope(needed) => (StatusCode::FORBIDDEN, Challenge::more_scope(needed.clone())),
        AuthError::Proof { error, description, nonce, algs } => {
            // RFC 9449 §7.1: the DPoP challenge, and the nonce to put in the next proof.
            let c =
                Challenge { algs: Some(algs.split(' ').map(str::to_owned).collect()), ..described(error, description) };
            let mut r = (StatusCode::UNAUTHORIZED, e.to_string()).into_response();
            r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, DPOP_SCHEME, c));
            if let Some(n) = nonce.as_deref().and_then(|n| HeaderValue::from_str(n).ok()) {
                r.headers_mut().insert(NONCE_HEADER, n);
            }
            return r;
        }
        AuthError::Unavailable(_) => {
            let mut r = (StatusCode::SERVICE_UNAVAILABLE, "authentication is unavailable; try again").into_response();
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return r;
        }
    };
    let mut r = (status, e.to_string()).into_response();
    let dpop = auth.dpop_algs().filter(|_| status == StatusCode::UNAUTHORIZED);
    let algs = |a: &str| Some(a.split(' ').map(str::to_owned).collect());
    match dpop {
        Some(a) if scheme.eq_ignore_ascii_case(DPOP_SCHEME) => {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, scheme, Challenge { algs: algs(&a), ..c }));
        }
        Some(a) => {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, scheme, c));
            let dpop = Challenge { algs: algs(&a), ..Challenge::default() };
            r.headers_mut().append(header::WWW_AUTHENTICATE, challenge(cfg, DPOP_SCHEME, dpop));
        }
        None => {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, scheme, c));
        }
    }
    r
}
