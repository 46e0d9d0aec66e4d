//! One signed attempt (events.md §3.1 H1–H8): the Standard Webhooks headers
//! made fresh for each attempt — the same `webhook-id`, this attempt's
//! `webhook-timestamp` and a signature by each secret in force (both during a
//! rotation) — over the body bytes serialised once; and what the answer
//! means for the outbox entry (§3.2).

use super::config::RetryPolicy;
use super::egress::WebhookAnswer;
use super::record::{DeliveryFailure, Settlement, WebhookSubscription};
use crate::protocol::webhook_signature::{
    SUBSCRIPTION_ID_HEADER, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, WebhookSecret,
    signature_header,
};

/// The secrets that sign at `now_ms`: the subscription's, and the one it
/// replaced while its grace lasts. A stored secret that no longer parses is
/// left out.
pub(crate) fn signing_secrets(sub: &WebhookSubscription, now_ms: u64) -> Vec<WebhookSecret> {
    let previous = sub.previous_secret.as_ref().filter(|(_, until)| *until > now_ms).map(|(s, _)| s);
    previous.into_iter().chain(Some(&sub.secret)).filter_map(|s| WebhookSecret::parse(s.expose()).ok()).collect()
}

/// The headers of one attempt at `now_ms` (the transport adds
/// `Content-Type: application/json`).
pub(crate) fn headers(
    secrets: &[WebhookSecret],
    webhook_id: &str,
    subscription_id: &str,
    now_ms: u64,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let timestamp = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
    vec![
        (WEBHOOK_ID_HEADER, webhook_id.to_owned()),
        (WEBHOOK_TIMESTAMP_HEADER, timestamp.to_string()),
        (WEBHOOK_SIGNATURE_HEADER, signature_header(secrets, webhook_id, timestamp, body)),
        (SUBSCRIPTION_ID_HEADER, subscription_id.to_owned()),
    ]
}

/// What attempt number `attempt` (1 for the first) ended as, at `now_ms`:
/// 2xx delivered; 410 and 413 dropped at once; any other answer (3xx never
/// followed, reported as `http_4xx`) or no answer tried again after the
/// policy's delay, and dropped once the attempts are spent.
pub(crate) fn settlement(
    outcome: &Result<WebhookAnswer, DeliveryFailure>,
    attempt: u32,
    retry: &RetryPolicy,
    now_ms: u64,
) -> Settlement {
    let failure = match outcome {
        Ok(a) if (200..300).contains(&a.status) => return Settlement::Delivered,
        Ok(a) if a.status == 410 || a.status == 413 => return Settlement::Dropped(DeliveryFailure::Http4xx),
        Ok(a) if a.status >= 500 => DeliveryFailure::Http5xx,
        Ok(_) => DeliveryFailure::Http4xx,
        Err(f) => *f,
    };
    if attempt >= retry.max_attempts {
        return Settlement::Dropped(failure);
    }
    let delay = u64::try_from(retry.delay(attempt).as_millis()).unwrap_or(u64::MAX);
    Settlement::RetryAt(now_ms.saturating_add(delay), failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::time::Duration;

    fn answer(status: u16) -> Result<WebhookAnswer, DeliveryFailure> {
        Ok(WebhookAnswer { status, body: Bytes::new() })
    }

    #[test]
    fn answers_settle_as_the_profile_says_and_retries_back_off_within_their_bound() {
        let r = RetryPolicy::default();
        assert_eq!(settlement(&answer(204), 1, &r, 0), Settlement::Delivered);
        assert_eq!(settlement(&answer(410), 1, &r, 0), Settlement::Dropped(DeliveryFailure::Http4xx));
        assert_eq!(settlement(&answer(413), 1, &r, 0), Settlement::Dropped(DeliveryFailure::Http4xx));
        assert_eq!(settlement(&answer(302), 1, &r, 0), Settlement::RetryAt(30_000, DeliveryFailure::Http4xx));
        assert_eq!(settlement(&answer(503), 2, &r, 0), Settlement::RetryAt(60_000, DeliveryFailure::Http5xx));
        let timeout = Err(DeliveryFailure::Timeout);
        assert_eq!(settlement(&timeout, 4, &r, 0), Settlement::RetryAt(240_000, DeliveryFailure::Timeout));
        assert_eq!(settlement(&timeout, 5, &r, 0), Settlement::Dropped(DeliveryFailure::Timeout));
        let total: Duration = (1..r.max_attempts).map(|a| r.delay(a)).sum();
        assert!(total <= Duration::from_secs(15 * 60), "{total:?}");
        assert_eq!(
            RetryPolicy::new(9, Duration::from_secs(60), Duration::from_secs(120)).delay(8),
            Duration::from_secs(120)
        );
    }

    #[test]
    fn each_attempt_is_signed_by_every_secret_in_force() {
        let text = |b: u8| WebhookSecret::from_bytes(vec![b; 32]).unwrap().to_text();
        let key = super::super::SubscriptionKey {
            principal: "alice".into(),
            url: "https://h.example/h".into(),
            name: "e".into(),
            arguments: serde_json::json!({}),
        };
        let sub = WebhookSubscription {
            id: key.id(),
            key,
            secret: super::super::WebhookSecret::new(text(1)),
            previous_secret: Some((super::super::WebhookSecret::new(text(2)), 5_000)),
            refresh_before_ms: None,
            active: true,
            acked_through: 0,
            fed_through: 0,
            failing_since_ms: None,
            last_failure: None,
        };
        assert_eq!(signing_secrets(&sub, 4_999).len(), 2);
        let now = signing_secrets(&sub, 5_000);
        assert_eq!(now.len(), 1);
        let h = headers(&signing_secrets(&sub, 0), "evt_1", &sub.id, 1_700_000_000_123, b"{}");
        let get = |n: &str| h.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get("webhook-timestamp"), "1700000000");
        let sig = get("webhook-signature");
        assert_eq!(sig.split(' ').count(), 2);
        assert!(now[0].verify("evt_1", 1_700_000_000, b"{}", &sig));
        assert_eq!(get("x-mcp-subscription-id"), sub.id);
    }
}
