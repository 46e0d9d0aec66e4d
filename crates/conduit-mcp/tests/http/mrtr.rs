//! MRTR over a real socket: `input_required` rounds, the sealed `requestState`
//! (tampering, principal, params, expiry by the injected clock).

use crate::common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use conduit_mcp::auth::BearerTokens;
use conduit_mcp::clock::ManualClock;
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;

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
