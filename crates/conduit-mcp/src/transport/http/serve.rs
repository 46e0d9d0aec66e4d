//! Serving the router on a TCP listener: `TCP_NODELAY` on every accepted
//! socket, the router at `/mcp`, graceful shutdown that closes listen streams
//! and stops the extensions.

use super::{HttpConfig, router};
use crate::Server;
use axum::Router;
use axum::serve::ListenerExt;
use std::future::Future;
use std::net::SocketAddr;

/// A bound listener, not yet serving: read its address, then [`Bound::serve`].
#[derive(Debug)]
pub struct Bound {
    listener: tokio::net::TcpListener,
    local: SocketAddr,
}

/// Binds `addr` (port 0 picks a free port).
pub async fn bind(addr: SocketAddr) -> std::io::Result<Bound> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok(Bound { listener, local })
}

impl Bound {
    /// The address it is bound to; the endpoint is `http://{addr}/mcp`.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Serves `server` at `/mcp` until `shutdown` resolves; then listen streams
    /// get their closing result and the extensions stop.
    pub async fn serve(
        self,
        server: Server,
        config: HttpConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let app = Router::new().nest("/mcp", router(server.clone(), config));
        // Small answers must not wait for Nagle's algorithm.
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                shutdown.await;
                server.shutdown().await;
            })
            .await
    }
}

/// Binds `addr` and serves `server` at `/mcp` until `shutdown` resolves (see
/// [`Bound::serve`]). To learn the address first (port 0), use [`bind`].
pub async fn serve(
    server: Server,
    config: HttpConfig,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    bind(addr).await?.serve(server, config, shutdown).await
}
