//! The way out for webhook deliveries and verification POSTs (events.md §3.1,
//! §4): [`Egress`], the [`WebhookTransport`] that keeps the SSRF rules on
//! every attempt, under the operator's [`EgressPolicy`].
//!
//! What every attempt does, in order:
//! 1. The URL must be `https://`, unless its exact origin is on
//!    [`EgressPolicy::allow_origins`].
//! 2. Its host is resolved again ([`WebhookResolver`]; a literal IP is
//!    taken as it is), and the attempt is refused if **any** address
//!    answered is not globally routable ([`check_address`](super::check_address));
//!    loopback passes only for an allowlisted origin or with
//!    [`EgressPolicy::allow_loopback`]. A name that does not resolve is
//!    refused too.
//! 3. The connection goes to one of the addresses just checked, never to
//!    another answer of the same name; the `Host` header and TLS SNI carry
//!    the host name, and the certificate is checked against that name. A
//!    connection is reused only by a later attempt to the same origin whose
//!    own check answered the same addresses (a client is kept per origin and
//!    checked address set, up to a bound), and no proxy is used.
//! 4. Redirects are never followed: a `3xx` answer is a failed attempt,
//!    counted as `http_4xx` (no category names `3xx`).
//! 5. At most [`EgressPolicy::max_answer_bytes`] of the answer's body are
//!    read; the whole attempt is bounded by [`EgressPolicy::timeout`].
//!
//! A failure is a [`DeliveryFailure`] category and nothing more: the
//! endpoint's status line, headers and body never reach an error or a log.

mod attempt;
mod clients;
mod failure;
mod origin;
mod policy;
mod resolver;

pub use attempt::Egress;
pub use origin::UrlRefusal;
pub use policy::EgressPolicy;
pub use resolver::{FixedResolver, SystemResolver, WebhookResolver};

pub(crate) use origin::{Destination, normalise_origin};

use super::DeliveryFailure;

/// Sends one webhook request: what deliveries and verification go through.
/// [`Egress`] is the real one; tests of the layers above may put their own.
#[async_trait::async_trait]
pub trait WebhookTransport: Send + Sync + 'static {
    /// POSTs `body` (Content-Type: application/json added) with `headers` to `url` under the egress rules.
    ///
    /// `Ok` whenever the endpoint answered with a status, whatever it is
    /// ([`WebhookAnswer::failure`] says which category a non-2xx counts as);
    /// `Err` when no answer came: refused (by the rules or by the peer),
    /// timed out, or TLS failed.
    async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: bytes::Bytes,
    ) -> Result<WebhookAnswer, DeliveryFailure>;
}

/// What an endpoint answered. Its `Debug` shows the body's length only.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The start of the body: at most the policy's
    /// [`max_answer_bytes`](EgressPolicy::max_answer_bytes). Never to be
    /// logged or shown to a client.
    pub body: bytes::Bytes,
}

impl std::fmt::Debug for WebhookAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The endpoint's words never reach a log, even through a `{:?}`.
        f.debug_struct("WebhookAnswer").field("status", &self.status).field("body_bytes", &self.body.len()).finish()
    }
}

impl WebhookAnswer {
    /// Whether the endpoint took it (`2xx`).
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The category a non-2xx answer counts as: `http_5xx` for `5xx`,
    /// `http_4xx` for everything else that is not `2xx` — `3xx` included,
    /// since redirects are never followed and no category names them.
    pub fn failure(&self) -> Option<DeliveryFailure> {
        match self.status {
            200..=299 => None,
            500..=599 => Some(DeliveryFailure::Http5xx),
            _ => Some(DeliveryFailure::Http4xx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_counts_as_its_class_and_a_redirect_as_4xx() {
        let answer = |status| WebhookAnswer { status, body: bytes::Bytes::new() };
        assert_eq!(answer(204).failure(), None);
        assert!(answer(200).is_success() && !answer(302).is_success());
        assert_eq!(answer(302).failure(), Some(DeliveryFailure::Http4xx));
        assert_eq!(answer(410).failure(), Some(DeliveryFailure::Http4xx));
        assert_eq!(answer(503).failure(), Some(DeliveryFailure::Http5xx));
        let shown = format!("{:?}", WebhookAnswer { status: 400, body: "MARKER".into() });
        assert_eq!(shown, "WebhookAnswer { status: 400, body_bytes: 6 }");
    }
}
