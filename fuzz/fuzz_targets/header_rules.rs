//! The header rules: the `=?base64?…?=` codec round-trips every value,
//! decoding never panics, a value always matches its own encoding once decoded, and the
//! `Mcp-Param-*` declarations of any input schema are read without panicking.
#![no_main]

use conduit_mcp::protocol::routing::{decode_value, encode_value, mirrored_name, param_headers, value_matches};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Any header text decodes or is refused, never panics.
    let _ = decode_value(text);
    // Every value survives its encoding, and matches it.
    let encoded = encode_value(text);
    assert!(encoded.is_ascii() || encoded == text, "an encoded header must be sendable: {encoded:?}");
    let decoded = decode_value(&encoded).expect("own encoding decodes");
    assert_eq!(decoded, text);
    // The server compares the decoded header with the body value.
    assert!(value_matches(&decoded, &Value::String(text.to_owned())), "{text:?} vs {encoded:?}");
    // Schemas and params from JSON input.
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let _ = param_headers(&v);
        if let Value::Object(m) = &v {
            for method in ["tools/call", "prompts/get", "resources/read", "tasks/get", "tasks/update"] {
                let _ = mirrored_name(method, m);
            }
        }
        let _ = value_matches(text, &v);
    }
});
