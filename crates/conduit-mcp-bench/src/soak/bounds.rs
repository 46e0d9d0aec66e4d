//! `soak churn`, part 3: what one unauthenticated client (one address) can make a
//! node hold through 2025-11-25 sessions, with the padded inputs of issue 20's
//! findings, on the reference server's defaults, each on a fresh server:
//!
//! 1. Sessions: `initialize` with 3 MiB of padding in `capabilities` and
//!    `clientInfo`, until the per-client cap refuses one (findings 1, 2, 5).
//! 2. Waiting requests: 1 000 `tools/call ask_name` (with 1 MiB of padding each),
//!    spread over the client's sessions, each dropped once its elicitation arrives
//!    (finding 7).
//! 3. Replay buffer: one `build` with a 3 MiB `ref` and 20 steps per session, read
//!    to its end (finding 4).
//! 4. Legacy tasks: 10 `job` tasks from each of 4 sessions whose `initialize` had
//!    3 MiB of padding (finding 3).
//!
//! Each part reads RSS before and after (once the server holds no client socket)
//! and divides by what it made the server hold. Each part runs twice, on a fresh
//! server each time: with glibc's allocator as a user runs it ([`Alloc::Default`]),
//! where memory freed after a large request may stay in the process to be reused,
//! and told to hand large blocks back when they are freed ([`Alloc::Returning`]),
//! where RSS is what the server still holds. The verdict reads the second; the
//! difference is what the allocator kept.

use super::server::ServerProc;
use crate::client::Conn;
use crate::legacy_wire::{self, LEGACY_VERSION};
use conduit_mcp::session::DEFAULT_WAITING_BYTES_PER_CLIENT;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The padding of the findings: 3 MiB in all, split over the fields named.
const PAD: usize = 3 * 1024 * 1024;

/// How the server's allocator is set for a run: mimalloc in the reference server as it
/// ships, glibc's malloc in a build without the `mimalloc` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alloc {
    /// The allocator's defaults, as a user runs the server.
    Default,
    /// Freed memory handed back at once: mimalloc purges freed pages without delay
    /// (`MIMALLOC_PURGE_DELAY=0`); glibc maps every block of 64 KiB or more on its own,
    /// unmaps it when freed and trims the heaps past 64 KiB free (`GLIBC_TUNABLES`).
    /// What RSS then holds beyond the start is what the server keeps (and small
    /// blocks' fragmentation).
    Returning,
}

impl Alloc {
    fn env(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Alloc::Default => Vec::new(),
            Alloc::Returning => {
                vec![
                    ("MIMALLOC_PURGE_DELAY", "0"),
                    ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536:glibc.malloc.trim_threshold=65536"),
                ]
            }
        }
    }

    fn start(self, bin: &Path) -> Result<ServerProc, String> {
        ServerProc::start_env(bin, &[], &self.env())
    }
}

/// What one part measured.
#[derive(Debug, Clone, Default)]
pub struct Bound {
    /// What was made (sessions opened, calls dropped, builds replayed).
    pub made: u64,
    /// What was refused by a cap on the way.
    pub refused: u64,
    /// Bytes of the largest request body sent.
    pub body_bytes: usize,
    /// RSS before and after, KiB.
    pub rss_before_kib: u64,
    /// See `rss_before_kib`.
    pub rss_after_kib: u64,
}

impl Bound {
    /// Growth per thing made, bytes.
    pub fn per_item(&self) -> u64 {
        self.rss_after_kib.saturating_sub(self.rss_before_kib) * 1024 / self.made.max(1)
    }

    /// Growth in all, bytes.
    pub fn growth(&self) -> u64 {
        self.rss_after_kib.saturating_sub(self.rss_before_kib) * 1024
    }

    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} made, {} refused by a cap, bodies of {} bytes; RSS {} KiB before, {} KiB after: +{} KiB, {} bytes each",
            self.made,
            self.refused,
            self.body_bytes,
            self.rss_before_kib,
            self.rss_after_kib,
            self.rss_after_kib.saturating_sub(self.rss_before_kib),
            self.per_item()
        )
    }
}

/// One part under both allocator settings.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// [`Alloc::Returning`]: what the server holds (the verdict reads this).
    pub held: Bound,
    /// [`Alloc::Default`]: what a user's process shows, the allocator's keep included.
    pub default_alloc: Bound,
}

impl Measured {
    fn print(&self, what: &str) {
        eprintln!("{}", self.held.line(&format!("{what}, held")));
        eprintln!("{}", self.default_alloc.line(&format!("{what}, default allocator")));
    }
}

/// A 2025-11-25 session on its own keep-alive connection.
struct Session {
    conn: Conn,
    host: String,
    id: String,
    next: u64,
    buf: Vec<u8>,
}

/// Opens a session with `init` as the `initialize` body: `Ok(None)` when the server refused it.
async fn open(addr: std::net::SocketAddr, init: &str) -> Result<Option<Session>, String> {
    let host = addr.to_string();
    let mut conn = Conn::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    let mut buf = Vec::new();
    legacy_wire::http_request(&mut buf, &host, None, init);
    let (status, sid) = conn.roundtrip_header(&buf, "mcp-session-id").await.map_err(|e| format!("initialize: {e}"))?;
    let Some(id) = sid.filter(|_| status == 200) else {
        let body: Value = serde_json::from_slice(conn.body()).unwrap_or(Value::Null);
        if body["error"]["code"] == -32000 {
            return Ok(None);
        }
        return Err(format!("initialize: HTTP {status} {body}"));
    };
    let mut s = Session { conn, host, id, next: 1, buf };
    legacy_wire::http_request(&mut s.buf, &s.host, Some(&s.id), &legacy_wire::initialized());
    s.conn.roundtrip(&s.buf).await.map_err(|e| format!("initialized: {e}"))?;
    Ok(Some(s))
}

/// The `initialize` of the findings: the padding in `capabilities` and `clientInfo`.
fn padded_initialize(pad: usize) -> String {
    let half = "x".repeat(pad / 2);
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": { "elicitation": { "form": {} }, "experimental": { "pad": half } },
        "clientInfo": { "name": "soak-bounds", "version": "1", "pad": half }
    }})
    .to_string()
}

/// Opens sessions until the per-client cap refuses one.
async fn sessions(addr: std::net::SocketAddr, init: &str, r: &mut Bound) -> Result<Vec<Session>, String> {
    let mut open_ones = Vec::new();
    r.body_bytes = r.body_bytes.max(init.len());
    while open_ones.len() < 10_000 {
        match open(addr, init).await? {
            Some(s) => open_ones.push(s),
            None => {
                r.refused += 1;
                break;
            }
        }
    }
    Ok(open_ones)
}

async fn settle(server: &ServerProc) -> Result<(), String> {
    let t0 = Instant::now();
    while server.fds().clients > 1 {
        if t0.elapsed() > Duration::from_secs(30) {
            return Err("client connections still open 30 s after the last close".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Sessions opened without padding before the first reading: the server's first
/// connections touch its threads' stacks and buffers (about 2 MiB, whatever the
/// sessions hold), which is not what a session keeps.
const WARM_SESSIONS: usize = 8;

/// Part 1: padded sessions up to the per-client cap; the sessions stay open.
async fn padded_sessions(bin: &Path, alloc: Alloc) -> Result<Bound, String> {
    let server = alloc.start(bin)?;
    let mut warm = Vec::new();
    for _ in 0..WARM_SESSIONS {
        warm.push(open(server.addr, &padded_initialize(0)).await?.ok_or("a warm-up session was refused")?);
    }
    drop(warm);
    settle(&server).await?;
    let mut r = Bound { rss_before_kib: server.rss_kib(), ..Bound::default() };
    let init = padded_initialize(PAD);
    let open_ones = sessions(server.addr, &init, &mut r).await?;
    r.made = open_ones.len() as u64;
    drop(open_ones);
    settle(&server).await?;
    r.rss_after_kib = server.rss_kib();
    server.stop()?;
    Ok(r)
}

/// Part 2: `ask_name` calls padded with 1 MiB each, dropped once the elicitation arrives.
async fn dropped_elicitations(bin: &Path, alloc: Alloc, calls: u64) -> Result<Bound, String> {
    let server = alloc.start(bin)?;
    let init = padded_initialize(0);
    let mut r = Bound::default();
    let mut held = sessions(server.addr, &init, &mut Bound::default()).await?;
    r.rss_before_kib = server.rss_kib();
    let pad = "p".repeat(1024 * 1024);
    for i in 0..calls {
        let n = held.len();
        let s = &mut held[(i as usize) % n];
        let id = s.next;
        s.next += 1;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "ask_name", "arguments": {}, "_meta": { "pad": pad } } })
        .to_string();
        r.body_bytes = body.len();
        legacy_wire::http_request(&mut s.buf, &s.host, Some(&s.id), &body);
        // Its own connection: read up to the elicitation (or the refusal), then drop it.
        let conn = Conn::connect(server.addr).await.map_err(|e| format!("connect: {e}"))?;
        match conn.open_stream(&s.buf).await {
            Ok(mut stream) => loop {
                match stream.next_data().await {
                    Ok(Some(d)) if d.contains("elicitation/create") => {
                        r.made += 1;
                        break;
                    }
                    Ok(Some(d)) if d.contains("-32000") => {
                        r.refused += 1;
                        break;
                    }
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => return Err(format!("ask_name {i}: the stream ended before its elicitation")),
                }
            },
            // A refusal answered at once, as JSON.
            Err(e) if e.to_string().contains("-32000") => r.refused += 1,
            Err(e) => return Err(format!("ask_name {i}: {e}")),
        }
    }
    settle_streams(&server, &mut held).await?;
    r.rss_after_kib = server.rss_kib();
    server.stop()?;
    Ok(r)
}

/// The sessions' own connections stay open; only the dropped streams must be seen closed.
async fn settle_streams(server: &ServerProc, held: &mut [Session]) -> Result<(), String> {
    let t0 = Instant::now();
    while server.fds().clients > 1 + held.len() as u64 {
        if t0.elapsed() > Duration::from_secs(30) {
            return Err("dropped streams still open 30 s later".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Part 3: one `build` with a 3 MiB `ref` and 20 steps in each of 8 sessions, read to the end.
async fn replayed_builds(bin: &Path, alloc: Alloc) -> Result<Bound, String> {
    let server = alloc.start(bin)?;
    let init = padded_initialize(0);
    let mut r = Bound::default();
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(open(server.addr, &init).await?.ok_or("a session was refused")?);
    }
    r.rss_before_kib = server.rss_kib();
    let reference = "r".repeat(PAD);
    let mut joins = Vec::new();
    for mut s in held {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "build", "arguments": { "ref": reference, "steps": 20 } } })
        .to_string();
        r.body_bytes = body.len();
        let addr = server.addr;
        joins.push(tokio::spawn(async move {
            legacy_wire::http_request(&mut s.buf, &s.host, Some(&s.id), &body);
            let conn = Conn::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
            let mut stream = conn.open_stream(&s.buf).await.map_err(|e| format!("build: {e}"))?;
            while let Some(d) = stream.next_data().await.map_err(|e| format!("build: {e}"))? {
                if d.contains("\"result\"") || d.contains("\"error\"") {
                    break;
                }
            }
            Ok::<_, String>(s)
        }));
    }
    let mut held = Vec::new();
    for j in joins {
        held.push(j.await.map_err(|e| e.to_string())??);
        r.made += 1;
    }
    settle_streams(&server, &mut held).await?;
    r.rss_after_kib = server.rss_kib();
    server.stop()?;
    Ok(r)
}

/// Part 4: 10 legacy `job` tasks from each of 4 padded sessions.
async fn padded_legacy_tasks(bin: &Path, alloc: Alloc) -> Result<Bound, String> {
    let server = alloc.start(bin)?;
    let init = padded_initialize(PAD);
    let mut r = Bound { body_bytes: init.len(), ..Bound::default() };
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(open(server.addr, &init).await?.ok_or("a session was refused")?);
    }
    settle_streams(&server, &mut held).await?;
    r.rss_before_kib = server.rss_kib();
    for s in &mut held {
        for _ in 0..10 {
            let id = s.next;
            s.next += 1;
            let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "job", "arguments": { "name": "soak" }, "task": { "ttl": 3_600_000 } } })
            .to_string();
            legacy_wire::http_request(&mut s.buf, &s.host, Some(&s.id), &body);
            s.conn.roundtrip(&s.buf).await.map_err(|e| format!("job: {e}"))?;
            let reply = response_of(s.conn.body());
            if reply["result"]["task"]["taskId"].is_string() {
                r.made += 1;
            } else {
                return Err(format!("job: {reply}"));
            }
        }
    }
    r.rss_after_kib = server.rss_kib();
    server.stop()?;
    Ok(r)
}

/// The JSON-RPC response in a body: the body itself, or the SSE event that carries it.
fn response_of(body: &[u8]) -> Value {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return v;
    }
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or(Value::Null)
}

/// What the four parts measured.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    /// Part 1.
    pub sessions: Measured,
    /// Part 2.
    pub waiting: Measured,
    /// Part 3.
    pub replay: Measured,
    /// Part 4.
    pub legacy_tasks: Measured,
}

/// The most one padded session may add (what it keeps of `initialize`, its records, an empty replay buffer).
pub const SESSION_LIMIT_BYTES: u64 = 64 * 1024;
/// The most one legacy task may add: what any task keeps of client input.
pub const TASK_LIMIT_BYTES: u64 = conduit_mcp::ext::tasks::limits::MAX_CLIENT_BYTES_PER_TASK as u64;

impl Bounds {
    /// Whether each part stayed within its bound, as held by the server (see
    /// [`Alloc::Returning`]): a session and a task under their limits; waiting
    /// requests and replay buffers under what their caps allow (waiting requests:
    /// the client's byte budget, 16 MiB, plus 64 KiB for each of the 64 its count cap
    /// allows; per session 256 KiB of replay plus the newest message); and
    /// the caps did refuse.
    pub fn pass(&self) -> bool {
        let (sessions, waiting, replay, tasks) =
            (&self.sessions.held, &self.waiting.held, &self.replay.held, &self.legacy_tasks.held);
        // The client's byte budget for waiting requests, and what each of the 64 its count
        // cap allows keeps beside its request (its stream, its call).
        let waiting_cap = DEFAULT_WAITING_BYTES_PER_CLIENT as u64 + 64 * 64 * 1024;
        let replay_cap = replay.made * (256 * 1024 + replay.body_bytes as u64 + 64 * 1024);
        sessions.per_item() <= SESSION_LIMIT_BYTES
            && sessions.refused > 0
            && waiting.refused > 0
            && waiting.growth() <= waiting_cap
            && replay.growth() <= replay_cap
            && tasks.per_item() <= TASK_LIMIT_BYTES
    }
}

/// Runs the four parts, each under both allocator settings, and prints them.
pub async fn run(bin: &Path) -> Result<Bounds, String> {
    let mut b = Bounds::default();
    for alloc in [Alloc::Returning, Alloc::Default] {
        let (s, w, r, t) = (
            padded_sessions(bin, alloc).await?,
            dropped_elicitations(bin, alloc, 1_000).await?,
            replayed_builds(bin, alloc).await?,
            padded_legacy_tasks(bin, alloc).await?,
        );
        for (m, v) in [(&mut b.sessions, s), (&mut b.waiting, w), (&mut b.replay, r), (&mut b.legacy_tasks, t)] {
            match alloc {
                Alloc::Returning => m.held = v,
                Alloc::Default => m.default_alloc = v,
            }
        }
    }
    b.sessions.print("padded sessions (3 MiB capabilities + clientInfo)");
    b.waiting.print("dropped elicitations (ask_name, 1 MiB _meta each)");
    b.replay.print("replayed builds (3 MiB ref, 20 steps, one per session)");
    b.legacy_tasks.print("legacy tasks from padded sessions");
    Ok(b)
}
