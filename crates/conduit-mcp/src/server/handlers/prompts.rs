//! `prompts/list` and `prompts/get`.

use crate::ctx::{Ctx, CtxInner};
use crate::prompt::{PromptArgs, PromptOutput};
use crate::protocol::RpcError;
use crate::protocol::version::Era;
use crate::server::Server;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(super) fn list_prompts(server: &Server, era: Era, params: &Map<String, Value>) -> Result<Value, RpcError> {
    super::pagination::page(server, era, params, "prompts", server.inner.prompts.iter().map(|p| json!(p.info())))
}

pub(super) async fn get_prompt(
    server: &Server,
    mut parts: CtxInner,
    params: Map<String, Value>,
) -> Result<Value, RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("prompts/get requires a string name"));
    };
    let Some(&idx) = server.inner.prompt_index.get(name) else {
        return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")));
    };
    let mut args = PromptArgs::new();
    match params.get("arguments") {
        None | Some(Value::Null) => {}
        Some(Value::Object(a)) => {
            for (k, v) in a {
                let Value::String(s) = v else {
                    return Err(RpcError::invalid_params(format!("Prompt argument {k:?} must be a string")));
                };
                args.insert(k.clone(), s.clone());
            }
        }
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    }
    super::rounds::open_round(server, &mut parts, &params)?;
    let ctx = Ctx { inner: Arc::new(parts) };
    match server.inner.prompts[idx].get(ctx.clone(), args).await? {
        PromptOutput::Complete(r) => Ok(json!(r)),
        PromptOutput::InputRequired(ir) => super::rounds::input_required(server, &ctx, &params, ir),
    }
}
