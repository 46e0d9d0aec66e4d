//! HTTPS: `Bound::serve` with a certificate made here (rcgen), a client that
//! trusts it, plain HTTP refused, and a certificate replaced while serving.

use crate::common;

use common::{V, req, std_headers};
use conduit_mcp::transport::http::{self, HttpConfig, TlsConfig};
use serde_json::{Value, json};
use std::net::SocketAddr;
use tokio::sync::oneshot;

/// A self-signed certificate for 127.0.0.1 and localhost: (certificate PEM, key PEM).
fn certificate() -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).expect("a certificate");
    (c.cert.pem(), c.signing_key.serialize_pem())
}

fn trusting(cert_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert_pem.as_bytes()).expect("PEM"))
        .tls_built_in_root_certs(false)
        .https_only(true)
        .build()
        .expect("client")
}

async fn discover(client: &reqwest::Client, addr: SocketAddr) -> Result<Value, reqwest::Error> {
    let body = req(1, "server/discover", json!({}));
    let r =
        client.post(format!("https://{addr}/mcp")).headers(std_headers(&body)).body(body.to_string()).send().await?;
    assert_eq!(r.status(), 200);
    r.json().await
}

async fn serve(tls: TlsConfig) -> (SocketAddr, oneshot::Sender<()>) {
    let bound = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = conduit_mcp::Server::builder("tls", "1").tool(common::echo_tool()).build().unwrap();
    tokio::spawn(bound.serve(server, HttpConfig::default().tls(tls), async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

#[tokio::test]
async fn serves_https_with_a_generated_certificate_and_replaces_it_live() {
    let (cert, key) = certificate();
    let tls = TlsConfig::from_pem(cert.as_bytes(), key.as_bytes()).expect("valid certificate");
    let (addr, _stop) = serve(tls.clone()).await;

    let answer = discover(&trusting(&cert), addr).await.expect("HTTPS works for a client that trusts the certificate");
    assert_eq!(answer["result"]["supportedVersions"][0], V);
    // A client that does not trust it refuses; plain HTTP gets no answer.
    let (other, _) = certificate();
    assert!(discover(&trusting(&other), addr).await.is_err(), "an untrusted certificate is refused");
    let plain = reqwest::Client::new().post(format!("http://{addr}/mcp")).body("{}").send().await;
    assert!(plain.is_err(), "plain HTTP is not served on a TLS listener");
    // The server still serves after those.
    discover(&trusting(&cert), addr).await.expect("still serving");

    // A new certificate while serving: new connections get it.
    let (cert2, key2) = certificate();
    tls.replace(cert2.as_bytes(), key2.as_bytes()).expect("valid replacement");
    discover(&trusting(&cert2), addr).await.expect("the new certificate is served");
    assert!(discover(&trusting(&cert), addr).await.is_err(), "the old one is gone for new connections");
    assert!(tls.replace(b"not pem", key2.as_bytes()).is_err(), "a bad replacement is refused");
    discover(&trusting(&cert2), addr).await.expect("and the served one stays");
}

#[tokio::test]
async fn reloads_certificate_files() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("conduit-tls-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    let (cert, key) = certificate();
    std::fs::write(&cert_path, &cert).unwrap();
    std::fs::write(&key_path, &key).unwrap();
    let tls = TlsConfig::from_pem_files(&cert_path, &key_path).expect("files");
    let (addr, _stop) = serve(tls.clone()).await;
    discover(&trusting(&cert), addr).await.expect("served from the files");

    let (cert2, key2) = certificate();
    std::fs::write(&cert_path, &cert2).unwrap();
    std::fs::write(&key_path, &key2).unwrap();
    tls.reload().expect("reloaded");
    discover(&trusting(&cert2), addr).await.expect("the renewed certificate is served");
    std::fs::write(&key_path, "garbage").unwrap();
    let e = tls.reload().expect_err("a broken key is refused");
    assert!(e.to_string().contains("key.pem"), "{e}");
    discover(&trusting(&cert2), addr).await.expect("the last good certificate stays");
    let _ = std::fs::remove_dir_all(&dir);
}
