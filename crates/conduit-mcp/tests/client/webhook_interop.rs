//! Our Standard Webhooks signing against the reference Python library
//! (`standardwebhooks` from PyPI, in a venv this test makes): Python verifies
//! what we sign, and we verify what Python signs, over the same raw body.
//! Without python3 the test is skipped, unless `CI` requires it.

use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = "standardwebhooks==1.1.0";

/// The venv's python with the package installed, or `None` (skipped) without python3.
fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../standardwebhooks-venv");
    let py = venv.join("bin/python");
    let has = |py: &Path| Command::new(py).args(["-c", "import standardwebhooks"]).status().is_ok_and(|s| s.success());
    if py.is_file() && has(&py) {
        return Some(py);
    }
    if Command::new("python3").arg("--version").status().is_err() {
        assert!(std::env::var("CI").is_err(), "python3 is required for the standardwebhooks interop test");
        eprintln!("skipped: no python3");
        return None;
    }
    let ok = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().is_ok_and(|s| s.success());
    assert!(ok, "python3 -m venv {}", venv.display());
    let ok = Command::new(venv.join("bin/pip")).args(["install", "-q", PACKAGE]).status().is_ok_and(|s| s.success());
    assert!(ok && has(&py), "pip install {PACKAGE}");
    Some(py)
}

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
    let Some(py) = python() else { return };
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
