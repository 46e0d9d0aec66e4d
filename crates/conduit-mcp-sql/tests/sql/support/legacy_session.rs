//! Opening a 2025-11-25 session over HTTP, as a real client does.

use serde_json::{Value, json};

/// The protocol revision these sessions speak.
pub const LEGACY: &str = "2025-11-25";

/// Opens a 2025-11-25 session on `url` (`initialize`, checked against the schema, then
/// `notifications/initialized`); returns its id. The server must serve legacy tasks.
pub async fn initialize(url: &str, client_name: &str) -> String {
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": client_name, "version": "1" } } });
    let client = reqwest::Client::new();
    let post = |session: Option<&str>, body: Value| {
        let mut r = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            r = r.header("mcp-session-id", session).header("mcp-protocol-version", LEGACY);
        }
        r.body(body.to_string()).send()
    };
    let r = post(None, body).await.expect("sent");
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("a session").to_owned();
    let text = r.text().await.expect("body");
    let m: Value = serde_json::from_str(&text).expect("initialize answers with JSON");
    super::assert_legacy_schema("InitializeResult", &m["result"]);
    assert!(m["result"]["capabilities"]["tasks"]["list"].is_object(), "legacy tasks are served: {m}");
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let r = post(Some(&session), note).await.expect("sent");
    assert_eq!(r.status(), 202);
    session
}
