//! What an attempt reports for each way an endpoint answers or fails to:
//! a timeout, a TLS failure, a refused connection, a name that does not
//! resolve, a 5xx, and an answer body kept only up to the policy's cap.

use super::receiver::{Receiver, Reply, Seen, Tls, ok};
use super::{allowing, egress, headers};
use conduit_mcp::ext::events::webhook::DeliveryFailure;
use conduit_mcp::ext::events::webhook::egress::{EgressPolicy, FixedResolver, WebhookTransport};
use std::sync::Arc;
use std::time::Duration;

fn origin(r: &Receiver) -> String {
    format!("http://127.0.0.1:{}", r.addr.port())
}

#[tokio::test]
async fn an_endpoint_that_never_answers_is_a_timeout() {
    let mut silent = Receiver::http(|_: &Seen| Reply::Silence).await;
    let mut policy = allowing(&[origin(&silent)]);
    policy.timeout = Duration::from_millis(300);
    let egress = egress(&policy, &Arc::new(FixedResolver::new()));
    let answer = egress.post(&format!("{}/h", origin(&silent)), &headers(), "{}".into()).await;
    assert_eq!(answer, Err(DeliveryFailure::Timeout));
    assert_eq!(silent.next_request().await.body, b"{}", "the request arrived and was left unanswered");
    assert_eq!(silent.connections_so_far().await, 1);
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_error() {
    let tls = Tls::new();
    let mut endpoint = Receiver::https(&tls, |_: &Seen| ok(b"{}")).await;
    let url = format!("https://127.0.0.1:{}/h", endpoint.addr.port());
    let mut policy = EgressPolicy::new();
    policy.allow_loopback = true;
    let egress = egress(&policy, &Arc::new(FixedResolver::new()));
    assert_eq!(egress.post(&url, &headers(), "{}".into()).await, Err(DeliveryFailure::TlsError));
    assert_eq!(endpoint.connections_so_far().await, 1, "it connected, then refused the certificate");

    // A certificate for another name is refused the same way.
    let resolver = Arc::new(FixedResolver::new().with("other.test", ["127.0.0.1".parse().unwrap()]));
    policy.root_certificates_pem = vec![tls.cert_pem.clone()];
    let egress = super::egress(&policy, &resolver);
    let url = format!("https://other.test:{}/h", endpoint.addr.port());
    assert_eq!(egress.post(&url, &headers(), "{}".into()).await, Err(DeliveryFailure::TlsError));
}

#[tokio::test]
async fn a_closed_port_and_an_unknown_name_are_connection_refused() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let origins = [format!("http://127.0.0.1:{port}"), "http://nowhere.test:80".to_string()];
    let egress = egress(&allowing(&origins), &Arc::new(FixedResolver::new()));
    for url in [format!("http://127.0.0.1:{port}/h"), "http://nowhere.test/h".into(), "not a url".into()] {
        assert_eq!(egress.post(&url, &headers(), "{}".into()).await, Err(DeliveryFailure::ConnectionRefused), "{url}");
    }
}

#[tokio::test]
async fn the_answer_body_is_kept_up_to_the_cap_and_a_5xx_is_http_5xx() {
    let big: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let sent = big.clone();
    let mut endpoint = Receiver::http(move |_: &Seen| Reply::Answer(200, Vec::new(), sent.clone())).await;
    let mut failing = Receiver::http(|_: &Seen| Reply::Answer(503, Vec::new(), b"busy".to_vec())).await;
    let egress = egress(&allowing(&[origin(&endpoint), origin(&failing)]), &Arc::new(FixedResolver::new()));

    let answer = egress.post(&format!("{}/h", origin(&endpoint)), &headers(), "{}".into()).await.unwrap();
    assert_eq!(answer.body.len(), 4096, "the default cap, 4 KiB");
    assert_eq!(&answer.body[..], &big[..4096]);
    endpoint.next_request().await;

    let answer = egress.post(&format!("{}/h", origin(&failing)), &headers(), "{}".into()).await.unwrap();
    assert_eq!((answer.status, answer.failure()), (503, Some(DeliveryFailure::Http5xx)));
    failing.next_request().await;
}
