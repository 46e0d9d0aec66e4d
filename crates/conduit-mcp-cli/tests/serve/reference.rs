//! The README's first command: `conduit-mcp serve` starts, prints where it
//! listens, and answers the copy-paste request it prints.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serve_prints_its_url_and_answers_the_printed_request() {
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_conduit-mcp"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn conduit-mcp"),
    );
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut printed = String::new();
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            printed.push_str(&line);
            printed.push('\n');
            if let Some(url) = line.strip_prefix("listening on ")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send((url.to_owned(), printed.clone()));
            }
        }
    });
    let (url, printed) = tokio::time::timeout(std::time::Duration::from_secs(30), rx)
        .await
        .expect("server printed its address in time")
        .expect("stderr reader");
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    assert!(printed.contains("curl -s"), "usage hint printed: {printed}");

    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "hi" },
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {} } }
    });
    let resp = reqwest::Client::new()
        .post(&url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "echo")
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    let v: serde_json::Value = resp.json().await.expect("json");
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["content"][0]["text"], "hi");
    assert_eq!(v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "conduit-mcp-reference");
}
