//! The multi round-trip tools of the `input-required-result-*` scenarios (SEP-2322).
//!
//! A tool asks for input by returning an [`InputRequired`]; the client retries
//! the same `tools/call` with `inputResponses` (and the `requestState` the
//! server sent). The server seals the state and verifies it on the retry, so
//! a tool reads it back with [`Ctx::request_state`] and never sees a tampered
//! one (dispatch answers `-32602` before the tool runs).

use conduit_mcp::ServerBuilder;
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

/// Registers every MRTR tool.
pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        Tool::new("test_input_required_result_elicitation", "Asks for the user's name (stateless MRTR)")
            .handle(|ctx, _args| async move { elicitation(&ctx) }),
    )
    .tool(
        Tool::new("test_input_required_result_sampling", "Asks the client to sample an answer")
            .handle(|ctx, _args| async move { sampling(&ctx) }),
    )
    .tool(
        Tool::new("test_input_required_result_list_roots", "Asks the client for its roots")
            .handle(|ctx, _args| async move { list_roots(&ctx) }),
    )
    .tool(
        Tool::new("test_input_required_result_request_state", "Asks for a confirmation and carries requestState")
            .handle(|ctx, _args| async move { request_state(&ctx) }),
    )
    .tool(
        Tool::new(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a sampled greeting and roots at once",
        )
        .handle(|ctx, _args| async move { multiple_inputs(&ctx) }),
    )
    .tool(
        Tool::new("test_input_required_result_multi_round", "Asks for a name, then a colour, across two rounds")
            .handle(|ctx, _args| async move { multi_round(&ctx) }),
    )
    .tool(
        Tool::new(
            "test_input_required_result_tampered_state",
            "Carries signed requestState; a tampered one is refused",
        )
        .handle(|ctx, _args| async move { tampered_state(&ctx) }),
    )
    .tool(
        Tool::new("test_input_required_result_capabilities", "Asks only for what the request's capabilities allow")
            .handle(|ctx, _args| async move { capabilities(&ctx) }),
    )
}

/// How the client answered one elicitation.
#[derive(Debug, PartialEq)]
pub(crate) enum Elicited<'a> {
    /// No answer under that key.
    Missing,
    /// `action: "accept"` with this `content` object.
    Accepted(&'a serde_json::Map<String, Value>),
    /// `action: "decline"` or `"cancel"`.
    Refused(&'a str),
}

/// Reads the elicitation answer under `key`; `-32602` if it is not an elicitation result.
pub(crate) fn elicited<'a>(ctx: &'a Ctx, key: &str) -> Result<Elicited<'a>, RpcError> {
    let Some(answer) = ctx.input_response(key) else {
        return Ok(Elicited::Missing);
    };
    let invalid = || RpcError::invalid_params(format!("inputResponses.{key} is not a valid elicitation result"));
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => answer.get("content").and_then(Value::as_object).map(Elicited::Accepted).ok_or_else(invalid),
        Some(a @ ("decline" | "cancel")) => Ok(Elicited::Refused(a)),
        _ => Err(invalid()),
    }
}

/// The text of a sampling answer (`{role, content: {type: "text", text}}`) under `key`.
fn sampled_text<'a>(ctx: &'a Ctx, key: &str) -> Result<Option<&'a str>, RpcError> {
    let Some(answer) = ctx.input_response(key) else {
        return Ok(None);
    };
    answer
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .map(Some)
        .ok_or_else(|| RpcError::invalid_params(format!("inputResponses.{key} is not a valid sampling result")))
}

/// The root URIs of a `roots/list` answer under `key`.
fn root_uris(ctx: &Ctx, key: &str) -> Result<Option<Vec<String>>, RpcError> {
    let Some(answer) = ctx.input_response(key) else {
        return Ok(None);
    };
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| RpcError::invalid_params(format!("inputResponses.{key} is not a valid roots/list result")))?;
    Ok(Some(roots.iter().filter_map(|r| r.get("uri").and_then(Value::as_str)).map(String::from).collect()))
}

/// A string field of an accepted elicitation's content.
fn field<'a>(content: &'a serde_json::Map<String, Value>, name: &str) -> Result<&'a str, RpcError> {
    content
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("elicitation content needs a string {name:?}")))
}

/// A flat form schema with one required property of type `ty`.
fn one_field_schema(name: &str, ty: &str) -> Value {
    json!({ "type": "object", "properties": { name: { "type": ty } }, "required": [name] })
}

fn ask_name() -> conduit_mcp::mrtr::Request {
    mrtr::elicit("What is your name?", one_field_schema("name", "string"))
}

fn ask_confirm() -> conduit_mcp::mrtr::Request {
    mrtr::elicit("Please confirm", one_field_schema("ok", "boolean"))
}

/// Stateless: asks for `user_name` until a valid answer arrives; extra keys are ignored.
fn elicitation(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    Ok(match elicited(ctx, "user_name")? {
        Elicited::Missing => InputRequired::new().request("user_name", ask_name()).into(),
        Elicited::Accepted(content) => CallToolResult::text(format!("Hello, {}!", field(content, "name")?)).into(),
        Elicited::Refused(action) => CallToolResult::text(format!("The user chose to {action}.")).into(),
    })
}

fn sampling(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    Ok(match sampled_text(ctx, "capital_question")? {
        None => InputRequired::new()
            .request("capital_question", mrtr::sample_text("What is the capital of France?", 100))
            .into(),
        Some(text) => CallToolResult::text(format!("The model answered: {text}")).into(),
    })
}

fn list_roots(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    Ok(match root_uris(ctx, "client_roots")? {
        None => InputRequired::new().request("client_roots", mrtr::list_roots()).into(),
        Some(uris) => {
            CallToolResult::text(format!("The client has {} root(s): {}", uris.len(), uris.join(", "))).into()
        }
    })
}

/// Round 1 carries state; round 2 completes only with that state and a confirmation.
fn request_state(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    let state_ok = ctx.request_state().and_then(|s| s.get("awaiting")).and_then(Value::as_str) == Some("confirm");
    match (state_ok, elicited(ctx, "confirm")?) {
        (true, Elicited::Accepted(content)) => {
            let ok = content.get("ok").and_then(Value::as_bool).unwrap_or(false);
            Ok(CallToolResult::text(format!("state-ok: confirmed={ok}")).into())
        }
        (true, Elicited::Refused(action)) => {
            Ok(CallToolResult::text(format!("state-ok: the user chose to {action}")).into())
        }
        _ => Ok(InputRequired::new().request("confirm", ask_confirm()).state(json!({ "awaiting": "confirm" })).into()),
    }
}

/// Three requests of three kinds in one round; completes when all are answered.
fn multiple_inputs(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    let name = match elicited(ctx, "user_name")? {
        Elicited::Accepted(content) => Some(field(content, "name")?.to_owned()),
        Elicited::Refused(_) => Some("anonymous".to_owned()),
        Elicited::Missing => None,
    };
    let greeting = sampled_text(ctx, "greeting")?;
    let roots = root_uris(ctx, "client_roots")?;
    let round_one = ctx.request_state().is_some();
    match (name, greeting, roots) {
        (Some(name), Some(greeting), Some(roots)) if round_one => {
            Ok(CallToolResult::text(format!("{greeting} {name}; roots: {}", roots.join(", "))).into())
        }
        _ => Ok(InputRequired::new()
            .request("user_name", ask_name())
            .request("greeting", mrtr::sample_text("Generate a greeting", 50))
            .request("client_roots", mrtr::list_roots())
            .state(json!({ "round": 1 }))
            .into()),
    }
}

/// Round 1 asks for a name, round 2 for a colour (the name travels in the
/// state), round 3 completes from the state and the colour.
fn multi_round(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    let state = ctx.request_state();
    let round = state.and_then(|s| s.get("round")).and_then(Value::as_u64).unwrap_or(0);
    let ask_step1 = || {
        InputRequired::new()
            .request("step1", mrtr::elicit("Step 1: What is your name?", one_field_schema("name", "string")))
            .state(json!({ "round": 1 }))
    };
    let ask_step2 = |name: &str| {
        InputRequired::new()
            .request("step2", mrtr::elicit("Step 2: What is your favorite color?", one_field_schema("color", "string")))
            .state(json!({ "round": 2, "name": name }))
    };
    match round {
        1 => match elicited(ctx, "step1")? {
            Elicited::Accepted(content) => Ok(ask_step2(field(content, "name")?).into()),
            Elicited::Refused(action) => Ok(CallToolResult::text(format!("The user chose to {action}.")).into()),
            Elicited::Missing => Ok(ask_step1().into()),
        },
        2 => {
            let name = state.and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or("someone").to_owned();
            match elicited(ctx, "step2")? {
                Elicited::Accepted(content) => {
                    Ok(CallToolResult::text(format!("{name}'s favorite color is {}.", field(content, "color")?)).into())
                }
                Elicited::Refused(action) => Ok(CallToolResult::text(format!("The user chose to {action}.")).into()),
                Elicited::Missing => Ok(ask_step2(&name).into()),
            }
        }
        _ => Ok(ask_step1().into()),
    }
}

/// Like `request_state`; the server refuses a tampered state before this runs.
fn tampered_state(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    let state_ok = ctx.request_state().and_then(|s| s.get("issued")).and_then(Value::as_bool) == Some(true);
    match (state_ok, elicited(ctx, "confirm")?) {
        (true, Elicited::Accepted(_)) => Ok(CallToolResult::text("state verified").into()),
        (true, Elicited::Refused(action)) => Ok(CallToolResult::text(format!("The user chose to {action}.")).into()),
        _ => Ok(InputRequired::new().request("confirm", ask_confirm()).state(json!({ "issued": true })).into()),
    }
}

/// Builds its requests from the capabilities declared on this request only.
fn capabilities(ctx: &Ctx) -> Result<ToolOutput, RpcError> {
    if ctx.input_responses().is_some_and(|r| !r.is_empty()) {
        let keys: Vec<&str> = ctx.input_responses().into_iter().flat_map(|r| r.keys()).map(String::as_str).collect();
        return Ok(CallToolResult::text(format!("Received answers for: {}", keys.join(", "))).into());
    }
    let caps = ctx.client_capabilities();
    let mut ask = InputRequired::new();
    if caps.sampling() {
        ask = ask.request("summary", mrtr::sample_text("Summarize the capabilities you declared.", 50));
    }
    if caps.elicitation_form() {
        ask = ask.request("user_name", ask_name());
    }
    if caps.roots() {
        ask = ask.request("client_roots", mrtr::list_roots());
    }
    if ask.requests().is_empty() {
        return Ok(CallToolResult::text("The request declared no capability this tool could use.").into());
    }
    Ok(ask.into())
}
