//! `input_required` on the legacy wire: while a client waits in `tasks/result`,
//! the questions a worker asked (`TaskContext::input`) go to the client as real
//! server→client requests tagged with the related-task `_meta`, and each answer
//! reaches the worker exactly as a modern `tasks/update` would deliver it.

use super::{LegacyTasksExtension, store_error};
use crate::Ctx;
use crate::ext::tasks::{Owner, StoreError, TaskRecord};
use crate::protocol::RpcError;
use crate::protocol::legacy::RELATED_TASK_KEY;
use crate::protocol::tasks::TaskStatus;
use serde_json::{Value, json};
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
                meta[RELATED_TASK_KEY] = json!({ "taskId": rec.task_id });
            }
            let Some(answer) = ctx.ask_client(request.method(), Some(params)).await else {
                return Err(RpcError::internal("this request cannot carry questions to the client"));
            };
            self.deliver(ctx, &rec.task_id, &key, answer?).await?;
        }
        Ok(())
    }

    /// The worker's answer under `key`, applied as the modern `tasks/update` applies it.
    async fn deliver(&self, ctx: &Ctx, id: &str, key: &str, answer: Value) -> Result<(), RpcError> {
        let now = self.tasks.now();
        let apply = |r: &TaskRecord| {
            if r.status != TaskStatus::InputRequired || !r.input_requests.contains_key(key) {
                return Err(StoreError::Refused("nothing outstanding under this key".into()));
            }
            let mut n = r.clone();
            n.input_requests.remove(key);
            n.pending_responses.insert(key.to_owned(), answer.clone());
            if n.input_requests.is_empty() {
                let answers = std::mem::take(&mut n.pending_responses);
                n.input_responses.extend(answers);
                n.transition(TaskStatus::Working, now);
            } else {
                n.touch(now);
            }
            Ok(n)
        };
        let result = self.tasks.store_answer(id, Owner::Is(ctx.owner()), &apply).await;
        match result {
            Ok(rec) => {
                self.tasks.after_write(&rec);
                Ok(())
            }
            Err(StoreError::Refused(_)) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }
}
