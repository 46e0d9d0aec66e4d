//! Webhook endpoints on 127.0.0.1 and ::1 for the egress tests: a listener
//! that reports every connection it accepts (so a test can prove none came),
//! reads one HTTP/1.1 request per connection and answers what the test says,
//! over plain TCP or TLS (a certificate made here with rcgen).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

/// One request as the endpoint read it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `POST /h HTTP/1.1`.
    pub request_line: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The TLS server name the client asked for, over TLS.
    pub sni: Option<String>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What the endpoint answers: a status, extra headers and a body; or
/// nothing ever (the connection stays open, unanswered).
pub enum Reply {
    Answer(u16, Vec<(String, String)>, Vec<u8>),
    Silence,
}

/// How an endpoint answers a request.
pub type Replier = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A certificate for `hook.test` and 127.0.0.1, and a TLS acceptor serving it.
pub struct Tls {
    pub cert_pem: String,
    acceptor: TlsAcceptor,
}

impl Tls {
    pub fn new() -> Self {
        let made =
            rcgen::generate_simple_self_signed(vec!["hook.test".into(), "127.0.0.1".into()]).expect("a certificate");
        let cert_pem = made.cert.pem();
        let chain = vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).expect("PEM")];
        let key = PrivateKeyDer::from_pem_slice(made.signing_key.serialize_pem().as_bytes()).expect("PEM key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("certificate and key");
        Self { cert_pem, acceptor: TlsAcceptor::from(Arc::new(config)) }
    }
}

/// An endpoint listening on a loopback address.
pub struct Receiver {
    pub addr: SocketAddr,
    accepted: mpsc::UnboundedReceiver<SocketAddr>,
    seen: mpsc::UnboundedReceiver<Seen>,
}

impl Receiver {
    /// Plain HTTP on 127.0.0.1.
    pub async fn http(reply: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::start("127.0.0.1:0", None, Arc::new(reply)).await
    }

    /// HTTPS on 127.0.0.1.
    pub async fn https(tls: &Tls, reply: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::start("127.0.0.1:0", Some(tls.acceptor.clone()), Arc::new(reply)).await
    }

    /// A listener on `bind` that answers 200 to anything (what matters is
    /// whether a connection comes at all).
    pub async fn on(bind: &str) -> Self {
        Self::start(bind, None, Arc::new(|_: &Seen| ok(b"{}"))).await
    }

    async fn start(bind: &str, tls: Option<TlsAcceptor>, reply: Replier) -> Self {
        let listener = TcpListener::bind(bind).await.expect("bind a loopback port");
        let addr = listener.local_addr().unwrap();
        let (accepted_tx, accepted) = mpsc::unbounded_channel();
        let (seen_tx, seen) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                let _ = accepted_tx.send(peer);
                let (tls, reply, seen_tx) = (tls.clone(), reply.clone(), seen_tx.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve(stream, None, reply, seen_tx).await,
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            let sni = stream.get_ref().1.server_name().map(str::to_owned);
                            serve(stream, sni, reply, seen_tx).await
                        }
                    }
                });
            }
        });
        Self { addr, accepted, seen }
    }

    /// The next request the endpoint read.
    pub async fn next_request(&mut self) -> Seen {
        self.seen.recv().await.expect("the endpoint is running")
    }

    /// How many connections the endpoint accepted since it started (or since
    /// the last call), counted up to a probe this call makes: connections are
    /// accepted in the order they were set up, so any connection made before
    /// this call is reported before the probe.
    pub async fn connections_so_far(&mut self) -> usize {
        let probe = TcpStream::connect(self.addr).await.expect("the probe connects");
        let probe_addr = probe.local_addr().unwrap();
        let mut before = 0;
        while self.accepted.recv().await.expect("the endpoint is running") != probe_addr {
            before += 1;
        }
        before
    }
}

/// A `200` with this JSON body.
pub fn ok(body: &[u8]) -> Reply {
    Reply::Answer(200, vec![("content-type".into(), "application/json".into())], body.to_vec())
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    sni: Option<String>,
    reply: Replier,
    seen_tx: mpsc::UnboundedSender<Seen>,
) {
    let Some(seen) = read_request(&mut stream, sni).await else { return };
    let answer = reply(&seen);
    let _ = seen_tx.send(seen);
    match answer {
        Reply::Answer(status, headers, body) => {
            let mut head =
                format!("HTTP/1.1 {status} Whatever\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
            let _ = stream.shutdown().await;
        }
        // Held open and never answered, until the client gives up.
        Reply::Silence => {
            let mut sink = [0u8; 64];
            while stream.read(&mut sink).await.is_ok_and(|n| n > 0) {}
        }
    }
}

async fn read_request<S: AsyncRead + Unpin>(stream: &mut S, sni: Option<String>) -> Option<Seen> {
    let mut buf = Vec::new();
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Seen { request_line, headers, body, sni })
}
