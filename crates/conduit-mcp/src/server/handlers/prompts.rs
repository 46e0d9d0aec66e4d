//! `prompts/list` and `prompts/get`.

use crate::Ctx;
use crate::ctx::CtxInner;
use crate::prompt::{PromptArgs, PromptOutput};
use crate::protocol::RpcError;
use crate::protocol::version::Era;
use crate::server::Server;
use serde_json::{Map, Value, json};
use std::sync::Arc;

impl Server {
    pub(super) fn list_prompts(&self, era: Era, params: &Map<String, Value>) -> Result<Value, RpcError> {
        self.page(era, params, "prompts", self.inner.prompts.iter().map(|p| json!(p.info())))
    }

    pub(super) async fn get_prompt(&self, mut parts: CtxInner, params: Map<String, Value>) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params("prompts/get requires a string name"));
        };
        let Some(&idx) = self.inner.prompt_index.get(name) else {
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
        self.open_round(&mut parts, &params)?;
        let ctx = Ctx { inner: Arc::new(parts) };
        match self.inner.prompts[idx].get(ctx.clone(), args).await? {
            PromptOutput::Complete(r) => Ok(json!(r)),
            PromptOutput::InputRequired(ir) => self.input_required(&ctx, &params, ir),
        }
    }
}
