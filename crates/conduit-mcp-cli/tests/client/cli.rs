//! The CLI client without a terminal: exit codes, `--no-input`, `--json`,
//! typed KEY=VALUE, output free of control characters, `watch`, stdio
//! servers, and bad servers (garbage, a stream closed mid-answer, a task id
//! that 404s, a task that never finishes): one line and exit 2, no panic,
//! no hang past the TTL.

use crate::cli_support;
use crate::common;

use cli_support::*;
use common::Node;
use serde_json::{Value, json};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_without_a_terminal_has_no_control_characters() {
    let node = Node::start(&[]).await;
    let o = run(&["call", &node.url, "build", "ref=plain", "steps=2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "built plain in 2 steps\n");
    assert!(stderr(&o).contains("Building plain: step 2/2"), "{}", stderr(&o));
    for b in o.stdout.iter().chain(o.stderr.iter()) {
        assert!(*b == b'\n' || *b >= 0x20, "control byte {b:#x} in {:?}", stderr(&o));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_and_json() {
    let node = Node::start(&[]).await;
    let o = run(&["call", &node.url, "echo", "--args", r#"{"text": "raw"}"#, "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["content"][0]["text"], "raw");
    let o = run(&["call", &node.url, "build", "ref=x", "steps=lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("steps: \"lots\" is not an integer"), "{}", stderr(&o));
    let o = run(&["call", "not-a-url", "echo"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["call", &node.url, "no_such_tool"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().filter(|l| l.starts_with("error:")).count(), 1, "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_input_fails_cleanly() {
    let node = Node::start(&[]).await;
    let o = run(&["call", &node.url, "deploy", "environment=prod", "--no-input"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the server asks for \"Deploy to prod?\" and --no-input is set"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampler_and_cancelled_and_watch() {
    let node = Node::start(&[]).await;
    let o = run(&["call", &node.url, "sleep", "--detach"]);
    let id = stdout(&o).trim().to_owned();
    let cancel = run(&["task", "cancel", &node.url, &id]);
    assert_eq!(cancel.status.code(), Some(0), "{}", stderr(&cancel));
    let w = run(&["task", "wait", &node.url, &id]);
    assert_eq!(w.status.code(), Some(3), "cancelled by the server: {}", stderr(&w));
    let o = run(&["call", &node.url, "build", "ref=w", "steps=1", "--detach"]);
    let id = stdout(&o).trim().to_owned();
    let w = run(&["watch", &node.url, &id]);
    assert_eq!(w.status.code(), Some(0));
    let lines = stdout(&w);
    assert!(lines.lines().last().unwrap_or("").contains("completed"), "{lines}");
    let g = run(&["task", "get", &node.url, &id, "--json"]);
    let v: Value = serde_json::from_str(&stdout(&g)).unwrap();
    assert_eq!(v["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_works_like_a_url() {
    let o = run(&["call", "build", "ref=pipe", "steps=1", "--stdio", "--", BIN, "serve", "--stdio"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "built pipe in 1 steps\n");
    let o = run(&["tools", "--stdio", "--", BIN, "serve", "--stdio"]);
    assert!(stdout(&o).contains("deploy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_a_one_line_protocol_error() {
    let url = mock(|_| (200, "application/json", "this is not json".into())).await;
    let o = run(&["call", &url, "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_closed_mid_answer_is_an_error() {
    let url = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(req, one_tool()),
        _ => (0, "", String::new()),
    })
    .await;
    let o = run(&["call", &url, "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("closed the stream before answering"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_id_that_404s_is_an_error() {
    let url = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => result(req, discover()),
        "tools/list" => result(req, one_tool()),
        "tools/call" => {
            let mut t = task("working", "2026-08-01T10:30:00Z", None);
            t["resultType"] = json!("task");
            result(req, t)
        }
        _ => error(req, -32602, "Failed to retrieve task: Task not found"),
    })
    .await;
    let o = run(&["call", &url, "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("task not found"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_never_finishes_stops_at_its_ttl() {
    let url = mock(|req| {
        let mut t = task("working", "2020-01-01T00:00:00Z", Some(1000));
        match req["method"].as_str().unwrap_or("") {
            "server/discover" => result(req, discover()),
            "tools/list" => result(req, one_tool()),
            "tools/call" => {
                t["resultType"] = json!("task");
                result(req, t)
            }
            "tasks/get" => {
                t["resultType"] = json!("complete");
                result(req, t)
            }
            _ => error(req, -32601, "no"),
        }
    })
    .await;
    let o = run(&["call", &url, "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did not finish within its TTL"), "{}", stderr(&o));
}

/// Every flag `login --help` lists, `--login-timeout` among them, is
/// described in the client guide (issue 34: it was not).
#[test]
fn every_login_flag_is_documented() {
    let help = String::from_utf8_lossy(&run(&["login", "--help"]).stdout).into_owned();
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/client.md")).unwrap();
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|f| f.trim_end_matches([',', '.', ')', '`']))
        .filter(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect();
    assert!(flags.contains(&"login-timeout"), "{help}");
    for flag in flags.iter().filter(|f| !["help"].contains(f)) {
        assert!(guide.contains(&format!("--{flag}")), "docs/client.md does not describe --{flag}");
    }
}
