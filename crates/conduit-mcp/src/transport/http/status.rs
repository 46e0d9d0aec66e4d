//! The HTTP answer to a JSON-RPC error: its status, decided from the error's
//! class in one table (brief §2.6), and the body and challenges that go with it.

use super::HttpConfig;
use crate::protocol::jsonrpc::{ErrorClass, Message, RequestId, RpcError};
use crate::protocol::oauth::challenge::Challenge;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// The HTTP status for a JSON-RPC error, decided in one place (brief §2.6).
pub fn status_for(error: &RpcError) -> StatusCode {
    match error.class() {
        ErrorClass::Parse
        | ErrorClass::InvalidRequest
        | ErrorClass::MissingMeta
        | ErrorClass::HeaderMismatch
        | ErrorClass::MissingCapability
        | ErrorClass::UnsupportedVersion => StatusCode::BAD_REQUEST,
        ErrorClass::MethodNotFound => StatusCode::NOT_FOUND,
        ErrorClass::InsufficientScope => StatusCode::FORBIDDEN,
        ErrorClass::TooMany => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::OK,
    }
}

/// A JSON body with `status`.
pub(super) fn json_body(status: StatusCode, msg: &Message) -> Response {
    json_bytes(status, msg.to_json_bytes())
}

/// A JSON body, already encoded, with `status`.
pub(super) fn json_bytes(status: StatusCode, json: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(json));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// An error message answered with its status (and, for a missing scope, its challenge).
pub(super) fn error_response(cfg: &HttpConfig, id: Option<RequestId>, error: RpcError) -> Response {
    // All the operation needs, in one challenge: the scopes of every request, then the operation's.
    let scopes = (error.class() == ErrorClass::InsufficientScope).then(|| {
        let mut all = super::base_scopes(cfg).unwrap_or_default();
        for s in error.required_scopes() {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        all
    });
    let status = status_for(&error);
    // `Retry-After` in whole seconds, rounded up: never earlier than `data.retryAfterMs`.
    let retry_after = error.retry_after().filter(|_| status == StatusCode::TOO_MANY_REQUESTS);
    let mut r = json_body(status, &Message::Error { id, error });
    if let Some(wait) = retry_after {
        let secs = wait.as_millis().div_ceil(1000).max(1);
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    if let Some(scopes) = scopes {
        let scheme = cfg.auth.as_ref().map(|a| a.scheme().to_owned()).unwrap_or_else(|| "Bearer".into());
        r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, &scheme, Challenge::more_scope(scopes)));
    }
    r
}

/// The `WWW-Authenticate` value of `c` for `scheme`, naming this endpoint's resource metadata.
pub(super) fn challenge(cfg: &HttpConfig, scheme: &str, mut c: Challenge) -> HeaderValue {
    c.resource_metadata.clone_from(&cfg.resource_metadata);
    HeaderValue::from_str(&c.render(scheme)).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// A 403 with an error body without id (the guard refused the request).
pub(super) fn forbidden(msg: &str) -> Response {
    json_body(StatusCode::FORBIDDEN, &Message::Error { id: None, error: RpcError::invalid_request(msg) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_by_class() {
        assert_eq!(status_for(&RpcError::missing_meta("m")), StatusCode::BAD_REQUEST);
        assert_eq!(status_for(&RpcError::invalid_params("p")), StatusCode::OK);
        assert_eq!(status_for(&RpcError::method_not_found("x")), StatusCode::NOT_FOUND);
        assert_eq!(status_for(&RpcError::insufficient_scope(&[])), StatusCode::FORBIDDEN);
        assert_eq!(status_for(&RpcError::missing_capability(serde_json::json!({}))), StatusCode::BAD_REQUEST);
        assert_eq!(status_for(&RpcError::internal("i")), StatusCode::OK);
        let slow_down = RpcError::too_many("t", Some(std::time::Duration::from_micros(1_500)));
        assert_eq!(status_for(&slow_down), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!((slow_down.code, slow_down.retry_after()), (-32000, Some(std::time::Duration::from_millis(2))));
    }
}
