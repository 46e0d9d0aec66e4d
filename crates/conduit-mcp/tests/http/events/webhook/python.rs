//! The reference Python verifier (`standardwebhooks` from PyPI) checks what
//! the server really sent: the handshake and a task's completion, as the
//! loopback receiver got them (raw body and headers), on the current time
//! (the library refuses timestamps more than five minutes off).

use super::*;
use crate::python_venv::standardwebhooks_python;
use std::io::Write;
use std::process::{Command, Stdio};

const VERIFY: &str = r#"
import sys
from standardwebhooks.webhooks import Webhook
secret, msg_id, ts, sig = sys.argv[1:5]
body = sys.stdin.buffer.read()
Webhook(secret).verify(body, {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": sig})
print("verified")
"#;

fn python_verifies(py: &std::path::Path, secret: &WebhookSecret, got: &Received) -> bool {
    let mut child = Command::new(py)
        .args(["-c", VERIFY, &secret.to_text(), &got.id, &got.timestamp.to_string(), &got.signature])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    child.stdin.take().expect("stdin").write_all(&got.body).expect("write");
    let out = child.wait_with_output().expect("python ran");
    out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "verified"
}

#[tokio::test]
async fn the_reference_python_verifier_accepts_real_deliveries() {
    let Some(py) = standardwebhooks_python() else { return };
    let h = hooks().await;
    let now = conduit_mcp::clock::Clock::now_ms(&conduit_mcp::clock::SystemClock);
    h.f.clock.set(now);
    let key = secret(5);
    h.subscribe(Some("alice"), 1, h.params("task.status_changed", json!({}), &key)).await.assert_ok(&json!(1));
    let hello = h.receiver.next().await;
    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let event = h.receiver.next().await;
    assert_eq!(event.json()["data"]["taskId"], json!(task));
    assert!(python_verifies(&py, &key, &hello), "the handshake");
    assert!(python_verifies(&py, &key, &event), "the event");
    let mut altered = event.clone();
    altered.body.push(b' ');
    assert!(!python_verifies(&py, &key, &altered), "a changed body fails");
    assert!(!python_verifies(&py, &secret(6), &event), "another secret fails");
}
