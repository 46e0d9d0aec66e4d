//! `server/discover` over a real socket: what it describes, capabilities that
//! follow what is registered, and the serverInfo `_meta` and caching hints as
//! configured.

use crate::common;
use crate::features_server;

use common::*;
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::discover::{CacheHints, CacheScope};
use conduit_mcp::server::ServerOptions;
use features_server::{builder, server};
use serde_json::json;

#[tokio::test]
async fn discover_describes_the_server() {
    let h = start(server()).await;
    let r = h.send(&req("d", "server/discover", json!({}))).await;
    let result = r.assert_ok(&json!("d"));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(SERVED));
    let caps = result["capabilities"].as_object().expect("capabilities object");
    let mut keys: Vec<&str> = caps.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["completions", "prompts", "resources", "tools"]);
    assert_eq!(caps["tools"]["listChanged"], true);
    assert_eq!(caps["resources"]["subscribe"], true);
    assert!(caps.get("tasks").is_none(), "no legacy tasks capability");
    assert!(result["ttlMs"].is_u64(), "{result}");
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["instructions"], "Use echo to test.");
    assert_eq!(result["_meta"][SERVER_INFO], json!({ "name": "features", "version": "1.2.3" }));
    assert!(result.get("serverInfo").is_none(), "identity lives in _meta, not at the top level");

    // Capabilities follow what is registered.
    let tools_only = Server::builder("t", "1").tool(echo_tool()).build().expect("valid server");
    let h2 = start(tools_only).await;
    let result = h2.send(&req(1, "server/discover", json!({}))).await.assert_ok(&json!(1));
    assert_eq!(result["capabilities"], json!({ "tools": { "listChanged": true } }));
    for method in ["prompts/list", "resources/list", "completion/complete"] {
        h2.send(&req(2, method, json!({}))).await.assert_error(404, -32601, &json!(2));
    }
}

#[tokio::test]
async fn server_info_meta_and_cache_hints_are_configurable() {
    let mut options = ServerOptions::default();
    options.discover_cache = CacheHints { ttl_ms: 3_600_000, cache_scope: CacheScope::Private };
    options.list_cache = CacheHints { ttl_ms: 0, cache_scope: CacheScope::Private };
    let quiet = builder().options(options).server_info_meta(false).build().expect("valid server");
    let h = start(quiet).await;
    let d = h.send(&req(1, "server/discover", json!({}))).await.assert_ok(&json!(1));
    assert!(d["_meta"].get(SERVER_INFO).is_none(), "{d}");
    assert_eq!((d["ttlMs"].as_u64(), d["cacheScope"].as_str()), (Some(3_600_000), Some("private")));
    let l = h.send(&req(2, "tools/list", json!({}))).await.assert_ok(&json!(2));
    assert!(l["_meta"].get(SERVER_INFO).is_none(), "{l}");
    assert_eq!((l["ttlMs"].as_u64(), l["cacheScope"].as_str()), (Some(0), Some("private")));
    let c = h.send(&call(3, "echo", json!({ "text": "x" }))).await.assert_ok(&json!(3));
    assert!(c["_meta"].get(SERVER_INFO).is_none(), "{c}");

    // On by default, on every result.
    let h = start(server()).await;
    let c = h.send(&call(4, "echo", json!({ "text": "x" }))).await.assert_ok(&json!(4));
    assert_eq!(c["_meta"][SERVER_INFO]["name"], "features");
}
