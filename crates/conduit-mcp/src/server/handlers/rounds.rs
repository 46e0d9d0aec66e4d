//! Multi round-trip requests: reading a retry's `inputResponses` and sealed
//! `requestState`, and answering `input_required`.
//!
//! A sealed state is bound to the principal, the method and a digest of the
//! request's params (without the round fields), so it cannot be replayed on
//! another request.

use crate::ctx::{Ctx, CtxInner};
use crate::mrtr::{InputRequired, required_capability};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::ErrorCode;
use crate::protocol::jsonrpc::URL_ELICITATION_REQUIRED;
use crate::protocol::mrtr::InputKind;
use crate::protocol::version::Era;
use crate::server::Server;
use crate::server::seal::{OpenError, params_digest};
use serde_json::{Map, Value, json};

/// Reads `inputResponses` and `requestState` into the context; `-32602` on bad ones.
/// (The params digest is computed only when there is a state to verify.)
pub(super) fn open_round(server: &Server, parts: &mut CtxInner, params: &Map<String, Value>) -> Result<(), RpcError> {
    parts.input_responses = match params.get("inputResponses") {
        None => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return Err(RpcError::invalid_params("inputResponses must be an object")),
    };
    parts.request_state = match params.get("requestState") {
        None => None,
        Some(Value::String(s)) => {
            let owner = parts.principal.as_ref().map(|p| p.id());
            let now = server.inner.clock.now_ms();
            match server.inner.sealer.open(s, owner, &parts.method, &params_digest(params), now) {
                Ok(v) => Some(v),
                Err(OpenError::Expired) => return Err(RpcError::invalid_params("requestState has expired")),
                Err(_) => return Err(RpcError::invalid_params("Invalid requestState")),
            }
        }
        Some(_) => return Err(RpcError::invalid_params("requestState must be a string")),
    };
    Ok(())
}

/// Turns an `InputRequired` into the wire result, refusing kinds the request did not declare;
/// its state is sealed to `params` (the request's, as the retry will repeat them).
pub(super) fn input_required(
    server: &Server,
    ctx: &Ctx,
    params: &Map<String, Value>,
    ir: InputRequired,
) -> Result<Value, RpcError> {
    let (requests, state) = ir.into_parts();
    if requests.is_empty() && state.is_none() {
        return Err(RpcError::internal("input_required result has neither inputRequests nor requestState"));
    }
    for r in requests.values() {
        let kind = r.kind().ok_or_else(|| RpcError::internal("invalid input request"))?;
        if !ctx.client_capabilities().declares_input(kind) {
            if kind == InputKind::ElicitUrl && ctx.era() == Era::Legacy {
                // 2025-11-25: the client must complete the URL elicitation out of band first.
                let elicitations: Vec<Value> = requests
                    .values()
                    .filter(|r| r.kind() == Some(InputKind::ElicitUrl))
                    .filter_map(|r| r.params().cloned())
                    .collect();
                return Err(RpcError::new(
                    ErrorCode::Other(URL_ELICITATION_REQUIRED),
                    "This request requires the user to complete a URL elicitation",
                )
                .data(json!({ "elicitations": elicitations })));
            }
            return Err(RpcError::missing_capability(required_capability(kind)));
        }
    }
    let mut r = json!({ "resultType": "input_required" });
    if !requests.is_empty() {
        r["inputRequests"] = json!(requests);
    }
    if let Some(state) = state {
        let exp = server.inner.clock.now_ms() + server.inner.options.request_state_ttl.as_millis() as u64;
        let digest = params_digest(params);
        r["requestState"] = json!(server.inner.sealer.seal(&state, ctx.owner(), ctx.method(), &digest, exp));
    }
    Ok(r)
}
