//! MRTR written once, served on a legacy session: when a handler answers
//! `input_required`, its embedded requests become real server→client requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) on the
//! request's stream, the client's answers are collected, and the handler runs
//! again with them — at most `max_input_rounds` times, each answer awaited at
//! most `input_round_timeout`.

use super::context::{Read, context};
use super::env::RequestEnv;
use crate::bounds::json_len;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::version::Era;
use crate::server::Server;
use crate::server::route::route;
use crate::session::{Asking, LegacySession};
use futures_util::future::try_join_all;
use serde_json::{Map, Value};
use std::sync::Arc;

pub(super) async fn legacy_rounds(
    server: &Server,
    session: &Arc<LegacySession>,
    id: RequestId,
    method: String,
    mut params: Map<String, Value>,
    meta: Map<String, Value>,
    env: RequestEnv,
) -> Result<Value, RpcError> {
    let max = server.inner.options.max_input_rounds;
    let timeout = server.inner.options.input_round_timeout;
    for round in 0..=max {
        // What this call keeps while it waits on the client: counted against the
        // session's and the client's byte budgets for waiting requests.
        let held_bytes = json_len(&params) + json_len(&meta);
        let asking = Asking { timeout, held_bytes };
        let Some(route) = route(server, Era::Legacy, &method, &params) else {
            return Err(RpcError::method_not_found(&method));
        };
        let read = Read {
            id: id.clone(),
            method: method.clone(),
            era: Era::Legacy,
            caps: session.client_capabilities(),
            log_level: session.log_level(),
            meta: meta.clone(),
            session: Some((session.clone(), asking)),
        };
        let parts = context(server, read, env.for_round());
        // The params are kept: a further round repeats them with the answers.
        let result = crate::server::handlers::handle(server, route, parts, params.clone()).await?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(result);
        }
        if round == max {
            return Err(RpcError::internal(format!("the handler asked for input more than {max} times")));
        }
        let Some(out) = env.out.as_ref() else {
            return Err(RpcError::internal("this transport cannot send requests to the client"));
        };
        let requests = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
        // The questions of one round share what the call keeps.
        let asking = Asking { timeout, held_bytes: held_bytes.div_ceil(requests.len().max(1)) };
        let cancel = &env.cancel;
        let asks = requests.into_iter().map(|(key, req)| async move {
            let m = req.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
            let p = req.get("params").cloned();
            let answer = tokio::select! {
                a = session.ask(out, &m, p, asking) => a?,
                _ = cancel.cancelled() => return Err(RpcError::internal("Request cancelled")),
            };
            Ok::<_, RpcError>((key, answer))
        });
        let answers: Map<String, Value> = try_join_all(asks).await?.into_iter().collect();
        params.insert("inputResponses".into(), Value::Object(answers));
        match result.get("requestState") {
            Some(s) => params.insert("requestState".into(), s.clone()),
            None => params.remove("requestState"),
        };
    }
    Err(RpcError::internal("input rounds exhausted"))
}
