//! `completion/complete` over a real socket.

use crate::common;
use crate::features_server;

use common::*;
use features_server::server;
use serde_json::json;

#[tokio::test]
async fn completion_complete() {
    let h = start(server()).await;
    let params =
        json!({ "ref": { "type": "ref/prompt", "name": "greet" }, "argument": { "name": "name", "value": "A" } });
    let r = h.send(&req(1, "completion/complete", params)).await.assert_ok(&json!(1));
    assert_eq!(r["completion"]["values"], json!(["Ada", "Alan"]));
    assert_eq!(r["completion"]["total"], 2);
    assert_eq!(r["resultType"], "complete");
}
