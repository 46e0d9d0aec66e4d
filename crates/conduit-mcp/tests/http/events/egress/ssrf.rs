//! The four SSRF tests of events.md §4: loopback refused by default (by
//! literal, by IPv6 literal, by a name), DNS rebinding caught at delivery,
//! and the operator's opt-in delivering while a redirect is never followed.

use super::receiver::{Receiver, Reply, Seen, Tls, ok};
use super::{allowing, egress, headers};
use conduit_mcp::ext::events::webhook::egress::{EgressPolicy, FixedResolver, UrlRefusal, WebhookTransport};
use conduit_mcp::ext::events::webhook::{
    AddressRefusal, DeliveryFailure, VerifiedOrigins, ensure_verified, verify_endpoint,
};
use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use std::net::IpAddr;
use std::sync::Arc;

fn secret() -> WebhookSecret {
    WebhookSecret::from_bytes(vec![9; 32]).unwrap()
}

fn loopback() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

const NOW_MS: u64 = 1_739_980_800_000;

#[tokio::test]
async fn test1_default_policy_refuses_a_loopback_literal_and_dials_nothing() {
    let mut listener = Receiver::on("127.0.0.1:0").await;
    let resolver = Arc::new(FixedResolver::new());
    let egress = egress(&EgressPolicy::new(), &resolver);
    let url = format!("https://127.0.0.1:{}/h", listener.addr.port());

    assert_eq!(egress.check_url(&url), Err(UrlRefusal::Address(AddressRefusal::Loopback)), "refused at subscribe");
    let verified = verify_endpoint(&egress, &url, "sub_1", &[secret()], NOW_MS).await;
    assert_eq!(verified, Err(DeliveryFailure::ConnectionRefused), "verification refused");
    let delivered = egress.post(&url, &headers(), "{}".into()).await;
    assert_eq!(delivered, Err(DeliveryFailure::ConnectionRefused), "delivery refused");
    assert_eq!(listener.connections_so_far().await, 0, "no TCP connect observed");
    assert_eq!(resolver.lookups(), 0, "a literal IP is checked without DNS");
}

#[tokio::test]
async fn test2_an_ipv6_loopback_literal_and_a_name_resolving_to_loopback_are_refused_without_a_connect() {
    let mut v6 = Receiver::on("[::1]:0").await;
    let mut v4 = Receiver::on("127.0.0.1:0").await;
    let resolver = Arc::new(FixedResolver::new().with("hook.test", [loopback()]));
    let egress = egress(&EgressPolicy::new(), &resolver);

    let url = format!("https://[::1]:{}/h", v6.addr.port());
    assert_eq!(egress.check_url(&url), Err(UrlRefusal::Address(AddressRefusal::Loopback)));
    assert_eq!(egress.post(&url, &headers(), "{}".into()).await, Err(DeliveryFailure::ConnectionRefused));
    assert_eq!(v6.connections_so_far().await, 0, "no TCP connect on ::1");

    let url = format!("https://hook.test:{}/h", v4.addr.port());
    assert_eq!(egress.check_url(&url), Ok(()), "a name passes the early check: its addresses are not known yet");
    let verified = verify_endpoint(&egress, &url, "sub_1", &[secret()], NOW_MS).await;
    assert_eq!(verified, Err(DeliveryFailure::ConnectionRefused));
    assert_eq!(egress.post(&url, &headers(), "{}".into()).await, Err(DeliveryFailure::ConnectionRefused));
    assert_eq!(resolver.lookups(), 2, "every attempt resolves");
    assert_eq!(v4.connections_so_far().await, 0, "no TCP connect on 127.0.0.1");

    // One refused address among those answered refuses the whole name, even
    // for an origin the operator opened (listed first, loopback is what a
    // wrong egress would dial: still nothing may arrive).
    let origin = format!("http://mixed.test:{}", v4.addr.port());
    resolver.set("mixed.test", [loopback(), "192.0.2.1".parse().unwrap()]);
    let opened = super::egress(&allowing([&origin]), &resolver);
    assert_eq!(
        opened.post(&format!("{origin}/h"), &headers(), "{}".into()).await,
        Err(DeliveryFailure::ConnectionRefused)
    );
    assert_eq!(v4.connections_so_far().await, 0);
}

#[tokio::test]
async fn test3_rebinding_to_loopback_after_verification_is_refused_at_delivery() {
    let mut listener = Receiver::on("127.0.0.1:0").await;
    let url = format!("https://rebind.test:{}/hooks/1", listener.addr.port());
    // Verified by the operator's list (path 2): subscribe dials nothing and
    // resolves nothing; the name has no address at all then.
    let verified = VerifiedOrigins::new([format!("https://rebind.test:{}", listener.addr.port())]).unwrap();
    let resolver = Arc::new(FixedResolver::new());
    let egress = egress(&EgressPolicy::new(), &resolver);
    assert_eq!(ensure_verified(&verified, &egress, &url, "sub_1", &[secret()], NOW_MS).await, Ok(()));
    assert_eq!(resolver.lookups(), 0, "verification by the list asks nothing of DNS");

    // At delivery the name answers loopback: the verified list is no SSRF exemption.
    resolver.set("rebind.test", [loopback()]);
    let delivered = egress.post(&url, &headers(), r#"{"eventId":"evt_1"}"#.into()).await;
    assert_eq!(delivered, Err(DeliveryFailure::ConnectionRefused));
    assert_eq!(delivered.unwrap_err().as_str(), "connection_refused", "lastError is a category");
    assert_eq!(resolver.lookups(), 1, "resolved when the delivery was attempted");
    assert_eq!(listener.connections_so_far().await, 0, "no TCP connect observed");
}

#[tokio::test]
async fn test4_opted_in_loopback_delivers_and_a_redirect_is_never_followed() {
    let resolver = Arc::new(FixedResolver::new());
    let mut target = Receiver::on("127.0.0.1:0").await;
    let location = format!("http://127.0.0.1:{}/", target.addr.port());
    let mut redirecting =
        Receiver::http(move |_: &Seen| Reply::Answer(302, vec![("location".into(), location.clone())], Vec::new()))
            .await;
    let mut plain = Receiver::http(|_: &Seen| ok(b"{}")).await;
    let origins: Vec<String> =
        [&plain, &redirecting, &target].iter().map(|r| format!("http://127.0.0.1:{}", r.addr.port())).collect();
    let egress = egress(&allowing(&origins), &resolver);

    let body = r#"{"eventId":"evt_1","name":"incident.created"}"#;
    let answer = egress.post(&format!("{}/hooks/1", origins[0]), &headers(), body.into()).await.expect("delivered");
    assert_eq!((answer.status, answer.failure()), (200, None));
    let seen = plain.next_request().await;
    assert_eq!(seen.request_line, "POST /hooks/1 HTTP/1.1");
    assert_eq!(seen.body, body.as_bytes());
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.header("webhook-id"), Some("evt_1"));
    assert_eq!(seen.header("x-mcp-subscription-id"), Some("sub_1"));

    let answer = egress.post(&format!("{}/h", origins[1]), &headers(), body.into()).await.expect("an answer");
    assert_eq!(answer.status, 302);
    assert_eq!(answer.failure(), Some(DeliveryFailure::Http4xx), "a 3xx counts as http_4xx");
    redirecting.next_request().await;
    assert_eq!(target.connections_so_far().await, 0, "the redirect's target saw no connection");
}

#[tokio::test]
async fn opted_in_https_keeps_the_host_name_for_sni_host_and_certificate() {
    let tls = Tls::new();
    let mut endpoint = Receiver::https(&tls, |_: &Seen| ok(b"{}")).await;
    let port = endpoint.addr.port();
    let resolver = Arc::new(FixedResolver::new().with("hook.test", [loopback()]));
    let mut policy = allowing(&[format!("https://hook.test:{port}")]);
    policy.root_certificates_pem = vec![tls.cert_pem.clone()];
    let egress = egress(&policy, &resolver);

    let answer = egress.post(&format!("https://hook.test:{port}/h"), &headers(), "{}".into()).await;
    assert_eq!(answer.map(|a| a.status), Ok(200));
    let seen = endpoint.next_request().await;
    assert_eq!(seen.sni.as_deref(), Some("hook.test"), "SNI is the host name, not the address dialled");
    assert_eq!(seen.header("host"), Some(format!("hook.test:{port}").as_str()));

    // allow_loopback opens loopback for https callbacks, never plain http.
    let mut policy = EgressPolicy::new();
    policy.allow_loopback = true;
    policy.root_certificates_pem = vec![tls.cert_pem.clone()];
    let egress = super::egress(&policy, &resolver);
    let answer = egress.post(&format!("https://127.0.0.1:{port}/h"), &headers(), "{}".into()).await;
    assert_eq!(answer.map(|a| a.status), Ok(200));
    endpoint.next_request().await;
    let plain = egress.post(&format!("http://127.0.0.1:{port}/h"), &headers(), "{}".into()).await;
    assert_eq!(plain, Err(DeliveryFailure::ConnectionRefused));
    assert_eq!(endpoint.connections_so_far().await, 2, "the two https attempts connected, the plain one did not");
}
