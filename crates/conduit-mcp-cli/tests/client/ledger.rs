//! The task ledger through the real binary against `conduit-mcp serve`:
//! `call` killed with SIGKILL while its `tools/call` waits for an answer,
//! at the task's creation, mid-progress and while its question is open, then `task list` shows each and `task wait --all`
//! brings each to its result; lost tasks (a memory-store node restarted, a
//! TTL that ended) are shown lost; CLIs writing at once lose no entry; the
//! file is owner-only; an unreadable ledger stops every command with one
//! line and sends nothing; no token or task id in the logs; task ids and
//! tool names from a server are printed escaped; the legacy era with and
//! without authentication.

use crate::cli_support;
use crate::common;

use cli_support::*;
use common::Node;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A configuration directory of its own (the ledger is `tasks.db` in it).
struct Config {
    dir: PathBuf,
}

impl Drop for Config {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Config {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("conduit-ledger-cli-{:016x}", rand::random::<u64>()));
        Self { dir }
    }

    fn ledger(&self) -> PathBuf {
        self.dir.join("tasks.db")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args).env("CONDUIT_MCP_CONFIG_DIR", &self.dir).env_remove("CONDUIT_MCP_LEDGER").env_remove("RUST_LOG");
        c
    }

    /// Runs `conduit-mcp ARGS` to its end, off the test's runtime threads.
    async fn run(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        c.stdin(Stdio::null());
        tokio::task::spawn_blocking(move || c.output().expect("run conduit-mcp")).await.unwrap()
    }

    /// `conduit-mcp ARGS` in a pseudo-terminal.
    fn pty(&self, args: &[&str]) -> rexpect::session::PtySession {
        let mut c = self.cmd(args);
        c.env("TERM", "xterm");
        let opts = rexpect::reader::Options { timeout_ms: Some(30_000), strip_ansi_escape_codes: true };
        rexpect::session::spawn_with_options(c, opts).expect("spawn in a pty")
    }

    /// Starts `conduit-mcp ARGS` (stderr piped, not a terminal), waits for a
    /// stderr line containing `until`, then kills it with SIGKILL.
    async fn killed_at(&self, args: &[&str], until: &'static str) {
        let mut c = self.cmd(args);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        tokio::task::spawn_blocking(move || {
            let mut child = c.spawn().expect("spawn conduit-mcp");
            let stderr = child.stderr.take().expect("stderr");
            let mut seen = Vec::new();
            let mut found = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains(until) {
                    found = true;
                    child.kill().expect("SIGKILL");
                    break;
                }
                seen.push(line);
            }
            child.wait().expect("reaped");
            assert!(found, "it ended before {until:?}: {seen:?}");
        })
        .await
        .unwrap();
    }

    /// Starts `conduit-mcp ARGS` and kills it with SIGKILL once `told` is notified.
    async fn killed_when(&self, args: &[&str], told: Arc<tokio::sync::Notify>) {
        let mut c = self.cmd(args);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = c.spawn().expect("spawn conduit-mcp");
        tokio::time::timeout(std::time::Duration::from_secs(20), told.notified()).await.expect("told in time");
        child.kill().expect("SIGKILL");
        tokio::task::spawn_blocking(move || child.wait().expect("reaped")).await.unwrap();
    }

    /// The ledger as `task list --json` prints it (refreshed with `tasks/get`).
    async fn list(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["task", "list", "--json"];
        args.extend_from_slice(extra);
        let o = self.run(&args).await;
        stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn field<'a>(entries: &'a [Value], key: &str) -> Vec<&'a str> {
    entries.iter().map(|e| e[key].as_str().unwrap_or("")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_killed_at_any_moment_are_listed_and_finished_by_wait_all() {
    let node = Node::start(&[]).await;
    let cfg = Config::new();
    // At creation: the first line about the task (it is written down before anything is printed).
    cfg.killed_at(&["call", &node.url, "build", "ref=first", "steps=2"], "working: Queued").await;
    // Mid-progress.
    cfg.killed_at(&["call", &node.url, "build", "ref=second", "steps=3"], "step 1/3").await;
    // While its question is open, in a terminal.
    let url = node.url.clone();
    let mut asking = cfg.pty(&["call", &url, "deploy", "environment=staging"]);
    tokio::task::spawn_blocking(move || {
        asking.exp_string("Deploy to staging?").unwrap();
        asking.process.signal(rexpect::process::signal::Signal::SIGKILL).unwrap();
        asking.process.wait().unwrap();
    })
    .await
    .unwrap();

    let listed = cfg.list(&[&node.url]).await;
    assert_eq!(field(&listed, "tool"), ["build", "build", "deploy"], "{listed:?}");
    assert_eq!(field(&listed, "server"), [node.url.as_str(); 3]);
    assert_eq!(listed[2]["status"], "input_required", "{listed:?}");
    assert!(listed.iter().all(|e| e["lost"].is_null()), "{listed:?}");
    let text = cfg.run(&["task", "list"]).await;
    for e in &listed {
        let id = e["taskId"].as_str().unwrap();
        assert!(stdout(&text).contains(id), "the plain list names {id}: {}", stdout(&text));
    }

    // One after the other, oldest first, with `call`'s prompts.
    let mut wait = cfg.pty(&["task", "wait", &node.url, "--all"]);
    let code = tokio::task::spawn_blocking(move || {
        wait.exp_string("built first in 2 steps").unwrap();
        wait.exp_string("built second in 3 steps").unwrap();
        wait.exp_string("Deploy to staging?").unwrap();
        wait.exp_string("fill in the form").unwrap();
        wait.send("\r").unwrap();
        wait.flush().unwrap();
        wait.exp_string("confirm *").unwrap();
        wait.send("y").unwrap();
        wait.flush().unwrap();
        wait.exp_string("deployed to staging").unwrap();
        exit_code(&mut wait)
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
    let after = cfg.list(&[]).await;
    assert_eq!(field(&after, "status"), ["completed"; 3], "{after:?}");
    let again = cfg.run(&["task", "wait", &node.url, "--all"]).await;
    assert_eq!(again.status.code(), Some(0));
    assert!(stderr(&again).contains("no unfinished tasks"), "{}", stderr(&again));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_the_server_no_longer_knows_are_shown_lost() {
    let mut node = Node::start(&[]).await;
    let cfg = Config::new();
    let o = cfg.run(&["call", &node.url, "sleep", "--detach"]).await;
    let id = stdout(&o).trim().to_owned();
    // The node keeps tasks in memory: restarted on the same address, it has forgotten them.
    let addr = node.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    node.kill();
    let node = Node::start_exactly(&["--listen", &addr]).await;
    let w = cfg.run(&["task", "wait", &node.url, "--all"]).await;
    assert_eq!(w.status.code(), Some(2), "a lost task is not a success: {}", stderr(&w));
    assert!(stderr(&w).contains(&format!("lost: sleep {id}: the server does not know it")), "{}", stderr(&w));
    // The ledger keeps why; `task list` shows it (and `wait` does not report it twice).
    let listed = cfg.list(&[]).await;
    assert_eq!(field(&listed, "taskId"), [id.as_str()]);
    let lost = listed[0]["lost"].as_str().unwrap_or_default();
    assert!(lost.starts_with("the server does not know it any more"), "{listed:?}");
    let text = cfg.run(&["task", "list"]).await;
    assert!(stdout(&text).contains("lost: the server does not know it"), "{}", stdout(&text));
    let again = cfg.run(&["task", "wait", &node.url, "--all"]).await;
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let f = cfg.run(&["task", "forget", &id]).await;
    assert_eq!(f.status.code(), Some(0), "{}", stderr(&f));
    assert!(cfg.list(&[]).await.is_empty());

    // A task whose TTL ended (a server answering as a real one does: unknown id).
    let url = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(req, one_tool()),
        "tools/call" => {
            let mut t = task("working", "2020-01-01T00:00:00Z", Some(1000));
            t["resultType"] = json!("task");
            result(req, t)
        }
        _ => error(req, -32602, "Failed to retrieve task: Task not found"),
    })
    .await;
    let o = cfg.run(&["call", &url, "t", "--detach"]).await;
    assert_eq!(stdout(&o).trim(), "t-1", "{}", stderr(&o));
    let listed = cfg.list(&[&url]).await;
    assert!(listed[0]["lost"].as_str().unwrap_or_default().starts_with("expired: its TTL ended"), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clis_writing_at_once_lose_no_entry_and_the_file_is_owner_only() {
    let node = Node::start(&[]).await;
    let cfg = Config::new();
    let args = ["call", node.url.as_str(), "sleep", "--detach"];
    let runs: Vec<_> = (0..8).map(|_| cfg.run(&args)).collect();
    let mut ids: Vec<String> = Vec::new();
    for o in futures_util::future::join_all(runs).await {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        ids.push(stdout(&o).trim().to_owned());
    }
    let mut listed: Vec<String> =
        field(&cfg.list(&["--offline"]).await, "taskId").into_iter().map(str::to_owned).collect();
    ids.sort();
    listed.sort();
    assert_eq!(listed, ids);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cfg.dir), 0o700);
    for suffix in ["", "-wal", "-shm"] {
        let f = PathBuf::from(format!("{}{suffix}", cfg.ledger().display()));
        if f.exists() {
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
    }
    assert_eq!(mode(&cfg.ledger()), 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_ledger_stops_the_command_and_sends_nothing() {
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    let url = mock(move |req| {
        counted.fetch_add(1, Ordering::SeqCst);
        match req["method"].as_str().unwrap_or("") {
            "server/discover" => result(req, discover()),
            "tools/list" => result(req, one_tool()),
            _ => result(req, json!({ "resultType": "complete", "content": [] })),
        }
    })
    .await;
    let cfg = Config::new();
    std::fs::create_dir_all(&cfg.dir).unwrap();
    let garbage = b"\x00\x01 this is not a ledger \x1b]0;title\x07";
    std::fs::write(cfg.ledger(), garbage).unwrap();
    for args in [vec!["call", url.as_str(), "t"], vec!["task", "list"], vec!["task", "wait", url.as_str(), "--all"]] {
        let o = cfg.run(&args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains("is not a task ledger conduit-mcp can read"), "{err}");
        assert!(err.contains("--move-ledger-aside"), "{err}");
    }
    assert_eq!(requests.load(Ordering::SeqCst), 0, "nothing was sent");
    assert_eq!(std::fs::read(cfg.ledger()).unwrap(), garbage, "the file is left as it was");
    let o = cfg.run(&["call", &url, "t", "--move-ledger-aside"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("moved the unreadable task ledger to"), "{}", stderr(&o));
    let aside: Vec<_> = std::fs::read_dir(&cfg.dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|f| f.file_name().to_string_lossy().starts_with("tasks.db.unreadable-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read(aside[0].path()).unwrap(), garbage);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_task_id_in_the_logs() {
    let node = Node::start(&["--token", "s3cret-tok=alice"]).await;
    let cfg = Config::new();
    let mut c = cfg.cmd(&["call", &node.url, "build", "ref=logs", "steps=1", "--token", "s3cret-tok"]);
    c.env("RUST_LOG", "info").stdin(Stdio::null());
    let o = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed = cfg.list(&["--token", "s3cret-tok"]).await;
    let id = listed[0]["taskId"].as_str().unwrap();
    assert!(listed[0]["principal"].as_str().unwrap().starts_with("token:sha256:"), "{listed:?}");
    for text in [stderr(&o), std::fs::read_to_string(cfg.ledger()).unwrap_or_default()] {
        assert!(!text.contains("s3cret-tok"), "the token is nowhere: {text}");
    }
    assert!(!stderr(&o).contains(id), "the task id is not logged: {}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_era_resumes_with_authentication_and_says_why_not_without() {
    // Without authentication a 2025-11-25 task is its session's: the ledger says so.
    let open = Node::start(&["--era", "legacy"]).await;
    let cfg = Config::new();
    let o = cfg.run(&["call", &open.url, "sleep", "--detach"]).await;
    let id = stdout(&o).trim().to_owned();
    let listed = cfg.list(&["--offline"]).await;
    assert_eq!((listed[0]["version"].as_str(), listed[0]["resumable"].as_bool()), (Some("2025-11-25"), Some(false)));
    let w = cfg.run(&["task", "wait", &open.url, "--all"]).await;
    assert_eq!(w.status.code(), Some(2));
    assert!(stderr(&w).contains(&format!("lost: sleep {id}: a 2025-11-25 task created without authentication")));

    // With it, a new process reads the task in a new session.
    let node = Node::start(&["--era", "legacy", "--token", "tok=alice"]).await;
    cfg.killed_at(&["call", &node.url, "build", "ref=old", "steps=3", "--token", "tok"], "step 1/3").await;
    let w = cfg.run(&["task", "wait", &node.url, "--all", "--token", "tok"]).await;
    assert_eq!(w.status.code(), Some(0), "{}", stderr(&w));
    assert_eq!(stdout(&w), "built old in 3 steps\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_server_named_is_printed_escaped() {
    const EVIL_ID: &str = "id\x1b]0;pwned\x07\x1b[2K\u{202e}";
    let url = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(
            req,
            json!({ "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "tools": [{ "name": "t\x1b[8m", "inputSchema": { "type": "object", "properties": {} } }] }),
        ),
        "tools/call" => {
            let mut t = task("working", "2026-08-01T10:30:00Z", None);
            t["taskId"] = json!(EVIL_ID);
            t["resultType"] = json!("task");
            result(req, t)
        }
        _ => error(req, -32602, "Failed to retrieve task: Task not found"),
    })
    .await;
    let cfg = Config::new();
    let o = cfg.run(&["call", &url, "t\x1b[8m", "--detach"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let outputs = [
        o,
        cfg.run(&["task", "list", "--offline"]).await,
        cfg.run(&["task", "list", "--offline", "--json"]).await,
        cfg.run(&["task", "wait", &url, "--all"]).await,
        cfg.run(&["task", "list"]).await,
    ];
    for o in &outputs {
        for b in o.stdout.iter().chain(o.stderr.iter()) {
            assert!(*b == b'\n' || *b >= 0x20, "control byte {b:#x} in {:?} / {:?}", stdout(o), stderr(o));
        }
        assert!(!stdout(o).contains('\u{202e}') && !stderr(o).contains('\u{202e}'), "no bidirectional override");
    }
    assert!(stdout(&outputs[1]).contains("\\x1b]0;pwned"), "shown escaped: {}", stdout(&outputs[1]));
    assert!(stderr(&outputs[3]).contains("lost: t\\x1b[8m id\\x1b]0;pwned"), "{}", stderr(&outputs[3]));
    // The id is kept exactly, so `forget` takes it back.
    let f = cfg.run(&["task", "forget", EVIL_ID]).await;
    assert_eq!(f.status.code(), Some(0), "{}", stderr(&f));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_killed_before_its_answer_is_reported_interrupted() {
    let sent = Arc::new(tokio::sync::Notify::new());
    let told = sent.clone();
    let url = mock(move |req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(req, one_tool()),
        "tools/call" => {
            // The call is written down before it is sent: it is in the ledger by now.
            told.notify_one();
            (1, "", String::new())
        }
        _ => error(req, -32602, "Failed to retrieve task: Task not found"),
    })
    .await;
    let cfg = Config::new();
    cfg.killed_when(&["call", &url, "t"], sent).await;
    let offline = cfg.list(&["--offline"]).await;
    assert_eq!((offline.len(), offline[0]["inFlight"].as_bool()), (1, Some(true)), "{offline:?}");
    let text = cfg.run(&["task", "list", "--offline"]).await;
    assert!(stdout(&text).contains("  t  0s  calling (no answer yet)  -"), "{}", stdout(&text));
    let w = cfg.run(&["task", "wait", &url, "--all"]).await;
    assert_eq!(w.status.code(), Some(2));
    assert!(
        stderr(&w).contains("lost: t (no task id): the call was interrupted before the server answered"),
        "{}",
        stderr(&w)
    );
    // An answered call leaves nothing behind but its task.
    let done = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(req, one_tool()),
        _ => result(req, json!({ "resultType": "complete", "content": [] })),
    })
    .await;
    let o = cfg.run(&["call", &done, "t"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(cfg.list(&["--offline", &done]).await.is_empty());
}
