//! Ours: the conformance fixture's `greet` and `slow_compute` on conduit-mcp, the task
//! store chosen by `--store`, and the bench-only admin route W5 uses to complete tasks
//! through the worker API.

use axum::extract::State;
use axum::routing::post;
use axum::serve::ListenerExt;
use conduit_mcp::ServerBuilder;
use conduit_mcp::ext::tasks::{TaskSpecExt, TaskStore, Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest `slow_compute` run accepted, in seconds (as in the fixture).
const MAX_COMPUTE_SECONDS: f64 = 3_600.0;

/// How often pollers are told to come back (as in the fixture).
const POLL: Duration = Duration::from_millis(200);

/// Where the bench server keeps its tasks (`--store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The library's `MemoryStore` (the default).
    Memory,
    /// SQLite, from `conduit-mcp-sql`.
    Sqlite,
    /// PostgreSQL, from `conduit-mcp-sql`.
    Postgres,
}

impl StoreKind {
    /// Every kind, in the order the report lists them.
    pub const ALL: [StoreKind; 3] = [StoreKind::Memory, StoreKind::Sqlite, StoreKind::Postgres];

    /// The `--store` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown store {s:?} (expected memory, sqlite or postgres)"))
    }
}

/// Whether this build of the bench server can run `kind` (the harness asks before a pass starts).
pub fn store_available(kind: StoreKind) -> Result<(), String> {
    match kind {
        StoreKind::Memory => Ok(()),
        StoreKind::Sqlite | StoreKind::Postgres => Err(format!(
            "--store {kind}: the {kind} task store lives in conduit-mcp-sql, which the bench server is not built \
             with yet; only --store memory is available"
        )),
    }
}

/// Opens the task store for `kind`: `None` means the extension's default `MemoryStore`.
///
/// This and [`store_available`] are the one place a store backend is wired into the
/// benchmarks: `bench-server --store`, the harness's `--stores` list and the report
/// all go through them. SQLite and PostgreSQL come from `conduit-mcp-sql`, which
/// this crate does not depend on yet, so they are refused with a message that says
/// so. `database_url` is `--database-url` (the harness passes its own
/// `--database-url` through): a file path for SQLite, a connection URL for PostgreSQL.
pub async fn task_store(kind: StoreKind, database_url: Option<&str>) -> Result<Option<Arc<dyn TaskStore>>, String> {
    let _ = database_url;
    store_available(kind)?;
    Ok(None)
}

/// The Tasks handle the bench server runs on: the extension enabled, no row cap
/// (W4 and W7 hold 100 000 tasks), default janitor, notifier and TTL.
pub fn tasks(store: Option<Arc<dyn TaskStore>>) -> Result<Tasks, String> {
    let mut config = TasksConfig::enabled().max_rows(None);
    if let Some(store) = store {
        config = config.store(store);
    }
    Tasks::new(config).map_err(|e| e.to_string())
}

/// The bench server: `greet` and `slow_compute` exactly as in `conformance/src/tasks_tools.rs`.
pub fn server(tasks: &Tasks) -> Result<Server, String> {
    let b = Server::builder("conduit-mcp-bench", env!("CARGO_PKG_VERSION")).extension(tasks.extension());
    register(b).build().map_err(|e| e.to_string())
}

/// Registers the two fixture tools (a copy of the fixture's code, which is private to its binary).
fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        Tool::new("greet", "Greets someone (synchronous only)")
            .param("name", Param::string("Who to greet").required())
            .task_support(TaskSupport::Forbidden)
            .handle(|_ctx, args| async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("world");
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            }),
    )
    .tool(
        Tool::new("slow_compute", "Works for `seconds` seconds: a task when the request declares the extension")
            .param("seconds", Param::number("How long to work, in seconds").keyword("minimum", json!(0)))
            .param("label", Param::string("A label echoed in the result"))
            .handle(|ctx, args| async move {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                if !(0.0..=MAX_COMPUTE_SECONDS).contains(&seconds) {
                    return Ok(
                        CallToolResult::error(format!("seconds must be between 0 and {MAX_COMPUTE_SECONDS}")).into()
                    );
                }
                let label = args.get("label").and_then(Value::as_str).unwrap_or_default().to_owned();
                let text = format!("computed {label}").trim_end().to_owned();
                let work = Duration::from_secs_f64(seconds);
                if !ctx.tasks_declared() {
                    tokio::time::sleep(work).await;
                    return Ok(CallToolResult::text(text).into());
                }
                Ok(ToolOutput::Task(TaskSpec::new().poll_interval(POLL).status_message("Computing").spawn(
                    move |task| async move {
                        tokio::select! {
                            _ = tokio::time::sleep(work) => Ok(CallToolResult::text(text)),
                            _ = task.cancelled() => Err(RpcError::internal("cancelled")),
                        }
                    },
                )))
            }),
    )
}

/// Microseconds since the Unix epoch (comparable across processes on one machine).
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The text a W5 completion carries: `t0=<µs since the epoch>` taken just before `Tasks::complete`.
pub fn completion_text(t0_us: u64) -> String {
    format!("t0={t0_us}")
}

/// Reads the `t0=` stamp back out of a notification's text.
pub fn completion_stamp(text: &str) -> Option<u64> {
    let start = text.find("t0=")? + 3;
    let digits: String = text[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[derive(Debug, Deserialize)]
struct CompleteRequest {
    #[serde(rename = "taskIds")]
    task_ids: Vec<String>,
    #[serde(rename = "intervalUs", default)]
    interval_us: u64,
}

/// `POST /complete`: completes the named tasks one by one through [`Tasks::complete`],
/// `intervalUs` apart, each result stamped with [`completion_text`]. Answers at once.
async fn complete(State(tasks): State<Tasks>, axum::Json(req): axum::Json<CompleteRequest>) -> axum::Json<Value> {
    let accepted = req.task_ids.len();
    tokio::spawn(async move {
        for id in req.task_ids {
            let t0 = now_us();
            if let Err(e) = tasks.complete(&id, CallToolResult::text(completion_text(t0)), None).await {
                eprintln!("bench admin: cannot complete a task: {e}");
            }
            if req.interval_us > 0 {
                tokio::time::sleep(Duration::from_micros(req.interval_us)).await;
            }
        }
    });
    axum::Json(json!({ "accepted": accepted }))
}

/// The bench server's routes: MCP at `/mcp`, the admin route at `/bench/complete`.
pub fn app(server: Server, tasks: Tasks) -> axum::Router {
    let admin = axum::Router::new().route("/complete", post(complete)).with_state(tasks);
    axum::Router::new().nest("/mcp", http::router(server, HttpConfig::default())).nest("/bench", admin)
}

/// Serves `app` on `listener` with `TCP_NODELAY` on every accepted socket (as the peers do).
pub async fn serve(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_kinds() {
        for k in StoreKind::ALL {
            assert_eq!(k.as_str().parse::<StoreKind>(), Ok(k));
        }
        assert!("redis".parse::<StoreKind>().is_err());
        assert!(store_available(StoreKind::Memory).is_ok());
        let e = store_available(StoreKind::Sqlite).expect_err("not wired yet");
        assert!(e.contains("conduit-mcp-sql"), "{e}");
    }

    #[tokio::test]
    async fn memory_is_the_default_store() {
        assert!(task_store(StoreKind::Memory, None).await.expect("memory").is_none());
        assert!(task_store(StoreKind::Postgres, Some("postgres://x")).await.is_err());
    }

    #[test]
    fn stamps_round_trip() {
        assert_eq!(completion_stamp(&completion_text(1_234_567)), Some(1_234_567));
        assert_eq!(completion_stamp(r#"{"text":"t0=42"}"#), Some(42));
        assert_eq!(completion_stamp("nothing"), None);
    }

    #[tokio::test]
    async fn the_server_builds_with_both_tools() {
        let t = tasks(None).expect("tasks");
        let s = server(&t).expect("server");
        let _ = app(s, t);
    }
}
