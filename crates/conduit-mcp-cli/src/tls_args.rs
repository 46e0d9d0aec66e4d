//! `serve --tls-cert FILE --tls-key FILE`: HTTPS, and the certificate read
//! again on SIGHUP (renewals need no restart).

use conduit_mcp::transport::http::TlsConfig;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "HTTPS")]
pub(crate) struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM, leaf first); re-read with the key on SIGHUP.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// Whether HTTPS was asked for.
    pub(crate) fn any(&self) -> bool {
        self.tls_cert.is_some() || self.tls_key.is_some()
    }

    /// The certificate, read now (an unreadable or mismatched pair is an error at start).
    pub(crate) fn load(&self) -> Result<Option<TlsConfig>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                TlsConfig::from_pem_files(cert, key).map(Some).map_err(|e| format!("--tls-cert/--tls-key: {e}"))
            }
            (None, None) => Ok(None),
            _ => Err("--tls-cert and --tls-key go together".into()),
        }
    }
}

/// Reads the certificate files again on every SIGHUP; a failed read keeps the old one.
pub(crate) fn reload_on_sighup(tls: TlsConfig) {
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            tracing::warn!("cannot watch SIGHUP; the certificate is not reloaded without a restart");
            return;
        };
        while hup.recv().await.is_some() {
            match tls.reload() {
                Ok(()) => tracing::info!("TLS certificate reloaded"),
                Err(e) => tracing::warn!(error = %e, "TLS certificate not reloaded; the previous one stays"),
            }
        }
    });
    #[cfg(not(unix))]
    let _ = tls;
}
