//! What listen streams one client may hold on this endpoint: a cap per client
//! (its principal, or without authentication its address) and a cap in all,
//! both below the connection limit, so listen streams alone can never take
//! every connection; and how long a stream may carry nothing before the
//! server ends it with its closing result.

use super::{AppState, HttpConfig};
use crate::auth::Principal;
use crate::protocol::RpcError;
use crate::quota::{ClientKey, Full, Held};
use std::net::IpAddr;

/// A held listen-stream slot; given back when the stream ends.
pub(super) type ListenSlot = Held<ClientKey>;

/// Takes a listen-stream slot for this client, or says which cap is full.
pub(super) fn hold(st: &AppState, principal: Option<&Principal>, peer: Option<IpAddr>) -> Result<ListenSlot, RpcError> {
    let cfg = &st.config;
    let key = ClientKey::of(principal, peer);
    let total = total_cap(cfg);
    st.listen_streams.hold(&key, cfg.max_listen_streams_per_client, total).map_err(|full| {
        crate::metrics::limited("listen_streams");
        RpcError::too_many(
            match full {
                Full::Client => "Too many listen streams for this client; close one or try again later",
                Full::Total => "Too many listen streams; try again later",
            },
            None,
        )
    })
}

/// The cap on all listen streams: as configured, and always below the connection limit
/// (at least one connection stays free for other requests).
fn total_cap(cfg: &HttpConfig) -> usize {
    cfg.max_listen_streams.min(cfg.max_connections.saturating_sub(1)).max(1)
}
