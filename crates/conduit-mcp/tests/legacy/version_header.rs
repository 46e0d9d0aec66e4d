//! Inside a 2025-11-25 session, `MCP-Protocol-Version` (when sent) must name a
//! version the session speaks: anything else, or a value that is not text, is
//! `-32600` with HTTP 400; a served legacy version, or no header, is answered.

use crate::common;
use crate::legacy_common;

use common::start;
use conduit_mcp::prelude::*;
use legacy_common::*;
use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};

fn server() -> Server {
    Server::builder("versions", "1.0.0")
        .tool(Tool::new("hi", "Says hi").handle(|_c, _a| async { Ok(CallToolResult::text("hi")) }))
        .build()
        .expect("valid server")
}

/// POSTs `ping` in `c`'s session with `MCP-Protocol-Version` set to `version` (or none).
async fn ping(c: &Legacy, id: u64, version: Option<HeaderValue>) -> (StatusCode, Value) {
    let mut h = c.headers();
    h.remove("mcp-protocol-version");
    if let Some(v) = version {
        h.insert("mcp-protocol-version", v);
    }
    let r = c.client.post(&c.url).headers(h).body(rpc(id, "ping", json!({})).to_string()).send().await.expect("sent");
    let status = r.status();
    (status, r.json().await.expect("a JSON body"))
}

#[tokio::test]
async fn a_session_request_names_a_version_the_session_speaks_or_none() {
    let h = start(server()).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    for (id, v) in [(1, Some("2025-11-25")), (2, Some("2025-06-18")), (3, None)] {
        let (status, r) = ping(&c, id, v.map(HeaderValue::from_static)).await;
        assert_eq!((status, &r["result"]), (StatusCode::OK, &json!({})), "{v:?}: {r}");
    }
    let refused = [
        HeaderValue::from_static("2026-07-28"),
        HeaderValue::from_static("1999-01-01"),
        HeaderValue::from_bytes(b"2025-11-25\xff").expect("obs-text is a valid header value"),
    ];
    for (id, v) in (4..).zip(refused) {
        let (status, r) = ping(&c, id, Some(v.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{v:?}: {r}");
        assert_eq!((r["id"].as_u64(), r["error"]["code"].as_i64()), (Some(id), Some(-32600)), "{v:?}: {r}");
        assert!(r["error"]["message"].as_str().is_some_and(|m| m.contains("MCP-Protocol-Version")), "{r}");
    }
    h.assert_alive().await;
}
