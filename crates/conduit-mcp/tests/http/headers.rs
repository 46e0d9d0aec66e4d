//! Every request-header rule of protocol brief §2.3, over a real socket.

use crate::common;

use common::*;
use conduit_mcp::prelude::*;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

fn prompt(name: &str) -> Prompt {
    let reply = format!("prompt {name}");
    Prompt::new(name, "A prompt").argument("who", "Someone", false).handle(move |_ctx, _args| {
        let reply = reply.clone();
        async move { Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(reply))])) }
    })
}

fn resource(uri: &str) -> Resource {
    Resource::new(uri, "A resource").read(|_ctx, uri| async move {
        Ok(ResourceContents::text(uri.clone(), "text/plain", format!("contents of {uri}")))
    })
}

fn server() -> Server {
    Server::builder("headers", "1.0.0")
        .tool(echo_tool())
        .tool(
            Tool::new("route", "Routes a job; three arguments are mirrored in headers")
                .param("region", Param::string("Region").required().header("Region"))
                .param("count", Param::integer("How many").header("Count"))
                .param("dry", Param::boolean("Dry run").header("Dry"))
                .handle(|_ctx, args| async move { Ok(CallToolResult::text(args.to_string())) }),
        )
        .prompt(prompt("greet"))
        .prompt(prompt("p"))
        .prompt(prompt("=?BASE64?cA==?="))
        .prompt(prompt("=?base64?cA=="))
        .resource(resource("test://static"))
        .resource(resource("test://café/ünïcode"))
        .build()
        .expect("valid server")
}

fn header_mismatch(r: &Resp, id: &Value) {
    r.assert_error(400, -32020, id);
}

#[tokio::test]
async fn protocol_version_header_missing_or_mismatched() {
    let h = start(server()).await;
    let body = req(1, "tools/list", json!({}));
    h.send(&body).await.assert_ok(&json!(1));
    header_mismatch(
        &h.send_with(&body, |hd| {
            hd.remove("mcp-protocol-version");
        })
        .await,
        &json!(1),
    );
    header_mismatch(&h.send_with(&body, |hd| set(hd, "mcp-protocol-version", "2025-06-18")).await, &json!(1));
    // Values compare exactly: a suffix is a mismatch.
    header_mismatch(&h.send_with(&body, |hd| set(hd, "mcp-protocol-version", "2026-07-28x")).await, &json!(1));

    // Header and body agree on an unsupported version: -32022, not -32020.
    let old = req(2, "tools/list", json!({ "_meta": { PV: "2099-01-01", CC: {} } }));
    h.send(&old).await.assert_error(400, -32022, &json!(2));
    // The body names an unsupported version, the header the supported one: they disagree first.
    header_mismatch(&h.send_with(&old, |hd| set(hd, "mcp-protocol-version", V)).await, &json!(2));
}

#[tokio::test]
async fn method_header_missing_mismatched_or_wrong_case() {
    let h = start(server()).await;
    let body = req("m", "tools/list", json!({}));
    header_mismatch(
        &h.send_with(&body, |hd| {
            hd.remove("mcp-method");
        })
        .await,
        &json!("m"),
    );
    for wrong in ["server/discover", "TOOLS/LIST", "Tools/List", "tools/list/"] {
        let r = h.send_with(&body, |hd| set(hd, "mcp-method", wrong)).await;
        assert_eq!(r.code(), Some(-32020), "Mcp-Method {wrong:?}: {}", r.text);
        header_mismatch(&r, &json!("m"));
    }
    let call_body = call("c", "echo", json!({ "text": "hi" }));
    header_mismatch(&h.send_with(&call_body, |hd| set(hd, "mcp-method", "TOOLS/CALL")).await, &json!("c"));
}

#[tokio::test]
async fn header_names_are_case_insensitive() {
    let h = start(server()).await;
    let body = call(3, "route", json!({ "region": "eu-west", "count": 7 })).to_string();
    let head = raw_head(
        h.addr,
        &[
            ("mCp-PrOtOcOl-VeRsIoN", V),
            ("MCP-METHOD", "tools/call"),
            ("mcp-NAME", "route"),
            ("MCP-PARAM-REGION", "eu-west"),
            ("mcp-param-count", "7"),
        ],
        body.len(),
    );
    let r = h.raw_http(&head, body.as_bytes()).await;
    assert_eq!(r.status, 200, "{} {}", r.head, r.body);
    assert_eq!(r.body["id"], 3);
    assert!(r.body["result"]["isError"].is_null(), "{}", r.body);
    assert_eq!(serde_json::from_str::<Value>(&first_text(&r.body["result"])).unwrap()["region"], "eu-west");
}

#[tokio::test]
async fn mcp_name_is_required_for_named_methods() {
    let h = start(server()).await;
    let cases = [
        (call("t", "echo", json!({ "text": "x" })), "echo"),
        (req("p", "prompts/get", json!({ "name": "greet" })), "greet"),
        (req("r", "resources/read", json!({ "uri": "test://static" })), "test://static"),
    ];
    for (body, name) in cases {
        let id = body["id"].clone();
        h.send(&body).await.assert_ok(&id);
        let missing = h
            .send_with(&body, |hd| {
                hd.remove("mcp-name");
            })
            .await;
        assert_eq!(missing.code(), Some(-32020), "missing Mcp-Name for {name}: {}", missing.text);
        header_mismatch(&missing, &id);
        header_mismatch(&h.send_with(&body, |hd| set(hd, "mcp-name", "something-else")).await, &id);
        // Values are case-sensitive.
        header_mismatch(&h.send_with(&body, |hd| set(hd, "mcp-name", &name.to_uppercase())).await, &id);
    }
    // Methods without a name need no Mcp-Name, and a stray one is not an error.
    h.send(&req("d", "server/discover", json!({}))).await.assert_ok(&json!("d"));
}

#[tokio::test]
async fn surrounding_whitespace_is_trimmed() {
    let h = start(server()).await;
    let body = call(4, "echo", json!({ "text": "padded" }));
    let r = h
        .send_with(&body, |hd| {
            hd.insert("mcp-name", HeaderValue::from_static("  echo\t "));
            hd.insert("mcp-method", HeaderValue::from_static(" tools/call "));
        })
        .await;
    assert_eq!(first_text(&r.assert_ok(&json!(4))), "padded");

    // The same with the whitespace written on the wire byte for byte.
    let text = body.to_string();
    let head = raw_head(
        h.addr,
        &[("MCP-Protocol-Version", &format!(" \t{V}  ")), ("Mcp-Method", "\t tools/call\t"), ("Mcp-Name", "  echo \t")],
        text.len(),
    );
    let r = h.raw_http(&head, text.as_bytes()).await;
    assert_eq!(r.status, 200, "{} {}", r.head, r.body);
    assert_eq!(first_text(&r.body["result"]), "padded");
}

#[tokio::test]
async fn base64_sentinel_values() {
    let h = start(server()).await;
    let echo = call(5, "echo", json!({ "text": "b64" }));
    let with_name = |v: &'static [u8]| {
        move |hd: &mut HeaderMap| {
            hd.insert("mcp-name", HeaderValue::from_bytes(v).expect("header value"));
        }
    };

    // Valid: decoded before comparing.
    h.send_with(&echo, with_name(b"=?base64?ZWNobw==?=")).await.assert_ok(&json!(5));
    // Non-ASCII values travel encoded (std_headers encodes them) and match after decoding.
    let uri = "test://café/ünïcode";
    let read_body = req(6, "resources/read", json!({ "uri": uri }));
    let hd = std_headers(&read_body);
    assert!(hd["mcp-name"].to_str().unwrap().starts_with("=?base64?"));
    let result = h.send(&read_body).await.assert_ok(&json!(6));
    assert_eq!(result["contents"][0]["uri"], uri);
    // A valid sentinel of the wrong value is a mismatch.
    header_mismatch(&h.send_with(&echo, with_name(b"=?base64?ZWNobA==?=")).await, &json!(5));

    // Bad padding and bad characters fail decoding: -32020.
    header_mismatch(&h.send_with(&echo, with_name(b"=?base64?ZWNobw?=")).await, &json!(5));
    header_mismatch(&h.send_with(&echo, with_name(b"=?base64?ZW*ob#==?=")).await, &json!(5));
    header_mismatch(&h.send_with(&echo, with_name(b"=?base64?ZWNo bw==?=")).await, &json!(5));

    // An upper-case prefix is literal text, not an encoding.
    let upper = req(7, "prompts/get", json!({ "name": "=?BASE64?cA==?=" }));
    let result = h.send_with(&upper, with_name(b"=?BASE64?cA==?=")).await.assert_ok(&json!(7));
    assert_eq!(result["messages"][0]["content"]["text"], "prompt =?BASE64?cA==?=");
    let p = req(8, "prompts/get", json!({ "name": "p" }));
    h.send_with(&p, with_name(b"=?base64?cA==?=")).await.assert_ok(&json!(8));
    header_mismatch(&h.send_with(&p, with_name(b"=?BASE64?cA==?=")).await, &json!(8));

    // A missing suffix is literal text too.
    let no_suffix = req(9, "prompts/get", json!({ "name": "=?base64?cA==" }));
    h.send_with(&no_suffix, with_name(b"=?base64?cA==")).await.assert_ok(&json!(9));
    header_mismatch(&h.send_with(&p, with_name(b"=?base64?cA==")).await, &json!(8));
}

#[tokio::test]
async fn invalid_characters_in_a_header_value_are_rejected() {
    let h = start(server()).await;
    let echo = call(10, "echo", json!({ "text": "x" }));
    let r = h
        .send_with(&echo, |hd| {
            hd.insert("mcp-name", HeaderValue::from_bytes(b"ech\xffo").expect("obs-text is a legal header byte"));
        })
        .await;
    header_mismatch(&r, &json!(10));
    let route = call(11, "route", json!({ "region": "eu-west" }));
    let r = h
        .send_with(&route, |hd| {
            hd.insert("mcp-param-region", HeaderValue::from_bytes(b"eu-\xe9west").expect("obs-text"));
        })
        .await;
    header_mismatch(&r, &json!(11));
}

fn route_headers(pairs: &[(&str, &str)]) -> impl FnOnce(&mut HeaderMap) {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |hd: &mut HeaderMap| {
        for (k, v) in pairs {
            set(hd, &format!("mcp-param-{k}"), &v);
        }
    }
}

#[tokio::test]
async fn param_headers_mirror_annotated_arguments() {
    let h = start(server()).await;
    let full = call(12, "route", json!({ "region": "eu-west", "count": 42, "dry": true }));
    let ok = |r: Resp| {
        let result = r.assert_ok(&json!(12));
        assert!(result["isError"].is_null(), "{result}");
    };

    ok(h.send_with(&full, route_headers(&[("Region", "eu-west"), ("Count", "42"), ("Dry", "true")])).await);
    // Integers compare numerically.
    ok(h.send_with(&full, route_headers(&[("Region", "eu-west"), ("Count", "42.0"), ("Dry", "true")])).await);
    // Names compare case-insensitively; a sentinel value is decoded.
    ok(h.send_with(&full, route_headers(&[("REGION", &b64_sentinel("eu-west")), ("count", "42"), ("dRY", "true")]))
        .await);
    // Unknown Mcp-Param-* headers are ignored.
    ok(h.send_with(
        &full,
        route_headers(&[("Region", "eu-west"), ("Count", "42"), ("Dry", "true"), ("Colour", "blue")]),
    )
    .await);

    let mismatches: [&[(&str, &str)]; 7] = [
        &[("Region", "us-east"), ("Count", "42"), ("Dry", "true")],
        &[("Region", "EU-WEST"), ("Count", "42"), ("Dry", "true")],
        &[("Region", "eu-west"), ("Count", "43"), ("Dry", "true")],
        &[("Region", "eu-west"), ("Count", "forty-two"), ("Dry", "true")],
        &[("Region", "eu-west"), ("Count", "42"), ("Dry", "false")],
        &[("Region", "eu-west"), ("Count", "42"), ("Dry", "True")],
        &[("Region", "eu-west"), ("Count", "42"), ("Dry", "=?base64?dHJ1ZQ?=")],
    ];
    for pairs in mismatches {
        let r = h.send_with(&full, route_headers(pairs)).await;
        assert_eq!(r.code(), Some(-32020), "{pairs:?}: {}", r.text);
        header_mismatch(&r, &json!(12));
    }

    // Missing while the argument is present.
    for pairs in [
        &[("Count", "42"), ("Dry", "true")][..],
        &[("Region", "eu-west"), ("Dry", "true")],
        &[("Region", "eu-west"), ("Count", "42")],
    ] {
        let r = h.send_with(&full, route_headers(pairs)).await;
        assert_eq!(r.code(), Some(-32020), "{pairs:?}: {}", r.text);
        header_mismatch(&r, &json!(12));
    }

    // Absent arguments need no header.
    let partial = call(13, "route", json!({ "region": "eu-west" }));
    let result = h.send_with(&partial, route_headers(&[("Region", "eu-west")])).await.assert_ok(&json!(13));
    assert!(result["isError"].is_null(), "{result}");
    // A null argument needs no header either (the schema then rejects the value as a tool error, not -32020).
    let null = call(14, "route", json!({ "region": "eu-west", "count": null, "dry": null }));
    let r = h.send_with(&null, route_headers(&[("Region", "eu-west")])).await;
    let result = r.assert_ok(&json!(14));
    assert_eq!(result["isError"], true, "{result}");
}
