//! A webhook receiver on 127.0.0.1 over HTTPS, its certificate signed by a
//! CA made here (rcgen) that the nodes are told to trust: it answers the
//! verification handshake itself and hands every other request to the test,
//! which answers it with a status when it chooses — or never, holding the
//! attempt open. One request per connection.

use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::rustls;

/// One delivery attempt as the receiver read it, waiting for its answer.
pub struct Delivery {
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body bytes as they came.
    pub body: Vec<u8>,
    answer: oneshot::Sender<u16>,
}

impl Delivery {
    /// The value of header `name` (lowercase), or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// Answers `status` with an empty body. Dropping the delivery unanswered
    /// closes the connection without an answer.
    pub fn answer(self, status: u16) {
        let _ = self.answer.send(status);
    }
}

/// The receiver: its origin, the CA that signed its certificate, and the deliveries it reads.
pub struct Receiver {
    /// `https://127.0.0.1:PORT`.
    pub origin: String,
    /// The CA certificate (PEM) the nodes must trust.
    pub ca_pem: String,
    deliveries: mpsc::UnboundedReceiver<Delivery>,
}

/// A CA, and a certificate for 127.0.0.1 it signed: (CA PEM, leaf DER, leaf key DER).
fn certificates() -> (String, Vec<u8>, Vec<u8>) {
    let ca_key = rcgen::KeyPair::generate().expect("a CA key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "conduit-mcp webhook test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA certificate");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("a key");
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("leaf params");
    let cert = leaf.signed_by(&key, &issuer).expect("the leaf certificate");
    (ca_cert.pem(), cert.der().to_vec(), key.serialize_der())
}

impl Receiver {
    /// Listens on 127.0.0.1:0.
    pub async fn start() -> Receiver {
        let (ca_pem, cert, key) = certificates();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.into()], rustls::pki_types::PrivateKeyDer::Pkcs8(key.into()))
            .expect("certificate and key");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("https://{}", listener.local_addr().expect("addr"));
        let (tx, deliveries) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    serve(tls, tx).await;
                });
            }
        });
        Receiver { origin, ca_pem, deliveries }
    }

    /// The next delivery (not a handshake), within `limit` (a failure guard).
    pub async fn next(&mut self, limit: std::time::Duration) -> Delivery {
        tokio::time::timeout(limit, self.deliveries.recv())
            .await
            .expect("a delivery in time")
            .expect("the receiver runs")
    }
}

/// Reads one request; answers a handshake at once, else waits for the test's answer.
async fn serve<S: AsyncRead + tokio::io::AsyncWrite + Unpin>(mut s: S, tx: mpsc::UnboundedSender<Delivery>) {
    let Some((headers, body)) = read_request(&mut s).await else { return };
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let (status, reply) = if v["type"] == "verification" {
        (200, serde_json::json!({ "challenge": v["challenge"] }).to_string())
    } else {
        let (answer, answered) = oneshot::channel();
        let _ = tx.send(Delivery { headers, body, answer });
        match answered.await {
            Ok(status) => (status, String::new()),
            // Held and let go: the connection closes unanswered.
            Err(_) => return,
        }
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        reply.len()
    );
    let _ = s.write_all(head.as_bytes()).await;
    let _ = s.write_all(reply.as_bytes()).await;
    let _ = s.shutdown().await;
}

/// The headers (names lowercased) and the body of one HTTP/1.1 request with a Content-Length.
async fn read_request<S: AsyncRead + Unpin>(s: &mut S) -> Option<(Vec<(String, String)>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[end + 4..].to_vec();
    while body.len() < length {
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some((headers, body))
}
