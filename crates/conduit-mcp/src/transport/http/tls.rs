//! HTTPS for [`Bound::serve`](super::Bound::serve) (feature `tls`): rustls with
//! the `ring` provider, HTTP/1.1 over TLS 1.2/1.3, and a certificate that can
//! be replaced while serving ([`TlsConfig::reload`]: new connections get the
//! new one, open ones keep theirs).
//!
//! ```no_run
//! use conduit_mcp::transport::http::{HttpConfig, TlsConfig};
//!
//! let tls = TlsConfig::from_pem_files("cert.pem", "key.pem").expect("a certificate and its key");
//! let config = HttpConfig::default().tls(tls.clone());
//! // Later, after the files were renewed (the reference server does this on SIGHUP):
//! tls.reload().expect("the new certificate is valid");
//! # let _ = config;
//! ```

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The server's certificate chain and key, and where they were read from.
#[derive(Clone)]
pub struct TlsConfig {
    current: Arc<Current>,
    server: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").field("files", &self.current.files).finish_non_exhaustive()
    }
}

/// The certificate in use, swapped by [`TlsConfig::reload`].
#[derive(Debug)]
struct Current {
    key: RwLock<Arc<CertifiedKey>>,
    files: Option<(PathBuf, PathBuf)>,
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key.read().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// A certificate chain and its private key from PEM.
fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> io::Result<Arc<CertifiedKey>> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("certificate: no CERTIFICATE block in the PEM".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid(format!("private key: {e}")))?;
    let provider = rustls::crypto::ring::default_provider();
    let ck = CertifiedKey::from_der(chain, key, &provider).map_err(|e| invalid(format!("certificate and key: {e}")))?;
    Ok(Arc::new(ck))
}

impl TlsConfig {
    /// From PEM bytes: the certificate chain (leaf first) and its private key.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> io::Result<Self> {
        Self::build(certified_key(cert_pem, key_pem)?, None)
    }

    /// From PEM files, kept for [`reload`](Self::reload).
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> io::Result<Self> {
        let (cert, key) = (cert.as_ref().to_owned(), key.as_ref().to_owned());
        let ck = Self::read(&cert, &key)?;
        Self::build(ck, Some((cert, key)))
    }

    fn read(cert: &Path, key: &Path) -> io::Result<Arc<CertifiedKey>> {
        let c = std::fs::read(cert).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", cert.display())))?;
        let k = std::fs::read(key).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", key.display())))?;
        certified_key(&c, &k).map_err(|e| invalid(format!("{} / {}: {e}", cert.display(), key.display())))
    }

    fn build(ck: Arc<CertifiedKey>, files: Option<(PathBuf, PathBuf)>) -> io::Result<Self> {
        let current = Arc::new(Current { key: RwLock::new(ck), files });
        let mut server =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| invalid(e.to_string()))?
                .with_no_client_auth()
                .with_cert_resolver(current.clone());
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self { current, server: Arc::new(server) })
    }

    /// Reads the files again and serves the new certificate to new connections.
    /// On an error the certificate in use stays. Certificates given as bytes:
    /// use [`replace`](Self::replace).
    pub fn reload(&self) -> io::Result<()> {
        let Some((cert, key)) = &self.current.files else {
            return Err(io::Error::other("this certificate was not read from files"));
        };
        self.swap(Self::read(cert, key)?);
        Ok(())
    }

    /// Serves this certificate and key (PEM) to new connections.
    pub fn replace(&self, cert_pem: &[u8], key_pem: &[u8]) -> io::Result<()> {
        self.swap(certified_key(cert_pem, key_pem)?);
        Ok(())
    }

    fn swap(&self, ck: Arc<CertifiedKey>) {
        *self.current.key.write().unwrap_or_else(|p| p.into_inner()) = ck;
    }

    /// The acceptor for one listener.
    pub(super) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.server.clone())
    }
}
