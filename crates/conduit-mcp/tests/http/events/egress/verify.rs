//! Endpoint verification (events.md §3.4 path 1) against a real endpoint:
//! the signed envelope, the echo that passes, and every answer that fails
//! with `challenge_failed` without the endpoint's words in the error.

use super::receiver::{Receiver, Replier, Reply, Seen, ok};
use super::{allowing, egress};
use conduit_mcp::ext::events::webhook::egress::FixedResolver;
use conduit_mcp::ext::events::webhook::{DeliveryFailure, VERIFICATION_ID_PREFIX, verify_endpoint};
use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use serde_json::{Value, json};
use std::sync::Arc;

const NOW_MS: u64 = 1_739_980_800_123;
const MARKER: &str = "MARKER-5b1e-endpoint-words";

fn secrets() -> (WebhookSecret, WebhookSecret) {
    (WebhookSecret::from_bytes(vec![1; 32]).unwrap(), WebhookSecret::from_bytes(vec![2; 24]).unwrap())
}

/// The challenge of a verification envelope.
fn challenge(seen: &Seen) -> String {
    let envelope: Value = serde_json::from_slice(&seen.body).expect("JSON");
    assert_eq!(envelope["type"], "verification");
    envelope["challenge"].as_str().expect("a challenge").to_owned()
}

async fn verify_against(reply: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> (Result<(), DeliveryFailure>, Seen) {
    let mut endpoint = Receiver::http(reply).await;
    let origin = format!("http://127.0.0.1:{}", endpoint.addr.port());
    let egress = egress(&allowing([&origin]), &Arc::new(FixedResolver::new()));
    let (current, previous) = secrets();
    let result = verify_endpoint(&egress, &format!("{origin}/hooks/1"), "sub_abc", &[current, previous], NOW_MS).await;
    (result, endpoint.next_request().await)
}

#[tokio::test]
async fn an_endpoint_echoing_the_challenge_is_verified_and_the_envelope_is_signed() {
    let (result, seen) =
        verify_against(|seen: &Seen| ok(json!({"challenge": challenge(seen)}).to_string().as_bytes())).await;
    assert_eq!(result, Ok(()));

    let id = seen.header("webhook-id").expect("webhook-id");
    assert!(id.starts_with(VERIFICATION_ID_PREFIX) && id.len() > VERIFICATION_ID_PREFIX.len(), "{id}");
    assert_eq!(seen.header("webhook-timestamp"), Some("1739980800"), "Unix seconds of the attempt");
    assert_eq!(seen.header("x-mcp-subscription-id"), Some("sub_abc"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert!(challenge(&seen).len() >= 32, "a random challenge of 16 bytes or more");
    let signatures = seen.header("webhook-signature").expect("signed");
    let (current, previous) = secrets();
    for secret in [current, previous] {
        assert!(secret.verify(id, 1_739_980_800, &seen.body, signatures), "each secret's signature verifies");
    }
    let stranger = WebhookSecret::from_bytes(vec![3; 32]).unwrap();
    assert!(!stranger.verify(id, 1_739_980_800, &seen.body, signatures));
}

#[tokio::test]
async fn a_wrong_echo_fails_without_the_endpoint_words_in_the_error() {
    let (result, _) =
        verify_against(|_: &Seen| ok(json!({"challenge": "not-it", "detail": MARKER}).to_string().as_bytes())).await;
    let failure = result.unwrap_err();
    assert_eq!(failure, DeliveryFailure::ChallengeFailed);
    assert_eq!(failure.as_str(), "challenge_failed");
    assert!(!format!("{failure:?}").contains(MARKER) && !failure.as_str().contains(MARKER));
}

#[tokio::test]
async fn any_other_answer_fails_the_challenge() {
    let answers: Vec<Replier> = vec![
        // The right echo with a non-2xx status.
        Arc::new(|seen: &Seen| {
            Reply::Answer(400, Vec::new(), json!({"challenge": challenge(seen)}).to_string().into())
        }),
        // A redirect, never followed.
        Arc::new(|_: &Seen| Reply::Answer(302, vec![("location".into(), "http://127.0.0.1:1/".into())], Vec::new())),
        // Not JSON, the marker in plain text.
        Arc::new(|_: &Seen| ok(MARKER.as_bytes())),
        // 2xx without a body.
        Arc::new(|_: &Seen| Reply::Answer(204, Vec::new(), Vec::new())),
        // The challenge echoed as a prefix of a longer string.
        Arc::new(|seen: &Seen| ok(json!({"challenge": format!("{}x", challenge(seen))}).to_string().as_bytes())),
    ];
    for (i, answer) in answers.into_iter().enumerate() {
        let (result, _) = verify_against(move |seen: &Seen| answer(seen)).await;
        assert_eq!(result, Err(DeliveryFailure::ChallengeFailed), "answer {i}");
    }
}
