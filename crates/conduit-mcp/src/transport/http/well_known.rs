//! Protected Resource Metadata (RFC 9728) on HTTP: the document at its
//! well-known paths, for anyone (no authentication, any origin).

use super::HttpConfig;
use crate::auth::oauth::ProtectedResource;
use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The answer to `method` on a metadata path.
pub(super) fn metadata_response(pr: &ProtectedResource, method: &Method) -> Response {
    let cors = |r: &mut Response| {
        let h = r.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, OPTIONS"));
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("*"));
    };
    let mut r = match *method {
        Method::GET => Response::new(Body::from(pr.document().clone())),
        Method::HEAD => Response::new(Body::empty()),
        Method::OPTIONS => StatusCode::NO_CONTENT.into_response(),
        _ => return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, HEAD, OPTIONS")]).into_response(),
    };
    if *method != Method::OPTIONS {
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
    }
    cors(&mut r);
    r
}

/// The metadata routes for an app that mounts [`router`](super::router)
/// itself: merge this at the app's root (not under the endpoint's prefix).
/// It answers at the paths derived from the configured resource; empty
/// without OAuth.
///
/// ```no_run
/// # use conduit_mcp::prelude::*;
/// # use conduit_mcp::transport::http::{self, HttpConfig};
/// # fn app(server: Server, config: HttpConfig) -> axum::Router {
/// axum::Router::new()
///     .nest("/api/mcp", http::router(server, config.clone()))
///     .merge(http::well_known_router(&config))
/// # }
/// ```
pub fn well_known_router(config: &HttpConfig) -> axum::Router {
    let mut r = axum::Router::new();
    if let Some(pr) = &config.protected_resource {
        for path in pr.paths() {
            let pr: Arc<ProtectedResource> = pr.clone();
            r = r.route(path, axum::routing::any(move |m: Method| async move { metadata_response(&pr, &m) }));
        }
    }
    r
}
