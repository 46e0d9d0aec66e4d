//! The request decoder (body bytes → message): never panics, and whatever
//! it accepts re-encodes to JSON that decodes to the same message, and its
//! params survive serde_json's own write → read (as in a store).
#![no_main]

use conduit_mcp::protocol::jsonrpc::parse::{Incoming, parse_incoming};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_incoming(data) {
        Ok(Incoming::Request(r)) => {
            let mut v = serde_json::json!({ "jsonrpc": "2.0", "id": r.id.to_value(), "method": r.method });
            if let Some(p) = &r.params {
                v["params"] = p.clone();
            }
            // What a store or a relay does: write it out and read it back with serde_json.
            if let Some(p) = &r.params {
                let stored: serde_json::Value = serde_json::from_str(&p.to_string()).expect("params re-read");
                assert_eq!(&stored, p, "params changed after one serialise → parse cycle");
            }
            let again = parse_incoming(v.to_string().as_bytes());
            match again {
                Ok(Incoming::Request(b)) => {
                    assert_eq!(b.id, r.id);
                    assert_eq!(b.method, r.method);
                    assert_eq!(b.params, r.params);
                }
                other => panic!("a request re-encoded does not decode as one: {other:?}"),
            }
        }
        Ok(_) => {}
        Err((_, e)) => assert!(matches!(e.code, -32700 | -32600 | -32602), "unexpected code {}", e.code),
    }
});
