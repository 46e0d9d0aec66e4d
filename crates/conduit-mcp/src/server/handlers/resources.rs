//! `resources/list`, `resources/templates/list` and `resources/read`.

use super::pagination::add_cache;
use crate::ctx::{Ctx, CtxInner};
use crate::protocol::RpcError;
use crate::protocol::version::Era;
use crate::resource::ResourceOutput;
use crate::server::Server;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The error for a resource URI nobody serves (`-32602` with `data.uri`, SEP-2164;
/// `-32002` on 2025-11-25): [`RpcError::resource_not_found`].
pub fn resource_not_found(uri: &str) -> RpcError {
    RpcError::resource_not_found(uri)
}

pub(super) fn list_resources(server: &Server, era: Era, params: &Map<String, Value>) -> Result<Value, RpcError> {
    super::pagination::page(server, era, params, "resources", server.inner.resources.iter().map(|r| json!(r.info())))
}

pub(super) fn list_resource_templates(
    server: &Server,
    era: Era,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    super::pagination::page(
        server,
        era,
        params,
        "resourceTemplates",
        server.inner.templates.iter().map(|t| json!(t.info())),
    )
}

pub(super) async fn read_resource(
    server: &Server,
    mut parts: CtxInner,
    params: Map<String, Value>,
) -> Result<Value, RpcError> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("resources/read requires a string uri"));
    };
    super::rounds::open_round(server, &mut parts, &params)?;
    let ctx = Ctx { inner: Arc::new(parts) };
    let out = if let Some(&i) = server.inner.resource_index.get(uri) {
        server.inner.resources[i].read_now(ctx.clone(), uri.to_owned()).await?
    } else if let Some((t, vars)) = server.inner.templates.iter().find_map(|t| t.matches(uri).map(|v| (t, v))) {
        t.read_now(ctx.clone(), uri.to_owned(), vars).await?
    } else {
        return Err(resource_not_found(uri));
    };
    match out {
        ResourceOutput::Complete(contents) if contents.is_empty() => Err(resource_not_found(uri)),
        ResourceOutput::Complete(contents) => {
            let mut r = json!({ "contents": contents });
            add_cache(&mut r, server.inner.options.list_cache, ctx.era());
            Ok(r)
        }
        ResourceOutput::InputRequired(ir) => super::rounds::input_required(server, &ctx, &params, ir),
    }
}
