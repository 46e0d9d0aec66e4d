//! `subscriptions/listen`: the core steps live beside the hub
//! (`subscriptions::listen`); here each extension that honours a filter field
//! adds its part of the acknowledgment.

use crate::ctx::{Ctx, CtxInner};
use crate::protocol::RpcError;
use crate::server::Server;
use crate::subscriptions::listen::{Listen, Offered};
use serde_json::{Map, Value};
use std::sync::Arc;

pub(super) async fn listen(server: &Server, parts: CtxInner, params: Map<String, Value>) -> Result<Value, RpcError> {
    let i = &server.inner;
    let offered = Offered {
        tools: !i.tools.is_empty(),
        prompts: !i.prompts.is_empty(),
        resources: !i.resources.is_empty() || !i.templates.is_empty(),
    };
    let era = parts.era;
    let listen = Listen::parse(params, offered)?;
    let ctx = Ctx { inner: Arc::new(parts) };
    let mut open = listen.open(&ctx, i.changes.hub())?;
    for (n, fields) in &server.era_table(era).listen {
        if fields.iter().any(|f| open.filter().contains_key(*f)) {
            let ack = i.extensions[*n].listen(&ctx, open.filter(), open.subscription()).await?;
            open.acknowledge(ack);
        }
    }
    open.run(&ctx, &i.shutdown).await
}
