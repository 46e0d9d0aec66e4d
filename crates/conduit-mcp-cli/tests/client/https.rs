//! The CLI over HTTPS: `conduit-mcp serve` behind a TLS endpoint whose
//! certificate a generated (rcgen) CA signed. With `--ca-cert` the client
//! trusts it and works; without it the connection is refused (the CA is in
//! no trust store), one `error:` line.

use crate::cli_support;
use crate::common;

use cli_support::run;
use common::Node;
use std::sync::Arc;
use tokio_rustls::rustls;

/// A CA and a certificate for `localhost` and 127.0.0.1 signed by it: (CA PEM, leaf DER, key DER).
fn certificates() -> (String, Vec<u8>, Vec<u8>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "conduit-mcp test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.der().to_vec(), key.serialize_der())
}

/// A TLS endpoint on 127.0.0.1:0 in front of `backend` (HOST:PORT); returns its port.
async fn tls_front(backend: String, cert: Vec<u8>, key: Vec<u8>) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.into()], rustls::pki_types::PrivateKeyDer::Pkcs8(key.into()))
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let Ok(mut plain) = tokio::net::TcpStream::connect(&backend).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca() {
    let node = Node::start(&[]).await;
    let backend = node.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let (ca_pem, cert, key) = certificates();
    let port = tls_front(backend, cert, key).await;
    let dir = std::env::temp_dir().join(format!("conduit-https-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let url = format!("https://localhost:{port}/mcp");
    let ca = ca_file.to_str().unwrap().to_owned();

    let (u, c) = (url.clone(), ca.clone());
    let o = tokio::task::spawn_blocking(move || run(&["call", &u, "echo", "text=over tls", "--ca-cert", &c]))
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "over tls");

    // A token over https to any host is fine; the unknown CA is not.
    let u = url.clone();
    let o = tokio::task::spawn_blocking(move || run(&["tools", &u, "--token", "t"])).await.unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("certificate") || err.contains("UnknownIssuer"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
