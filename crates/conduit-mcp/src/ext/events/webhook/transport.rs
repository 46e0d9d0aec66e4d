//! [`WebhookTransport`]: how a delivery leaves the server — one signed POST,
//! its answer or the category of its failure. The egress (`webhook/egress/`)
//! implements it over the SSRF-checked HTTP client; the delivery worker and
//! the verification handshake only call it.

use super::record::DeliveryFailure;

/// Posts one webhook request.
#[async_trait::async_trait]
pub trait WebhookTransport: Send + Sync + 'static {
    /// POSTs `body` to `url` with `headers` and `Content-Type:
    /// application/json`: the answer (whatever its status), or why none came.
    async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: bytes::Bytes,
    ) -> Result<WebhookAnswer, DeliveryFailure>;
}

/// What an endpoint answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body (bounded by the transport); read by the handshake only.
    pub body: bytes::Bytes,
}
