//! The long-lived streams one client may hold on this endpoint: its
//! `subscriptions/listen` streams (2026-07-28) and its sessions' GET streams
//! (2025-11-25) together, under one cap per client (its principal, or without
//! authentication its address, IPv6 by its /64) and one cap in all, both below
//! the connection limit, so such streams alone can never take every connection.
//! A stream past a cap is refused with `-32000`, HTTP 429 and `Retry-After`, and
//! its connection is closed.

use super::status::error_response;
use super::{AppState, HttpConfig};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::RequestId;
use crate::quota::{ClientKey, Full, Held};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use std::time::Duration;

/// A held stream slot; given back when the stream ends.
pub(super) type StreamSlot = Held<ClientKey>;

/// When a refused client may try again: a slot frees when one of the streams ends,
/// which the server cannot foresee; this keeps a polite client from asking in a loop.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Takes a stream slot for this client, or says which cap is full.
pub(super) fn hold(st: &AppState, client: &ClientKey) -> Result<StreamSlot, RpcError> {
    let cfg = &st.config;
    st.streams.hold(client, cfg.max_listen_streams_per_client, total_cap(cfg)).map_err(|full| {
        crate::metrics::limited("listen_streams");
        RpcError::too_many(
            match full {
                Full::Client => {
                    "Too many open streams for this client (listen and GET streams); close one or try again later"
                }
                Full::Total => "Too many open streams; try again later",
            },
            Some(RETRY_AFTER),
        )
    })
}

/// The answer to a refused stream (429 with `Retry-After`); its connection is not kept
/// for the client's next attempt.
pub(super) fn refused(cfg: &HttpConfig, id: Option<RequestId>, e: RpcError) -> Response {
    let mut r = error_response(cfg, id, e);
    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// The cap on all streams: as configured, and always below the connection limit
/// (at least one connection stays free for other requests).
fn total_cap(cfg: &HttpConfig) -> usize {
    cfg.max_listen_streams.min(cfg.max_connections.saturating_sub(1)).max(1)
}
