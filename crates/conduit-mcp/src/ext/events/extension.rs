//! The extension itself: what it declares on `2026-07-28` (nothing on
//! `2025-11-25`, where `events/*` is then `-32601`), its methods, and the
//! `eventsListChanged` listen filter field.

use super::Events;
use super::methods::params;
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::events::{
    EVENTS_CAPABILITY, EVENTS_EXTENSION_ID, EVENTS_LIST, EVENTS_LIST_CHANGED_FILTER, EVENTS_POLL, EVENTS_STREAM,
    EVENTS_SUBSCRIBE, EVENTS_UNSUBSCRIBE,
};
use crate::protocol::version::Era;
use crate::server::{Declaration, Extension, IntoExtension};
use crate::subscriptions::Subscription;
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const METHODS: &[&str] = &[EVENTS_LIST, EVENTS_POLL, EVENTS_STREAM, EVENTS_SUBSCRIBE, EVENTS_UNSUBSCRIBE];

/// The extension over an [`Events`] handle.
struct EventsExtension {
    events: Events,
}

/// Installs the Events extension over this handle.
impl IntoExtension for Events {
    fn into_extensions(self) -> Vec<Arc<dyn Extension>> {
        vec![Arc::new(EventsExtension { events: self })]
    }
}

#[async_trait]
impl Extension for EventsExtension {
    fn id(&self) -> &'static str {
        EVENTS_EXTENSION_ID
    }

    fn declare(&self, era: Era) -> Option<Declaration> {
        match era {
            // In the extensions map (SEP-3415, the draft suite) and top-level (clients in the field).
            Era::Modern => Some(
                Declaration::new()
                    .extension(EVENTS_EXTENSION_ID, json!({ "listChanged": true }))
                    .capability(EVENTS_CAPABILITY, json!({ "listChanged": true }))
                    .methods(METHODS)
                    .listen_fields(&[EVENTS_LIST_CHANGED_FILTER]),
            ),
            // Defined for 2026-07-28 and later only.
            _ => None,
        }
    }

    fn start(&self) {
        #[cfg(feature = "webhooks")]
        self.events.start_webhooks();
    }

    async fn handle(&self, ctx: Ctx, method: &str, p: Map<String, Value>) -> Result<Value, RpcError> {
        let events = &self.events;
        match method {
            EVENTS_LIST => events.list(params(method, p)?),
            EVENTS_POLL => events.poll(&ctx, params(method, p)?).await,
            EVENTS_STREAM => events.stream(&ctx, params(method, p)?).await,
            EVENTS_SUBSCRIBE => events.subscribe(&ctx, params(method, p)?).await,
            EVENTS_UNSUBSCRIBE => events.unsubscribe(&ctx, params(method, p)?).await,
            m => Err(RpcError::method_not_found(m)),
        }
    }

    async fn listen(
        &self,
        _ctx: &Ctx,
        filter: &Map<String, Value>,
        sub: &Subscription,
    ) -> Result<Map<String, Value>, RpcError> {
        let mut ack = Map::new();
        match filter.get(EVENTS_LIST_CHANGED_FILTER) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                self.events.listen_list_changed(sub);
                ack.insert(EVENTS_LIST_CHANGED_FILTER.into(), true.into());
            }
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "notifications.{EVENTS_LIST_CHANGED_FILTER} must be a boolean"
                )));
            }
        }
        Ok(ack)
    }

    async fn shutdown(&self) {
        self.events.inner.shutdown.cancel();
    }
}
