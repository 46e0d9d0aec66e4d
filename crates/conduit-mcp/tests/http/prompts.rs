//! `prompts/list` and `prompts/get` over a real socket, and their errors.

use crate::common;
use crate::features_server;

use common::*;
use features_server::server;
use serde_json::json;

#[tokio::test]
async fn prompts_get_and_errors() {
    let h = start(server()).await;
    let list = h.send(&req(0, "prompts/list", json!({}))).await.assert_ok(&json!(0));
    assert_eq!(list["prompts"][0]["name"], "greet");
    assert_eq!(list["prompts"][0]["arguments"][0], json!({ "name": "name", "description": "Who", "required": true }));
    assert!(list["ttlMs"].is_u64());

    let r = h.send(&req(1, "prompts/get", json!({ "name": "greet", "arguments": { "name": "Ada" } }))).await;
    let result = r.assert_ok(&json!(1));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["messages"][0]["role"], "user");
    assert_eq!(result["messages"][0]["content"], json!({ "type": "text", "text": "Hello, Ada!" }));

    let missing = h.send(&req(2, "prompts/get", json!({ "name": "greet" }))).await;
    missing.assert_error(200, -32602, &json!(2));
    assert!(missing.body["error"]["message"].as_str().is_some_and(|m| m.contains("name")), "{}", missing.text);
    h.send(&req(3, "prompts/get", json!({ "name": "nope" }))).await.assert_error(200, -32602, &json!(3));
    h.send(&req(4, "prompts/get", json!({ "name": "greet", "arguments": { "name": 5 } }))).await.assert_error(
        200,
        -32602,
        &json!(4),
    );
}
