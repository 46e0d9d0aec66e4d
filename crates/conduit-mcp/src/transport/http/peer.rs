//! The client's address, for limits that count per client without
//! authentication: axum's `ConnectInfo<SocketAddr>`, which
//! [`Bound::serve`](super::Bound::serve) sets on every request and an
//! application mounting [`router`](super::router) sets with
//! `into_make_service_with_connect_info::<SocketAddr>()`.

use axum::extract::ConnectInfo;
use axum::http::Extensions;
use std::net::{IpAddr, SocketAddr};

/// The peer's address, when the server that accepted the connection recorded it.
pub(super) fn peer(extensions: &Extensions) -> Option<IpAddr> {
    extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}
