//! The sealed MRTR `requestState`: opening any string never panics and never
//! succeeds unless the string is exactly what this key sealed for this
//! binding; what was sealed opens to the same state.
#![no_main]

use conduit_mcp::server::fuzzing::{open, seal};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const KEY: [u8; 32] = [7; 32];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\u{0}');
    let (a, b, c) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    // Arbitrary input as a sealed state: refused (a forgery of HMAC-SHA256 is not a fuzzer's to find).
    assert!(open(KEY, a, Some(b), "tools/call", c, 0).is_err(), "opened a state it never sealed: {a:?}");
    assert!(open(KEY, a, None, b, c, 0).is_err());
    // What it sealed opens to the same state, and only under the same binding.
    let state = serde_json::from_str::<Value>(a).unwrap_or_else(|_| json!(a));
    let sealed = seal(KEY, &state, Some(b), "tools/call", c, 1_000);
    assert_eq!(open(KEY, &sealed, Some(b), "tools/call", c, 999).expect("own seal opens"), state);
    assert!(open(KEY, &sealed, Some(b), "tools/call", c, 1_001).is_err(), "expired");
    assert!(open([8; 32], &sealed, Some(b), "tools/call", c, 0).is_err(), "another key");
    let other_digest = format!("{c}x");
    assert!(open(KEY, &sealed, Some(b), "tools/call", &other_digest, 0).is_err(), "another digest");
    assert!(open(KEY, &sealed, None, "tools/call", c, 0).is_err(), "another principal");
    let mut tampered = sealed.into_bytes();
    let i = data.len() % tampered.len();
    tampered[i] ^= 1;
    if let Ok(t) = String::from_utf8(tampered) {
        assert!(open(KEY, &t, Some(b), "tools/call", c, 0).is_err(), "a tampered seal opened");
    }
});
