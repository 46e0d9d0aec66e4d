//! The client against a server we did not write: rmcp 3.11 (the benchmark
//! peer in `crates/conduit-mcp-bench/peers/rmcp-peer`, modern tasks, no
//! listen stream, so the client polls): call, follow, cancel, resume.
//!
//! The peer is its own cargo workspace; build it with
//! `cargo build --locked --manifest-path crates/conduit-mcp-bench/peers/rmcp-peer/Cargo.toml --target-dir target/rmcp-peer`
//! (`scripts/test.sh` does). Without the binary the tests print why and
//! pass, unless `CONDUIT_REQUIRE_RMCP=1`.

use crate::common;

use common::guard;
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::protocol::content::Content;
use conduit_mcp::protocol::tasks::TaskStatus;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Peer {
    child: Child,
    url: String,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peer_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CONDUIT_RMCP_PEER") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| root.join("target"));
    ["debug", "release"].iter().map(|d| target.join("rmcp-peer").join(d).join("rmcp-peer")).find(|p| p.exists())
}

fn start_peer() -> Option<Peer> {
    let Some(bin) = peer_binary() else {
        let msg = "rmcp peer not built (see this file's header)";
        assert!(std::env::var("CONDUIT_REQUIRE_RMCP").as_deref() != Ok("1"), "{msg}");
        eprintln!("skipping: {msg}");
        return None;
    };
    let mut child = Command::new(bin)
        .args(["--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn the rmcp peer");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines.next().expect("the peer printed its address").expect("stderr line");
        if let Some(u) = line.strip_prefix("listening on ") {
            break u.to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Some(Peer { child, url })
}

async fn client(url: &str) -> Client {
    guard("connect", ClientBuilder::http(url).poll_interval(Duration::from_millis(50)).connect())
        .await
        .expect("connect")
}

async fn task(c: &Client, seconds: f64) -> TaskHandle {
    match guard("call", c.call_tool("slow_compute", json!({ "seconds": seconds, "label": "x" }))).await.unwrap() {
        CallOutcome::Task(t) => t,
        other => panic!("rmcp made no task: {other:?}"),
    }
}

#[tokio::test]
async fn inline_call_and_a_task_followed_by_polling() {
    let Some(p) = start_peer() else { return };
    let c = client(&p.url).await;
    match guard("greet", c.call_tool("greet", json!({ "name": "rmcp" }))).await.unwrap() {
        CallOutcome::Complete(r) => {
            assert!(matches!(&r.content[0], Content::Text { text, .. } if text == "Hello, rmcp!"))
        }
        other => panic!("{other:?}"),
    }
    let t = task(&c, 0.3).await;
    let mut events = t.follow();
    let mut saw_working = false;
    let mut last = None;
    while let Some(ev) = guard("event", events.next()).await {
        let ev = ev.expect("event");
        if let TaskEvent::Status(s) = &ev {
            saw_working |= s.status == TaskStatus::Working;
        }
        last = Some(ev);
    }
    assert!(saw_working);
    match last {
        Some(TaskEvent::Finished(ToolOutcome::Completed(r))) => {
            assert!(matches!(&r.content[0], Content::Text { text, .. } if text == "computed x"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.listen_streams_opened(), 1, "one listen attempt, then polling");
}

#[tokio::test]
async fn cancel_and_resume_from_the_id() {
    let Some(p) = start_peer() else { return };
    let c = client(&p.url).await;
    let t = task(&c, 600.0).await;
    let id = t.id().to_owned();
    drop(t);
    drop(c);
    // A new client knows only the id.
    let c2 = client(&p.url).await;
    let t = c2.task(id);
    assert_eq!(guard("get", t.get()).await.unwrap().task.status, TaskStatus::Working);
    let waiter = tokio::spawn({
        let t = t.clone();
        async move { t.wait().await }
    });
    guard("cancel", t.cancel()).await.unwrap();
    let out = guard("wait", waiter).await.unwrap().unwrap();
    assert!(matches!(out, ToolOutcome::Cancelled(_)), "{out:?}");
}
