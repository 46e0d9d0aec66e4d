//! Which [`DeliveryFailure`] category an HTTP client error counts as. Only
//! the error's kind is looked at; nothing of it is kept or shown.

use crate::ext::events::webhook::DeliveryFailure;
use std::error::Error;

/// The category of a failed request: a timeout, a TLS failure (a rustls
/// error anywhere in its causes), or else a connection that failed.
pub(crate) fn classify(error: &reqwest::Error) -> DeliveryFailure {
    if error.is_timeout() || caused_by(error, |e| e.downcast_ref::<std::io::Error>().is_some_and(is_timeout)) {
        DeliveryFailure::Timeout
    } else if caused_by(error, is_tls) {
        DeliveryFailure::TlsError
    } else {
        DeliveryFailure::ConnectionRefused
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

/// A rustls error (the TLS stream reports it inside an I/O error).
fn is_tls(e: &(dyn Error + 'static)) -> bool {
    e.is::<rustls::Error>()
}

/// Whether `test` holds for the error or any of its causes. An I/O error's
/// `source` skips the error it wraps, so the wrapped one is followed instead.
fn caused_by(error: &reqwest::Error, test: impl Fn(&(dyn Error + 'static)) -> bool) -> bool {
    let mut cause: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if test(e) {
            return true;
        }
        cause = match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(wrapped) => Some(wrapped),
            None => e.source(),
        };
    }
    false
}
