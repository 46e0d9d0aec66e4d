//! `completion/complete`.

use crate::ctx::{Ctx, CtxInner};
use crate::protocol::RpcError;
use crate::server::Server;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(super) async fn complete(
    server: &Server,
    parts: CtxInner,
    mut params: Map<String, Value>,
) -> Result<Value, RpcError> {
    let Some(f) = &server.inner.completion else {
        return Err(RpcError::method_not_found(&parts.method));
    };
    // The completion handler sees the whole params object, `_meta` included.
    params.insert("_meta".into(), Value::Object(parts.meta.clone()));
    let ctx = Ctx { inner: Arc::new(parts) };
    f(ctx, Value::Object(params)).await.map(|c| json!({ "completion": c }))
}
