//! A TCP proxy in front of PostgreSQL whose connections can be made to hang:
//! after [`StallProxy::stall`] every byte either way is swallowed and never
//! delivered, on the connections already open and on new ones (they are
//! accepted, then hang). Nothing is refused or closed — the database looks
//! like a host behind a network that drops packets. [`StallProxy::resume`]
//! lets traffic through again; a connection that lost bytes during the stall
//! stays hung (its protocol stream is broken), one that stayed quiet works.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The proxy; dropping it stops accepting (open connections end with the test).
pub struct StallProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

struct Shared {
    stalled: AtomicBool,
}

impl StallProxy {
    /// Starts a proxy on 127.0.0.1 forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared { stalled: AtomicBool::new(false) });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let s = s.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        let (cr, cw) = client.into_split();
                        let (sr, sw) = server.into_split();
                        let up = tokio::spawn(pipe(cr, sw, s.clone()));
                        let down = tokio::spawn(pipe(sr, cw, s));
                        let _ = tokio::join!(up, down);
                    }
                });
            }
        });
        Self { addr, shared, accept }
    }

    /// `postgres://…` of `url` with its host and port replaced by the proxy's.
    pub fn url_for(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").expect("a URL");
        let (auth, after) = match rest.split_once('@') {
            Some((auth, after)) => (format!("{auth}@"), after),
            None => (String::new(), rest),
        };
        let path = after.find('/').map_or("", |i| &after[i..]);
        format!("{scheme}://{auth}{}{path}", self.addr)
    }

    /// From now on every connection, open or new, hangs.
    pub fn stall(&self) {
        self.shared.stalled.store(true, Ordering::SeqCst);
    }

    /// Traffic flows again, except on connections that lost bytes.
    pub fn resume(&self) {
        self.shared.stalled.store(false, Ordering::SeqCst);
    }
}

impl Drop for StallProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// The `host:port` of a `postgres://` URL.
pub fn upstream_of(url: &str) -> String {
    let rest = url.split_once("://").expect("a URL").1;
    let after = rest.rsplit_once('@').map_or(rest, |(_, a)| a);
    let hostport = after.split(['/', '?']).next().expect("a host");
    if hostport.contains(':') { hostport.to_owned() } else { format!("{hostport}:5432") }
}

/// Copies `from` to `to` until either ends; once a read falls in a stall,
/// swallows everything for good.
async fn pipe(mut from: tokio::net::tcp::OwnedReadHalf, mut to: tokio::net::tcp::OwnedWriteHalf, shared: Arc<Shared>) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut hung = false;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        hung = hung || shared.stalled.load(Ordering::SeqCst);
        if hung {
            continue; // read and dropped: never delivered, never refused
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
