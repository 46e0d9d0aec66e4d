//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The PostgreSQL URL from `DATABASE_URL`, or `None` (after saying why the
/// test is skipped). With `CONDUIT_REQUIRE_POSTGRES=1` a missing URL fails
/// the test instead.
pub fn pg_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CONDUIT_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "{test}: CONDUIT_REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
            );
            eprintln!(
                "skipping {test}: DATABASE_URL is not set \
                 (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run the PostgreSQL tests)"
            );
            None
        }
    }
}

/// Fresh, randomly named schemas for one test, dropped (with everything in
/// them) when this value goes away — also when the test panics.
pub struct Schemas {
    url: String,
    names: Mutex<Vec<String>>,
}

impl Schemas {
    pub fn new(url: &str) -> Self {
        Self { url: url.to_owned(), names: Mutex::new(Vec::new()) }
    }

    /// A new schema name (the store creates the schema).
    pub fn fresh(&self) -> String {
        let name = format!("conduit_test_{:016x}", rand::random::<u64>());
        self.names.lock().unwrap().push(name.clone());
        name
    }
}

impl Drop for Schemas {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.names.lock().unwrap());
        if names.is_empty() {
            return;
        }
        let url = self.url.clone();
        // Drop runs outside any async context we could borrow: use a runtime of our own.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&url).await?;
                for n in names {
                    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS \"{n}\" CASCADE")))
                        .execute(&mut conn)
                        .await?;
                }
                conn.close().await
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop the test schemas: {e}");
        }
    }
}

/// A fresh SQLite path under the temp directory; the file and its WAL files
/// are removed when this value goes away.
pub struct TempDb(pub PathBuf);

impl TempDb {
    pub fn new(tag: &str) -> Self {
        Self(std::env::temp_dir().join(format!(
            "conduit-sql-{tag}-{}-{:016x}.db",
            std::process::id(),
            rand::random::<u64>()
        )))
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }

    pub fn as_path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Tasks in the contract suite's race: `CONDUIT_RACE_TASKS` if set, else `default`.
pub fn race_tasks(default: usize) -> usize {
    std::env::var("CONDUIT_RACE_TASKS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// Asserts `value` is a valid `def` of the 2025-11-25 schema (the copy the library's tests use).
#[track_caller]
pub fn assert_legacy_schema(def: &str, value: &serde_json::Value) {
    let mut root: serde_json::Value =
        serde_json::from_str(include_str!("../../../../conduit-mcp/tests/schema/mcp-2025-11-25.schema.json"))
            .expect("JSON");
    root["$ref"] = serde_json::json!(format!("#/$defs/{def}"));
    let v = jsonschema::validator_for(&root).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not a valid {def}: {errors:?}\n{value}");
}
pub mod in_use;
pub mod legacy_session;
pub mod migrated_log;
pub mod numbered;
pub mod served;
pub mod stall;
