//! The webhook benchmark's receiver: HTTPS on 127.0.0.1 (a certificate a CA
//! made here signed, the CA handed to whoever must trust it), HTTP/1.1 with
//! keep-alive, answering a verification handshake with its challenge and
//! anything else `204` at once. It counts the distinct deliveries of
//! terminal events (`webhook-id` and `x-mcp-subscription-id` together) and
//! wakes a waiter at each one.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio_rustls::rustls;

/// What the receiver has seen.
#[derive(Default)]
struct Seen {
    /// Distinct terminal deliveries: (`webhook-id`, `x-mcp-subscription-id`).
    terminal: HashSet<(String, String)>,
    /// Requests of any kind, handshakes included.
    requests: u64,
    /// The last terminal delivery's body (what the floor posts).
    last_body: Vec<u8>,
}

/// A running receiver.
pub(super) struct Receiver {
    /// Where it listens.
    pub(super) addr: SocketAddr,
    /// The CA certificate (PEM) that signed its certificate.
    pub(super) ca_pem: String,
    seen: Arc<Mutex<Seen>>,
    changed: Arc<Notify>,
}

/// A CA, and a certificate for 127.0.0.1 it signed: (CA PEM, leaf DER, leaf key DER).
fn certificates() -> Result<(String, Vec<u8>, Vec<u8>), String> {
    let e = |e: rcgen::Error| format!("the receiver's certificate: {e}");
    let ca_key = rcgen::KeyPair::generate().map_err(e)?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "conduit-mcp-bench webhook CA");
    let ca_cert = ca.self_signed(&ca_key).map_err(e)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().map_err(e)?;
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).map_err(e)?;
    let cert = leaf.signed_by(&key, &issuer).map_err(e)?;
    Ok((ca_cert.pem(), cert.der().to_vec(), key.serialize_der()))
}

impl Receiver {
    /// Listens on 127.0.0.1:0.
    pub(super) async fn start() -> Result<Self, String> {
        let (ca_pem, cert, key) = certificates()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert.into()], rustls::pki_types::PrivateKeyDer::Pkcs8(key.into()))
            .map_err(|e| e.to_string())?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (seen, changed) = (Arc::new(Mutex::new(Seen::default())), Arc::new(Notify::new()));
        let (s, c) = (seen.clone(), changed.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = tcp.set_nodelay(true);
                let (acceptor, s, c) = (acceptor.clone(), s.clone(), c.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve(tls, &s, &c).await;
                    }
                });
            }
        });
        Ok(Self { addr, ca_pem, seen, changed })
    }

    /// The URL of path `path` on the receiver.
    pub(super) fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Distinct terminal deliveries so far.
    pub(super) fn terminal(&self) -> usize {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).terminal.len()
    }

    /// Requests of any kind so far.
    pub(super) fn requests(&self) -> u64 {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).requests
    }

    /// The last terminal delivery's body.
    pub(super) fn last_body(&self) -> Vec<u8> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).last_body.clone()
    }

    /// Waits until `n` distinct terminal deliveries came; `false` if `limit` passed first.
    pub(super) async fn until_terminal(&self, n: usize, limit: Duration) -> bool {
        let wait = async {
            loop {
                let next = self.changed.notified();
                tokio::pin!(next);
                next.as_mut().enable();
                if self.terminal() >= n {
                    return;
                }
                next.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

/// Answers requests on one connection until the peer closes it.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, seen: &Mutex<Seen>, changed: &Notify) {
    let mut buf = Vec::with_capacity(8192);
    loop {
        let Some((head, body)) = read_request(&mut s, &mut buf).await else { return };
        let header = |name: &str| {
            head.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        let verification = crate::wire::find(&body, b"\"type\":\"verification\"").is_some();
        let reply = if verification {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            Some(serde_json::json!({ "challenge": v["challenge"] }).to_string())
        } else {
            None
        };
        {
            let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
            seen.requests += 1;
            if !verification && crate::wire::find(&body, b"\"status\":\"completed\"").is_some() {
                seen.terminal.insert((header("webhook-id"), header("x-mcp-subscription-id")));
                seen.last_body = body;
            }
        }
        changed.notify_waiters();
        let answer = match reply {
            Some(json) => format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{json}",
                json.len()
            ),
            None => "HTTP/1.1 204 No Content\r\n\r\n".to_owned(),
        };
        if s.write_all(answer.as_bytes()).await.is_err() || s.flush().await.is_err() {
            return;
        }
    }
}

/// The next request on the connection: its head and its body (Content-Length); `buf` keeps what follows.
async fn read_request<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(i) = crate::wire::find(buf, b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < end + 4 + length {
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf[end + 4..end + 4 + length].to_vec();
    buf.drain(..end + 4 + length);
    Some((head, body))
}
