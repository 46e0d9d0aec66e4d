//! `resources/list`, `resources/templates/list` and `resources/read` over a
//! real socket, and a resource not found.

use crate::common;
use crate::features_server;

use common::*;
use features_server::server;
use serde_json::json;

#[tokio::test]
async fn resources_read_templates_and_not_found() {
    let h = start(server()).await;
    let list = h.send(&req(0, "resources/list", json!({}))).await.assert_ok(&json!(0));
    assert_eq!(list["resources"], json!([{ "uri": "test://static", "name": "Static", "mimeType": "text/plain" }]));
    let templates = h.send(&req(1, "resources/templates/list", json!({}))).await.assert_ok(&json!(1));
    assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "test://items/{id}");

    let r = h.send(&req(2, "resources/read", json!({ "uri": "test://static" }))).await.assert_ok(&json!(2));
    assert_eq!(r["contents"], json!([{ "uri": "test://static", "mimeType": "text/plain", "text": "static text" }]));
    assert!(r["ttlMs"].is_u64() && r["cacheScope"] == "public", "{r}");

    let r = h.send(&req(3, "resources/read", json!({ "uri": "test://items/42" }))).await.assert_ok(&json!(3));
    assert_eq!(r["contents"][0]["text"], "item 42");

    for uri in ["test://nope", "test://items/missing", "test://items/a/b"] {
        let r = h.send(&req(4, "resources/read", json!({ "uri": uri }))).await;
        r.assert_error(200, -32602, &json!(4));
        assert_eq!(r.body["error"]["data"]["uri"], uri, "{}", r.text);
        assert_ne!(r.code(), Some(-32002), "the retired code is never used");
    }
}
