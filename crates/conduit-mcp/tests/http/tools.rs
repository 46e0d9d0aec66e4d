//! `tools/list` and `tools/call` over a real socket: opaque cursors, argument
//! and output validation, typed and trait tools.

use crate::common;
use crate::features_server;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use conduit_mcp::prelude::*;
use conduit_mcp::server::ServerOptions;
use features_server::{server, stats_schema};
use serde_json::{Value, json};

#[tokio::test]
async fn tools_list_paginates_with_opaque_cursors() {
    let mut options = ServerOptions::default();
    options.page_size = 2;
    let mut b = Server::builder("pages", "1").options(options);
    for i in 0..5 {
        b = b.tool(Tool::new(format!("t{i}"), "A tool").handle(|_ctx, _args| async { Ok(CallToolResult::text("ok")) }));
    }
    let h = start(b.build().expect("valid server")).await;

    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = h.send(&req(pages, "tools/list", params)).await.assert_ok(&json!(pages));
        pages += 1;
        assert!(page["ttlMs"].is_u64() && page["cacheScope"] == "public", "{page}");
        let tools = page["tools"].as_array().expect("tools array");
        assert!(tools.len() <= 2, "page size honoured: {page}");
        names.extend(tools.iter().map(|t| t["name"].as_str().expect("name").to_owned()));
        match page.get("nextCursor") {
            Some(Value::String(c)) => {
                assert!(!c.contains("t2") && !c.is_empty(), "opaque cursor {c}");
                cursor = Some(c.clone());
            }
            None => break,
            Some(other) => panic!("nextCursor must be a string: {other}"),
        }
        assert!(pages < 10, "pagination terminates");
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["t0", "t1", "t2", "t3", "t4"], "every tool once, in registration order");

    for bad in [json!("not a cursor!"), json!(URL_SAFE_NO_PAD.encode("o:99")), json!(7)] {
        let r = h.send(&req("bad", "tools/list", json!({ "cursor": bad }))).await;
        r.assert_error(200, -32602, &json!("bad"));
    }
}

#[tokio::test]
async fn tools_call_validates_arguments_and_output() {
    let h = start(server()).await;
    let list = h.send(&req(0, "tools/list", json!({}))).await.assert_ok(&json!(0));
    let tools = list["tools"].as_array().expect("tools");
    let find = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap_or_else(|| panic!("tool {n} listed")).clone();
    assert_eq!(find("stats")["outputSchema"], stats_schema());
    assert_eq!(find("echo")["inputSchema"]["required"], json!(["text"]));

    let ok = h.send(&call(1, "echo", json!({ "text": "hi" }))).await.assert_ok(&json!(1));
    assert_eq!((ok["resultType"].as_str(), first_text(&ok).as_str()), (Some("complete"), "hi"));
    assert!(ok["isError"].is_null());

    // Bad argument values are tool errors the model can see, not protocol errors.
    for args in [json!({ "text": 5 }), json!({})] {
        let r = h.send(&call(2, "echo", args.clone())).await;
        let result = r.assert_ok(&json!(2));
        assert_eq!(result["isError"], true, "{args}: {result}");
        assert_eq!(result["resultType"], "complete");
        assert!(first_text(&result).contains("echo"), "{result}");
    }

    let s = h.send(&call(3, "stats", json!({}))).await.assert_ok(&json!(3));
    assert_eq!(s["structuredContent"], json!({ "count": 3 }));
    let text: Value = serde_json::from_str(&first_text(&s)).expect("structured content mirrored as JSON text");
    assert_eq!(text, json!({ "count": 3 }));

    // structuredContent that breaks the declared outputSchema is a server fault.
    h.send(&call(4, "bad_stats", json!({}))).await.assert_error(200, -32603, &json!(4));
}

#[tokio::test]
async fn typed_and_trait_tools() {
    let h = start(server()).await;
    let list = h.send(&req(0, "tools/list", json!({}))).await.assert_ok(&json!(0));
    let add = list["tools"].as_array().expect("tools").iter().find(|t| t["name"] == "add").expect("add listed").clone();
    let schema = &add["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    let mut required: Vec<&str> =
        schema["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
    required.sort_unstable();
    assert_eq!(required, ["a", "b"]);
    assert_eq!(add["description"], "Adds two integers");

    let r = h.send(&call(1, "add", json!({ "a": 2, "b": 40 }))).await.assert_ok(&json!(1));
    assert_eq!(first_text(&r), "42");
    let r = h.send(&call(2, "add", json!({ "a": "two", "b": 40 }))).await.assert_ok(&json!(2));
    assert_eq!(r["isError"], true, "{r}");

    let r = h.send(&call(3, "reverse", json!({ "text": "stressed" }))).await.assert_ok(&json!(3));
    assert_eq!(first_text(&r), "desserts");
}
