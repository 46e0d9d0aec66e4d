//! One `subscriptions/listen` request: its filter, its registration in the
//! hub, the acknowledgment, and the stream until the client leaves or the
//! server shuts down.
//!
//! The server calls these steps in order and lets each extension that honours
//! a filter field add its part of the acknowledgment in between.

use super::{CoreFilter, Hub, Registration, Subscription, tagged};
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::meta::SUBSCRIPTION_ID_KEY;
use crate::protocol::methods::SUBSCRIPTIONS_ACKNOWLEDGED;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// Which core notifications the server can send at all.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offered {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

/// A parsed listen request.
pub(crate) struct Listen {
    core: CoreFilter,
    filter: Map<String, Value>,
    ack: Map<String, Value>,
}

fn flag(filter: &Map<String, Value>, k: &str) -> Result<bool, RpcError> {
    match filter.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(RpcError::invalid_params(format!("notifications.{k} must be a boolean"))),
    }
}

impl Listen {
    /// Reads `params.notifications`; core fields the server cannot honour are
    /// dropped (and left out of the acknowledgment), unknown fields ignored.
    pub(crate) fn parse(mut params: Map<String, Value>, offered: Offered) -> Result<Self, RpcError> {
        let filter = match params.remove("notifications") {
            Some(Value::Object(f)) => f,
            _ => {
                return Err(RpcError::invalid_params("subscriptions/listen requires a notifications object"));
            }
        };
        let mut core = CoreFilter {
            tools_list_changed: flag(&filter, "toolsListChanged")? && offered.tools,
            prompts_list_changed: flag(&filter, "promptsListChanged")? && offered.prompts,
            resources_list_changed: flag(&filter, "resourcesListChanged")? && offered.resources,
            ..CoreFilter::default()
        };
        match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
                if offered.resources {
                    core.resource_subscriptions = a.iter().filter_map(Value::as_str).map(String::from).collect();
                }
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "notifications.resourceSubscriptions must be an array of strings",
                ));
            }
        }
        let mut ack = Map::new();
        if core.tools_list_changed {
            ack.insert("toolsListChanged".into(), true.into());
        }
        if core.prompts_list_changed {
            ack.insert("promptsListChanged".into(), true.into());
        }
        if core.resources_list_changed {
            ack.insert("resourcesListChanged".into(), true.into());
        }
        if !core.resource_subscriptions.is_empty() {
            ack.insert("resourceSubscriptions".into(), json!(core.resource_subscriptions));
        }
        Ok(Self { core, filter, ack })
    }

    /// Registers the stream in the hub (it receives from now on).
    pub(crate) fn open(self, ctx: &Ctx, hub: &Arc<Hub>) -> Result<Open, RpcError> {
        if ctx.outlet().is_none() {
            return Err(RpcError::internal("this transport cannot carry a listen stream"));
        }
        let (tx, rx) = unbounded_channel();
        let (sub, registration) = hub.register(ctx.request_id().clone(), ctx.principal().cloned(), self.core, tx);
        Ok(Open { sub, _registration: registration, rx, ack: self.ack, filter: self.filter })
    }
}

/// A registered stream, not yet acknowledged.
pub(crate) struct Open {
    sub: Subscription,
    _registration: Registration,
    rx: UnboundedReceiver<crate::protocol::Message>,
    ack: Map<String, Value>,
    filter: Map<String, Value>,
}

impl Open {
    /// The stream, for extensions that register interest in it.
    pub(crate) fn subscription(&self) -> &Subscription {
        &self.sub
    }

    /// The raw filter, for the extensions' fields.
    pub(crate) fn filter(&self) -> &Map<String, Value> {
        &self.filter
    }

    /// Adds an extension's fields to the acknowledgment.
    pub(crate) fn acknowledge(&mut self, fields: Map<String, Value>) {
        self.ack.extend(fields);
    }

    /// Sends the acknowledgment, forwards notifications until the client
    /// cancels or the server shuts down, and returns the closing result.
    pub(crate) async fn run(mut self, ctx: &Ctx, shutdown: &CancellationToken) -> Result<Value, RpcError> {
        let Some(out) = ctx.outlet() else {
            return Err(RpcError::internal("this transport cannot carry a listen stream"));
        };
        let id = ctx.request_id().clone();
        let mut params = Map::new();
        params.insert("notifications".into(), Value::Object(std::mem::take(&mut self.ack)));
        if out.send(tagged(&id, SUBSCRIPTIONS_ACKNOWLEDGED, params)).is_err() {
            return Err(RpcError::internal("listen stream closed"));
        }
        let cancel = ctx.cancellation();
        loop {
            tokio::select! {
                // Cancellation first: nothing may be forwarded once the client cancelled.
                biased;
                _ = cancel.cancelled() => break,
                _ = shutdown.cancelled() => {
                    // What was already sent (a task interrupted by this very shutdown) goes out first.
                    while let Ok(m) = self.rx.try_recv() {
                        if out.send(m).is_err() {
                            break;
                        }
                    }
                    break;
                }
                msg = self.rx.recv() => match msg {
                    Some(m) => if out.send(m).is_err() { break },
                    None => break,
                },
            }
        }
        Ok(json!({ "_meta": { SUBSCRIPTION_ID_KEY: id.to_value() } }))
    }
}
