//! The endpoint's one path, routed by hand for [`serve`](super::serve): the
//! same handlers and answers as [`router`](super::router) nested at `/mcp`,
//! without a router's per-request work (path matching, prefix stripping, boxed
//! services), which `serve` does not need for a single path.

use super::{AppState, legacy_lane, method_not_allowed, post};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tower_service::Service;

/// The path `serve` answers at.
pub(super) const MCP_PATH: &str = "/mcp";

/// Whether `path` is the endpoint (with or without a trailing slash, as a nested router takes it).
fn is_endpoint(path: &str) -> bool {
    path.strip_prefix(MCP_PATH).is_some_and(|rest| rest.is_empty() || rest == "/")
}

/// Whether `path` is where the metadata is served: the paths derived from the
/// configured resource, and the path-inserted form of this endpoint's own path
/// (they differ behind a proxy that maps another path to `/mcp`).
#[cfg(feature = "oauth")]
fn is_metadata_path(pr: &crate::auth::oauth::ProtectedResource, path: &str) -> bool {
    pr.is_metadata_path(path)
        || path
            .strip_prefix(crate::protocol::oauth::well_known::PROTECTED_RESOURCE)
            .is_some_and(|rest| rest == MCP_PATH)
}

/// Answers one request: the endpoint's handler for its method, 405 for other methods
/// there; any other path goes to the caller's `other` routes, or is a 404.
pub(super) async fn dispatch(st: Arc<AppState>, other: Option<axum::Router>, req: Request) -> Response {
    if !is_endpoint(req.uri().path()) {
        #[cfg(feature = "oauth")]
        if let Some(pr) = &st.config.protected_resource
            && is_metadata_path(pr, req.uri().path())
        {
            return super::well_known::metadata_response(pr, req.method());
        }
        return match other {
            Some(mut routes) => match routes.call(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            },
            None => StatusCode::NOT_FOUND.into_response(),
        };
    }
    match *req.method() {
        Method::POST => post::handle_post(State(st), req).await,
        Method::GET => legacy_lane::handle_get(State(st), req).await,
        // As a router's GET route does: the GET answer without its body.
        Method::HEAD => {
            let r = legacy_lane::handle_get(State(st), req).await;
            let (parts, _) = r.into_parts();
            Response::from_parts(parts, Body::empty())
        }
        Method::DELETE => legacy_lane::handle_delete(State(st), req).await,
        _ => method_not_allowed().await,
    }
}

#[cfg(test)]
mod tests {
    use super::is_endpoint;

    #[test]
    fn only_the_endpoint_path_is_routed() {
        assert!(is_endpoint("/mcp"));
        assert!(is_endpoint("/mcp/"));
        for p in ["/", "/mcpx", "/mcp/x", "/other", ""] {
            assert!(!is_endpoint(p), "{p}");
        }
    }
}
