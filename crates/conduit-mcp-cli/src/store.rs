//! Opening the stores `--store` (or the TOML `ext_tasks.store`) names with
//! `conduit_mcp_sql::Stores`, as any server would; here only its refusals
//! are said in the flags' terms.

use conduit_mcp_sql::{Stores, StoresError, StoresOptions};

/// Opens `url`: `memory`, `sqlite:PATH` or `postgres:URL` (`postgresql:` too);
/// `source` names where it came from in messages (`--store`, `ext_tasks.store`).
pub(crate) async fn open(url: &str, source: &str, schema: Option<&str>) -> Result<Stores, String> {
    let mut options = StoresOptions::new(url);
    if let Some(s) = schema {
        options = options.schema(s);
    }
    // A PostgreSQL URL may hold a password: it is never repeated.
    let named = if url.starts_with("postgres") { format!("{source} postgres") } else { format!("{source} {url:?}") };
    let schema = schema.unwrap_or_default();
    options.open().await.map_err(|e| match e {
        StoresError::SchemaWithoutPostgres => {
            format!("--pg-schema {schema:?} applies to a postgres: store only, not {source} {url:?}")
        }
        StoresError::Schema(_) => {
            format!("--pg-schema {schema:?}: use letters, digits and underscores, at most 49 bytes")
        }
        e => format!("{named}: {e}"),
    })
}
