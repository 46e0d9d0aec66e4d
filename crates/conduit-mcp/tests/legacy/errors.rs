//! An error's 2025-11-25 code comes from what it is (its class), never from its
//! words: a resource that is not there is `-32002` on that era and `-32602` on
//! 2026-07-28; a tool's own error that merely reads the same stays `-32602`.

use crate::common;
use crate::legacy_common;

use common::{req, start};
use conduit_mcp::prelude::*;
use legacy_common::*;
use serde_json::json;

fn server() -> Server {
    Server::builder("errors", "1.0.0")
        .resource(
            Resource::new("test://here", "Here")
                .mime_type("text/plain")
                .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "hi")) }),
        )
        .tool(Tool::new("lookalike", "Fails with words like a missing resource's").handle(|_c, _a| async {
            Err::<CallToolResult, _>(
                RpcError::invalid_params("Resource not found").data(json!({ "uri": "test://elsewhere" })),
            )
        }))
        .build()
        .expect("valid server")
}

#[tokio::test]
async fn a_missing_resource_is_known_by_its_class_on_both_eras() {
    let h = start(server()).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let missing = c.error(1, "resources/read", json!({ "uri": "test://nowhere" })).await;
    assert_eq!((missing["code"].as_i64(), missing["data"]["uri"].as_str()), (Some(-32002), Some("test://nowhere")));
    let tool = c.error(2, "tools/call", json!({ "name": "lookalike", "arguments": {} })).await;
    assert_eq!(tool["code"], -32602, "a tool's own error keeps its code: {tool}");
    let modern = h.send(&req(3, "resources/read", json!({ "uri": "test://nowhere" }))).await;
    modern.assert_error(200, -32602, &json!(3));
}
