//! The core features over a real socket: discover, lists, tools, prompts,
//! resources, completion, MRTR, progress and log streams, listen streams and
//! cancellation by disconnect.

mod common;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use conduit_mcp::auth::BearerTokens;
use conduit_mcp::clock::ManualClock;
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::discover::{CacheHints, CacheScope};
use conduit_mcp::server::ServerOptions;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// Adds two integers.
#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[async_trait]
impl TypedTool for Add {
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Adds two integers";

    async fn run(self, _ctx: Ctx) -> Result<ToolOutput, RpcError> {
        Ok(CallToolResult::text((self.a + self.b).to_string()).into())
    }
}

struct Reverse;

#[async_trait]
impl ToolHandler for Reverse {
    fn info(&self) -> ToolInfo {
        ToolInfo::new(
            "reverse",
            "Reverses a string",
            json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }),
        )
    }

    async fn call(&self, _ctx: Ctx, args: Value) -> Result<ToolOutput, RpcError> {
        let text: String = args["text"].as_str().unwrap_or_default().chars().rev().collect();
        Ok(CallToolResult::text(text).into())
    }
}

fn stats_schema() -> Value {
    json!({ "type": "object", "properties": { "count": { "type": "integer" } }, "required": ["count"] })
}

fn builder() -> ServerBuilder {
    Server::builder("features", "1.2.3")
        .instructions("Use echo to test.")
        .tool(echo_tool())
        .typed_tool::<Add>()
        .tool(Reverse)
        .tool(
            Tool::new("stats", "Counts things")
                .output_schema(stats_schema())
                .handle(|_ctx, _args| async { Ok(CallToolResult::structured(json!({ "count": 3 }))) }),
        )
        .tool(
            Tool::new("bad_stats", "Breaks its own output schema")
                .output_schema(stats_schema())
                .handle(|_ctx, _args| async { Ok(CallToolResult::structured(json!({ "count": "three" }))) }),
        )
        .tool(
            Tool::new("progress", "Reports progress, then finishes")
                .param("steps", Param::integer("How many steps").required())
                .handle(|ctx, args| async move {
                    let steps = args["steps"].as_u64().unwrap_or(1);
                    for i in 1..=steps {
                        ctx.progress(i as f64, Some(steps as f64), Some(&format!("step {i}")));
                    }
                    Ok(CallToolResult::text("done"))
                }),
        )
        .tool(Tool::new("chatty", "Logs at info").handle(|ctx, _args| async move {
            let sent = ctx.log("info", json!("hello from chatty"));
            Ok(CallToolResult::text(sent.to_string()))
        }))
        .prompt(Prompt::new("greet", "Greets someone").argument("name", "Who", true).handle(|_ctx, args| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!("Hello, {}!", args["name"])))]))
        }))
        .resource(
            Resource::new("test://static", "Static")
                .mime_type("text/plain")
                .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "static text")) }),
        )
        .resource_template(ResourceTemplate::new("test://items/{id}", "Items").read(|_ctx, uri, vars| async move {
            let id = vars.get("id").cloned().unwrap_or_default();
            if id == "missing" {
                return Err(conduit_mcp::server::resource_not_found(&uri));
            }
            Ok(ResourceContents::text(uri, "text/plain", format!("item {id}")))
        }))
        .completion(|_ctx, params| async move {
            let prefix = params["argument"]["value"].as_str().unwrap_or_default().to_owned();
            let values: Vec<&str> = ["Ada", "Alan", "Grace"].into_iter().filter(|n| n.starts_with(&prefix)).collect();
            Ok(json!({ "values": values, "total": values.len(), "hasMore": false }))
        })
}

fn server() -> Server {
    builder().build().expect("valid server")
}

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

fn weather_tool() -> Tool {
    Tool::new("weather", "Weather for the signed-in user").param("city", Param::string("City").required()).handle(
        |ctx, args| async move {
            let city = args["city"].as_str().unwrap_or_default().to_owned();
            let out: ToolOutput = match (ctx.request_state(), ctx.input_response("login")) {
                (Some(state), Some(answer)) => CallToolResult::text(format!(
                    "{city} for {} (sealed city {})",
                    answer["content"]["name"].as_str().unwrap_or("?"),
                    state["city"].as_str().unwrap_or("?")
                ))
                .into(),
                _ => InputRequired::new()
                    .request(
                        "login",
                        mrtr::elicit(
                            "GitHub login?",
                            json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
                        ),
                    )
                    .state(json!({ "city": city }))
                    .into(),
            };
            Ok(out)
        },
    )
}

#[tokio::test]
async fn mrtr_round_trip_with_sealed_state() {
    let clock = ManualClock::new(1_700_000_000_000);
    let server =
        Server::builder("mrtr", "1").tool(weather_tool()).clock(Arc::new(clock.clone())).build().expect("valid server");
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server, HttpConfig::default().auth(tokens)).await;
    let caps = json!({ "elicitation": {} });
    let as_user = |token: &'static str| {
        move |hd: &mut reqwest::header::HeaderMap| set(hd, "authorization", &format!("Bearer {token}"))
    };
    let weather = |id: i64, city: &str, extra: Value| {
        let mut params = json!({ "name": "weather", "arguments": { "city": city }, "_meta": meta_with(caps.clone()) });
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        req(id, "tools/call", params)
    };

    // Round 1: the tool asks.
    let r1 = h.send_with(&weather(1, "Paris", json!({})), as_user("alice")).await.assert_ok(&json!(1));
    assert_eq!(r1["resultType"], "input_required");
    assert_eq!(r1["inputRequests"]["login"]["method"], "elicitation/create");
    assert_eq!(r1["inputRequests"]["login"]["params"]["mode"], "form");
    assert!(r1.get("ttlMs").is_none(), "input_required results carry no caching hints");
    let state = r1["requestState"].as_str().expect("sealed requestState").to_owned();
    assert!(!state.contains("Paris"), "the state is not readable as plain text");

    // Round 2: a new request with the answer and the state completes.
    let answer = json!({ "login": { "action": "accept", "content": { "name": "octocat" } } });
    let retry = |id: i64, city: &str, state: &str| {
        weather(id, city, json!({ "inputResponses": answer.clone(), "requestState": state }))
    };
    let r2 = h.send_with(&retry(2, "Paris", &state), as_user("alice")).await.assert_ok(&json!(2));
    assert_eq!(r2["resultType"], "complete");
    assert_eq!(first_text(&r2), "Paris for octocat (sealed city Paris)");

    // State without the needed answer: the server asks again instead of failing.
    let again = weather(3, "Paris", json!({ "requestState": state }));
    let r3 = h.send_with(&again, as_user("alice")).await.assert_ok(&json!(3));
    assert_eq!(r3["resultType"], "input_required");

    // Tampered: the payload rewritten to another city, the tag kept.
    let (payload, tag) = state.split_once('.').expect("payload.tag");
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).expect("base64url payload")).expect("utf8 payload");
    assert!(text.contains("Paris"));
    let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(text.replace("Paris", "Rome!")));
    for bad in [forged, format!("{state}x"), "garbage".to_owned()] {
        let r = h.send_with(&retry(4, "Paris", &bad), as_user("alice")).await;
        r.assert_error(200, -32602, &json!(4));
    }
    // Bound to the principal.
    h.send_with(&retry(5, "Paris", &state), as_user("bob")).await.assert_error(200, -32602, &json!(5));
    // Bound to the params.
    h.send_with(&retry(6, "Rome", &state), as_user("alice")).await.assert_error(200, -32602, &json!(6));
    // The rightful retry still works until the state expires.
    let r = h.send_with(&retry(7, "Paris", &state), as_user("alice")).await;
    assert_eq!(first_text(&r.assert_ok(&json!(7))), "Paris for octocat (sealed city Paris)");
    clock.advance(599_000);
    h.send_with(&retry(71, "Paris", &state), as_user("alice")).await.assert_ok(&json!(71));

    // Expired, by the injected clock.
    clock.advance(1_001);
    let r = h.send_with(&retry(8, "Paris", &state), as_user("alice")).await;
    r.assert_error(200, -32602, &json!(8));
    assert!(r.body["error"]["message"].as_str().is_some_and(|m| m.contains("expired")), "{}", r.text);
}

#[tokio::test]
async fn progress_streams_over_sse_before_the_result() {
    let h = start(server()).await;
    let body = req(
        "p1",
        "tools/call",
        json!({ "name": "progress", "arguments": { "steps": 3 }, "_meta": { PV: V, CC: {}, "progressToken": "tok-1" } }),
    );
    let r = h.send(&body).await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(r.content_type(), "text/event-stream");
    assert_eq!(r.headers.get("x-accel-buffering").and_then(|v| v.to_str().ok()), Some("no"));
    let msgs = r.messages();
    assert_eq!(msgs.len(), 4, "three progress notifications, then the response: {msgs:?}");
    for (i, m) in msgs[..3].iter().enumerate() {
        assert_eq!(m["method"], "notifications/progress");
        assert!(m.get("id").is_none(), "a notification has no id");
        assert_eq!(m["params"]["progressToken"], "tok-1");
        assert_eq!(m["params"]["progress"].as_f64(), Some((i + 1) as f64));
        assert_eq!(m["params"]["total"].as_f64(), Some(3.0));
    }
    assert_eq!(msgs[3]["id"], "p1");
    assert_eq!(first_text(&msgs[3]["result"]), "done");

    // An integer token keeps its type.
    let body = req(
        2,
        "tools/call",
        json!({ "name": "progress", "arguments": { "steps": 1 }, "_meta": { PV: V, CC: {}, "progressToken": 99 } }),
    );
    let msgs = h.send(&body).await.messages();
    assert_eq!(msgs[0]["params"]["progressToken"], 99);

    // No token, no notifications: plain JSON.
    let r = h.send(&call(3, "progress", json!({ "steps": 3 }))).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(first_text(&r.assert_ok(&json!(3))), "done");
}

#[tokio::test]
async fn log_messages_only_when_a_log_level_is_set() {
    let h = start(server()).await;
    let chatty = |id: i64, level: Option<&str>| {
        let mut m = meta();
        if let Some(l) = level {
            m["io.modelcontextprotocol/logLevel"] = json!(l);
        }
        req(id, "tools/call", json!({ "name": "chatty", "_meta": m }))
    };

    let r = h.send(&chatty(1, None)).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(first_text(&r.assert_ok(&json!(1))), "false");

    let r = h.send(&chatty(2, Some("debug"))).await;
    assert_eq!(r.content_type(), "text/event-stream");
    let msgs = r.messages();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["method"], "notifications/message");
    assert_eq!(msgs[0]["params"], json!({ "level": "info", "data": "hello from chatty" }));
    assert_eq!(first_text(&msgs[1]["result"]), "true");

    // Below the requested level: nothing sent.
    let r = h.send(&chatty(3, Some("error"))).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(first_text(&r.assert_ok(&json!(3))), "false");
}

fn listen(id: impl Into<Value>, filter: Value) -> Value {
    req(id, "subscriptions/listen", json!({ "notifications": filter }))
}

#[tokio::test]
async fn listen_acknowledges_filters_delivers_and_closes_on_shutdown() {
    let h = start(server()).await;
    let mut s =
        h.open(&listen(7, json!({ "toolsListChanged": true, "promptsListChanged": false, "bogusFilter": true }))).await;
    assert_eq!(s.status.as_u16(), 200);
    assert_eq!(s.headers.get("content-type").and_then(|v| v.to_str().ok()), Some("text/event-stream"));

    let ack = s.next().await.expect("the acknowledgment");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUB_ID], json!(7), "an integer id stays an integer");
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true }),
        "unknown and false fields are left out"
    );
    assert_eq!(h.server.open_subscriptions(), 1);

    // Not asked for: not delivered. Asked for: delivered, tagged.
    assert_eq!(h.server.notify_prompts_list_changed(), 0);
    assert_eq!(h.server.notify_resources_list_changed(), 0);
    assert_eq!(h.server.notify_tools_list_changed(), 1);
    let n = s.next().await.expect("tools list_changed");
    assert_eq!(n["method"], "notifications/tools/list_changed", "the first delivery is the one asked for: {n}");
    assert_eq!(n["params"]["_meta"][SUB_ID], json!(7));

    // Shutdown ends the stream with a successful response, then closes it.
    h.server.shutdown().await;
    let end = s.next().await.expect("the closing result");
    assert_eq!(end["id"], 7);
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(end["result"]["_meta"][SUB_ID], json!(7));
    assert!(s.next().await.is_none(), "the stream ends after the result");
}

#[tokio::test]
async fn several_listen_streams_are_independent() {
    let h = start(server()).await;
    let mut tools = h.open(&listen("listen-a", json!({ "toolsListChanged": true }))).await;
    let mut res = h
        .open(&listen("listen-b", json!({ "promptsListChanged": true, "resourceSubscriptions": ["test://static"] })))
        .await;
    let a = tools.next().await.expect("ack a");
    assert_eq!(a["params"]["_meta"][SUB_ID], "listen-a", "a string id stays a string");
    let b = res.next().await.expect("ack b");
    assert_eq!(b["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(b["params"]["_meta"][SUB_ID], "listen-b");
    assert_eq!(
        b["params"]["notifications"],
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["test://static"] })
    );

    assert_eq!(h.server.notify_tools_list_changed(), 1);
    assert_eq!(h.server.notify_resource_updated("test://other"), 0);
    assert_eq!(h.server.notify_resource_updated("test://static"), 1);
    assert_eq!(h.server.notify_prompts_list_changed(), 1);

    let n = tools.next().await.expect("a delivery");
    assert_eq!(
        (n["method"].as_str(), &n["params"]["_meta"][SUB_ID]),
        (Some("notifications/tools/list_changed"), &json!("listen-a"))
    );
    let n = res.next().await.expect("a delivery");
    assert_eq!(n["method"], "notifications/resources/updated", "{n}");
    assert_eq!(n["params"]["uri"], "test://static");
    assert_eq!(n["params"]["_meta"][SUB_ID], "listen-b");
    let n = res.next().await.expect("a delivery");
    assert_eq!(n["method"], "notifications/prompts/list_changed", "{n}");

    h.server.shutdown().await;
    assert_eq!(tools.next().await.expect("closing result")["id"], "listen-a");
    assert_eq!(res.next().await.expect("closing result")["id"], "listen-b");
    assert!(tools.next().await.is_none() && res.next().await.is_none());
}

/// Reports, when dropped, whether the request's cancellation token had fired.
struct ReportOnDrop {
    token: CancellationToken,
    tx: UnboundedSender<bool>,
}

impl Drop for ReportOnDrop {
    fn drop(&mut self) {
        let _ = self.tx.send(self.token.is_cancelled());
    }
}

#[tokio::test]
async fn a_dropped_client_cancels_the_in_flight_request() {
    let (started_tx, mut started) = unbounded_channel::<()>();
    let (done_tx, mut done) = unbounded_channel::<bool>();
    let hang = Tool::new("hang", "Waits until cancelled").handle(move |ctx, _args| {
        let (started_tx, done_tx) = (started_tx.clone(), done_tx.clone());
        async move {
            let _report = ReportOnDrop { token: ctx.cancellation().clone(), tx: done_tx };
            // With a progress token this opens an SSE stream first.
            ctx.progress(0.0, None, Some("waiting"));
            let _ = started_tx.send(());
            ctx.cancellation().cancelled().await;
            Ok(CallToolResult::text("cancelled"))
        }
    });
    let server = Server::builder("cancel", "1").tool(hang).build().expect("valid server");
    let h = start(server).await;

    // Plain JSON: the client gives up before any byte of the response.
    let pending = tokio::spawn(h.post_with(&call(1, "hang", json!({})), |_| {}).send());
    guard("the tool to start", started.recv()).await.expect("started");
    pending.abort();
    assert!(pending.await.expect_err("aborted").is_cancelled());
    let cancelled = guard("the tool to see the cancellation", done.recv()).await.expect("a report");
    assert!(cancelled, "the tool stopped because its request was cancelled");

    // SSE: the client reads the first event, then drops the stream.
    let body = req(2, "tools/call", json!({ "name": "hang", "_meta": { PV: V, CC: {}, "progressToken": "t" } }));
    let mut s = h.open(&body).await;
    guard("the tool to start", started.recv()).await.expect("started");
    assert_eq!(s.next().await.expect("progress")["method"], "notifications/progress");
    drop(s);
    let cancelled = guard("the tool to see the cancellation", done.recv()).await.expect("a report");
    assert!(cancelled, "the tool stopped because its request was cancelled");

    h.assert_alive().await;
}

#[tokio::test]
async fn mrtr_state_is_sealed_to_the_params_as_sent_even_without_arguments() {
    let tool = Tool::new("confirm", "Asks, then answers").handle(|ctx, _args| async move {
        Ok::<ToolOutput, RpcError>(match (ctx.request_state(), ctx.input_response("ok")) {
            (Some(state), Some(_)) => CallToolResult::text(format!("confirmed step {}", state["step"])).into(),
            _ => InputRequired::new()
                .request("ok", mrtr::elicit("Sure?", json!({ "type": "object", "properties": {} })))
                .state(json!({ "step": 1 }))
                .into(),
        })
    });
    let h = start(Server::builder("mrtr", "1").tool(tool).build().expect("valid server")).await;
    let caps = meta_with(json!({ "elicitation": {} }));
    // Once with no `arguments` member at all, once with `arguments: null`, once with `{}`.
    for (n, args) in [(None, 0), (Some(Value::Null), 1), (Some(json!({})), 2)].map(|(a, n)| (n, a)) {
        let mut params = json!({ "name": "confirm", "_meta": caps.clone() });
        if let Some(a) = &args {
            params["arguments"] = a.clone();
        }
        let r1 = h.send(&req(10 * n, "tools/call", params.clone())).await.assert_ok(&json!(10 * n));
        assert_eq!(r1["resultType"], "input_required", "{r1}");
        params["requestState"] = r1["requestState"].clone();
        params["inputResponses"] = json!({ "ok": { "action": "accept", "content": {} } });
        let r2 = h.send(&req(10 * n + 1, "tools/call", params)).await.assert_ok(&json!(10 * n + 1));
        assert_eq!(first_text(&r2), "confirmed step 1", "arguments {args:?}");
    }
}
