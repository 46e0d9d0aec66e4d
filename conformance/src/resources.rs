//! The fixture's resources and its URI template.
//!
//! `test://static-text` is listed first: the `caching` scenario reads
//! `resources[0].uri`. Unknown URIs get the library's `-32602` with `data.uri`.

use crate::assets::PNG_BASE64;
use conduit_mcp::ServerBuilder;
use conduit_mcp::prelude::*;
use conduit_mcp::server::resource_not_found;
use serde_json::json;

/// Registers the resources and the template.
pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.resource(
        Resource::new("test://static-text", "Static text resource")
            .description("A fixed text resource")
            .mime_type("text/plain")
            .read(|_ctx, uri| async move {
                Ok(ResourceContents::text(uri, "text/plain", "This is the content of the static text resource."))
            }),
    )
    .resource(
        Resource::new("test://static-binary", "Static binary resource")
            .description("A fixed PNG image")
            .mime_type("image/png")
            .read(|_ctx, uri| async move { Ok(ResourceContents::blob(uri, "image/png", PNG_BASE64)) }),
    )
    .resource_template(
        ResourceTemplate::new("test://template/{id}/data", "Template data")
            .description("JSON data for any id")
            .mime_type("application/json")
            .read(|_ctx, uri, vars| async move {
                let Some(id) = vars.get("id") else {
                    return Err(resource_not_found(&uri));
                };
                let text = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string();
                Ok(ResourceContents::text(uri, "application/json", text))
            }),
    )
}
