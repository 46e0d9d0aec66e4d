//! What a legacy session keeps for `Last-Event-ID` replay is bounded in bytes,
//! not only in events, and progress messages are cut like status messages
//! (issue 20, finding 4). Over a real socket.

use crate::common;
use crate::legacy_common;

use common::start;
use conduit_mcp::bounds::MAX_STATUS_MESSAGE_BYTES;
use conduit_mcp::config_file::ConfigFile;
use conduit_mcp::prelude::*;
use conduit_mcp::session::{DEFAULT_REPLAY_BYTES, SessionConfig};
use legacy_common::*;
use serde_json::{Value, json};

/// Reports 20 steps, each naming the `ref` it builds (as the demo's `build` does).
fn build_tool() -> Tool {
    Tool::new("build", "Builds a ref in 20 steps").handle(|ctx, args| async move {
        let reference = args.get("ref").and_then(Value::as_str).unwrap_or_default().to_owned();
        for step in 1..=20 {
            ctx.progress(f64::from(step), Some(20.0), Some(&format!("step {step} of 20: building {reference}")));
        }
        Ok(CallToolResult::text("built"))
    })
}

#[tokio::test]
async fn a_padded_build_leaves_a_bounded_replay_buffer() {
    let server = Server::builder("replay", "1").tool(build_tool()).build().expect("server");
    let h = start(server).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let reference = "r".repeat(3 * 1024 * 1024);
    let params = json!({ "name": "build", "arguments": { "ref": reference }, "_meta": { "progressToken": "p" } });
    // The client leaves as soon as the stream opens; the call runs on into the buffer.
    let mut ev = c.open(1, "tools/call", params).await;
    let priming = ev.next().await.expect("the priming event").id.expect("an event id");
    drop(ev);
    let resumed = c.get(Some(&priming)).await;
    let msgs = Events::new(resumed).until_response(&json!(1)).await;
    let (answer, progress) = msgs.split_last().expect("the answer");
    assert_eq!(answer["result"]["content"][0]["text"], "built");
    assert!(!progress.is_empty(), "some progress is replayed");
    for p in progress {
        let m = p["params"]["message"].as_str().expect("a message");
        assert!(m.len() <= MAX_STATUS_MESSAGE_BYTES, "a progress message of {} bytes", m.len());
        assert!(m.starts_with("step "), "cut at the end: {}", &m[..20]);
    }
    let held = h.server.session_stats().replay_bytes;
    assert!(held <= DEFAULT_REPLAY_BYTES, "the replay buffer holds {held} bytes");
}

/// The newest message is kept whatever its size (a pending answer stays replayable);
/// everything older fits the budget.
#[tokio::test]
async fn an_answer_larger_than_the_budget_is_still_replayable() {
    let big = Tool::new("big", "Answers 400 KiB").handle(|ctx, _args| async move {
        ctx.progress(1.0, None, Some("starting")); // so the answer comes on a stream
        Ok(CallToolResult::text("b".repeat(400 * 1024)))
    });
    let server = Server::builder("replay", "1").tool(build_tool()).tool(big).build().expect("server");
    let h = start(server).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let mut ev = c
        .open(
            1,
            "tools/call",
            json!({ "name": "build", "arguments": { "ref": "main" },
        "_meta": { "progressToken": "p" } }),
        )
        .await;
    ev.until_response(&json!(1)).await;
    let mut ev = c.open(2, "tools/call", json!({ "name": "big", "_meta": { "progressToken": "q" } })).await;
    let priming = ev.next().await.expect("the priming event").id.expect("an event id");
    drop(ev);
    let msgs = Events::new(c.get(Some(&priming)).await).until_response(&json!(2)).await;
    let text = msgs.last().expect("the answer")["result"]["content"][0]["text"].as_str().map(str::len);
    assert_eq!(text, Some(400 * 1024), "the whole answer is replayed");
    let held = h.server.session_stats().replay_bytes;
    assert!(held > DEFAULT_REPLAY_BYTES && held < DEFAULT_REPLAY_BYTES + 410 * 1024, "{held}");
}

/// Answers larger than a session's budget count against one pool per client: past it,
/// an answer still reaches its open stream but is not kept for `Last-Event-ID`; a session
/// that ends gives its place back.
#[tokio::test]
async fn a_clients_large_answers_share_one_replay_pool() {
    const ANSWER: usize = 400 * 1024;
    let big = Tool::new("big", "Answers 400 KiB").handle(|ctx, _args| async move {
        ctx.progress(1.0, None, Some("starting")); // so the answer comes on a stream
        Ok(CallToolResult::text("b".repeat(ANSWER)))
    });
    let pool = 2 * ANSWER + 64 * 1024; // two answers, not three
    let server = Server::builder("replay", "1")
        .tool(big)
        .sessions(SessionConfig::default().oversize_replay_bytes_per_client(pool))
        .build()
        .expect("server");
    let h = start(server).await;
    // One client (no authentication: one address) with four sessions.
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let mut c = Legacy::new(&h.url);
        c.initialize(json!({})).await;
        sessions.push(c);
    }
    // Each call read to its answer live, then resumed from its priming event.
    async fn call_then_replay(c: &Legacy, id: u64) -> Option<usize> {
        let mut ev = c.open(id, "tools/call", json!({ "name": "big", "_meta": { "progressToken": "p" } })).await;
        let priming = ev.next().await.expect("the priming event").id.expect("an event id");
        let live = ev.until_response(&json!(id)).await;
        let text = |m: &Value| m["result"]["content"][0]["text"].as_str().map(str::len);
        assert_eq!(live.last().and_then(text), Some(ANSWER), "the answer reaches its open stream");
        let mut again = Events::new(c.get(Some(&priming)).await);
        match again.next().await.expect("an event").msg {
            // Not kept: the id names no stream any more, so a new stand-alone stream opens.
            None => None,
            Some(m) if m["id"] == json!(id) => text(&m),
            Some(_) => again.until_response(&json!(id)).await.last().and_then(text),
        }
    }
    assert_eq!(call_then_replay(&sessions[0], 1).await, Some(ANSWER));
    assert_eq!(call_then_replay(&sessions[1], 1).await, Some(ANSWER));
    assert_eq!(call_then_replay(&sessions[2], 1).await, None, "a third answer does not fit the client's pool");
    let held = h.server.session_stats().replay_bytes;
    assert!(held <= pool + 3 * DEFAULT_REPLAY_BYTES, "{held} bytes kept for replay");
    assert_eq!(sessions[0].delete().await.status(), reqwest::StatusCode::NO_CONTENT);
    assert_eq!(call_then_replay(&sessions[3], 1).await, Some(ANSWER), "the ended session's place is free again");
}

/// Finding 10 of issue 34: what all sessions of a node retain together (replay buffers,
/// large answers, waiting requests) stays under `[sessions] max_retained_bytes`: clients
/// from many addresses, each within its own caps, cannot add up past it; once a new
/// session would not fit, `initialize` is refused with `-32000`, and a session that ends
/// makes room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_addresses_cannot_add_up_past_the_nodes_byte_ceiling() {
    const ANSWER: usize = 48 * 1024;
    const BUDGET: usize = 128 * 1024;
    const CEILING: usize = 4 * BUDGET;
    let big = Tool::new("big", "Answers 48 KiB").handle(|ctx, _args| async move {
        ctx.progress(1.0, None, Some("starting")); // so the answer comes on a stream
        Ok(CallToolResult::text("b".repeat(ANSWER)))
    });
    let doc = format!("[sessions]\nreplay_bytes = {BUDGET}\nmax_retained_bytes = {CEILING}\n");
    let sessions = ConfigFile::parse(&doc).expect("a valid [sessions] table").sessions;
    let server = Server::builder("replay", "1").tool(big).sessions(sessions).build().expect("server");
    let h = common::serve_with(server, HttpConfig::default()).await;
    let (mut admitted, mut refusal) = (Vec::new(), None);
    for n in 2..=13u8 {
        // Each address is another client, far inside its own per-client caps.
        let mut c = Legacy::new(&h.url);
        c.client =
            reqwest::Client::builder().local_address(std::net::IpAddr::from([127, 0, 0, n])).build().expect("client");
        let init = rpc(
            0,
            "initialize",
            json!({ "protocolVersion": LV, "capabilities": {},
            "clientInfo": { "name": "t", "version": "1" } }),
        );
        let r = c.post(&init).await;
        let Some(sid) = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned) else {
            let m: Value = r.json().await.expect("JSON");
            assert_message(&m);
            refusal = Some(m["error"].clone());
            break;
        };
        c.session = Some(sid);
        for id in 1..=2 {
            let msgs = c
                .open(id, "tools/call", json!({ "name": "big", "_meta": { "progressToken": "p" } }))
                .await
                .until_response(&json!(id))
                .await;
            assert_eq!(
                msgs.last().expect("the answer")["result"]["content"][0]["text"].as_str().map(str::len),
                Some(ANSWER)
            );
        }
        let stats = h.server.session_stats();
        let held = stats.replay_bytes + stats.waiting_bytes;
        assert!(held <= CEILING, "{} sessions retain {held} bytes, past the ceiling of {CEILING}", admitted.len() + 1);
        admitted.push(c);
    }
    let e = refusal.expect("an initialize is refused once the node's sessions retain their ceiling");
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["message"].as_str().unwrap_or_default().contains("try again later"), "{e}");
    assert!(admitted.len() >= 4, "{} sessions admitted before the ceiling", admitted.len());
    // A session that ends gives its bytes back: a new one is admitted.
    assert_eq!(admitted[0].delete().await.status(), reqwest::StatusCode::NO_CONTENT);
    Legacy::new(&h.url).initialize(json!({})).await;
}
