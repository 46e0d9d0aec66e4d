//! `input_required` on the legacy wire: while a client waits in `tasks/result`,
//! the questions a worker asked (`TaskContext::input`) go to the client as real
//! server→client requests tagged with the related-task `_meta`, and each answer
//! reaches the worker exactly as a modern `tasks/update` would deliver it.

use super::LegacyTasksExtension;
use super::owner::owner;
use crate::ctx::Ctx;
use crate::ext::tasks::store::{Owner, TaskRecord, limits};
use crate::ext::tasks::wire::{self, Answered};
use crate::protocol::RpcError;
use crate::protocol::legacy_tasks::{RELATED_TASK_KEY, related_task};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

impl LegacyTasksExtension {
    /// Asks the client every outstanding question of `rec` not asked yet (recorded in `asked`)
    /// and hands each answer to the worker.
    pub(super) async fn relay_inputs(
        &self,
        ctx: &Ctx,
        rec: &TaskRecord,
        asked: &mut BTreeSet<String>,
    ) -> Result<(), RpcError> {
        let pending: Vec<_> = rec
            .input_requests
            .iter()
            .filter(|(k, _)| !asked.contains(*k))
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect();
        for (key, request) in pending {
            asked.insert(key.clone());
            let declared = request.kind().is_some_and(|k| ctx.client_capabilities().declares_input(k));
            if !declared {
                return Err(RpcError::internal(format!(
                    "the task needs {} from the client, which this session did not declare",
                    request.method()
                )));
            }
            let mut params = request.params().cloned().unwrap_or_else(|| json!({}));
            if let Value::Object(p) = &mut params {
                let meta = p.entry("_meta").or_insert_with(|| json!({}));
                meta[RELATED_TASK_KEY] = related_task(&rec.task_id);
            }
            let Some(answer) = ctx.ask_client(request.method(), Some(params)).await else {
                return Err(RpcError::internal("this request cannot carry questions to the client"));
            };
            self.deliver(ctx, &rec.task_id, &key, answer?).await?;
        }
        Ok(())
    }

    /// The client's answer under `key`, applied as a modern `tasks/update` applies it.
    /// An answer the task does not accept (malformed, or past the byte bounds) is `-32602`,
    /// so the client can call `tasks/result` again and be asked again.
    async fn deliver(&self, ctx: &Ctx, id: &str, key: &str, answer: Value) -> Result<(), RpcError> {
        let mut responses = Map::new();
        responses.insert(key.to_owned(), answer);
        match wire::answer(&self.tasks, id, Owner::Is(owner(ctx).as_deref()), &responses).await? {
            Answered::Applied | Answered::NotWaiting => Ok(()),
            Answered::NoneAccepted => Err(RpcError::invalid_params(format!(
                "the answer to input request {key:?} was not accepted: malformed for its request, \
                 or over {} bytes ({} in all per task)",
                limits::MAX_ANSWER_BYTES,
                limits::MAX_ANSWERS_BYTES
            ))),
        }
    }
}
