//! Our Standard Webhooks signing against the reference Python library
//! (`standardwebhooks` from PyPI, in a venv this test makes): Python verifies
//! what we sign, and we verify what Python signs, over the same raw body.
//! Without python3 the test is skipped, unless `CI` requires it.

use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use std::process::Command;

const SCRIPT: &str = r#"
import sys, datetime
from standardwebhooks.webhooks import Webhook
secret, msg_id, ts, ours = sys.argv[1:5]
body = sys.stdin.buffer.read()
wh = Webhook(secret)
wh.verify(body, {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": ours})
when = datetime.datetime.fromtimestamp(int(ts), tz=datetime.timezone.utc)
print(wh.sign(msg_id, when, body.decode()))
"#;

#[test]
fn the_reference_python_library_verifies_ours_and_we_verify_its() {
    let Some(py) = crate::python_venv::standardwebhooks_python() else { return };
    let secret = WebhookSecret::from_bytes((0u8..32).map(|b| b.wrapping_mul(37)).collect()).unwrap();
    let now =
        i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap();
    let body = br#"{"eventId":"evt_1","name":"incident.created","data":{"note":"caf\u00e9 \u2603"}}"#;
    let ours = secret.sign("evt_1", now, body);
    let mut child = Command::new(py)
        .args(["-c", SCRIPT, &secret.to_text(), "evt_1", &now.to_string(), &ours])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "Python refused our signature {ours}");
    let theirs = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert_eq!(theirs, ours, "the same bytes sign the same");
    assert!(secret.verify("evt_1", now, body, &theirs));
    assert!(!secret.verify("evt_2", now, body, &theirs));
}
