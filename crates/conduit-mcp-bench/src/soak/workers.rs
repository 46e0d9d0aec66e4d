//! The mixed soak's load: creators past the cap, pollers, an ender (cancels,
//! answers, completes), listen streams opened and dropped, idle sockets, and on
//! PostgreSQL a killer of the server's database connections. Each worker runs
//! until `stop` is set.

use super::ledger::{Counters, Entry, Kind, Ledger};
use super::rpc::{self, Client, Reply};
use crate::wire::Call;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What every worker shares.
#[derive(Clone)]
pub struct Shared {
    /// The server.
    pub addr: SocketAddr,
    /// The soak's state.
    pub ledger: Arc<Ledger>,
    /// Set when the load phase ends.
    pub stop: Arc<AtomicBool>,
    /// The row cap configured.
    pub cap: u64,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Sends `call`, counting it; a transport failure is an unexpected error.
async fn send(c: &mut Client, l: &Ledger, call: &Call, what: &str) -> Option<Reply> {
    Counters::bump(&l.n.requests);
    match c.send(call).await {
        Ok(r) => Some(r),
        Err(e) => {
            l.error(false, format!("{what}: {e}"));
            None
        }
    }
}

/// Sends `call` until it succeeds: a `-32603` inside a kill window is expected
/// and retried (up to 20 times, 250 ms apart); any other error is unexpected.
pub async fn call_ok(c: &mut Client, l: &Ledger, call: &Call, what: &str) -> Option<Value> {
    for _ in 0..20 {
        let r = send(c, l, call, what).await?;
        if let Some(v) = r.result() {
            return Some(v.clone());
        }
        if r.code() == Some(-32603) && l.in_kill_window() {
            l.error(true, format!("{what}: {} (database connection killed; retried)", r.describe()));
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        l.error(false, format!("{what}: {}", r.describe()));
        return None;
    }
    None
}

fn create_args(kind: Kind, n: u64) -> (&'static str, Value) {
    match kind {
        Kind::Build => ("build", json!({ "ref": format!("soak-{n}"), "steps": 1 + n % 3 })),
        Kind::Sleep => ("sleep", json!({ "seconds": 3600 })),
        Kind::Deploy => ("deploy", json!({ "environment": format!("soak-{n}") })),
        Kind::Job => ("job", json!({ "name": format!("soak job {n}") })),
    }
}

/// Creates tasks of every kind every 20 ms, past the cap.
pub async fn creator(s: Shared, counter: Arc<AtomicU64>) {
    let l = &s.ledger;
    let mut c = Client::new(s.addr);
    while !s.stopped() {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let kind = Kind::nth(n);
        let (tool, args) = create_args(kind, n);
        let id = c.id();
        l.inflight_creates.fetch_add(1, Ordering::SeqCst);
        let reply = send(&mut c, l, &rpc::tool(id, tool, args), "create").await;
        let others = l.inflight_creates.fetch_sub(1, Ordering::SeqCst) - 1;
        if let Some(r) = reply {
            match (r.result(), r.code()) {
                (Some(v), _) if v["taskId"].is_string() => {
                    l.add(v["taskId"].as_str().unwrap_or_default().to_owned(), kind, v["ttlMs"].as_u64());
                }
                (_, Some(-32603)) if r.message().contains("Task limit reached") => {
                    // Expected only when the table may really be full.
                    let held = l.len() as u64 + others + l.orphan_allowance.load(Ordering::SeqCst);
                    if held >= s.cap {
                        Counters::bump(&l.n.refused);
                        l.error(true, format!("create: {} (cap {})", r.describe(), s.cap));
                    } else {
                        l.error(false, format!("create refused at {held} of {} rows: {}", s.cap, r.describe()));
                    }
                }
                (_, Some(-32603)) if l.in_kill_window() => {
                    l.orphan_allowance.fetch_add(1, Ordering::SeqCst);
                    l.error(true, format!("create: {} (database connection killed)", r.describe()));
                }
                _ => l.error(false, format!("create {tool}: {}", r.describe())),
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `tasks/get` on tasks (mostly live ones), 5 ms apart.
pub async fn poller(s: Shared) {
    let mut c = Client::new(s.addr);
    while !s.stopped() {
        let pick = rand::random::<u64>();
        if let Some(e) = s.ledger.pick(pick, !pick.is_multiple_of(5)) {
            let id = c.id();
            if let Some(v) = call_ok(&mut c, &s.ledger, &rpc::on_task(id, "tasks/get", &e.id), "tasks/get").await {
                s.ledger.saw(&e.id, v["status"].as_str().unwrap_or_default());
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Ends `e` the way its kind ends: cancel a `sleep`, answer a `deploy` that asks,
/// complete a `job`. `false` when it cannot be ended yet (a `deploy` not asking
/// yet, a `build`) or the call failed.
pub async fn end_task(c: &mut Client, l: &Ledger, e: &Entry) -> bool {
    let id = c.id();
    let ok = match e.kind {
        Kind::Build => return false,
        Kind::Sleep => call_ok(c, l, &rpc::on_task(id, "tasks/cancel", &e.id), "tasks/cancel").await.is_some(),
        Kind::Job => {
            let args = json!({ "taskId": e.id, "text": "soaked" });
            match call_ok(c, l, &rpc::tool(id, "complete_job", args), "complete_job").await {
                Some(v) if v["isError"] == true => {
                    l.error(false, format!("complete_job: {}", v["content"][0]["text"]));
                    false
                }
                Some(_) => true,
                None => false,
            }
        }
        Kind::Deploy => {
            let Some(got) = call_ok(c, l, &rpc::on_task(id, "tasks/get", &e.id), "tasks/get").await else {
                return false;
            };
            if got["status"] != "input_required" || !got["inputRequests"]["confirm"].is_object() {
                l.saw(&e.id, got["status"].as_str().unwrap_or_default());
                return false;
            }
            let id = c.id();
            let answer = json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
            let call = rpc::call(id, "tasks/update", Some(&e.id), json!({ "taskId": e.id, "inputResponses": answer }));
            call_ok(c, l, &call, "tasks/update").await.is_some()
        }
    };
    if ok {
        l.mark_ended(&e.id);
        Counters::bump(&l.n.ended);
    }
    ok
}

/// Ends a task every `every`, so about half the table is ended during the load.
pub async fn ender(s: Shared, every: Duration) {
    let mut c = Client::new(s.addr);
    while !s.stopped() {
        if let Some(e) = s.ledger.pick_to_end(rand::random()) {
            end_task(&mut c, &s.ledger, &e).await;
        }
        tokio::time::sleep(every).await;
    }
}

/// Opens listen streams naming up to three live tasks, reads for up to 500 ms, drops them.
pub async fn listener(s: Shared) {
    let l = &s.ledger;
    let mut c = Client::new(s.addr);
    while !s.stopped() {
        let pick = rand::random::<u64>();
        let ids: Vec<String> = (0..1 + pick % 3).filter_map(|i| l.pick(pick >> (8 * i), true)).map(|e| e.id).collect();
        if ids.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        Counters::bump(&l.n.requests);
        match c.open_listen(&ids).await {
            Ok(mut stream) => {
                Counters::bump(&l.n.listens);
                let hold = Duration::from_millis(pick % 500);
                let _ = tokio::time::timeout(hold, async {
                    while let Ok(Some(data)) = stream.next_data().await {
                        let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                        if v["method"] == "notifications/tasks" {
                            l.saw(
                                v["params"]["taskId"].as_str().unwrap_or_default(),
                                v["params"]["status"].as_str().unwrap_or_default(),
                            );
                        }
                    }
                })
                .await;
            }
            Err(e) => l.error(false, e),
        }
    }
}

/// Holds one idle socket at a time: `silent` ones send nothing (closed by the
/// header timeout), the others one `echo` and then nothing (closed by the idle
/// timeout). Each close is expected; a new socket follows.
pub async fn idler(s: Shared, silent: bool) {
    let l = &s.ledger;
    while !s.stopped() {
        let Ok(mut sock) = tokio::net::TcpStream::connect(s.addr).await else {
            l.error(false, "idle socket: connect failed".into());
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        if !silent {
            let mut req = Vec::new();
            crate::wire::http_request(
                &mut req,
                &s.addr.to_string(),
                "/mcp",
                &rpc::tool(1, "echo", json!({ "text": "idle" })),
            );
            Counters::bump(&l.n.requests);
            if sock.write_all(&req).await.is_err() {
                l.error(false, "idle socket: write failed".into());
                continue;
            }
        }
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(1), sock.read(&mut buf)).await {
                Err(_) if s.stopped() => return,
                Err(_) | Ok(Ok(1..)) => {} // the echo's answer, or still idle
                Ok(Ok(0)) => {
                    Counters::bump(&l.n.idle_closed);
                    break;
                }
                Ok(Err(e)) => {
                    l.error(false, format!("idle socket: {e}"));
                    break;
                }
            }
        }
    }
}

/// Every minute (30 s into it), terminates the server's PostgreSQL connections
/// (found by their local ports, the backends' `client_port`) from a connection of its own.
pub async fn killer(s: Shared, url: String, server_pid: u32) {
    use sqlx::Connection;
    let mut conn = match sqlx::PgConnection::connect(&url).await {
        Ok(c) => c,
        Err(e) => return s.ledger.error(false, format!("killer: cannot connect: {e}")),
    };
    let start = tokio::time::Instant::now();
    for minute in 0u32.. {
        let at = start + Duration::from_secs(30 + 60 * u64::from(minute));
        while tokio::time::Instant::now() < at {
            if s.stopped() {
                let _ = conn.close().await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let ports = super::server::database_ports_of(server_pid);
        let killed: Result<i64, _> = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE client_port = ANY($1) AND client_addr IS NOT NULL AND pid <> pg_backend_pid()) t",
        )
        .bind(&ports)
        .fetch_one(&mut conn)
        .await;
        match killed {
            Ok(n) => s.ledger.killed(n as u64),
            Err(e) => s.ledger.error(false, format!("killer: {e}")),
        }
    }
}
