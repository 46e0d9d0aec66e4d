//! Serving the endpoint on a TCP listener (TLS with feature `tls`): `TCP_NODELAY` on every accepted
//! socket, the handlers at `/mcp` (routed by hand: see `route`), the connection limit and the timeouts of
//! [`HttpConfig`], and a graceful shutdown with a deadline that closes
//! listen streams and stops the extensions.

use super::body::{Deadline, Guarded};
use super::conn::{InFlight, Watched};
use super::route::dispatch;
use super::{AppState, HttpConfig, started};
use crate::server::Server;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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

    /// Serves `server` at `/mcp` until `shutdown` resolves.
    ///
    /// At most [`HttpConfig::max_connections`] connections are served at once
    /// (more wait in the listen backlog); a connection must send its request
    /// head within [`HttpConfig::header_timeout`], its body within
    /// [`HttpConfig::body_timeout`], and is closed after
    /// [`HttpConfig::idle_timeout`] without a request. A request in flight —
    /// a long call, an open listen stream — has no deadline.
    ///
    /// On shutdown: no new connections; idle ones close; listen streams get
    /// their closing result and the extensions stop; requests in flight may
    /// finish until [`HttpConfig::shutdown_timeout`], then their connections
    /// are dropped and this returns.
    pub async fn serve(
        self,
        server: Server,
        config: HttpConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_inner(server, config, None, shutdown).await
    }

    /// Like [`serve`](Self::serve), with the application's own `routes` (a health check,
    /// an admin route) answering every path other than `/mcp`, on the same connections,
    /// limits and timeouts.
    pub async fn serve_with(
        self,
        server: Server,
        config: HttpConfig,
        routes: axum::Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.serve_inner(server, config, Some(routes), shutdown).await
    }

    async fn serve_inner(
        self,
        server: Server,
        config: HttpConfig,
        routes: Option<axum::Router>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = Limits::of(&config);
        #[cfg(feature = "tls")]
        let acceptor = config.tls.as_ref().map(super::tls::TlsConfig::acceptor);
        let app = started(server.clone(), config);
        let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
        let conns = TaskTracker::new();
        let (closing, closed) = watch::channel(false);
        // Fired when the shutdown deadline passes: every connection still open is dropped.
        let abort = CancellationToken::new();
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                p = slots.clone().acquire_owned() => p.map_err(std::io::Error::other)?,
                () = &mut shutdown => break,
            };
            let (tcp, peer) = tokio::select! {
                a = self.listener.accept() => match a {
                    Ok(a) => a,
                    // Out of descriptors, or a connection reset before accept: keep serving.
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        drop(permit);
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            // Small answers must not wait for Nagle's algorithm.
            let _ = tcp.set_nodelay(true);
            let (app, routes, mut closed, abort) = (app.clone(), routes.clone(), closed.clone(), abort.clone());
            #[cfg(feature = "tls")]
            let acceptor = acceptor.clone();
            conns.spawn(async move {
                let _permit = permit;
                let work = async move {
                    #[cfg(feature = "tls")]
                    if let Some(acceptor) = acceptor {
                        // The handshake gets the request head's deadline.
                        match tokio::time::timeout(limits.header, acceptor.accept(tcp)).await {
                            Ok(Ok(tls)) => serve_connection(tls, peer, app, routes, limits, &mut closed).await,
                            Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                            Err(_) => tracing::debug!("TLS handshake timed out"),
                        }
                        return;
                    }
                    serve_connection(tcp, peer, app, routes, limits, &mut closed).await;
                };
                tokio::select! {
                    () = work => {}
                    // Dropping the connection closes its socket.
                    () = abort.cancelled() => {}
                }
            });
        }
        drop(self.listener);
        let _ = closing.send(true);
        // Listen streams end with their closing result; extensions stop.
        server.shutdown().await;
        conns.close();
        if tokio::time::timeout(limits.shutdown_timeout, conns.wait()).await.is_err() {
            tracing::warn!(
                open = conns.len(),
                "shutdown deadline passed; dropping connections with requests still in flight"
            );
            abort.cancel();
            conns.wait().await;
        }
        Ok(())
    }
}

/// The numbers [`Bound::serve`] enforces, copied out of the config.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_connections: usize,
    header: std::time::Duration,
    body: std::time::Duration,
    idle: std::time::Duration,
    shutdown_timeout: std::time::Duration,
}

impl Limits {
    fn of(c: &HttpConfig) -> Self {
        Self {
            max_connections: c.max_connections,
            header: c.header_timeout,
            body: c.body_timeout,
            idle: c.idle_timeout,
            shutdown_timeout: c.shutdown_timeout,
        }
    }
}

/// Serves one connection until it closes, or until shutdown asks it to
/// finish (it then ends once its requests have).
async fn serve_connection<S>(
    tcp: S,
    peer: SocketAddr,
    app: Arc<AppState>,
    routes: Option<axum::Router>,
    limits: Limits,
    closed: &mut watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let in_flight = Arc::new(InFlight::default());
    let io = TokioIo::new(Watched::new(tcp, in_flight.clone(), limits.header, limits.idle));
    // The credentials this connection last proved (`admit` reuses them for the same token).
    let proven = app.config.auth.is_some().then(|| Arc::new(super::conn_auth::ConnCredentials::default()));
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let guard = in_flight.enter();
        let mut req = req.map(|b| Body::new(Deadline::new(b, limits.body)));
        // Where per-client limits find the address (as axum's `into_make_service_with_connect_info` puts it).
        req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
        if let Some(proven) = &proven {
            req.extensions_mut().insert(proven.clone());
        }
        let (app, routes) = (app.clone(), routes.clone());
        async move {
            let resp = dispatch(app, routes, req).await;
            Ok::<_, Infallible>(resp.map(|b| Body::new(Guarded::new(b, guard))))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The head deadline is ours (it must not run while a connection idles).
    builder.timer(TokioTimer::new()).header_read_timeout(None);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => { log_end(r); return; }
        _ = closed.wait_for(|c| *c) => {}
    }
    conn.as_mut().graceful_shutdown();
    log_end(conn.await);
}

fn log_end(r: Result<(), hyper::Error>) {
    if let Err(e) = r {
        tracing::debug!(error = %e, "connection ended with an error");
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
